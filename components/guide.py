"""A guided path through a lesson (issue 34): short steps, each showing the sections (and so the widgets) it
uses, with what to look at, what to try and what to notice; Back and Next; the step kept in the URL (?step=2),
so a step's link reopens it. Without ?step= the lesson is the whole page at once, as before, with one button
in the sidebar that starts the path; one click leaves the path for the whole page. Next on a lesson's last step opens the
next lesson of the road at its first step: the home page's path runs from the first lesson to the last.

A page lists its steps and asks, section by section, whether the current step shows it:

    path = begin_path("masked_lm", STEPS)
    if path.shows("fill"):
        fill_in_the_blanks(model)
    ...
    path.end()

Strings: guide.<lesson>.<step>_title (a few words) and guide.<lesson>.<step> (one to three sentences).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import streamlit as st

from .i18n import t, t_plain
from .road import Lesson, ready_lessons

STEP = "step"  # the query parameter


@dataclass(frozen=True)
class Step:
    key: str  # guide.<lesson>.<key> and <key>_title in the i18n files
    sections: tuple[str, ...]  # the page's sections this step shows, in the page's order


def current_step(steps: Sequence[Step]) -> int | None:
    """The step the URL names (0-based), or None: the whole page. A step past the end opens the last; a value
    that is no step number opens the whole page and says so in one sentence."""
    value = st.query_params.get(STEP, "")
    if not value:
        return None
    if value.isdigit() and int(value) >= 1:
        return min(int(value), len(steps)) - 1
    st.info(t("guide.unknown", value=value[:20], n=len(steps)), icon=":material/info:")
    return None


def _go(step: int | None) -> None:
    if step is None:
        st.query_params.pop(STEP, None)
    else:
        st.query_params[STEP] = str(step + 1)


@dataclass(frozen=True)
class GuidedPath:
    lesson: str
    steps: tuple[Step, ...]
    at: int | None  # the current step (0-based), or None: the whole page

    def shows(self, section: str) -> bool:
        """Whether the page draws `section` now."""
        return self.at is None or section in self.steps[self.at].sections

    def end(self) -> None:
        """At the foot of a step: Back and Next (Next on the last step: the next lesson's first step)."""
        if self.at is None:
            return
        at, steps, lesson = self.at, self.steps, self.lesson
        row = st.container(horizontal=True, horizontal_alignment="distribute", key="guide_nav")
        row.button(
            t("guide.back"),
            key="guide_back",
            icon=":material/arrow_back:",
            disabled=at == 0,
            on_click=_go,
            args=(at - 1,),
        )
        if at + 1 < len(steps):
            row.button(
                t("guide.next", title=t_plain(f"guide.{lesson}.{steps[at + 1].key}_title")),
                key="guide_next",
                icon=":material/arrow_forward:",
                type="primary",
                on_click=_go,
                args=(at + 1,),
            )
            return
        following = next_lesson(lesson)
        if following is None:
            row.success(t("guide.road_end"), icon=":material/flag:")
            return
        row.page_link(
            following.file,
            label=t_plain("guide.next_lesson", title=t_plain(f"lesson.{following.key}.title")),
            icon=":material/arrow_forward:",
            query_params={STEP: "1", "lang": st.session_state.get("lang", "en")},
        )


def begin_path(lesson: str, steps: Sequence[Step]) -> GuidedPath:
    """Under the lesson's title: the current step's card (or, on the whole page, the button that starts the
    path). The page asks the result which sections to draw, and ends with its Back and Next."""
    at = current_step(steps)
    if at is None:  # in the sidebar: above the lesson it would push the main output off a phone's first screen
        st.sidebar.button(
            t("guide.start", n=len(steps)),
            key="guide_start",
            icon=":material/route:",
            type="primary",
            on_click=_go,
            args=(0,),
            width="stretch",
        )
        return GuidedPath(lesson, tuple(steps), None)
    step = steps[at]
    with st.container(border=True, key="guide_card"):
        head, whole = st.columns([4, 1], vertical_alignment="center")
        head.markdown(f"**{t('guide.step_of', n=at + 1, total=len(steps))} · {t(f'guide.{lesson}.{step.key}_title')}**")
        whole.button(t("guide.whole"), key="guide_whole", icon=":material/unfold_more:", on_click=_go, args=(None,))
        st.progress((at + 1) / len(steps))
        st.markdown(t(f"guide.{lesson}.{step.key}"))
    return GuidedPath(lesson, tuple(steps), at)


def next_lesson(lesson: str) -> Lesson | None:
    """The lesson after `lesson` on the road, or None after the last."""
    lessons = ready_lessons()
    keys = [x.key for x in lessons]
    here = keys.index(lesson) if lesson in keys else len(keys)
    return lessons[here + 1] if here + 1 < len(lessons) else None
