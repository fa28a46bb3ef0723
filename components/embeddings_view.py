"""What the Word embeddings lesson draws around its predict-first moments (issue 34): the word a static model
puts nearest to "king", and whether "bank" keeps one vector across two sentences; and its check-yourself
questions."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from components.charts import build_score_bars, build_word_map
from components.i18n import t, t_plain
from components.quiz import Question, Solved, listed, render_predict, render_quiz
from components.url import WORD_CHARS, text_box
from model_zoo.lessons.axes import WordAxes
from model_zoo.lessons.elmo_mix import ONE_VECTOR

NEAREST = "king"  # the word of the nearest-word moment
NEAREST_OPTIONS = ("emperor", "prince", "queen", "throne")  # plausible guesses; the model's own answer joins them


def render_guess_nearest(model_name: str, word: str, neighbours: list[tuple[str, float]]) -> None:
    """Predict, then see: which word the model puts nearest to `word`. The options are plausible candidates
    and the model's own nearest word, in alphabetical order (the order says nothing); the bars come after."""
    first = neighbours[0][0]
    question = Question(
        "emb_nearest",
        tuple(sorted({*NEAREST_OPTIONS, first}, key=str.lower)),
        lambda: Solved(first, {"model": model_name, "word": word, "top": listed(neighbours, 5, ".3f", str)}),
        about={"word": word, "model": model_name},
    )
    if render_predict(question, model_name) is not None:
        st.plotly_chart(
            build_score_bars(neighbours, t_plain("emb.neighbours_of", word=word), percent=False), key="guess_nn"
        )


def render_guess_one_vector(model_name: str, word: str, a: str, b: str, cosine: float) -> bool:
    """Predict, then see: does the static model give `word` the same vector in sentences `a` and `b`
    (`cosine` is the cosine of its two vectors)? True once revealed: the page then draws every sentence's
    vector."""
    question = Question(
        "emb_bank",
        ("same", "different"),
        lambda: Solved("same" if cosine > ONE_VECTOR else "different", {"model": model_name, "cos": f"{cosine:.3f}"}),
        translated=True,
        about={"word": word, "a": a, "b": b, "model": model_name},
    )
    return render_predict(question, model_name) is not None


def render_check(
    model_name: str, analogy: Callable[[], tuple[str, float]], similarity: Callable[[str, str], float]
) -> None:
    """The lesson's questions: king − man + woman (`analogy`: the model's best answer and its cosine), and
    whether dog is closer to cat or to car (`similarity`: the model's cosine of two words)."""

    def solve_analogy() -> Solved:
        best, score = analogy()
        return Solved(best, {"model": model_name, "cos": f"{score:.3f}"})

    def solve_dog() -> Solved:
        cat, car = similarity("dog", "cat"), similarity("dog", "car")
        return Solved("cat" if cat > car else "car", {"model": model_name, "cat": f"{cat:.2f}", "car": f"{car:.2f}"})

    render_quiz(
        (
            Question("emb_analogy", ("queen", "princess", "prince", "woman"), solve_analogy),
            Question("emb_dog", ("cat", "car"), solve_dog),
        )
    )


# -- axes with a meaning (issue 38) ----------------------------------------------------------------------
def pole_pair(name: str, default: tuple[str, str], label: str) -> tuple[str, str]:
    """Two words naming an axis's ends (`name`_from, `name`_to, kept in the URL), stripped and lower-cased."""
    st.markdown(f"**{label}**")
    a, b = st.columns(2)
    ends = []
    for column, end, word in zip((a, b), ("from", "to"), default):
        typed = text_box(
            column.text_input,
            t(f"emb.axes_{end}"),
            f"{name}_{end}",
            WORD_CHARS,
            value=word,
            placeholder=t_plain("emb.axes_none") if not word else None,
        )
        ends.append(typed.strip().lower())
    return ends[0], ends[1]


def render_word_axes(
    model_name: str, placed: WordAxes, x: tuple[str, str], y: tuple[str, str] | None, groups: list[str]
) -> None:
    """The words on the named axes, and each word's nearest other word before and after the x direction is
    removed from every vector (the pairs the direction kept apart come together)."""
    x_title = f"{x[0]}  →  {x[1]}"
    y_title = t_plain("emb.axes_y_pca") if y is None else f"{y[0]}  →  {y[1]}"
    title = t_plain("emb.axes_title", model=model_name, n=len(placed.words))
    st.plotly_chart(build_word_map(placed.words, placed.xy, groups, title, (x_title, y_title)), key="axes_fig")
    changed = [
        (w, before, after)
        for w, before, after in zip(placed.words, placed.nearest_before, placed.nearest_after)
        if before != after
    ]
    st.subheader(t("emb.axes_removed_title", a=x[0], b=x[1]))
    st.write(
        t("emb.axes_removed", a=x[0], b=x[1], n=len(changed), total=len(placed.words))
        + (
            " " + t("emb.axes_removed_some", pairs=", ".join(f"{w} → {a}" for w, _, a in changed[:6]))
            if changed
            else ""
        )
    )
    if changed:
        st.dataframe(
            {
                t_plain("emb.axes_col_word"): [w for w, _, _ in changed],
                t_plain("emb.axes_col_before"): [b for _, b, _ in changed],
                t_plain("emb.axes_col_after"): [a for _, _, a in changed],
            },
            hide_index=True,
        )
