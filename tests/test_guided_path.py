"""Predict, then see, and a guided path through every lesson (issue 34), in the fast tier on the tiny zoo.

Every lesson has at least two predict-first moments: nothing of the model's answer is shown until the
learner picks, and then the model's answer (one of the options) stands beside the guess. Every lesson has a
guided path: a learner gets through it by Next alone, a step's link reopens that step, and the steps together
show every section of the whole page."""

from __future__ import annotations

import pytest

from components.road import ready_lessons
from tests.conftest import all_text, open_page, shown

LESSONS = [lesson.key for lesson in ready_lessons()]
# Walking every step of every lesson reruns each page five to seven times: the fast tier walks one lesson,
# the slow tier (which CI runs too) all of them.
WALKS = [key if key == "masked_lm" else pytest.param(key, marks=pytest.mark.slow) for key in LESSONS]


def headers(at) -> list[str]:  # noqa: ANN001
    return [h.value for h in at.header] + [h.value for h in at.subheader]


def predict_radios(at) -> list:  # noqa: ANN001
    return [r for r in at.radio if r.key and r.key.startswith("predict_")]


def model_says(at) -> list[str]:  # noqa: ANN001
    """The model's answers shown beside guesses (the right-hand metric of each revealed moment)."""
    return [m.value for m in at.metric if shown(m.label).endswith((" says", " 的答案"))]


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_lesson_asks_for_two_guesses_before_the_model_answers(tiny_zoo, lesson: str) -> None:  # noqa: ANN001
    at = open_page(f"pages/{lesson}.py")
    assert not at.exception
    radios = predict_radios(at)
    assert len(radios) >= 2, f"{lesson}: {len(radios)} predict-first moments"
    assert all(r.value is None for r in radios) and model_says(at) == []  # no answer before the guess
    for key in [r.key for r in radios]:
        radio = at.radio(key=key)
        options = list(radio.options)
        radio.set_value(radio.options[0]).run(timeout=300)
        assert not at.exception
        box = at.radio(key=key)
        answer = [shown(m.value) for m in at.metric if shown(m.label).endswith(" says")]
        assert answer, f"{lesson} {key}: nothing revealed after the guess"
        assert answer[-1] in [shown(o) for o in options], (key, answer, options)  # the model's answer is an option
        assert box.value is not None


@pytest.mark.parametrize("lesson", WALKS)
def test_next_alone_walks_every_lesson_and_shows_every_section(tiny_zoo, lesson: str) -> None:  # noqa: ANN001
    whole = open_page(f"pages/{lesson}.py")
    assert not whole.exception and any("Guided path" in b.label for b in whole.button)
    everything = set(headers(whole))
    seen: set[str] = set()
    at = open_page(f"pages/{lesson}.py", step="1")
    steps = 0
    while True:
        assert not at.exception
        steps += 1
        assert f"Step {steps} of" in all_text(at), f"{lesson}: step {steps} has no card"
        seen |= set(headers(at))
        nexts = [b for b in at.button if b.key == "guide_next"]
        if not nexts:
            break
        nexts[0].click().run(timeout=300)
        assert at.query_params["step"] in ([str(steps + 1)], str(steps + 1))
    assert steps >= 3, f"{lesson}: {steps} steps"
    assert everything <= seen, f"{lesson}: not on any step: {everything - seen}"
    link = [p for p in at.get("page_link")]
    said = all_text(at) + " ".join(s.value for s in at.success)
    assert link or "end of the road" in said  # the last step leads on to the next lesson


def test_a_steps_link_reopens_that_step_and_a_bad_one_says_so(tiny_zoo) -> None:  # noqa: ANN001
    at = open_page("pages/masked_lm.py", step="3")
    assert not at.exception and "Step 3 of 6 · How BERT was trained" in all_text(at)
    assert headers(at)[0] == "The pre-training recipe, live"  # only the step's sections
    at.button(key="guide_back").click().run()
    assert "Step 2 of 6" in all_text(at)
    at.button(key="guide_whole").click().run()
    assert "step" not in at.query_params and "Check yourself" in headers(at)
    at = open_page("pages/masked_lm.py", step="two")
    assert "is not a step of this lesson" in all_text(at) and "Check yourself" in headers(at)


def test_the_road_offers_the_path_from_the_first_lesson(tiny_zoo) -> None:  # noqa: ANN001
    at = open_page("pages/home.py")
    assert not at.exception
    links = [p for p in at.get("page_link") if "guided path" in str(p.proto.label).lower()]
    assert links and "onehot" in links[0].proto.page and "step=1" in str(links[0].proto.query_string or links[0].proto)
