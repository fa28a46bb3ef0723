"""What the ELMo lesson draws: the weighted sum's strips, and what it asks (issue 34): before it shows, which word elmo-mini's forward LM puts first after
"hang", and in which of two pairs of sentences "bank" keeps closer vectors; at the end, the lesson's
check-yourself questions."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import streamlit as st

from components.charts import build_layer_cosines, build_score_bars, build_vector_strip
from components.i18n import Markdown, t, t_plain
from components.quiz import Question, Solved, listed, render_predict, render_quiz
from model_zoo.lessons.cloze import LessonCheck
from model_zoo.lessons.elmo_mix import ONE_VECTOR, WordMix
from model_zoo.words import BOS, EOS, UNK

HANG_WORDS = (".", "around", "camera", "out", "up")  # offered beside the LM's own first word
NAMED = ("out", "camera")  # The Illustrated BERT: a good language model expects "out" rather than "camera"
LAYERS = ("token", "lstm1", "lstm2")  # the quiz's options, ELMo's three layers, bottom first


def use_lm_example(example: str) -> None:
    st.session_state.lm_text = example


def use_preset(weights: tuple[float, float, float]) -> None:
    st.session_state.w0, st.session_state.w1, st.session_state.w2 = weights


def use_pair(a: str, b: str, word: str) -> None:
    st.session_state.a, st.session_state.b, st.session_state.pair_word = a, b, word


def render_strip(mixed: WordMix, layer_names: list[str], word: str, gamma: float) -> None:
    """One word's three layers and their weighted sum as strips of cells, and the weights now."""
    st.plotly_chart(
        build_vector_strip(
            [*layer_names, t_plain("elmo.mix")],
            mixed.rows,
            t_plain("elmo.strip_title", word=word, n=mixed.shown, dim=mixed.dim),
        ),
        key="strip",
    )
    s0, s1, s2 = (f"{w:.2f}" for w in mixed.mix.weights)  # the softmax of the three weights
    st.caption(t("elmo.weights_now", s0=s0, s1=s1, s2=s2, gamma=f"{gamma:.1f}", norm=f"{mixed.mix.norm:.1f}"))


def _place(check: LessonCheck) -> str:
    """Where a word stands among the LM's guesses: "number 5 (5.7%)"."""
    if check.rank is None or check.p is None:
        return t_plain("quiz.elmo_hang.absent")
    return t_plain("quiz.elmo_hang.place", rank=f"{check.rank:,}", p=f"{check.p * 100:.2g}%")


def render_both_ways(
    where: st.delta_generator.DeltaGenerator,
    text: str,
    forward: Sequence[tuple[str, float]],
    backward: Sequence[tuple[str, float]],
) -> None:
    """A biLM's two charts side by side in `where`: the forward LM's next words after the end of `text`, the
    backward LM's words before its start (the ELMo lesson's and the Playground's)."""
    words = text.split()
    left, right = where.columns(2)
    title = t_plain("elmo.forward_title", text=" ".join(words[-4:]))
    left.plotly_chart(build_score_bars(list(forward), title), key="forward")
    title = t_plain("elmo.backward_title", text=" ".join(words[:4]))
    right.plotly_chart(build_score_bars(list(backward), title), key="backward")


MARKERS = (("bos", BOS), ("eos", EOS), ("unk", UNK))  # a biLM's softmax words that are not words


def render_markers(guesses: Sequence[Sequence[tuple[str, float]]], vocab: int) -> None:
    """One line on the markers among the bars shown (`guesses`: each chart's words), where there is one: a
    biLM's softmax scores <S>, </S> and <UNK> as words, and a learner reads them as the model's guesses."""
    shown = {word.strip() for chart in guesses for word, _ in chart}
    said = [t(f"elmo.marker_{key}", n=f"{vocab:,}") for key, mark in MARKERS if mark in shown]
    if said:
        st.caption(t("elmo.markers", said=Markdown(t("elmo.marker_sep").join(said))))


def render_guess_hang(
    lm_name: str,
    text: str,
    guesses: Sequence[tuple[str, float]],
    vocab: int,
    ranks: Callable[[], Mapping[str, LessonCheck]],
) -> None:
    """Predict, then see: the word `lm_name`'s forward LM puts first after `text`. `guesses`: its best ones;
    `ranks()`: where it puts "out" and "camera" among all `vocab` words. The options are HANG_WORDS and its
    own first word, in alphabetical order; its bars are drawn only after the pick."""
    first = guesses[0][0].strip()

    def solve() -> Solved:
        placed = ranks()
        facts = {"model": lm_name, "top": listed(guesses, 5, quoted=True), "vocab": f"{vocab:,}"}
        return Solved(first, facts | {word: _place(placed[word]) for word in NAMED})

    options = tuple(sorted({*HANG_WORDS, first}, key=str.lower))
    question = Question("elmo_hang", options, solve, about={"model": lm_name, "text": text})
    if render_predict(question, lm_name) is not None:
        title = t_plain("elmo.forward_title", text=" ".join(text.split()[-4:]))
        st.plotly_chart(build_score_bars(list(guesses), title), key="hang_forward")


def render_guess_pairs(
    model_name: str,
    pairs: Mapping[str, tuple[str, str]],
    cosines: Callable[[str, str], np.ndarray],
    layer_names: Sequence[str],
) -> None:
    """Predict, then see: in which of two pairs of sentences ("river": the same sense of "bank", "money": two
    senses) the top layer gives "bank" closer vectors. `cosines(a, b)`: "bank"'s cosine in a and b at each
    layer, bottom first. After the pick: both pairs, layer by layer."""

    def solve() -> Solved:
        river, money = (float(cosines(*pairs[k])[-1]) for k in ("river", "money"))
        token = float(cosines(*pairs["river"])[0])
        answer = "tie" if abs(river - money) < 5e-4 else "river" if river > money else "money"
        return Solved(
            answer, {"model": model_name, "river": f"{river:.3f}", "money": f"{money:.3f}", "token": f"{token:.3f}"}
        )

    (a, b), (_, c) = pairs["river"], pairs["money"]
    question = Question(
        "elmo_pairs",
        ("river", "money", "tie"),
        solve,
        translated=True,
        about={"a": a, "b": b, "c": c, "model": model_name},
    )
    if render_predict(question, model_name) is not None:
        for column, key in zip(st.columns(2), ("river", "money")):
            bars = dict(zip(layer_names, (float(x) for x in cosines(*pairs[key]))))
            column.plotly_chart(build_layer_cosines(bars, t_plain(f"quiz.elmo_pairs.opt_{key}")), key=f"pairs_{key}")


def render_check(model_name: str, bank: Callable[[], float], stick: Callable[[], np.ndarray]) -> None:
    """The lesson's questions: `bank()` is "bank"'s top-layer cosine in the river and the money sentence;
    `stick()` the two "stick"s' cosine at each layer, bottom first (the first pair of the page's examples)."""

    def solve_bank() -> Solved:
        cos = bank()
        return Solved("same" if cos > ONE_VECTOR else "different", {"model": model_name, "cos": f"{cos:.3f}"})

    def solve_layer() -> Solved:
        cos = [float(c) for c in stick()]
        same = next((layer for layer, c in zip(LAYERS, cos) if c > ONE_VECTOR), "none")
        return Solved(same, {"model": model_name} | {layer: f"{c:.3f}" for layer, c in zip(LAYERS, cos)})

    render_quiz(
        (
            Question("elmo_bank", ("same", "different"), solve_bank, translated=True),
            Question("elmo_layer", (*LAYERS, "none"), solve_layer, translated=True, about={"model": model_name}),
        )
    )
