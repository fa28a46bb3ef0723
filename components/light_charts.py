"""The Word senses charts, drawn in the page by the app's own script: sense maps and layer lines.

A Streamlit v2 component (components/light_charts.js and .css): plain SVG, drawn by a few
hundred lines of JavaScript in the page itself. The lesson's first map is the app's
most-opened picture, and plotly's 4.6 MB chunk takes over a second to fetch and compile
before it draws anything, so this page draws without plotly. It keeps what plotly gave:
hover cards, a legend that hides an entry, zoom and pan on the map, a PNG download.
The data is JSON and the script sets every text with textContent, so a sentence
such as `<img src=x onerror=alert(1)>` is shown as text and runs nothing.

Builders here are pure (plain data in, the chart's JSON out); `render_light_chart` mounts one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st

from model_zoo.words import find_word

from .i18n import t_plain

HERE = Path(__file__).resolve().parent
# plotly's default colours, as on the app's other charts
COLORS = ("#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692", "#B6E880", "#FF97FF", "#FECB52")
# a reference line (chance), in no model's colour: a model that scores exactly chance (GloVe's sense accuracy)
# stays visible under its dashes, where a fourth colour beside the models' (a purple by the first's blue) hid it
REFERENCE = "#7f7f7f"


def word_span(sentence: str, word: str) -> list[int]:
    """[start, end) of the word's first use (model_zoo.words' rule), the part a hover card puts in bold; [0, 0] if absent."""
    found = find_word(sentence, word)
    return [found.start(), found.end()] if found else [0, 0]


@dataclass(frozen=True)
class Own:
    """The learner's sentence on a map: where it falls, and its hover note (the vote)."""

    x: float
    y: float
    sentence: str
    note: str
    sense: int = -1  # drawn in this sense's colour (a class's sentence, by its vote); -1: black


def _frame(kind: str, title: str, labels: dict[str, str] | None) -> dict[str, Any]:
    return {
        "kind": kind,
        "title": title,
        "file": re.sub(r"[^\w.-]+", "_", title).strip("_") or kind,
        "labels": labels or {"reset": "Reset zoom", "png": "Download as PNG"},
    }


def build_sense_map(
    xy: np.ndarray,
    senses: list[int],
    sense_names: list[str],
    sentences: Sequence[str],
    notes: list[str],
    word: str,
    title: str,
    own: Own | None = None,
    own_name: str = "★",
    labels: dict[str, str] | None = None,
    others: Sequence[Own] = (),
    pick: str = "",
) -> dict[str, Any]:
    """Point i at xy[i], coloured as sense `sense_names[senses[i]]`; its hover card is
    `sentences[i]` with `word` in bold, then `notes[i]`. `own` is drawn as a star, and so is each of
    `others` (a class's sentences), in the colour of its sense.
    All points in one place (a static model) are drawn as one point in the middle.
    With `pick` (the card's line saying how), a click on point i sends i back (`render_light_chart`)."""
    points = [
        {
            "x": float(x),
            "y": float(y),
            "sense": int(s),
            "sentence": text,
            "span": word_span(text, word),
            "note": note,
            "use": i,
        }
        for i, ((x, y), s, text, note) in enumerate(zip(xy, senses, sentences, notes))
    ]

    def star(p: Own) -> dict[str, Any]:
        return {
            "x": p.x,
            "y": p.y,
            "sense": p.sense,
            "sentence": p.sentence,
            "span": word_span(p.sentence, word),
            "note": p.note,
        }

    return {
        **_frame("map", title, labels),
        "senses": list(sense_names),
        "colors": [COLORS[i % len(COLORS)] for i in range(len(sense_names))],
        "points": points,
        "own": None if own is None else star(own),
        "others": [star(p) for p in others],
        "own_name": own_name,
        "pick": pick,
    }


def build_layer_lines(
    series: dict[str, np.ndarray] | dict[str, list[float]],
    title: str = "",
    y_title: str = "",
    dashed: tuple[str, ...] = (),
    x_title: str = "layer",
    labels: dict[str, str] | None = None,
    colors: dict[str, str] | None = None,
    y_range: tuple[float, float] | None = None,
    x_labels: Sequence[str] | None = None,
    percent: bool = False,
    x_at: Sequence[float] | None = None,
) -> dict[str, Any]:
    """One line per named series over layers (x = layer index); names in `dashed` drawn dashed.
    `y_range` fixes the y axis (else it spans the values). `x_labels` names each x; `x_at` places each x
    (increasing: a training set's sizes as their logarithms, so 128 and 240 stand closer than 64 and 128),
    else they are evenly spaced; `percent` writes the values (shares) as percentages.
    `colors` fixes some series' colours (a model keeps its colour from chart to chart).
    A dashed series named "<series> · ..." takes that series' colour (a model's baseline
    beside the model); any other takes the first colour not yet used."""
    given = dict(colors or {})

    def color_of(name: str) -> str:
        if name not in given:
            owner = next((n for n in series if n not in dashed and name.startswith(f"{n} · ")), None)
            if owner is not None:
                return color_of(owner)
            used = set(given.values())
            given[name] = next((c for c in COLORS if c not in used), COLORS[len(given) % len(COLORS)])
        return given[name]

    for name in series:  # solid lines choose first, so a baseline finds its model's colour
        if name not in dashed:
            color_of(name)
    lines = [
        {"name": name, "values": [float(v) for v in values], "dashed": name in dashed, "color": color_of(name)}
        for name, values in series.items()
    ]
    return {
        **_frame("lines", title, labels),
        "series": lines,
        "x_title": x_title,
        "y_title": y_title,
        "y_range": list(y_range) if y_range else None,
        "x_labels": list(x_labels) if x_labels is not None else None,
        "x_at": [float(x) for x in x_at] if x_at is not None else None,
        "percent": percent,
    }


def chart_labels() -> dict[str, str]:
    """The charts' buttons, in the learner's language."""
    return {"reset": t_plain("senses.map_reset"), "png": t_plain("senses.map_png")}


@cache
def _component() -> Any:
    """Registered once per server (a name registered twice warns, and the last one wins)."""
    return st.components.v2.component(
        "contextlab_light_chart",
        html='<div class="light-chart"></div>',
        css=(HERE / "light_charts.css").read_text(encoding="utf-8"),
        js=(HERE / "light_charts.js").read_text(encoding="utf-8"),
    )


def render_light_chart(chart: dict[str, Any], key: str) -> int | None:
    """Mount a chart from one of the builders above; for a map built with `pick`, the use clicked in the
    run that follows the click (else None).

    The chart travels as JSON bytes: handed a dict, Streamlit checks each value for a
    dataframe, and that check imports pandas (half a second on the first map)."""
    data = json.dumps(chart, ensure_ascii=False).encode()
    if not chart.get("pick"):
        _component()(data=data, key=key)
        return None
    picked = _component()(data=data, key=key, on_picked_change=lambda: None).picked  # a trigger: one run only
    return int(picked) if isinstance(picked, int | float) else None
