"""What the Word senses lesson draws: the note on the data, a sense map per model, the learner's votes by
layer, the per-layer measures and the Chinese corner's similarity matrix."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from components.charts import build_similarity_heatmap
from components.i18n import t, t_plain
from components.light_charts import COLORS, Own, build_layer_lines, build_sense_map, render_light_chart
from model_zoo.lessons.sense_data import SenseModel, SenseSet
from model_zoo.lessons.senses import MeasureLines, PlacedOwn


def map_labels() -> dict[str, str]:
    """The charts' buttons, in the learner's language."""
    return {"reset": t("senses.map_reset"), "png": t("senses.map_png")}


def render_data_note(word: str, sense_set: SenseSet, words: int, total: int) -> None:
    """A word with one sense says so; then the size of its set and of the whole (`words` words, `total` uses)."""
    if len(sense_set.sense_keys) < 2:
        st.info(t("senses.single_sense", word=word), icon=":material/info:")
    st.caption(
        t("senses.data_note", n=len(sense_set.sentences), senses=len(sense_set.sense_keys), words=words, total=total)
    )


def render_sense_map(
    sense_set: SenseSet, model: SenseModel, layer: int, xy: np.ndarray, own: PlacedOwn | None, mine: str
) -> None:
    """`model`'s map of every use of the word at `layer`, xy (n, 2), coloured by sense; the learner's
    sentence `mine` as a star where `own` places it, its hover card the vote of its nearest uses."""
    labels = sense_set.labels
    star = None
    if own is not None:
        note = t_plain("senses.vote", sense=labels[own.sense], share=f"{own.share:.0%}")
        star = Own(own.x, own.y, mine, note)
    title = (
        t_plain("senses.map_static", model=model.name)
        if model.static
        else t_plain("senses.map_title", model=model.name, layer=layer, layers=model.depth)
    )
    chart = build_sense_map(
        xy,
        sense_set.sense_numbers,
        [labels[k] for k in sense_set.sense_keys],
        sense_set.sentences,
        sense_set.use_glosses,
        sense_set.word,
        title,
        star,
        t("senses.yours"),
        map_labels(),
    )
    render_light_chart(chart, key=f"map_{model.name}")
    if model.static:
        st.caption(t("senses.static_note", word=sense_set.word))


def render_votes(sense_set: SenseSet, votes: dict[str, list[str]]) -> None:
    """What the learner's use votes for at every layer of each model (model -> a sense key per layer): a row
    per model, each sense by its number in the legend; nothing without a vote."""
    if not votes:
        return
    labels = sense_set.labels
    table = {name: [labels[sense].split(".")[0] for sense in senses] for name, senses in votes.items()}
    st.subheader(t("senses.votes_title"))
    width = max(len(v) for v in table.values())
    st.dataframe(
        {
            t("senses.col_model"): list(table),
            **{str(k): [v[k] if k < len(v) else "" for v in table.values()] for k in range(width)},
        },
        hide_index=True,
    )
    st.caption(t("senses.votes_note", senses="; ".join(labels.values())))


def render_measures(lines: MeasureLines) -> None:
    """Per-layer sense accuracy against chance, self- and intra-sentence similarity against the baseline."""
    colors = {name: COLORS[i % len(COLORS)] for i, name in enumerate(lines.accuracy)}  # a model keeps its colour
    chance = t("senses.chance")
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
            chart = build_layer_lines(series, title, y_title, dashed, axis, map_labels(), colors, y_range)
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
