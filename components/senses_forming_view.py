"""Word senses' third instrument (issue 38): senses forming while a model learns. A slider over the steps of
one from-scratch training run redraws the map of the word's uses, beside the sense accuracy, the
self-similarity and the held-out perplexity by tokens seen, each with one computed sentence."""

from __future__ import annotations

from functools import partial

import numpy as np
import streamlit as st

from components.charts import build_lines
from components.export import csv_text, download_csv
from components.i18n import Markdown, t, t_plain
from components.light_charts import render_light_chart
from components.quiz import Question, Solved, render_predict
from components.senses_tools_view import layer_slider
from components.senses_view import sense_map_chart
from components.url import keep_in_url, number_from_url
from model_zoo.lessons.forming import LEAST_RISE, Forming, dip, first_to_separate, halfway
from model_zoo.lessons.sense_data import SenseSet, chance_accuracy


def answers(depth: int) -> tuple[str, ...]:
    """Which layer separates the senses first: each layer, two or more together, or none."""
    return (*(str(k) for k in range(depth + 1)), "together", "never")


def answer_label(option: str, depth: int) -> str:
    if not option.isdigit():
        return t_plain(f"quiz.senses_forming.opt_{option}")
    layer = int(option)
    kind = "first" if layer == 0 else "top" if layer == depth else "layer"
    return t_plain(f"quiz.senses_forming.opt_{kind}", layer=layer)


WHEN = ("tenth", "half", "later", "never")  # when the first layer is halfway up its rise, by share of the run


def when_answer(run: Forming, first: int | None) -> str:
    """Which of WHEN the step `first` (an index of run.steps, None where no layer rises) falls in."""
    if first is None:
        return "never"
    share = run.share(first)
    return "tenth" if share <= 0.1 else "half" if share <= 0.5 else "later"


def millions(tokens: float) -> str:
    return f"{tokens / 1e6:.2f}M"


def step_label(run: Forming, step: int) -> str:
    """A slider stop: "step 760 · 1.44M tokens · 16%"."""
    return t_plain(
        "senses.forming_stop",
        step=int(run.steps[step]),
        tokens=millions(run.tokens[step]),
        share=f"{run.share(step):.0%}",
    )


def pick_step(run: Forming) -> int:
    """The slider over the run's steps (random weights first), kept in the URL."""
    last = len(run.steps) - 1
    step = number_from_url("forming_step", 0, last, 0)
    step = st.select_slider(
        t("senses.forming_step"),
        list(range(last + 1)),
        step,
        format_func=lambda s: step_label(run, s),
        key="forming_step",
    )
    keep_in_url("forming_step", int(step))
    return int(step)


def perplexity_at(run: Forming, step: int) -> float:
    """The held-out perplexity where the slider stands, read off the learning curve (linear between points)."""
    return float(np.interp(run.tokens[step], run.curve_tokens, run.curve_perplexity))


