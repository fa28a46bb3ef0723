"""Questions answered by the live model: the check-yourself questions at the end of each lesson, and the
predict-then-see moments inside it (issue 34). Both are one structure: a question, the learner's answer, the
model's answer computed live, and the explanation filled from the model's numbers.

A predict moment asks before the model's output is drawn: nothing of the answer (not the model's output, not
which option it picks) is computed or sent to the browser until the learner has picked; then the guess stands
beside the model's answer, and the page may draw the output the moment was about.

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

from .charts import percent_label
from .classroom_view import in_each_language, render_ask
from .i18n import current_lang, strings, t, t_plain
from .notices import render_error


def listed(
    pairs: Sequence[tuple[str, float]],
    n: int = 3,
    number: str | None = None,
    word: Callable[[str], str] = str.strip,
    quoted: bool = False,
) -> str:
    """The first `n` (word, score) pairs as the explanations quote them: probabilities as the bars beside them
    label them ("france 99.7%, europe 0.1%, canada 0.03%": a ".0%" wrote 100%, 0%, 0% beside bars of 99.7%,
    0.1% and 0.03%), or with `number`=".3f" "prince 0.824, queen 0.784"; `word` writes the word, `quoted` puts
    it in “”."""
    shown = (f"“{word(w)}”" if quoted else word(w) for w, _ in pairs[:n])
    score = percent_label if number is None else (lambda x: f"{x:{number}}")
    return ", ".join(f"{w} {score(s)}" for w, (_, s) in zip(shown, pairs[:n]))


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
    about: dict[str, Any] = field(default_factory=dict)  # fills the question's {placeholders} (its sentence)

    def label(self, option: str) -> str:
        if self.shown is not None:
            return self.shown(option)
        return t_plain(f"quiz.{self.key}.opt_{option}") if self.translated else named(option)


def named(option: str) -> str:
    """A model's word as an option: a punctuation mark with its name beside it (". (full stop)": a lone "." among
    the words was nearly invisible on a projector), any other word as it is."""
    mark = option.strip()
    if not mark or f"punct.{mark}" not in strings("en"):
        return option
    return t_plain("quiz.named_mark", mark=mark, name=t_plain(f"punct.{mark}"))


def _solved(question: Question) -> Solved | None:
    """The question's answer from the live model, or None and the reason shown."""
    try:
        with st.spinner(t_plain("quiz.solving")):
            return question.solve()
    except ModelZooError as err:
        render_error(err)
        return None


def _options(question: Question, key: str) -> str | None:
    return st.radio(
        t("quiz.your_answer"),
        question.options,
        index=None,
        format_func=question.label,
        key=key,
        horizontal=True,
        label_visibility="collapsed",
    )


def _why(question: Question, solved: Solved, answer: str) -> None:
    st.caption(t(f"quiz.{question.key}.why", answer=answer, **solved.facts))


def _ask_class(question: Question, model: str = "") -> None:
    """A teacher's "Ask the class" under the question (components.classroom_view): the model's answer,
    the options as this page words them and the explanation go with it, computed on the click."""

    def details() -> dict[str, Any] | None:
        solved = _solved(question)
        if solved is None:
            return None
        answer = question.label(solved.answer)
        written = in_each_language(prompt, lambda: {o: question.label(o) for o in question.options})
        return {
            "kind": "lesson",
            "answer": solved.answer,
            "model": model or str(solved.facts.get("model", "")) or t_plain("class.the_model"),
            "labels": written[current_lang()]["labels"],  # the projector's, in the teacher's language
            "why": t_plain(f"quiz.{question.key}.why", answer=answer, **solved.facts),
            "in": written,  # each student reads the question in their own language
        }

    def prompt() -> str:
        return t_plain(f"quiz.{question.key}.q", **question.about)

    render_ask(question.key, prompt(), question.options, details)


def render_quiz(questions: Sequence[Question]) -> None:
    """The lesson's questions: pick an answer and check it against the model, or show every answer
    (a teacher on a projector). Nothing runs until one of the two is asked for."""
    st.header(t("quiz.title"))
    st.caption(t("quiz.intro"))
    reveal = st.toggle(t("quiz.reveal"), key="quiz_reveal")
    for number, question in enumerate(questions, 1):
        with st.container(border=True):
            st.markdown(f"**{number}.** {t(f'quiz.{question.key}.q', **question.about)}")
            choice = _options(question, f"quiz_{question.key}")
            _ask_class(question)
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
            _why(question, solved, answer)


def render_predict(question: Question, model: str) -> Solved | None:
    """A predict-then-see moment: the question, the learner's pick, and only then the model's answer beside
    it and one line on what it means. Returns the model's answer once revealed (the page then draws the
    output the moment was about), None while the learner has not guessed."""
    with st.container(border=True, key=f"predict_{question.key}_box"):
        st.markdown(f"**{t('predict.lead')}** {t(f'quiz.{question.key}.q', **question.about)}")
        choice = _options(question, f"predict_{question.key}")
        _ask_class(question, model)
        if choice is None:
            st.caption(t("predict.waiting", model=model))
            return None
        solved = _solved(question)
        if solved is None:
            return None
        with st.container(key=f"predict_{question.key}_reveal"):
            answer = question.label(solved.answer)
            yours, theirs = st.columns(2)
            yours.metric(t("predict.yours"), question.label(choice))
            theirs.metric(t("predict.model", model=model), answer)
            if choice == solved.answer:
                st.success(t("predict.same", model=model), icon=":material/check_circle:")
            else:
                st.info(t("predict.differs", model=model), icon=":material/lightbulb:")
            _why(question, solved, answer)
        return solved
