"""The Inside the model lesson's questions, answered by the live model: two predict-first moments (where in
the depth the answer settles; whether the first layer's MLP or its heads matter more) and the check-yourself
questions (the MLP's width; whether skipping the last layer changes the answer). Each asks the model through
the callables the page hands over, only once the learner has picked or the teacher reveals."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from components.i18n import t_plain
from components.inside_view import build_lens_grid, width_options, word
from components.quiz import Question, Solved, listed, render_predict, render_quiz
from model_zoo.lessons.inside import THIRDS, Knocked, Lens, depth_third, settles_at

Knock = Callable[[str, int], Knocked]  # (part, layer from 0) -> the knock-out on the lesson's sentence


def render_guess_settle(model_name: str, sentence: str, layers: int, lens: Callable[[], Lens]) -> None:
    def settle() -> Solved:
        found = lens()
        layer = settles_at(found)
        return Solved(depth_third(layer, layers), {"word": word(found.answer), "layer": layer, "layers": layers})

    question = Question("inside_settle", THIRDS, settle, translated=True, about={"sentence": sentence})
    if render_predict(question, model_name) is not None:
        st.plotly_chart(build_lens_grid(lens(), t_plain("inside.logit_lens")), key="settle_grid")


def render_guess_mlp(model_name: str, sentence: str, knock: Knock) -> None:
    def mlp_or_heads() -> Solved:
        mlp, heads = knock("mlp", 0), knock("heads", 0)
        facts = {
            "word": word(mlp.answer),
            "before": f"{mlp.before:.1%}",
            "mlp": f"{mlp.after:.1%}",
            "heads": f"{heads.after:.1%}",
            "mlp_top": listed([(word(w), p) for w, p in mlp.top]),
            "heads_top": listed([(word(w), p) for w, p in heads.top]),
        }
        return Solved("mlp" if mlp.after < heads.after else "heads", facts)

    question = Question("inside_mlp", ("mlp", "heads"), mlp_or_heads, translated=True, about={"sentence": sentence})
    render_predict(question, model_name)


def render_check(model_name: str, sentence: str, width: int, hidden: int, layers: int, knock: Knock) -> None:
    """`width`: the stream's size; `hidden`: the MLP's, from the model's config."""

    def neurons() -> Solved:
        return Solved(str(hidden), {"model": model_name, "width": f"{width:,}"})

    def skip_last() -> Solved:
        knocked = knock("layer", layers - 1)
        new = word(knocked.top[0][0])
        facts = {"word": word(knocked.answer), "new": new, "before": f"{knocked.before:.1%}"}
        return Solved("same" if new == word(knocked.answer) else "changes", facts | {"after": f"{knocked.after:.1%}"})

    render_quiz(
        (
            Question("inside_neurons", width_options(hidden), neurons, about={"model": model_name}),
            Question("inside_skip", ("same", "changes"), skip_last, translated=True, about={"sentence": sentence}),
        )
    )