def render_forming(sense_set: SenseSet, run: Forming) -> None:
    """The slider, the map of the word's uses at that step and layer, the three curves, and what they say."""
    word, depth = sense_set.word, run.accuracy.shape[2] - 1
    st.write(
        t(
            "senses.forming_intro",
            model=run.model,
            steps=len(run.steps),
            tokens=millions(run.tokens[-1]),
            script=run.script,
        )
    )
    left, right = st.columns(2)
    with left:
        step = pick_step(run)
    with right:
        layer = layer_slider(depth, "forming_layer", 1, "forming_layer")
    acc = run.word_accuracy(word)  # (S, L)
    sim = run.self_similarity[:, run.words.index(word)]
    chance = chance_accuracy(sense_set.senses)
    xy = run.maps[word][step, layer]
    title = t_plain("senses.forming_map_title", word=word, model=run.model, stop=step_label(run, step), layer=layer)
    map_box, lines_box = st.columns(2)
    with map_box:
        chart = sense_map_chart(sense_set, xy, title)
        render_light_chart(chart, key="forming_map")
        if layer == 0:
            st.caption(t("senses.forming_layer0", word=word))
    x = [float(v) / 1e6 for v in run.tokens]
    at = x[step]
    tokens_axis = t_plain("senses.forming_tokens_axis")
    layer_names = [t_plain("senses.forming_layer_n", layer=k) for k in range(depth + 1)]
    lines_box.plotly_chart(
        build_lines(
            x,
            {name: list(acc[:, k]) for k, name in enumerate(layer_names)},
            {t_plain("senses.axes_chance"): chance},
            t_plain("senses.forming_accuracy_title", word=word),
            tokens_axis,
            percent=True,
            mark=at,
        ),
        key="forming_accuracy",
    )
    st.write(
        t(
            "senses.forming_now",
            stop=step_label(run, step),
            layer=layer,
            acc=f"{acc[step, layer]:.0%}",
            chance=f"{chance:.0%}",
            acc0=f"{acc[0, layer]:.0%}",
            end=f"{acc[-1, layer]:.0%}",
            sim=f"{sim[step, layer]:.2f}",
            ppl=f"{perplexity_at(run, step):.0f}",
            ppl0=f"{run.curve_perplexity[0]:.0f}",
            ppl_end=f"{run.curve_perplexity[-1]:.0f}",
        )
    )
    st.write(separation_sentence(run, acc, word))
    if (low := dip(acc, layer)) is not None:
        st.write(
            t(
                "senses.forming_dip",
                layer=layer,
                acc0=f"{acc[0, layer]:.0%}",
                low=f"{acc[low, layer]:.0%}",
                tokens=millions(run.tokens[low]),
                sim0=f"{sim[0, layer]:.2f}",
                sim_low=f"{sim[low, layer]:.2f}",
                end=f"{acc[-1, layer]:.0%}",
            )
        )
    sim_box, ppl_box = st.columns(2)
    sim_box.plotly_chart(
        build_lines(
            x,
            {name: list(sim[:, k]) for k, name in enumerate(layer_names)},
            {},
            t_plain("senses.forming_similarity_title", word=word),
            tokens_axis,
            mark=at,
        ),
        key="forming_similarity",
    )
    ppl_box.plotly_chart(
        build_lines(
            [float(v) / 1e6 for v in run.curve_tokens],
            {t_plain("senses.forming_perplexity"): list(run.curve_perplexity)},
            {t_plain("senses.forming_unigram"): run.unigram_perplexity},
            t_plain("senses.forming_perplexity_title"),
            tokens_axis,
            mark=at,
            log_y=True,  # random weights read at about the vocabulary's size: on a linear axis the rest is flat
        ),
        key="forming_perplexity",
    )
    name = f"forming-{word}-{run.model}.csv"
    download_csv(t("senses.forming_csv"), partial(forming_csv, run, word), name, "forming_csv")


def separation_sentence(run: Forming, acc: np.ndarray, word: str) -> Markdown:
    """When each layer of `word` gets halfway up its rise, and which is first (or that none rises)."""
    which, first = first_to_separate(acc)
    if first is None:
        return t("senses.forming_never", word=word)
    when = halfway(acc)
    parts = [
        t_plain("senses.forming_layer_when", layer=k, step=int(run.steps[s]), share=f"{run.share(s):.0%}")
        for k, s in enumerate(when)
        if s is not None
    ]
    key = "senses.forming_together" if which == "together" else "senses.forming_first"
    said = [
        t(
            key,
            word=word,
            layer=which,
            when=t_plain("senses.forming_sep").join(parts),
            tokens=millions(run.tokens[first]),
        )
    ]
    if when[0] is None:
        said.append(t("senses.forming_flat_layers"))
    if small := [str(k) for k, s in enumerate(when) if s is None and k > 0]:
        said.append(t("senses.forming_small_rise", layers=", ".join(small), least=round(LEAST_RISE * 100)))
    return Markdown(" ".join(said))


