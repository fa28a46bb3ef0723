"""The first screen does something (issue 34): on a projector (1440 x 900) and on a phone (390 x 844), in
both languages, every lesson's main model output (the element it marks `main_output`) starts on the first
screen with at least 100 px of it in view (all of it, where it is shorter), and at most 80 words of prose
stand above it. Measured in Chromium by scripts/first_screen.py, which prints the same for a running app."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from components.road import ready_lessons
from scripts.first_screen import MAX_WORDS, SCREENS, measure
from tests.test_browser import browser, server  # noqa: F401  (the fixtures: a fresh app, headless Chromium)

pytestmark = pytest.mark.browser

LESSONS = [lesson.key for lesson in ready_lessons()]
IN_VIEW = 100  # px of the main output that must show on the first screen (all of it where it is shorter)


@pytest.fixture(scope="module", params=list(SCREENS))
def screen(request, browser) -> Iterator[tuple[str, object]]:  # noqa: F811
    width, height = SCREENS[request.param]
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        yield request.param, context.new_page()
    finally:
        context.close()


def test_every_lesson_has_thirteen_pages_to_measure() -> None:
    assert len(LESSONS) == 13 and "home" not in LESSONS and "playground" not in LESSONS


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("lesson", LESSONS)
def test_main_output_is_on_the_first_screen_under_a_short_lede(server, screen, lesson: str, lang: str) -> None:  # noqa: F811
    name, page = screen
    row = measure(page, server, lesson, lang, name)
    assert row.top is not None, f"{lesson}: no element marked main_output"
    assert row.height is not None and row.height > 0
    shown = min(row.height, IN_VIEW)
    assert row.top + shown <= row.viewport, f"{lesson} ({lang}, {name}): main output at {row.top:.0f} px"
    assert row.words is not None and row.words <= MAX_WORDS, f"{lesson} ({lang}, {name}): {row.words} words above"
