"""What a lesson says a model does is what it computes (issue 33), in the fast tier on the tiny zoo."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import open_page


def test_a_stacked_lstm_pipelines_its_layers(tiny_zoo: Path) -> None:
    """The Transformer's LSTM count: T + L - 1 steps one after another (layer 2 reads token t while layer 1
    reads token t + 1), not L x T."""
    at = open_page("pages/transformer.py", tf_text="the man went to the bank .")
    assert not at.exception
    tokens = len(next(s for s in at.selectbox if s.key.startswith("tf_pick_")).options)
    lstm = next(m for m in at.metric if "LSTM" in m.label)
    assert lstm.value == str(tokens + 1)
