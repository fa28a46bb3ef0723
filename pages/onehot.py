"""Lesson 1: one-hot (1-of-N) vectors, why every pair of words is equally far apart, and word classes."""

from typing import Any

import streamlit as st

import serving
from components import onehot_view as view
from components.charts import build_matrix, build_similarity_heatmap
from components.frame import ensure_app_frame
from components.guide import Step, begin_path
from components.i18n import md_escape, t
from components.notices import render_script_note, with_fallback
from components.quiz import Question, Solved, render_quiz
from components.url import flag_from_url, text_box
from model_zoo.registry import VECTORS
from serving import lesson_vectors

MAX_WORDS = 40  # rows a heatmap can show legibly
MAX_CHARS = 100_000
STATIC = "glove-6b-50d"
STEPS = (  # every step that reads the learner's words shows the box they type them in
    Step("matrix", ("words", "matrix", "guess_puppy")),
    Step("similarity", ("words", "guess_nearest", "similarity")),
    Step("classes", ("words", "classes")),
    Step("check", ("check",)),
)


def read_words() -> tuple[list[str], list[str]]:
    """The learner's words: the vocabulary of their text, and the first MAX_WORDS of it that are drawn."""
    text = text_box(
        st.text_area, t("onehot.text"), "text", MAX_CHARS, value=t("onehot.default_text"), help=t("onehot.text_help")
    )
    vocabulary = lesson_vectors.vocabulary_of(text)
    if not vocabulary:
        st.info(t("onehot.no_words"), icon=":material/info:")
        st.stop()
    shown = vocabulary[:MAX_WORDS]
    if len(vocabulary) > MAX_WORDS:
        st.caption(t("onehot.capped", shown=MAX_WORDS, total=len(vocabulary)))
    return vocabulary, shown


def one_hot_matrix(vocabulary: list[str], shown: list[str]) -> None:
    """1. The one-hot matrix, and what it costs at 30,000 or 3 million words."""
    st.header(t("onehot.matrix_title"))
    n = len(vocabulary)
    st.container(key="main_output").plotly_chart(  # the lesson's main output (scripts/first_screen.py)
        build_matrix(
            lesson_vectors.one_hot(shown, shown),
            shown,
            shown,
            colorscale="Blues",
            zmin=0,
            zmax=1,
            hover="%{y} · %{x}: %{z:.0f}",
        ),
        key="onehot_matrix",
    )
    cols = st.columns(3)  # under the matrix: on a phone the three stack, and the matrix keeps the first screen
    cols[0].metric(t("onehot.vocab_size"), f"{n:,}")
    cols[1].metric(t("onehot.numbers_per_word"), f"{n:,}")
    cols[2].metric(t("onehot.nonzero"), "1")
    st.caption(
        t(
            "onehot.scale",
            kb_30k=f"{lesson_vectors.bytes_per_vector(30_000) / 1e3:,.0f}",
            mb_3m=f"{lesson_vectors.bytes_per_vector(3_000_000) / 1e6:,.0f}",
            gb_30k=f"{30_000 * lesson_vectors.bytes_per_vector(30_000) / 1e9:,.1f}",
        )
    )


def glove_cosines(words: tuple[str, ...]) -> tuple[str, list[str], Any]:
    """GloVe's name, the `words` it knows and their cosines (shown only once the learner has guessed)."""
    glove, _ = serving.static_model(STATIC)
    read = lesson_vectors.static_cosines(glove.name, words)
    return glove.name, read.known, read.cosines


