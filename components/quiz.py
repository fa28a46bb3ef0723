"""Check yourself: two or three questions at the end of each lesson, answered by using the page.

A question's answer is never stored: `solve` asks the live model (through the page's serving calls) when
the learner checks an answer or the teacher shows them all, and the explanation is filled with the figures
it found. Strings live in assets/i18n under quiz.<key>: q (the question), why (the explanation, with the
facts as {placeholders}) and, for options that are words of a language rather than data, opt_<option>.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from model_zoo import ModelZooError

from .i18n import t, t_plain
from .notices import render_error


@dataclass(frozen=True)
class Solved:
    """What the live model says: the right option, and the figures the explanation quotes."""

    answer: str
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Question:
    key: str  # quiz.<key>.q / .why in the i18n files; also the widgets' key
    options: tuple[str, ...]  # what the learner picks from
    solve: Callable[[], Solved]  # runs the model; raises ModelZooError when it cannot
    translated: bool = False  # options are i18n keys quiz.<key>.opt_<option>, not data (words, numbers)
    shown: Callable[[str], str] | None = None  # how an option is written on the page it asks about

    def label(self, option: str) -> str:
        if self.shown is not None:
            return self.shown(option)
        return t_plain(f"quiz.{self.key}.opt_{option}") if self.translated else option


def _solved(question: Question) -> Solved | None:
    """The question's answer from the live model, or None and the reason shown."""
    try:
        with st.spinner(t_plain("quiz.solving")):
            return question.solve()
    except ModelZooError as err:
        render_error(err)
        return None


def render_quiz(questions: Sequence[Question]) -> None:
    """The lesson's questions: pick an answer and check it against the model, or show every answer
    (a teacher on a projector). Nothing runs until one of the two is asked for."""
    st.header(t("quiz.title"))
    st.caption(t("quiz.intro"))
    reveal = st.toggle(t("quiz.reveal"), key="quiz_reveal")
    for number, question in enumerate(questions, 1):
        with st.container(border=True):
            st.markdown(f"**{number}.** {t(f'quiz.{question.key}.q')}")
            choice = st.radio(
                t("quiz.your_answer"),
                question.options,
                index=None,
                format_func=question.label,
                key=f"quiz_{question.key}",
                horizontal=True,
                label_visibility="collapsed",
            )
            if choice is None and not reveal:
                continue
            solved = _solved(question)
            if solved is None:
                continue
            answer = question.label(solved.answer)
            if choice is not None and choice == solved.answer:
                st.success(t("quiz.right"), icon=":material/check_circle:")
            elif choice is not None:
                st.warning(t("quiz.wrong", answer=answer), icon=":material/info:")
            else:
                st.markdown(t("quiz.answer", answer=answer))
            st.caption(t(f"quiz.{question.key}.why", answer=answer, **solved.facts))
