"""Every model ContextLab trained ships a metrics.json that its training box can read, typed (fast: JSON only)."""

from __future__ import annotations

import json

import pytest

import model_zoo
from model_zoo.registry import list_models, trained_file
from model_zoo.trained import ElmoTraining, MlmTraining, MntpTraining, ReaderTraining, reader_test, training_of

TRAINED = [card for card in list_models() if card.trained]
KINDS = {
    "minilm-l6-mlm": MlmTraining,
    "smollm2-135m-mlm": MntpTraining,
    "minilm-l6-qa": ReaderTraining,
    "smollm2-135m-qa": ReaderTraining,
    "elmo-mini": ElmoTraining,
}


def test_every_trained_model_is_one_of_the_known_trainings() -> None:
    assert {card.name for card in TRAINED} == set(KINDS)


@pytest.mark.parametrize("card", TRAINED, ids=lambda card: card.name)
def test_a_shipped_metrics_file_reads_as_its_kind_of_training(card) -> None:  # noqa: ANN001
    m = training_of(card)
    assert isinstance(m, KINDS[card.name])
    assert m.script.startswith("python -m model_zoo.") and m.device
    raw = json.loads((trained_file(card).parent / "metrics.json").read_text())
    if isinstance(m, ReaderTraining):
        assert m.written_test.exact == raw["written_test"]["exact"] and 0 < m.written_test.f1 <= 1
        assert reader_test(card) == m.written_test
        earlier = raw.get("started_from")  # a stage that went on from shipped weights: both told apart
        assert (m.went_on is None) == (earlier is None)
        if earlier is not None and m.went_on is not None:
            assert (
                m.written_questions == earlier["written_stage"]["written_questions"] and m.device == earlier["device"]
            )
            assert m.went_on.written_questions == raw["written_stage"]["written_questions"] > m.written_questions
            assert m.went_on.device == raw["device"] and m.went_on.runs == len(raw["chosen_from"])
            assert m.went_on.cause_questions == raw["written_stage"].get("cause_questions", 0)
    else:
        assert m.tokens_seen == raw["tokens_seen"] and m.curve  # a learning curve to draw
    if isinstance(m, MntpTraining):
        assert m.fresh.copies is not None and m.anti_copy_from is not None and m.anti_copy
    if isinstance(m, MlmTraining):
        assert 0 < m.plain_tokens <= m.tokens_seen


@pytest.mark.parametrize("name", ["minilm-l6-qa", "smollm2-135m-qa"])
def test_a_readers_answer_rule_was_chosen_on_development_questions_and_its_scores_are_that_rules(name: str) -> None:
    """The readers answer by SQuAD 2.0's rule with the question's answer type (tasks.pick_answer): chosen over
    the lecture's on smollm2-135m-qa's development questions, where it lost no unanswerable one; the test scores
    shown are the rule's, the other rules' kept beside them (the box's `qa_rule` and `qa_typed_rule`)."""
    card = model_zoo.get_card(name)
    raw = json.loads((trained_file(card).parent / "metrics.json").read_text())
    m = training_of(card)
    assert isinstance(m, ReaderTraining) and m.by_lecture_rule is not None
    assert m.by_lecture_rule.exact == raw["by_lecture_rule"]["written_test"]["exact"] != m.written_test.exact
    chosen = json.loads((trained_file(model_zoo.get_card("smollm2-135m-qa")).parent / "metrics.json").read_text())
    dev = chosen["rule"]["dev"]
    for part in ("written_dev", "cloze_dev"):
        assert dev["squad2"][part]["f1"] >= dev["lecture"][part]["f1"]
        assert dev["squad2"][part]["answerable_said_none"] <= dev["lecture"][part]["answerable_said_none"]
    assert dev["squad2"]["cloze_dev"]["unanswerable_said_none"] == dev["lecture"]["cloze_dev"]["unanswerable_said_none"]
    # the answer type (a What/Who/Which answer does not open with a preposition) is served where the development
    # questions score it at least as well as SQuAD 2.0's rule alone; the test scores without it are kept beside
    for part in ("written_dev", "cloze_dev"):
        assert dev["typed"][part]["f1"] >= dev["squad2"][part]["f1"]
    assert m.by_squad2_rule is not None and m.by_squad2_rule.f1 == raw["by_squad2_rule"]["written_test"]["f1"]


def test_a_metrics_file_without_what_its_box_shows_is_one_sentence(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    card = model_zoo.get_card("elmo-mini")
    from model_zoo import trained

    monkeypatch.setattr(trained, "trained_metrics", lambda card: {"script": "python -m model_zoo.train_elmo"})
    with pytest.raises(model_zoo.BadCheckpoint, match="elmo-mini metrics.json cannot be loaded: it lacks"):
        training_of(card)
    assert reader_test(model_zoo.get_card("minilm-l6")) is None  # not trained here
