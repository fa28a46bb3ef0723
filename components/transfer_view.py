"""What the Transfer learning lesson draws: the race's chart and its result, and its predict-first moments
(issue 34): which line leads with the fewest labels (the chart's first point, held back until the learner
has guessed), and how many of the held-out sentences' words each learner has met before the race."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import streamlit as st

from components.i18n import t, t_plain
from components.light_charts import REFERENCE, build_layer_lines, chart_labels, render_light_chart
from components.quiz import Question, Solved, render_predict
from model_zoo.lessons.transfer_record import Recipe, TransferCurve

FIRST = "transfer_first"  # the moment on the chart's first point (quiz.transfer_first in the i18n files)
FIRST_PICKED = f"predict_{FIRST}"  # its radio's key (components.quiz.render_predict): read before the chart
SHARES = ("0–25%", "25–50%", "50–75%", "75–100%")  # the options of the words moments


def first_point_shown(curve: TransferCurve) -> bool:
    """Whether the chart draws its first point: once the learner has guessed it (or where the race has only
    one point, which no moment asks about)."""
    return len(curve.sizes) < 2 or st.session_state.get(FIRST_PICKED) is not None


def render_race(model_name: str, curve: TransferCurve, recipe: Recipe, known: Callable[[], TransferCurve]) -> None:
    """The race's curves (from the second point until the learner has guessed the first), what the race is,
    the moment on the first point (answered by `known`: the curve drawn, as serving knows it without
    training), then the result in words (once guessed: it quotes the first point) and how each point was
    made."""
    whole = first_point_shown(curve)
    start = 0 if whole else 1
    names = {s: t_plain(f"transfer.line_{s}", model=model_name) for s in curve.accuracy}
    chance = t_plain("transfer.chance")
    sizes = curve.sizes[start:]
    lines = {names[s]: curve.accuracy[s][start:] for s in curve.accuracy} | {chance: [curve.chance] * len(sizes)}
    chart = build_layer_lines(
        lines,
        t_plain("transfer.chart", n=curve.test_size),
        dashed=(chance,),
        x_title=t_plain("transfer.axis"),
        labels=chart_labels(),
        colors={chance: REFERENCE},
        y_range=(0.0, 1.0),
        x_labels=[f"{n:g}" for n in sizes],
        x_at=[math.log2(n) for n in sizes],  # sizes that double, then the whole set: spaced as they are
        percent=True,
    )
    # Drawn by the page's own script, not plotly: plotly's chunk alone cost this first picture over a second
    with st.container(key="main_output"):  # the lesson's main output (scripts/first_screen.py)
        render_light_chart(chart, key="transfer_chart")
    st.write(t("transfer.race_intro"))  # what the race is, under its curve: the curve is on the first screen
    if len(curve.sizes) > 1:
        render_guess_first(model_name, curve, known)
    if whole:  # the result in words quotes the first point
        st.markdown(
            t(
                "transfer.result",
                few=curve.sizes[0],
                full=curve.sizes[-1],
                pre_few=f"{curve.accuracy['pretrained'][0]:.0%}",
                pre_full=f"{curve.accuracy['pretrained'][-1]:.0%}",
                rand_few=f"{curve.accuracy['random'][0]:.0%}",
                rand_full=f"{curve.accuracy['random'][-1]:.0%}",
                seconds=f"{curve.seconds:.0f}",
            )
        )
        if (line := head_start(curve)) is not None:
            st.caption(line)
    st.caption(
        t(
            f"transfer.note_{recipe.kind}",
            epochs=curve.epochs,
            lr_pretrained=f"{recipe.lr_pretrained:g}",
            lr_random=f"{recipe.lr_random:g}",
            lr_head=f"{recipe.lr_head:g}",
        )
    )


def leader(curve: TransferCurve, at: int) -> str:
    """The learner on top at the race's `at`-th point, or "tie" where the best two score the same."""
    ranked = sorted(curve.accuracy, key=lambda s: curve.accuracy[s][at], reverse=True)
    top, second = (curve.accuracy[s][at] for s in ranked[:2])
    return "tie" if abs(top - second) < 1e-9 else ranked[0]


