"""What the Word senses lesson draws: the note on the data, a sense map per model, the learner's votes by
layer, the per-layer measures and the Chinese corner's similarity matrix."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import streamlit as st

from components.charts import build_similarity_heatmap
from components.i18n import t, t_plain
from components.light_charts import (
    COLORS,
    REFERENCE,
    Own,
    build_layer_lines,
    build_sense_map,
    chart_labels,
    render_light_chart,
)
from components.notices import render_script_note
from components.quiz import Question, Solved, render_predict, render_quiz
from components.senses_tools_view import sense_labels
from components.url import keep_in_url, key_from_url, number_from_url, text_box
from model_zoo.lessons.sense_data import UMAP_DEFAULTS, MapView, SenseModel, SenseSet
from model_zoo.lessons.senses import LayerMeasures, MeasureLines, PlacedOwn
from model_zoo.registry import HIDDEN_STATES


def render_data_note(word: str, sense_set: SenseSet, words: int, total: int) -> None:
    """A word with one sense says so; then the size of its set and of the whole (`words` words, `total` uses)."""
    if len(sense_set.sense_keys) < 2:
        st.info(t("senses.single_sense", word=word), icon=":material/info:")
    st.caption(
        t("senses.data_note", n=len(sense_set.sentences), senses=len(sense_set.sense_keys), words=words, total=total)
    )


def choose_view(models: list[SenseModel], layer_box: st.delta_generator.DeltaGenerator) -> MapView:
    """The layer (its slider in `layer_box`, above the maps), the projection and UMAP's settings."""
    deepest = max(m.depth for m in models)
    layer = 0
    if deepest > 0:
        layer = number_from_url("layer", 0, deepest, deepest // 2)  # each a link's value, else its default
        layer = layer_box.slider(t("senses.layer"), 0, deepest, layer, key="layer", help=t("senses.layer_help"))
    methods = ["pca", "umap"]
    method = key_from_url("method", methods, "pca", {m: m for m in methods})  # in any case, as UMAP was kept
    method = st.radio(
        t("senses.method"), methods, methods.index(method), format_func=str.upper, horizontal=True, key="method"
    )
    with st.expander(t("senses.advanced")):
        a1, a2, a3 = st.columns(3)
        neighbours = number_from_url("neighbours", 2, 50, UMAP_DEFAULTS.n_neighbors)
        neighbours = a1.slider(t("senses.neighbours"), 2, 50, neighbours, key="neighbours")
        min_dist = number_from_url("min_dist", 0.0, 0.99, UMAP_DEFAULTS.min_dist)
        min_dist = a2.slider(t("senses.min_dist"), 0.0, 0.99, min_dist, key="min_dist")
        seed = number_from_url("seed", 0, 9999, UMAP_DEFAULTS.seed)
        seed = int(a3.number_input(t("senses.seed"), 0, 9999, seed, key="seed"))
        st.caption(t("senses.umap_note"))
    view = MapView(layer, deepest, method, neighbours, min_dist, seed)
    # a shallower model's map is at the same relative depth, not at the slider's number: said under the slider,
    # or "elmo-mini · layer 1 of 2" beside "minilm-l6 · layer 3 of 6" reads as a slider that does not work
    if shallower := [m for m in models if not m.static and 0 < m.depth < deepest]:
        others = ", ".join(
            t_plain("senses.layer_at", model=m.name, layer=view.layer_of(m), layers=m.depth) for m in shallower
        )
        layer_box.caption(t("senses.layer_mapped", layer=layer, layers=deepest, others=others))
    keep_in_url("method", method)
    for name, value in {"layer": layer, "neighbours": neighbours, "min_dist": min_dist, "seed": seed}.items():
        keep_in_url(name, value)
    return view


def render_sense_map(
    sense_set: SenseSet,
    model: SenseModel,
    layer: int,
    xy: np.ndarray,
    own: PlacedOwn | None,
    mine: str,
    pick: bool = False,
) -> int | None:
    """`model`'s map of every use of the word at `layer`, xy (n, 2), coloured by sense; the learner's
    sentence `mine` as a star where `own` places it, its hover card the vote of its nearest uses. With `pick`,
    a contextual model's points can be clicked: returns the use clicked, in the run that follows the click."""
    labels = sense_labels(sense_set)
    star = None
    if own is not None:
        note = t_plain("senses.vote", sense=labels[own.sense], share=f"{own.share:.0%}")
        star = Own(own.x, own.y, mine, note)
    title = (
        t_plain("senses.map_static", model=model.name)
        if model.static
        else t_plain("senses.map_title", model=model.name, layer=layer, layers=model.depth)
    )
    chart = sense_map_chart(sense_set, xy, title, star, pick=pick and not model.static)
    picked = render_light_chart(chart, key=f"map_{model.name}_{sense_set.word}")  # a click names a use of this word
    if model.static:
        st.caption(t("senses.static_note", word=sense_set.word))
    return picked


def sense_map_chart(
    sense_set: SenseSet, xy: np.ndarray, title: str, star: Own | None = None, pick: bool = False
) -> dict[str, Any]:
    """The light chart of the word's uses at xy (n, 2), coloured by sense, its hover card each use's sentence
    and gloss; `star`, the learner's sentence; with `pick`, a click on a point sends the use back."""
    labels = sense_labels(sense_set)
    return build_sense_map(
        xy,
        sense_set.sense_numbers,
        [labels[k] for k in sense_set.sense_keys],
        sense_set.sentences,
        sense_set.use_glosses,
        sense_set.word,
        title,
        star,
        t("senses.yours"),
        chart_labels(),
        pick=t_plain("senses.map_pick") if pick else "",
    )


def render_votes(sense_set: SenseSet, votes: dict[str, list[str]]) -> None:
    """What the learner's use votes for at every layer of each model (model -> a sense key per layer): a row
    per model, each sense by its number in the legend; nothing without a vote."""
    if not votes:
        return
    st.subheader(t("senses.votes_title"))
    votes_table(sense_set, votes)


NO_LAYER = "—"  # a model with fewer layers than the deepest on the page (elmo-mini's 3 beside MiniLM's 7)


def votes_table(sense_set: SenseSet, votes: dict[str, list[str]]) -> None:
    """The votes (model -> a sense key per layer) as a table, a row per model and a column per layer."""
    labels = sense_labels(sense_set)
    table = {name: [labels[sense].split(".")[0] for sense in senses] for name, senses in votes.items()}
    width = max(len(v) for v in table.values())
    st.dataframe(
        {
            t("senses.col_model"): list(table),
            **{str(k): [v[k] if k < len(v) else NO_LAYER for v in table.values()] for k in range(width)},
        },
        hide_index=True,
    )
    st.caption(t("senses.votes_note", senses="; ".join(labels.values())))


def render_measures(lines: MeasureLines) -> None:
    """Per-layer sense accuracy against chance, self- and intra-sentence similarity against the baseline."""
    chance = t("senses.chance")
    colors = {name: COLORS[i % len(COLORS)] for i, name in enumerate(lines.accuracy)} | {chance: REFERENCE}
    baseline = {f"{name} · {t('senses.baseline')}": values for name, values in lines.baseline.items()}

    def draw(
        column: Any,
        series: dict[str, np.ndarray],
        title: str,
        y_title: str,
        dashed: tuple[str, ...],
        key: str,
        y_range: tuple[float, float] | None = None,
    ) -> None:
        with column:
            axis = t("senses.layer_axis")
            chart = build_layer_lines(series, title, y_title, dashed, axis, chart_labels(), colors, y_range)
            render_light_chart(chart, key=key)

    m1, m2, m3 = st.columns(3)
    accuracy = {**lines.accuracy, chance: lines.chance}
    draw(m1, accuracy, t("senses.acc_title"), t("senses.acc_axis"), (chance,), "acc", (0.0, 1.02))
    if lines.self_similarity:
        draw(m2, {**lines.self_similarity, **baseline}, t("senses.self_title"), "cos", tuple(baseline), "self")
        draw(m3, {**lines.intra_similarity, **baseline}, t("senses.intra_title"), "cos", tuple(baseline), "intra")
    st.caption(t("senses.measures_note"))


def render_chinese_missing(models: tuple[str, ...]) -> None:
    """No model that reads Chinese is on this machine: which to prefetch, and how."""
    st.info(
        t("senses.zh_missing", models=" / ".join(models), command=f"python -m model_zoo prefetch {models[0]}"),
        icon=":material/cloud_off:",
    )


def render_chinese_map(word: str, sentences: tuple[tuple[str, str], ...], similarity: np.ndarray, model: str) -> None:
    """The cosine similarity (n, n) of `word` in its six `sentences` (each with its sense), read by `model`."""
    names = [f"{s} ({sense})" for s, sense in sentences]
    st.plotly_chart(
        build_similarity_heatmap(names, similarity, t_plain("senses.zh_map", word=word, model=model), number=False),
        key="zh",
    )


BLOOD_BANK = "The hospital has its own blood bank."  # the lecture notes' fifth bank: a third sense or not?


def read_mine(word: str, contextual: list[str]) -> str:
    """The learner's own sentence with `word` (for "bank", the lecture's blood bank one click away), and one
    line where its Chinese meets the `contextual` models chosen that learned English only."""
    if word == "bank":
        st.button(
            t("senses.blood_bank"),
            key="blood_bank",
            icon=":material/bloodtype:",
            on_click=lambda: st.session_state.update(mine=BLOOD_BANK),
        )
        st.caption(t("senses.blood_bank_note"))
    mine = text_box(
        st.text_input, t("senses.mine"), "mine", 2000, placeholder=t_plain("senses.mine_placeholder", word=word)
    )
    render_script_note(contextual, mine, HIDDEN_STATES)
    return mine


# -- predict, then see (issue 34) -----------------------------------------------------------------------
def deepest(models: Sequence[SenseModel]) -> str:
    """The contextual model with the most layers among those shown (the first such), the one the page's
    predict-first moments ask; minilm-l6 where only static models are shown."""
    contextual = [m for m in models if not m.static]
    return max(contextual, key=lambda m: m.depth).name if contextual else "minilm-l6"


def render_guess_pair(
    word: str, model_name: str, uses: tuple[str, str, str], cosines: Callable[[], tuple[list[float], list[float]]]
) -> None:
    """Predict, then see: at the model's top layer, is `word` in A nearer its use in B (A's sense) or in C
    (another sense)? After the pick, both cosines at every layer."""
    found: list[tuple[list[float], list[float]]] = []

    def solve() -> Solved:
        found.append(cosines())
        same, other = found[-1]
        top = len(same) - 1
        facts = {"top": top, "ab": f"{same[top]:.3f}", "ac": f"{other[top]:.3f}"}
        return Solved(
            "same" if same[top] > other[top] else "other", facts | {"ab0": f"{same[0]:.3f}", "ac0": f"{other[0]:.3f}"}
        )

    a, b, c = uses
    question = Question(
        "senses_pair",
        ("same", "other"),
        solve,
        translated=True,
        about={"word": word, "model": model_name, "a": a, "b": b, "c": c},
    )
    if render_predict(question, model_name) is not None:
        same, other = found[-1]
        series = {t_plain("senses.pair_same"): same, t_plain("senses.pair_other"): other}
        title = t_plain("senses.pair_chart", word=word, model=model_name)
        chart = build_layer_lines(series, title, "cos", (), t("senses.layer_axis"), chart_labels())
        render_light_chart(chart, key="pair_lines")


def render_guess_vote(
    sense_set: SenseSet, model_name: str, sentence: str, votes: Callable[[], list[tuple[str, float]]]
) -> None:
    """Predict, then see: which sense the nearest uses give `sentence`'s word at the model's top layer (every
    sense of the set is an option, by its legend label cut short). After the pick, the vote at every layer."""
    labels = {
        key: textwrap.shorten(label.split(" (")[0], 30, placeholder="…")
        for key, label in sense_labels(sense_set).items()
    }
    found: list[list[tuple[str, float]]] = []

    def solve() -> Solved:
        found.append(votes())
        (first, share0), (last, share) = found[-1][0], found[-1][-1]
        facts = {"top": len(found[-1]) - 1, "share": f"{share:.0%}", "first": labels[first], "share0": f"{share0:.0%}"}
        return Solved(last, facts | {"n": len(sense_set.sense_keys)})

    question = Question(
        "senses_vote",
        tuple(sense_set.sense_keys),
        solve,
        shown=lambda key: labels[key],
        about={"sentence": sentence, "word": sense_set.word, "model": model_name},
    )
    if render_predict(question, model_name) is not None:
        votes_table(sense_set, {model_name: [key for key, _ in found[-1]]})


# -- check yourself ---------------------------------------------------------------------------------------
def render_check(measures: Callable[[], LayerMeasures], glove_points: Callable[[], int], uses: int) -> None:
    """The lesson's questions: minilm-l6's best layer for bank's senses (`measures`), and how many points GloVe
    gives bank over its `uses` sentences (`glove_points`)."""

    def solve_layer() -> Solved:
        found = measures()
        best = found.best_layer
        facts = {"acc": f"{found.accuracy[best]:.0%}", "acc0": f"{found.accuracy[0]:.0%}"}
        return Solved(str(best), facts | {"chance": f"{found.chance:.0%}"})

    def solve_glove() -> Solved:
        return Solved(str(glove_points()), {"n": uses})

    render_quiz(
        (
            Question("senses_layer", tuple(str(k) for k in range(7)), solve_layer),
            Question("senses_glove", ("1", "2", "3"), solve_glove),
        )
    )
