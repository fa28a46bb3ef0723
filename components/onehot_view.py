"""What the one-hot lesson asks before it shows (issue 34): whether a one-hot vector puts "puppy" nearer to
"dog" than to "car", and which of the learner's next words GloVe's learned vectors put nearest the first one."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import streamlit as st

from components.charts import build_score_bars, build_similarity_heatmap
from components.i18n import t, t_plain
from components.quiz import Question, Solved, listed, render_predict
from model_zoo import ModelZooError

ONE_HOT = "one-hot"  # who answers the first moment: the vectors themselves, no model
PUPPY = ("puppy", "dog", "car")  # a new word, a word it means nearly, a word it does not
NEAREST_OPTIONS = 7  # the learner's words offered for GloVe's nearest: its answer is the nearest of these


def render_guess_puppy(vocabulary: Sequence[str], cosines: Callable[[list[str], list[str]], np.ndarray]) -> None:
    """Predict, then see: "puppy" joins the learner's words; is its one-hot vector nearer to "dog" or to "car"?
    `cosines(words, vocabulary)` gives the words' one-hot cosines over the vocabulary. After the pick: the three
    words' cosines."""
    new, near, far = PUPPY
    grown = [*vocabulary, *(w for w in PUPPY if w not in vocabulary)]

    def solve() -> Solved:
        cos = cosines(list(PUPPY), grown)
        a, b = float(cos[0, 1]), float(cos[0, 2])
        answer = "equal" if np.isclose(a, b) else near if a > b else far
        facts = {"near": f"{a:.2f}", "far": f"{b:.2f}", "n": f"{len(grown):,}", "at": grown.index(new) + 1}
        return Solved(answer, facts)

    question = Question(
        "onehot_puppy", (far, near, "equal"), solve, translated=True, about={"n": f"{len(vocabulary):,}"}
    )
    if render_predict(question, ONE_HOT) is not None:
        st.plotly_chart(
            build_similarity_heatmap(
                list(PUPPY), cosines(list(PUPPY), grown), t_plain("onehot.sim_onehot_title"), number=False
            ),
            key="puppy_similarity",
        )


def render_guess_nearest(
    model_name: str, words: Sequence[str], read: Callable[[tuple[str, ...]], tuple[str, list[str], np.ndarray]]
) -> None:
    """Predict, then see: which of the learner's next words GloVe puts nearest to their first. `read(words)`
    gives the model's name, the words it knows (in order) and their cosines; the options are
    words[1 : NEAREST_OPTIONS + 1] that it knows, in alphabetical order (which words it knows tells nothing of
    their order, and nothing of the cosines is shown before the pick); then the bars of the first word's cosine
    with each option, highest first, are drawn."""
    word, offered = words[0], tuple(words[1 : NEAREST_OPTIONS + 1])
    if not offered:
        return
    # Only words the model has vectors for are offered, and only a choice of two or more is a question: "我" is
    # not in GloVe's English vocabulary, and "<b>hi</b>" leaves "hi" alone beside "b"
    try:
        name, known, cosines = read((word, *offered))
    except ModelZooError:  # no model to ask: the comparison below says why
        return
    if not known or known[0] != word or len(known) < 3:
        st.caption(t("onehot.nearest_none", model=name, word=word))
        return
    near = sorted(((w, float(c)) for w, c in zip(known[1:], cosines[0, 1:])), key=lambda x: -x[1])

    def solve() -> Solved:
        return Solved(near[0][0], {"word": word, "model": name, "top": listed(near, 4, ".2f", str)})

    options = tuple(sorted(known[1:], key=str.lower))
    question = Question("onehot_nearest", options, solve, about={"word": word, "model": model_name})
    if render_predict(question, model_name) is not None:
        title = t_plain("onehot.nearest_title", word=word, model=name)
        st.plotly_chart(build_score_bars(near, title, percent=False), key="nearest_bars")
