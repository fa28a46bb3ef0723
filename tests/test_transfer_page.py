"""Transfer learning without dead air (issue 33): the race's curve is on the page at once (a run shipped for
these weights, or this server's last live run), the button runs it live, and a question never starts the
minutes of training. Fast tier: the tiny zoo."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import all_text, open_page

CURVE = {"sizes": [16, 240], "accuracy": {"pretrained": [0.75, 0.9], "random": [0.5, 0.55], "onehot": [0.55, 0.7]}}


def curve():  # noqa: ANN201
    from model_zoo.lessons.transfer import TransferCurve

    return TransferCurve((16, 240), CURVE["accuracy"], 60, 0.5, 4, 123.0)


@pytest.fixture
def shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_zoo: Path) -> Path:
    """A run shipped for the tiny minilm-l6 (its own fingerprint), where the page looks for it."""
    from model_zoo.lessons import transfer

    transfer.save_curve(curve(), "minilm-l6", tmp_path / "minilm-l6.json", "python -m model_zoo.lessons.transfer x")
    monkeypatch.setattr(transfer, "SHIPPED", tmp_path)
    return tmp_path


def no_training(monkeypatch: pytest.MonkeyPatch) -> None:
    import serving

    def refuse(*_args, **_kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("the page started the race's training")

    monkeypatch.setattr(serving, "transfer_curve", refuse)


def test_a_shipped_run_is_read_back_only_for_its_own_weights_and_data(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    from model_zoo.lessons import transfer

    transfer.save_curve(curve(), "minilm-l6", tmp_path / "minilm-l6.json", "cmd")
    got = transfer.shipped_curve("minilm-l6", tmp_path)
    assert got is not None and got.curve == curve() and got.command == "cmd"
    monkeypatch.setattr(transfer, "weights_fingerprint", lambda name: "other weights")
    assert transfer.shipped_curve("minilm-l6", tmp_path) is None
    assert transfer.shipped_curve("bert-base-uncased", tmp_path) is None  # none shipped


def test_the_shipped_curve_is_drawn_on_opening_and_answers_the_questions(shipped: Path, monkeypatch) -> None:  # noqa: ANN001
    no_training(monkeypatch)
    at = open_page("pages/transfer.py")
    assert not at.exception
    assert any(c.proto.id.endswith("transfer_chart") for c in at.get("plotly_chart"))
    said = all_text(at)
    assert "shipped with the app" in said and "123 s" in said and "75%" in said
    # minilm-l6 read sentence pairs (NLI among them) before ContextLab got it: one line says so, and names a
    # model pre-trained on plain text only
    assert "minilm-l6 was not pre-trained on plain text alone (all-MiniLM-L6-v2 was tuned on" in said
    assert "bert-base-uncased, pre-trained on plain text only" in said
    at.toggle(key="quiz_reveal").set_value(True).run()
    assert not at.exception and not at.error
    assert "pre-trained 90%, random weights 55%, one-hot counts 70%" in all_text(at)


def test_without_any_run_the_page_says_so_and_a_question_does_not_start_one(
    tiny_zoo: Path,
    monkeypatch,  # noqa: ANN001
    tmp_path: Path,
) -> None:
    from model_zoo.lessons import transfer

    monkeypatch.setattr(transfer, "SHIPPED", tmp_path)  # nothing shipped
    no_training(monkeypatch)
    at = open_page("pages/transfer.py")
    assert not at.exception and "No run of the race for minilm-l6" in all_text(at)
    at.toggle(key="quiz_reveal").set_value(True).run()
    assert not at.exception
    assert "start it with its button above first" in all_text(at)


def test_a_live_run_replaces_the_shipped_one_for_every_later_visitor(shipped: Path) -> None:
    import serving

    serving.SLOW.get(
        ("transfer curve", "minilm-l6"), lambda: curve().__class__((16, 240), CURVE["accuracy"], 60, 0.5, 4, 7.0)
    )
    at = open_page("pages/transfer.py")
    assert not at.exception and "Run live on this server in 7 s." in all_text(at)


def test_a_tie_with_few_labels_is_an_answer_the_learner_can_pick(shipped: Path) -> None:
    import serving

    tied = {"pretrained": [0.5, 0.9], "random": [0.5, 0.55], "onehot": [0.5, 0.7]}
    serving.SLOW.get(("transfer curve", "minilm-l6"), lambda: curve().__class__((16, 240), tied, 60, 0.5, 4, 7.0))
    at = open_page("pages/transfer.py")
    at.toggle(key="quiz_reveal").set_value(True).run()
    assert not at.exception and "neither" in at.radio(key="quiz_transfer_few").options
    assert "Answer: neither" in all_text(at)