def forming_csv(run: Forming, word: str) -> str:
    """Every step and layer: tokens, the word's accuracy and self-similarity, and the accuracy over all words."""
    w = run.words.index(word)
    mean = run.mean_accuracy()
    rows = (
        [
            int(run.steps[s]),
            int(run.tokens[s]),
            layer,
            f"{run.accuracy[s, w, layer]:.4f}",
            f"{run.self_similarity[s, w, layer]:.4f}",
            f"{mean[s, layer]:.4f}",
        ]
        for s in range(len(run.steps))
        for layer in range(run.accuracy.shape[2])
    )
    return csv_text(
        ["step", "tokens", "layer", f"accuracy_{word}", f"self_similarity_{word}", "accuracy_all_words"], rows
    )


# -- predict, then see ---------------------------------------------------------------------------------
def render_guess_forming(run: Forming) -> None:
    """Predict, then see, twice: over the set's words, when in training the model's senses first separate (a
    layer's sense accuracy halfway up its rise), then which layer does it first. The first answer says only
    when; after the second pick, the accuracy by tokens seen."""
    if render_guess_when(run) is None:
        return

    def solve() -> Solved:
        found = run
        mean = found.mean_accuracy()
        which, first = first_to_separate(mean)
        when = halfway(mean)
        facts = {
            "words": len(found.words),
            "when": t_plain("senses.forming_sep").join(
                t_plain("senses.forming_layer_when", layer=k, step=int(found.steps[s]), share=f"{found.share(s):.0%}")
                for k, s in enumerate(when)
                if s is not None
            )
            or "-",
            "acc0": " / ".join(f"{v:.0%}" for v in mean[0]),
            "end": " / ".join(f"{v:.0%}" for v in mean[-1]),
        }
        return Solved(which, facts)

    depth = run.accuracy.shape[2] - 1
    question = Question(
        "senses_forming",
        answers(depth),
        solve,
        translated=True,
        shown=lambda option: answer_label(option, depth),
        about={"model": run.model, "words": len(run.words), "tokens": millions(run.tokens[-1])},
    )
    if render_predict(question, run.model) is not None:
        mean = run.mean_accuracy()
        x = [float(v) / 1e6 for v in run.tokens]
        names = [t_plain("senses.forming_layer_n", layer=k) for k in range(mean.shape[1])]
        st.plotly_chart(
            build_lines(
                x,
                {name: list(mean[:, k]) for k, name in enumerate(names)},
                {},
                t_plain("senses.forming_all_title", words=len(run.words)),
                t_plain("senses.forming_tokens_axis"),
                percent=True,
            ),
            key="guess_forming_lines",
        )


def render_guess_when(run: Forming) -> Solved | None:
    """Predict, then see: when in the run the first layer gets halfway up its rise (WHEN), with the held-out
    perplexity there. Returns the model's answer once revealed."""

    def solve() -> Solved:
        _, first = first_to_separate(run.mean_accuracy())
        ppl = [float(v) for v in (run.curve_perplexity[0], run.curve_perplexity[-1])]
        facts = {"ppl0": f"{ppl[0]:.0f}", "ppl_end": f"{ppl[1]:.0f}"}
        if first is None:
            return Solved(
                "never", facts | {"when": t_plain("quiz.senses_forming_when.none", least=round(LEAST_RISE * 100))}
            )
        at = t_plain(
            "quiz.senses_forming_when.at",
            step=int(run.steps[first]),
            tokens=millions(run.tokens[first]),
            share=f"{run.share(first):.0%}",
            ppl=f"{perplexity_at(run, first):.0f}",
        )
        return Solved(when_answer(run, first), facts | {"when": at})

    question = Question(
        "senses_forming_when",
        WHEN,
        solve,
        translated=True,
        about={"model": run.model, "words": len(run.words), "tokens": millions(run.tokens[-1])},
    )
    return render_predict(question, run.model)
