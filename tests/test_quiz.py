"""Check yourself: every lesson ends with questions whose answers come from the live model (slow tier)."""

from __future__ import annotations

import re

import pytest

import serving
from components.road import ready_lessons
from tests.conftest import open_page, shown

pytestmark = pytest.mark.slow


def revealed(at) -> tuple[list[str], list[str]]:  # noqa: ANN001
    """The answers shown after "Show the answers", and their explanations."""
    at.toggle(key="quiz_reveal").set_value(True).run(timeout=300)
    assert not at.exception
    answers = [shown(m.value) for m in at.markdown if m.value.startswith(("**Answer:**", "**答案：**"))]
    radios = [r for r in at.radio if r.key and r.key.startswith("quiz_")]
    why = [shown(c.value) for c in at.caption][-len(radios) :]
    return answers, why


@pytest.mark.parametrize("lesson", [lesson.key for lesson in ready_lessons()])
def test_every_lesson_ends_with_questions_answered_by_the_model(lesson: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from model_zoo.lessons import transfer

    monkeypatch.setattr(transfer, "SIZES", (16, 32))  # the transfer race, shorter
    monkeypatch.setattr(transfer, "EPOCHS", 1)
    at = open_page(f"pages/{lesson}.py")
    assert not at.exception
    assert "Check yourself" in [h.value for h in at.header]
    radios = [r for r in at.radio if r.key and r.key.startswith("quiz_")]
    assert 2 <= len(radios) <= 3 and all(r.value is None for r in radios)  # nothing picked, nothing computed
    answers, why = revealed(at)
    assert len(answers) == len(radios)
    for radio, answer in zip(radios, answers):  # a learner can always pick what the model says
        assert answer.split(" ", 1)[1] in radio.options, (radio.key, answer, radio.options)
    assert all(w and not re.search(r"\{\w+\}", w) for w in why)  # every figure filled in


def test_a_picked_answer_is_checked_against_the_model() -> None:
    at = open_page("pages/onehot.py")
    at.radio(key="quiz_onehot_cos").set_value("1").run()
    assert "Not quite: the model's answer is 0." in [shown(w.value) for w in at.warning]
    at.radio(key="quiz_onehot_cos").set_value("0").run()
    assert [s.value for s in at.success] == ["Right: the model agrees."]


def test_answers_are_computed_not_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the model answers otherwise, so does the quiz: the Masked LM question asks fill_mask."""
    answers, _ = revealed(open_page("pages/masked_lm.py"))
    real = answers[0]
    fake = [[("london", 0.7), ("rome", 0.2), ("berlin", 0.1)]]
    monkeypatch.setattr(serving, "fill_mask", lambda *args, **kwargs: fake)
    answers, why = revealed(open_page("pages/masked_lm.py"))
    assert answers[0] == "Answer: London" != real  # written as the sentence writes a name
    assert "london 70.0%, rome 20.0%, berlin 10.0%" in why[0]  # as the bars label them (charts.percent_label)


def test_the_quiz_speaks_chinese() -> None:
    at = open_page("pages/bert_inputs.py", lang="zh")
    assert "自我检测" in [h.value for h in at.header]
    answers, why = revealed(at)
    assert answers[0] == "答案： 11" and "完全没变" in answers[1]


@pytest.mark.parametrize("model", ["smollm2-135m", "minilm-l6-mlm"])
def test_attention_questions_offer_the_live_answer_of_another_model(model: str) -> None:
    """The Attention page's picker takes any model with attention heads; whichever is picked, its own
    answers (its head count, where its "it" looks) are among the options a learner picks from."""
    at = open_page("pages/attention.py", model=model)
    assert not at.exception
    radios = [r for r in at.radio if r.key and r.key.startswith("quiz_")]
    answers, _ = revealed(at)
    for radio, answer in zip(radios, answers):
        assert answer.split(" ", 1)[1] in radio.options, (radio.key, answer, radio.options)
