"""What the Transformer lesson draws: where one token's attention reaches, layer by layer, and the moments that
ask first (issue 34): does a head give more to a word far back than to one nearby, and how much can an
encoder's token give a word after it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import streamlit as st

from components.charts import build_matrix, build_score_bars
from components.i18n import t_plain
from components.quiz import Question, Solved, render_predict
from components.tokens import readable
from model_zoo import Encoding, WordNotInText
from model_zoo.lessons import attention

IT = "The animal didn't cross the street because it was too tired."  # the moments' sentence (Illustrated Transformer)
FAR, NEAR, AFTER = "animal", "street", "tired"  # a word 8 tokens before "it", one 2 before it, one after it


def render_reach(strongest: list[list[float]], tokens: list[str], i: int, model_name: str, key: str) -> None:
    """Token `i`'s attention over `tokens`, one row per layer: each cell the most any one head of the layer gives
    that token (cells of a row may come from different heads, so a row may add up to more than 1)."""
    st.plotly_chart(
        build_matrix(
            strongest,
            [t_plain("tf.layer", n=layer + 1) for layer in range(len(strongest))],
            [f"{k}:{readable(tok)}" for k, tok in enumerate(tokens)],
            t_plain("tf.reach_chart", word=tokens[i], model=model_name),
            zmin=0.0,
            zmax=1.0,
            colorscale="Blues",
            hover="%{y} · %{x}<br>%{z:.2f}",
        ),
        key=key,
    )


def first_token(view: Encoding, word: str) -> int:
    """The first token of `word` (a word of the view's text, any case), whatever the tokenizer made of it."""
    words = [w.lower() for w in view.words]
    if word in words:
        number = words.index(word)
        found = next((k for k, w in enumerate(view.word_ids) if w == number), None)
        if found is not None:
            return found
    raise WordNotInText(word, view.text, 0)


def _link(view: Encoding, source: str, target: str) -> tuple[float, int, int, int]:
    """The strongest link from `source` to `target` over every layer and head: (weight, layer from 1, head from
    1, tokens between them)."""
    assert view.attentions is not None  # attention_view always asks for them
    i, j = first_token(view, source), first_token(view, target)
    layer, head, weight = attention.strongest_link(view.attentions, i, j)
    return weight, layer + 1, head + 1, abs(j - i)


def _strongest_per_word(view: Encoding, i: int) -> list[tuple[str, float]]:
    """Each other word's strongest weight from token `i` (any layer, any head, the word's first token), highest first."""
    assert view.attentions is not None
    reach = np.asarray(view.attentions)[:, :, i, :].max(axis=(0, 1))
    firsts = {w: k for k, w in reversed(list(enumerate(view.word_ids))) if w is not None}
    pairs = [(view.words[w], float(reach[k])) for w, k in sorted(firsts.items()) if k != i]
    return sorted(pairs, key=lambda x: -x[1])


def render_guess_far(model_name: str, encode: Callable[[str], Encoding]) -> None:
    """Predict, then see: which gets more of "it"'s attention from one head, "animal" 8 tokens back or "street"
    2 tokens back? `encode(text)` gives the text's encoding with attentions. After the pick: every word's
    strongest weight from "it"."""

    def solve() -> Solved:
        view = encode(IT)
        (far, layer, head, distance), (near, _, _, near_distance) = _link(view, "it", FAR), _link(view, "it", NEAR)
        facts = {"model": model_name, "far": f"{far:.0%}", "near": f"{near:.0%}", "layer": layer, "head": head}
        return Solved(FAR if far > near else NEAR, facts | {"distance": distance, "near_distance": near_distance})

    question = Question("tf_far", (FAR, NEAR), solve, about={"sentence": IT, "model": model_name})
    if render_predict(question, model_name) is not None:
        view = encode(IT)
        title = t_plain("tf.far_chart", word="it", model=model_name)
        st.plotly_chart(build_score_bars(_strongest_per_word(view, first_token(view, "it")), title), key="far_bars")


def share(weight: float) -> str:
    """Which of the moment's three ranges a weight falls in."""
    return "low" if weight < 0.1 else "mid" if weight < 0.5 else "high"


def render_guess_after(model_name: str, encode: Callable[[str], Encoding]) -> None:
    """Predict, then see: how much of "it"'s attention can one head of an encoder give "tired", a word after it?
    After the pick: "it"'s reach, layer by layer, over the whole sentence."""

    def solve() -> Solved:
        weight, layer, head, distance = _link(encode(IT), "it", AFTER)
        facts = {"model": model_name, "layer": layer, "head": head, "weight": f"{weight:.0%}", "distance": distance}
        return Solved(share(weight), facts)

    question = Question(
        "tf_after", ("low", "mid", "high"), solve, translated=True, about={"sentence": IT, "model": model_name}
    )
    if render_predict(question, model_name) is not None:
        view = encode(IT)
        assert view.attentions is not None
        i = first_token(view, "it")
        strongest = attention.strongest_head_reach(view.attentions, i).tolist()
        render_reach(strongest, view.tokens, i, model_name, key="after_reach")