def similarity(shown: list[str]) -> None:
    """2. Cosine similarity: every pair of one-hot vectors is 0; GloVe's are not."""
    flag_from_url("glove", False)  # before the toggle, which drops another value without a word
    use_glove = st.toggle(t("onehot.use_glove"), key="glove", bind="query-params")
    if use_glove:
        glove = with_fallback(STATIC, serving.static_model)
        read = lesson_vectors.static_cosines(glove.name, tuple(shown))
        render_script_note(glove.name, " ".join(shown), VECTORS)  # the one-hot matrix above reads any script
        if read.missing:
            st.info(t("onehot.missing", words=", ".join(read.missing)), icon=":material/info:")
        labels = read.known
        sims = read.cosines
        title = t("onehot.sim_glove_title")
    else:
        labels, sims, title = shown, lesson_vectors.one_hot_cosines(shown), t("onehot.sim_onehot_title")
    if len(labels) >= 2:
        st.plotly_chart(build_similarity_heatmap(labels, sims, title, number=False), key="similarity")
    if len(labels) >= 3:
        a, b, c = labels[:3]
        st.markdown(t("onehot.compare", a=a, b=b, c=c, ab=f"{sims[0, 1]:.2f}", ac=f"{sims[0, 2]:.2f}"))
    if not use_glove:
        st.caption(t("onehot.onehot_note"))
    elif (pairs := read.extremes()) is not None:
        (a, b, ab), (c, d, cd) = pairs
        st.caption(t("onehot.glove_note", a=a, b=b, ab=f"{ab:.2f}", c=c, d=d, cd=f"{cd:.2f}"))
    else:
        st.caption(t("onehot.glove_few"))


UNCLASSED_SHOWN = 8  # the words without a WordNet class that the line under the chart names


def classes(shown: list[str]) -> None:
    """3. Word classes: the middle step, and why it is too coarse."""
    st.header(t("onehot.class_title"))
    st.write(t("onehot.class_intro"))
    none = t("onehot.no_class")
    table = lesson_vectors.word_class_table(shown, none)
    word_class, class_names = table.classes, table.names
    st.plotly_chart(
        build_matrix(
            table.matrix,
            shown,
            class_names,
            colorscale="Greens",
            zmin=0,
            zmax=1,
            hover="%{y} · %{x}: %{z:.0f}",
        ),
        key="class_matrix",
    )
    shared = {c: [w for w, wc in zip(shown, word_class) if wc == c] for c in class_names if c != none}
    groups = [f"**{md_escape(c)}**: {md_escape(', '.join(ws))}" for c, ws in shared.items() if len(ws) > 1]
    if groups:
        st.markdown(t("onehot.class_groups") + "\n\n" + "\n".join(f"- {g}" for g in groups))
    if unclassed := [w for w, wc in zip(shown, word_class) if wc == none]:  # why, in one line, with their words
        st.caption(t("onehot.unclassed", words=first_few(unclassed), none=none))
    if table.read_as:
        st.caption(t("onehot.read_as", pairs=first_few([f"{word} → {base}" for word, base in table.read_as])))
    st.caption(t("onehot.class_note"))


def first_few(items: list[str]) -> str:
    """The first UNCLASSED_SHOWN of `items`, and how many more: "the, of, 银 (+3)"."""
    more = len(items) - UNCLASSED_SHOWN
    return ", ".join(items[:UNCLASSED_SHOWN]) + (f" (+{more})" if more > 0 else "")


def check_yourself() -> None:
    def solve_cosine() -> Solved:
        cos = float(lesson_vectors.one_hot_cosines(["dog", "cat"], ["dog", "cat", "car"])[0, 1])
        return Solved(f"{cos:g}", {"cos": f"{cos:g}"})

    def solve_size() -> Solved:
        n = lesson_vectors.one_hot(["w0"], [f"w{i}" for i in range(30_000)]).shape[1]
        return Solved(
            f"{n:,}", {"n": f"{n:,}", "kb": f"{lesson_vectors.bytes_per_vector(n) / 1e3:,.0f}"}
        )  # as the scale line: 1 KB = 1,000 bytes

    render_quiz(
        (
            Question("onehot_cos", ("0", "0.5", "1"), solve_cosine),
            Question("onehot_size", ("1", "300", "30,000"), solve_size),
        )
    )


def run() -> None:
    ensure_app_frame()
    st.title(t("lesson.onehot.title"))
    st.write(t("onehot.intro"))
    path = begin_path("onehot", STEPS)
    vocabulary, shown = read_words() if path.shows("words") else ([], [])
    if path.shows("matrix"):
        one_hot_matrix(vocabulary, shown)
    if path.shows("guess_puppy"):
        view.render_guess_puppy(vocabulary, lesson_vectors.one_hot_cosines)
    if path.shows("similarity"):
        st.header(t("onehot.similarity_title"))
        view.render_guess_nearest(STATIC, shown, glove_cosines)  # before the toggle, which may draw the answer
        similarity(shown)
    if path.shows("classes"):
        classes(shown)
    if path.shows("check"):
        check_yourself()
    path.end()


run()
