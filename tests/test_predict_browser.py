"""Predict, then see, in the browser (issue 34): before the learner picks, a predict-first moment's answer is
neither on screen nor in the page's HTML (no reveal, no explanation, no output of that moment); after the
pick, the model's answer and the explanation appear beside the guess. On the offline pack."""

from __future__ import annotations

import pytest

from components.road import ready_lessons
from scripts.first_screen import settle
from tests.test_browser import browser, server  # noqa: F401  (the fixtures: a fresh app, headless Chromium)

pytestmark = pytest.mark.browser

LESSONS = [lesson.key for lesson in ready_lessons()]


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_answer_reaches_the_browser_only_after_the_guess(server, browser, lesson: str) -> None:  # noqa: F811
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    try:
        page.goto(f"{server}/{lesson}?lang=en")
        settle(page)
        boxes = page.locator('[class*="st-key-predict_"][class*="_box"]')
        assert boxes.count() >= 2, f"{lesson}: {boxes.count()} predict-first moments"
        revealed = page.locator('[class*="st-key-predict_"][class*="_reveal"]')
        before = page.content()
        assert revealed.count() == 0 and boxes.locator('[data-testid="stMetric"]').count() == 0
        box = boxes.first
        box.scroll_into_view_if_needed()
        box.locator('[role="radiogroup"] label').first.click()
        reveal = revealed.first
        reveal.wait_for(timeout=120_000)
        settle(page)
        why = reveal.locator('[data-testid="stCaptionContainer"]').last.inner_text()
        said = reveal.locator('[data-testid="stMetric"]').last.inner_text()
        assert " says" in said and why
        assert why[:60] not in before  # the explanation with the model's numbers was not in the page before
    finally:
        page.close()