def render_guess_first(model_name: str, curve: TransferCurve, known: Callable[[], TransferCurve]) -> None:
    """Predict, then see: which line leads at the race's first point, which the chart holds back until the
    learner has guessed. The answer is read, once the learner has picked, from `known`: the curve drawn."""

    def solve() -> Solved:
        drawn = known()
        first, then = ({s: f"{drawn.accuracy[s][i]:.0%}" for s in drawn.accuracy} for i in (0, 1))
        facts = {
            "model": model_name,
            "n": drawn.sizes[0],
            "next": drawn.sizes[1],
            "chance": f"{drawn.chance:.0%}",
            "pre": first["pretrained"],
            "rand": first["random"],
            "onehot": first["onehot"],
            "pre2": then["pretrained"],
            "rand2": then["random"],
            "onehot2": then["onehot"],
        }
        return Solved(leader(drawn, 0), facts)

    question = Question(
        FIRST,
        ("pretrained", "random", "onehot", "tie"),
        solve,
        translated=True,
        about={"n": curve.sizes[0], "next": curve.sizes[1]},
    )
    render_predict(question, t_plain("transfer.the_race"))  # the race answers, not the model: its three lines


def head_start(curve: TransferCurve) -> str | None:
    """Where the pre-trained line does not lead with the fewest labels, the line that says so: from how many
    labelled sentences on it leads, or that it never does in this run (elmo-mini's shipped run: 52% against the
    one-hot counts' 58% with 16, on 60 held-out sentences, where one sentence is 1.7 points). None where it
    leads at once, as the lesson says it should."""
    acc = curve.accuracy
    ahead = [i for i in range(len(curve.sizes)) if acc["pretrained"][i] > max(acc["random"][i], acc["onehot"][i])]
    if ahead and ahead[0] == 0:
        return None
    figures = {
        "few": curve.sizes[0],
        "test": curve.test_size,
        "step": f"{1 / curve.test_size:.1%}",
        "chance": f"{curve.chance:.0%}",
        "pre": f"{acc['pretrained'][0]:.0%}",
        "rand": f"{acc['random'][0]:.0%}",
        "onehot": f"{acc['onehot'][0]:.0%}",
    }
    if not ahead:
        return t("transfer.head_start_never", **figures)
    i = ahead[0]
    return t(
        "transfer.head_start_from",
        **figures,
        n=curve.sizes[i],
        pre_n=f"{acc['pretrained'][i]:.0%}",
        best_n=f"{max(acc['random'][i], acc['onehot'][i]):.0%}",
    )


def share_option(share: float) -> str:
    return SHARES[min(int(share * len(SHARES)), len(SHARES) - 1)]


def render_guess_words(
    model_name: str, sizes: Sequence[int], labelled: Sequence[float], vocabulary: float | None, words: int, test: int
) -> None:
    """Predict, then see: what share of the `words` distinct words of the `test` held-out sentences the
    one-hot classifier has a weight for after the fewest labelled sentences (`labelled`, at each of
    `sizes`), and what share are whole words of the pre-trained network's `vocabulary`; then a chart of
    the shares revealed."""
    st.header(t("transfer.words_title"))
    st.write(t("transfer.words_intro"))
    n, full = sizes[0], sizes[-1]
    few = Question(
        "transfer_labelled",
        SHARES,
        lambda: Solved(
            share_option(labelled[0]),
            {
                "n": n,
                "share": f"{labelled[0]:.0%}",
                "seen": round(labelled[0] * words),
                "words": words,
                "full": full,
                "share_full": f"{labelled[-1]:.0%}",
            },
        ),
        about={"n": n, "words": words, "test": test},
    )
    lines: dict[str, list[float]] = {}
    if render_predict(few, t_plain("transfer.onehot_learner")) is not None:
        lines[t_plain("transfer.words_labelled")] = list(labelled)
    if vocabulary is not None:
        pre = Question(
            "transfer_vocabulary",
            SHARES,
            lambda: Solved(
                share_option(vocabulary),
                {"model": model_name, "share": f"{vocabulary:.0%}", "n": n, "labelled": f"{labelled[0]:.0%}"},
            ),
            about={"model": model_name, "words": words},
        )
        if render_predict(pre, model_name) is not None:
            lines[t_plain("transfer.words_vocabulary", model=model_name)] = [vocabulary] * len(sizes)
    if lines:
        chart = build_layer_lines(
            lines,
            t_plain("transfer.words_chart", words=words, test=test),
            x_title=t_plain("transfer.axis"),
            labels=chart_labels(),
            y_range=(0.0, 1.0),
            x_labels=[f"{s:g}" for s in sizes],
            x_at=[math.log2(s) for s in sizes],
            percent=True,
        )
        render_light_chart(chart, key="transfer_words")
