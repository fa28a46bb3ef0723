"""What a lesson says a model does is what it computes (issue 33), in the fast tier on the tiny zoo."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import all_text, open_page


def test_a_stacked_lstm_pipelines_its_layers(tiny_zoo: Path) -> None:
    """The Transformer's LSTM count: T + L - 1 steps one after another (layer 2 reads token t while layer 1
    reads token t + 1), not L x T."""
    at = open_page("pages/transformer.py", tf_text="the man went to the bank .")
    assert not at.exception
    tokens = len(next(s for s in at.selectbox if s.key.startswith("tf_pick_")).options)
    lstm = next(m for m in at.metric if "LSTM" in m.label)
    assert lstm.value == str(tokens + 1)


def test_chinese_on_an_english_only_model_gets_one_line_naming_the_models_that_read_it(tiny_zoo: Path) -> None:
    at = open_page("pages/masked_lm.py", text="巴黎是法国的首[MASK]。")
    assert not at.exception
    said = all_text(at)
    assert "learned from English text only" in said and "bert-base-chinese" in said
    at = open_page("pages/masked_lm.py", text="Paris is the capital of [MASK].")
    assert "learned from English text only" not in all_text(at)


def test_bert_inputs_say_why_chinese_falls_apart(tiny_zoo: Path) -> None:
    at = open_page("pages/bert_inputs.py", a="我把钱存进了银行")
    assert not at.exception
    assert "learned from English text only" in all_text(at)


def test_probing_questions_name_tasks_and_layers_as_the_charts_do(tiny_zoo: Path) -> None:
    at = open_page("pages/probing.py")
    at.toggle(key="quiz_reveal").set_value(True).run()
    assert not at.exception
    high = at.radio(key="quiz_probe_high")
    assert list(high.options)[:3] == ["Part of speech", "Named entities", "Dependency relation"]
    pos = at.radio(key="quiz_probe_pos")
    assert list(pos.options)[-1] == "6 (1.00)"  # the chart's normalised depth
    said = all_text(at)
    assert "in normalised depth (the chart's diamonds); the lowest is" in said


def test_one_hot_glove_line_names_the_closest_and_farthest_pair_of_the_chart(tiny_zoo: Path) -> None:
    import base64
    import json

    import numpy as np

    at = open_page("pages/onehot.py", glove="true")
    assert not at.exception
    chart = next(c for c in at.get("plotly_chart") if c.proto.id.endswith("similarity"))
    trace = json.loads(chart.proto.spec)["data"][0]
    words = trace["x"]
    z = np.frombuffer(base64.b64decode(trace["z"]["bdata"]), trace["z"]["dtype"]).reshape(len(words), len(words))
    off = [(z[i, j], words[i], words[j]) for i in range(len(words)) for j in range(i + 1, len(words))]
    (high, a, b), (low, c, d) = max(off), min(off)
    said = all_text(at)
    assert f"“{a}” and “{b}” are the closest pair ({high:.2f})" in said
    assert f"“{c}” and “{d}” the farthest ({low:.2f})" in said
