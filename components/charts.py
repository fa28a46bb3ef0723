"""Pure figure builders: plain data in, plotly figures out.

Plotly reads a subset of HTML in every text it draws (titles, tick labels, point labels: <a href>,
<b>, <br>), so every text given to a builder passes through `_text` and shows as written.

The builders a page draws on every sentence a learner types build one plain spec (plain_figure), not go.Scatter +
add_trace + update_layout: plotly validates every property as it is set, which took three to five times as long
(a heatmap 10.9 ms against 3.2, a word map 18.4 against 4.3), and a worker's page runs share one interpreter, so
under a class each run's Python waits on the others' (docs/deploy.md). Nor is the plain spec validated: what
plotly's checks would make of it is what the browser gets (tests/test_pages_fast.py checks every chart of every
page). Charts drawn once per button press keep the readable object form."""

from __future__ import annotations

import functools
import html
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from _plotly_utils.basevalidators import is_homogeneous_array
from _plotly_utils.utils import convert_to_base64, to_typed_array_spec
from plotly.colors import get_colorscale

from .tokens import spaced


def _text(text: str) -> str:
    """Plain text as plotly draws it literally (&, < and > as entities, which plotly decodes)."""
    return html.escape(text, quote=False)


class PlainFigure(go.Figure):
    """A figure from plain trace and layout dicts (plain_figure), handed over as they are.

    plotly's to_dict deep-copies the figure, its template included, before Streamlit writes it out: a sixth of
    what Inside the model's page spends in Python on a sentence (py-spy). A plain figure is built for one chart
    and read once, so its dicts are given as they are (each dict copied, not the lists and arrays in it: a numpy
    array there is written as plotly writes it into the copy, the figure keeps its array).

    Nor is plotly's own figure built unless something reads it (a test's `figure.data[0].x`, an update): even
    unchecked, its constructor deep-copies the data and the template, 8.8% of what Inside the model's worker
    spent holding the GIL under a class (py-spy --gil, thirty sessions). Streamlit only calls to_dict."""

    def __init__(self, spec: dict) -> None:  # plotly's state is built on first use (__getattr__)
        object.__setattr__(self, "_plain", spec)

    def __getattr__(self, name: str) -> Any:
        """Called for an attribute the object lacks: the first builds plotly's figure from the spec, unchecked
        (as plain_figure made it before), and reads it there."""
        state = self.__dict__
        if "_plain" not in state or state.get("_built"):
            raise AttributeError(name)
        state["_built"] = True
        go.Figure.__init__(self, state["_plain"], _validate=False)
        return getattr(self, name)

    def to_dict(self) -> dict:
        if self.__dict__.get("_built"):  # read or changed through plotly: its state is the figure
            res = {"data": [dict(trace) for trace in self._data], "layout": dict(self._layout)}
            convert_to_base64(res)
            return res
        plain = self._plain
        layout = _written(plain.get("layout", {}))
        layout.setdefault("template", _default_template())  # what plotly's constructor adds (no arrays in it)
        return {"data": [_written(trace) for trace in plain.get("data", [])], "layout": layout}


_SKIPPED = frozenset(("geojson", "layer", "layers", "range"))  # convert_to_base64's keys: written as they are
_NOT_ARRAYS = (str, int, float, dict, list, tuple)


def _written(value: dict, convert: bool = True) -> dict:
    """A copy of `value` as plotly writes a figure out, in one walk: each dict in it copied (in lists too), not
    its lists' other items; a key set to None left out (plotly leaves it unset); and, with `convert`, each
    numpy array that is a dict's value as plotly.js's typed array (convert_to_base64's rule, outside its skipped
    keys). convert_to_base64 itself calls its checks on every string of a chart's texts and on every node of the
    template: 4% of what Inside the model's worker spent holding the GIL under a class."""
    out: dict = {}
    for key, item in value.items():
        if item is None:
            continue
        keep = convert and key not in _SKIPPED
        if isinstance(item, dict):
            out[key] = _written(item, keep)
        elif isinstance(item, (list, tuple)):
            out[key] = _written_items(item, keep)
        elif keep and not isinstance(item, _NOT_ARRAYS) and is_homogeneous_array(item):
            out[key] = to_typed_array_spec(item)
        else:
            out[key] = item
    return out


_NESTED = frozenset((dict, list, tuple))


def _written_items(items: list | tuple, convert: bool) -> list | tuple:
    """_written for a list's items: its dicts and lists walked, the rest as they are (an array in a list stays
    one, as convert_to_base64 leaves it). A list of plain values (a chart's words, a row of numbers) is handed
    over as it is: nothing in it to copy or convert, and its items' types are read in C."""
    if not any(map(_NESTED.__contains__, map(type, items))):
        return items
    return [
        _written(x, convert)
        if isinstance(x, dict)
        else _written_items(x, convert)
        if isinstance(x, (list, tuple))
        else x
        for x in items
    ]


def _default_template() -> dict:
    """plotly's default template (Streamlit's, once its plotly element is imported) as a figure's layout
    writes it out; shared by the figures, which only write it out."""
    return _template_json(pio.templates.default)


@functools.cache
def _template_json(name: str) -> dict:
    return pio.templates[name].to_plotly_json()  # a deep copy of the template: once a name


def plain_figure(data: list[dict], layout: dict) -> go.Figure:
    """A figure from plain trace and layout dicts, not validated. Plotly's checks took about half of what a page
    pays for a chart, on every sentence a class types, in the one interpreter a worker's page runs share (with
    PlainFigure's hand-over and orjson: Inside the model's lens grid 3.3-4.5 → 1.5 ms, its answer curve 2.8 →
    1.2; docs/deploy.md). The one thing they did to these specs is done here: a colour scale named (plotly.js has
    its own "Blues") is written out as plotly's."""
    traces = [
        {**trace, "colorscale": _named_scale(trace["colorscale"])}
        if isinstance(trace.get("colorscale"), str)
        else trace
        for trace in data
    ]
    return PlainFigure({"data": traces, "layout": layout})


@functools.cache
def _named_scale(name: str) -> list[list]:
    """plotly's colour scale `name` as its checks write it out (looked up once: plotly lists its scales anew
    on each lookup)."""
    return [list(step) for step in get_colorscale(name)]


def _texts(texts: list[str]) -> list[str]:
    return [_text(s) for s in texts]


def cut(text: str, fit: int) -> str:
    """`text` in at most `fit` characters, the last of them … where it was longer."""
    return text if len(text) <= fit else text[: fit - 1] + "…"


def two_lines(text: str, fit: int) -> list[str]:
    """`text` in at most two lines of `fit` characters, the second cut (cut) where it runs longer: a token's
    box holds two ("<|endoftext|>", the [CLS] of a model without one, read "<|endo…" on one line)."""
    return [text] if len(text) <= fit else [text[:fit], cut(text[fit:], fit)]


TITLE_CHARS = 40  # a chart's title wraps after this many characters: plotly draws a title on one line, cut at
# the chart's edge, and a phone's chart (358 px) holds about 44 characters of its 17 px title (a Chinese
# character, drawn about twice as wide, counts two)
THIRD_TITLE_CHARS = 30  # a chart in a third of the main column on a wide screen (about 300 px): GPT's masked-LM
# bars beside the candidates' table lost the end of their Chinese title at 40 ("…（读两边" of "…（读两边）的猜测")
TITLE_LINE = 22  # px each further line of a title takes, added to the chart's top margin and height
_CJK = "\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef"  # CJK characters and punctuation, full-width forms
_PIECES = re.compile(rf"\s+|[{_CJK}]|[^\s{_CJK}]+")  # spaces, one wide character, a run of narrow ones
_CLOSING = frozenset("，。、：；！？）》」』")  # never the first of a line


def text_width(text: str) -> int:
    """`text`'s width in narrow characters: a wide (East Asian) character counts two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


# A legend under a chart, at the foot of the figure: placed below the plot by a share of its height (y=-0.3) it
# lay over the x axis's title where the tick labels turn upright (a phone's 31 layers)
FOOT_LEGEND = {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom"}


def _wrap(title: str, width: int) -> list[str]:
    """`title` in lines at most `width` narrow characters wide, filled greedily."""
    lines: list[str] = []
    line = ""
    for piece in _PIECES.findall(title):
        if piece.isspace():
            line += " " if line else ""
        elif line.strip() and piece not in _CLOSING and text_width(line + piece) > width:
            lines.append(line.rstrip())
            line = piece
        else:
            line += piece
    return [*lines, line.rstrip()] if line.strip() or not lines else lines


def title_lines(title: str, chars: int = TITLE_CHARS) -> list[str]:
    """`title` in lines at most `chars` narrow characters wide, broken at spaces or between two Chinese
    characters (a longer word keeps its line, a closing mark its character), as even as the fewest lines allow:
    filled greedily, a title's last word could stand alone on its line ("... layer" over "6")."""
    lines = _wrap(title, chars)
    if len(lines) == 1:
        return lines
    width = chars
    while width > 1 and len(_wrap(title, width - 1)) == len(lines):  # the narrowest width with as few lines
        width -= 1
    return _wrap(title, width)


@functools.lru_cache(maxsize=1024)  # a title is wrapped by trying narrower widths (1 ms for a long one); pages
def chart_title(title: str, chars: int = TITLE_CHARS) -> tuple[str, int]:  # draw the same titles on every rerun
    """A chart's title as plotly draws it (wrapped at `chars`, each line as written) and the px its further lines
    take."""
    lines = title_lines(title, chars)
    return "<br>".join(_texts(lines)), TITLE_LINE * (len(lines) - 1)


def top_title(heading: str, extra: int) -> dict:
    """A chart's title (chart_title's) hung from the chart's top. plotly anchors a title of several lines by its
    middle line: half of the further lines stood below it, over the plot (checked in Chromium: the span chart's
    "Start and end probability of" lost its top; ELMo's three-line strip title ran into its heatmap)."""
    return {"text": heading, "yref": "container", "y": 1, "yanchor": "top", "pad": {"t": 8 + extra // 2}}


def percent_label(p: float) -> str:
    """A probability as a bar's label: 12.3%, and below 0.1% two significant digits (0.021%), not a 0.0% that
    hides how small a factor is (the GPT lesson's weakest next-token factor)."""
    return f"{p:.1%}" if p >= 0.001 or p <= 0 else f"{p * 100:.2g}%"


def sci_or_zero(x: float) -> str:
    """A small figure such as a largest difference, in scientific notation (3.1e-07); exactly 0 reads as 0, not
    0.0e+00 (a check that two computations agree to the bit)."""
    return "0" if x == 0 else f"{x:.1e}"


SHORTEST = 1e-4  # the shortest bar drawn, as a share of the longest (build_score_bars)


def build_score_bars(
    pairs: list[tuple[str, float]], title: str = "", percent: bool = True, title_chars: int = TITLE_CHARS
) -> go.Figure:
    """Horizontal bars of (label, score), the highest on top: probabilities or cosine similarities (one plain
    spec: the Masked LM page draws these on every sentence a class types); the title wrapped at `title_chars`
    (THIRD_TITLE_CHARS for a chart in a narrow column)."""
    # a token " out" as "␣out", as the token chips show it (a label such as "2 · tide" keeps its spaces)
    labels = _texts([spaced(label) if label.strip() != label else label for label, _ in pairs])
    scores = [s for _, s in pairs]
    text = [percent_label(s) if percent else f"{s:.3f}" for s in scores]
    # plotly draws no label on a bar under about 1e-5 of its axis (measured in Chromium): GPT's factor for "tide"
    # after "The" (4.6e-9) showed no bar and no number. Such a bar is drawn SHORTEST times the longest (a tenth of
    # a pixel, as invisible as before) and its label and hover say its own value.
    shortest = max(scores + [0.01]) * SHORTEST
    drawn = [shortest if 0 < s < shortest else s for s in scores]
    bars = {
        "type": "bar",
        "x": drawn[::-1],
        "y": labels[::-1],
        "orientation": "h",
        "text": text[::-1],
        "hovertemplate": "%{y}: %{text}<extra></extra>",
    }
    heading, extra = chart_title(title, title_chars)
    top = max(scores + [0.01]) * 1.15
    layout = {
        "title": {"text": heading},
        "height": max(220, 34 * len(pairs) + 80) + extra,
        "margin": {"l": 10, "r": 10, "t": 40 + extra, "b": 10},
        "xaxis": {
            # whole percents repeat on an axis that ends below 5% ("0% 0% 1% 1%"): one decimal there
            "tickformat": (".0%" if top >= 0.05 else ".1%") if percent else ".2f",
            "range": [min(scores + [0.0]) * 1.15, top],  # scores such as q·k can be negative
        },
    }
    return plain_figure([bars], layout)


def log_axis(values: Sequence[float | None]) -> dict:
    """A logarithmic axis ticked at 1, 2 and 5 times a power of ten within `values`' range, each written out
    (plotly's own ticks name the decades and write the steps between as single digits: perplexities from 658
    down to 83 read "7 6 5 4 3 2 100 9 8")."""
    real = [float(v) for v in values if isinstance(v, int | float) and v > 0 and math.isfinite(v)]
    if not real:
        return {"type": "log"}
    low, high = min(real), max(real)
    ticks = [
        step * 10.0**power
        for power in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
        for step in (1, 2, 5)
    ]
    shown = [v for v in ticks if low / 1.5 <= v <= high * 1.5] or ticks
    return {"type": "log", "tickvals": shown, "ticktext": [f"{v:g}" for v in shown]}


def build_learning_curve(
    curve: list[dict[str, float]], names: Mapping[str, str], baselines: dict[str, float], percent: bool = True
) -> go.Figure:
    """A measure against tokens seen: one line per key of `names` (curve key -> label), and each
    baseline (label -> value) as a dashed level line. Accuracies (`percent`) on 0-100%, anything
    else (perplexities) on a log axis."""
    x = [p["tokens"] / 1e6 for p in curve]
    fig = go.Figure()
    for key, label in names.items():
        fig.add_trace(go.Scatter(x=x, y=[p[key] for p in curve], mode="lines+markers", name=_text(label)))
    for label, value in baselines.items():
        fig.add_trace(
            go.Scatter(x=[x[0], x[-1]], y=[value, value], mode="lines", name=_text(label), line=dict(dash="dash"))
        )
    fig.update_layout(
        height=300,
        margin=dict(l=10, r=10, t=30, b=10),
        xaxis_title="M tokens",
        yaxis=dict(tickformat=".0%", range=[0, 1]) if percent else log_axis([p[k] for p in curve for k in names]),
        legend=FOOT_LEGEND,
    )
    return fig


def build_layer_cosines(cosines: dict[str, float], title: str = "") -> go.Figure:
    """One bar per layer (label -> cosine similarity of a word's two uses), on a fixed -1..1 scale
    so that two pairs of sentences can be compared by eye."""
    labels = _texts(list(cosines))
    values = list(cosines.values())
    bars = {"type": "bar", "x": labels, "y": values, "text": [f"{v:.2f}" for v in values], "textposition": "outside"}
    heading, extra = chart_title(title)
    layout = {
        "title": {"text": heading},
        "height": 320 + extra,
        "margin": {"l": 10, "r": 10, "t": 40 + extra, "b": 10},
        "yaxis": {"range": [min(0.0, *values) * 1.1, 1.1], "title": {"text": "cos"}},
    }
    return plain_figure([bars], layout)


def build_matrix(
    z: np.ndarray | list[list[float]],
    rows: list[str],
    cols: list[str],
    title: str = "",
    zmin: float | None = None,
    zmax: float | None = None,
    colorscale: str = "RdBu",
    hover: str = "%{y} · %{x}<br>%{z:.3f}",
    height: int | None = None,
    axis_titles: tuple[str, str] | None = None,
    x_every: int = 1,
) -> go.Figure:
    """A labelled matrix as a heatmap, value on hover; rows top to bottom in the given order. `axis_titles`: the x
    and y axes' titles as plotly draws them; `x_every` labels every so many columns only (a vector's dimensions:
    0, 10, 20, ...)."""
    heat = {
        "type": "heatmap",
        "z": z,
        "x": _texts(cols),
        "y": _texts(rows),
        "zmin": zmin,
        "zmax": zmax,
        "colorscale": colorscale,
        "reversescale": colorscale == "RdBu",
        "hovertemplate": hover + "<extra></extra>",
    }
    heading, extra = chart_title(title)
    xaxis: dict[str, object] = {"type": "category"}
    if x_every > 1:
        xaxis.update(tickmode="linear", tick0=0, dtick=x_every, tickangle=0)
    yaxis: dict[str, object] = {"autorange": "reversed", "type": "category"}
    if axis_titles is not None:
        xaxis["title"], yaxis["title"] = {"text": axis_titles[0]}, {"text": axis_titles[1]}
    layout = {
        "title": top_title(heading, extra),
        "height": (height or max(260, 26 * len(rows) + 140)) + extra,
        "margin": {"l": 10, "r": 10, "t": 40 + extra, "b": 10},
        "yaxis": yaxis,
        "xaxis": xaxis,
    }
    return plain_figure([heat], layout)


def build_similarity_heatmap(labels: list[str], matrix: np.ndarray, title: str = "", number: bool = True) -> go.Figure:
    """A (n, n) cosine-similarity matrix. `number` prefixes positions so repeated labels stay apart."""
    ticks = [f"{i}:{label}" for i, label in enumerate(labels)] if number else labels
    return build_matrix(
        matrix,
        ticks,
        ticks,
        title,
        zmin=-1,
        zmax=1,
        hover="%{y} · %{x}<br>cos = %{z:.3f}",
        height=max(360, 26 * len(labels) + 140),
    )


def build_vector_strip(words: list[str], vectors: np.ndarray, title: str = "") -> go.Figure:
    """Each word's vector as a row of coloured cells (red positive, blue negative), values on hover."""
    limit = float(np.abs(vectors).max()) if vectors.size else 1.0
    dims = [str(i) for i in range(vectors.shape[1])]
    return build_matrix(
        vectors,
        words,
        dims,
        title,
        zmin=-limit,
        zmax=limit,
        hover="%{y} · dim %{x}<br>%{z:.3f}",
        height=(70 if len(words) <= 6 else 30) * len(words) + 120,  # many tokens: thinner rows
        # the dimensions' numbers at every tenth (or so) cell: all of them are a smear, none left a row of ticks
        # without a number under them (GloVe's 50, ELMo's first 64)
        x_every=_round_step(len(dims) / 6),
    )


def _round_step(step: float) -> int:
    """The step of 1, 2, 5, 10, 20, 50, ... nearest above `step`: an axis's ticks at round numbers."""
    base = 1
    while True:
        for k in (1, 2, 5):
            if base * k >= step:
                return base * k
        base *= 10


def _groups(labels: list[str]) -> list[tuple[str, list[int]]]:
    """Each distinct label in first-seen order, with the indices that carry it: one trace each."""
    return [(label, [i for i, lab in enumerate(labels) if lab == label]) for label in dict.fromkeys(labels)]


# The word map's label placement. Plotly draws a point's label beside its marker where `textposition` says,
# a fixed number of pixels from it: the placement is chosen here, per point, for the plot area the map gets on
# a projector (1440 px wide) and, at a lower weight, on a phone (390 px), where the legend takes more rows.
MAP_HEIGHT = 620
MAP_PLOTS = ((960.0, 468.0, 1.0), (338.0, 400.0, 0.5))  # (plot width, plot height, weight) in px
MAP_PAD = 0.05  # each axis's range reaches this share of the points' span beyond the outermost point
LABEL_SIZE = 12  # px, plotly's default
LABEL_GAP = 3 / 0.8 + 1  # px between a marker's centre and its label: plotly's for its default marker (size 6)
MARKER_HALF = 4.0  # px: a marker as a square for overlap
POSITIONS = (
    "top center",
    "bottom center",
    "middle right",
    "middle left",
    "top right",
    "top left",
    "bottom right",
    "bottom left",
)
_NARROW = set("iljtfr.,;:'!|()[] ")
_WIDE = set("mwMW@%")


def label_width(text: str, size: float = LABEL_SIZE) -> float:
    """A label's width in px, from rough per-character widths of a sans-serif font (a CJK character is 1 em)."""
    em = 0.0
    for ch in text:
        if ord(ch) > 0x2E80:
            em += 1.0
        elif ch in _NARROW:
            em += 0.32
        elif ch in _WIDE:
            em += 0.85
        elif ch.isupper() or ch.isdigit():
            em += 0.62
        else:
            em += 0.54
    return em * size


def label_box(px: float, py: float, width: float, position: str, size: float = LABEL_SIZE) -> tuple[float, ...]:
    """(x0, y0, x1, y1) in px, y down, of a label `width` px wide at `position` of the marker at (px, py)."""
    height = 1.3 * size  # the line's box, descenders included
    x0, y0 = _start(px, width, position, "left", "right"), _start(py, height, position, "top", "bottom")
    return (x0, y0, x0 + width, y0 + height)


def _start(at: float, extent: float, position: str, before: str, after: str) -> float:
    """Where a label's box begins along one axis: before the marker, after it, or centred on it."""
    if before in position:
        return at - LABEL_GAP - extent
    if after in position:
        return at + LABEL_GAP
    return at - extent / 2


def map_range(values: np.ndarray) -> list[float]:
    """An axis range that holds every value with MAP_PAD of the span to spare (a whole unit if they are equal)."""
    lo, hi = (float(values.min()), float(values.max())) if len(values) else (0.0, 1.0)
    pad = MAP_PAD * (hi - lo) if hi > lo else 0.5
    return [lo - pad, hi + pad]


def _overlap(boxes: np.ndarray, others: np.ndarray) -> np.ndarray:
    """The total overlap area of each of `boxes` (k, 4) with all of `others` (m, 4): (k,)."""
    w = np.minimum(boxes[:, None, 2], others[None, :, 2]) - np.maximum(boxes[:, None, 0], others[None, :, 0])
    h = np.minimum(boxes[:, None, 3], others[None, :, 3]) - np.maximum(boxes[:, None, 1], others[None, :, 1])
    return (np.clip(w, 0, None) * np.clip(h, 0, None)).sum(axis=1)


def place_labels(words: list[str], xy: np.ndarray, x_range: list[float], y_range: list[float]) -> list[str]:
    """Each word's textposition (one of POSITIONS), chosen so that labels overlap neither each other nor the
    other words' markers, nor leave the plot, in each of MAP_PLOTS (weighted): the crowded points choose first,
    then every label is placed again twice given all the others. The points themselves do not move."""
    n = len(words)
    if n == 0:
        return []
    widths = [label_width(w) for w in words]
    geometry = []  # per plot size: each point's candidate boxes in px (y down), the markers' boxes
    for width, height, weight in MAP_PLOTS:
        px = (xy[:, 0] - x_range[0]) / (x_range[1] - x_range[0]) * width
        py = (1 - (xy[:, 1] - y_range[0]) / (y_range[1] - y_range[0])) * height
        cand = np.array([[label_box(px[i], py[i], widths[i], pos) for pos in POSITIONS] for i in range(n)])
        marks = np.stack([px - MARKER_HALF, py - MARKER_HALF, px + MARKER_HALF, py + MARKER_HALF], axis=1)
        outside = (
            np.clip(-cand[..., 0], 0, None)
            + np.clip(cand[..., 2] - width, 0, None)
            + np.clip(-cand[..., 1], 0, None)
            + np.clip(cand[..., 3] - height, 0, None)
        ) * (1.3 * LABEL_SIZE)
        geometry.append((weight, cand, marks, outside))
    crowd = np.zeros(n)
    for weight, _, marks, _ in geometry:
        centre = (marks[:, :2] + marks[:, 2:]) / 2
        dist = np.hypot(*(centre[:, None, :] - centre[None, :, :]).transpose(2, 0, 1))
        crowd += weight * (dist < 3 * LABEL_SIZE).sum(axis=1)
    order = sorted(range(n), key=lambda i: (-crowd[i], i))
    chosen = np.full(n, -1)
    preference = 0.01 * np.arange(len(POSITIONS))  # the earlier positions win where all else is equal

    def costs(i: int) -> np.ndarray:
        """What each position of label i costs, given the labels placed so far."""
        total = preference.copy()
        others = np.flatnonzero((chosen >= 0) & (np.arange(n) != i))
        for weight, cand, marks, outside in geometry:
            hit = outside[i] + _overlap(cand[i], np.delete(marks, i, axis=0))
            if len(others):
                hit += _overlap(cand[i], cand[others, chosen[others]])
            total += weight * hit
        return total

    for _ in range(3):  # one greedy pass, then two passes that place each label again among all the others
        for i in order:
            chosen[i] = int(np.argmin(costs(i)))
    return [POSITIONS[k] for k in chosen]


@functools.lru_cache(maxsize=128)
def _placed_labels(words: tuple[str, ...], xy: bytes, x_range: tuple, y_range: tuple) -> list[str]:
    """place_labels, once per map: every learner who opens the lesson draws its default map (a third of a
    class's time on the page went to placing the same labels again)."""
    points = np.frombuffer(xy, dtype=np.float64).reshape(len(words), 2)
    return place_labels(list(words), points, list(x_range), list(y_range))


def build_word_map(
    words: list[str], xy: np.ndarray, groups: list[str], title: str = "", axes: tuple[str, str] | None = None
) -> go.Figure:
    """Words as labelled points in 2-D, one colour per group (a WordNet class), each label placed beside its
    point where it covers no other label or point (`place_labels`), on axes fixed to the points' extent.
    `axes`: the titles of axes that mean something (a projection's: their values shown too)."""
    x_range, y_range = map_range(xy[:, 0]), map_range(xy[:, 1])
    positions = _placed_labels(tuple(words), xy.astype(np.float64).tobytes(), tuple(x_range), tuple(y_range))
    points = [
        {
            "type": "scatter",
            "x": xy[idx, 0],
            "y": xy[idx, 1],
            "mode": "markers+text",
            "name": _text(group),
            "text": [_text(words[i]) for i in idx],
            "textposition": [positions[i] for i in idx],
            "textfont": {"size": LABEL_SIZE},
            "hovertemplate": "%{text}<br>" + _text(group) + "<extra></extra>",
        }
        for group, idx in _groups(groups)
    ]
    heading, extra = chart_title(title)
    axis = {"showticklabels": axes is not None, "zeroline": False}
    xaxis: dict[str, object] = {**axis, "range": x_range}
    yaxis: dict[str, object] = {**axis, "range": y_range}
    if axes is not None:
        xaxis["title"], yaxis["title"] = {"text": _text(axes[0])}, {"text": _text(axes[1])}
    layout = {
        # the title's first line under the toolbar on a phone
        "title": {"text": heading, "y": 1 - 36 / (MAP_HEIGHT + extra), "yanchor": "top"},
        "height": MAP_HEIGHT + extra,
        "margin": {"l": 10, "r": 10, "t": 64 + extra, "b": 10},
        "legend": {"orientation": "h"},
        "xaxis": xaxis,
        "yaxis": yaxis,
    }
    return plain_figure(points, layout)


# -- probing -------------------------------------------------------------------------------------
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


def _depth(layers: int) -> list[float]:
    """Normalised depth of each of `layers` layers: 0 the embedding layer, 1 the last."""
    from model_zoo.lessons.probing import normalised_depth

    return [normalised_depth(j, layers) for j in range(layers)]


PANEL_TITLE_SIZE = 12  # px: five panels' titles side by side on a phone


def panel_title(name: str) -> list[str]:
    """A panel's title in one line, or two where it has several words and more than 8 characters: broken at
    the space nearest its middle, so that five titles side by side keep apart on a phone."""
    spaces = [i for i, ch in enumerate(name) if ch == " "]
    if len(name) <= 8 or not spaces:
        return [name]
    cut = min(spaces, key=lambda i: abs(i - len(name) / 2))
    return [name[:cut], name[cut + 1 :]]


def _probe_panels(tasks: list[str], title: str, rows: list[str] | None = None) -> go.Figure:
    """One panel per task (columns), and per model where `rows` names them; x is normalised depth. Panel
    titles in at most two short lines and the title wrapped (`TITLE_CHARS`), so that they fit a phone."""
    from plotly.subplots import make_subplots

    n = len(rows) if rows else 1
    # lines of at most TITLE_CHARS characters, broken only at spaces (a longer word keeps its line)
    heading = title_lines(title)
    fig = make_subplots(
        rows=n,
        cols=len(tasks),
        shared_xaxes=True,
        shared_yaxes=True,
        subplot_titles=["<br>".join(_texts(panel_title(task))) for task in tasks],
        row_titles=_texts(rows) if rows else None,
        vertical_spacing=0.16 / n,
    )
    for note in fig.layout.annotations[: len(tasks)]:
        note.font = {"size": PANEL_TITLE_SIZE}
    extra = TITLE_LINE * (len(heading) - 1)
    height = 160 + 190 * n + extra
    fig.update_layout(
        title={"text": "<br>".join(_texts(heading)), "y": 1 - 24 / height, "yanchor": "top"},
        height=height,
        margin={"l": 10, "r": 30, "t": 88 + extra, "b": 10},
        legend={"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom"},
    )
    fig.update_xaxes(range=[-0.12, 1.12], tickvals=[0, 0.5, 1], ticktext=["0", "½", "1"])
    return fig


def _depth_title(fig: go.Figure, tasks: list[str], rows: int, text: str) -> None:
    """The depth axis named once, under the middle panel of the bottom row."""
    fig.update_xaxes(title_text=_text(text), row=rows, col=(len(tasks) + 1) // 2)


def build_probe_weights(
    tasks: list[str],
    weights: dict[str, list[list[float]]],
    paper: list[float | None],
    labels: dict[str, str],
) -> go.Figure:
    """The seed's figure: each task's learned scalar-mix weights as bars, a panel per task (columns)
    and model (rows), on a normalised depth axis (0 = embeddings, 1 = last layer) so that ELMo's 3
    layers and BERT's 7 or 13 line up; each model's centre of gravity as a diamond above its bars and
    the paper's (BERT-large, 24 layers) as a star.

    weights[model][task] = softmax weights (layers,); paper[task] = the paper's normalised centre of
    gravity or None; labels: 'title', 'depth', 'weight', 'cog' (the diamonds), 'paper'."""
    models = list(weights)
    fig = _probe_panels(tasks, labels["title"], models)
    top = 1.0
    shown_paper = False
    for m, (model, per_task) in enumerate(weights.items()):
        colour = PALETTE[m % len(PALETTE)]
        for t, w in enumerate(per_task):
            depth = _depth(len(w))
            fig.add_trace(
                go.Bar(
                    x=depth,
                    y=w,
                    width=0.55 / max(1, len(w) - 1),
                    marker_color=colour,
                    name=_text(model),
                    legendgroup=model,
                    showlegend=t == 0,
                    customdata=list(range(len(w))),
                    hovertemplate=_text(model) + " · layer %{customdata}<br>s = %{y:.2f}<extra></extra>",
                ),
                row=m + 1,
                col=t + 1,
            )
            cog = float(np.dot(np.arange(len(w)), w)) / max(1, len(w) - 1)
            fig.add_trace(
                go.Scatter(
                    x=[cog],
                    y=[top * 1.1],
                    mode="markers",
                    marker={"symbol": "diamond", "size": 11, "color": colour, "line": {"width": 1, "color": "#222"}},
                    name=_text(labels["cog"]),
                    legendgroup="cog",
                    showlegend=m == 0 and t == 0,
                    hovertemplate=_text(f"{model} · {labels['cog']}") + " %{x:.2f}<extra></extra>",
                ),
                row=m + 1,
                col=t + 1,
            )
            if paper[t] is not None:
                fig.add_trace(
                    go.Scatter(
                        x=[paper[t]],
                        y=[top * 1.1],
                        mode="markers",
                        marker={"symbol": "star", "size": 13, "color": "#444"},
                        name=_text(labels["paper"]),
                        legendgroup="paper",
                        showlegend=not shown_paper,
                        hovertemplate=_text(labels["paper"]) + " %{x:.2f}<extra></extra>",
                    ),
                    row=m + 1,
                    col=t + 1,
                )
                shown_paper = True
    fig.update_yaxes(range=[0, top * 1.22], tickvals=[0, 0.5, 1])
    for m in range(len(models)):
        fig.update_yaxes(title_text=_text(labels["weight"]), row=m + 1, col=1)
    _depth_title(fig, tasks, len(models), labels["depth"])
    return fig


def build_probe_curves(
    tasks: list[str],
    scores: dict[str, list[list[float]]],
    control: dict[str, list[list[float]]],
    majority: list[float | None],
    labels: dict[str, str],
) -> go.Figure:
    """Accuracy by layer: one panel per task, a line per model (a probe on that layer alone), its
    control task dashed, the majority-class baseline dotted; x is normalised depth.
    labels: 'title', 'depth', 'score', 'control', 'majority'."""
    fig = _probe_panels(tasks, labels["title"])
    for m, model in enumerate(scores):
        colour = PALETTE[m % len(PALETTE)]
        for t, (line, ctrl) in enumerate(zip(scores[model], control[model])):
            depth = _depth(len(line))
            drawn = [(line, "solid", model), (ctrl, "dash", f"{model} · {labels['control']}")]
            for values, dash, name in drawn if ctrl else drawn[:1]:  # no control task: no dashed line
                fig.add_trace(
                    go.Scatter(
                        x=depth,
                        y=values,
                        mode="lines+markers",
                        line={"color": colour, "dash": dash},
                        name=_text(name),
                        legendgroup=name,
                        showlegend=t == 0,
                        customdata=list(range(len(values))),
                        hovertemplate=_text(name) + " · layer %{customdata}<br>%{y:.3f}<extra></extra>",
                    ),
                    row=1,
                    col=t + 1,
                )
    for t, value in enumerate(majority):
        if value is not None:
            fig.add_trace(
                go.Scatter(
                    x=[0, 1],
                    y=[value, value],
                    mode="lines",
                    line={"color": "#888", "dash": "dot"},
                    name=_text(labels["majority"]),
                    legendgroup="majority",
                    showlegend=t == next(i for i, v in enumerate(majority) if v is not None),
                    hovertemplate=_text(labels["majority"]) + " %{y:.3f}<extra></extra>",
                ),
                row=1,
                col=t + 1,
            )
    fig.update_yaxes(range=[0, 1.02], title_text=_text(labels["score"]), col=1)
    _depth_title(fig, tasks, 1, labels["depth"])
    return fig


def build_span_curves(
    tokens: list[str],
    start: np.ndarray,
    end: np.ndarray,
    span: tuple[int, int] | None,
    names: tuple[str, str, str],
    title: str = "",
    first: int = 0,
    answer: str = "",
) -> go.Figure:
    """Extractive QA: the start and the end probability of every token, as bars over token positions (a
    repeated word keeps its own place; the first is numbered `first`), the picked span (positions) shaded and
    labelled with `answer` above its bars (plotly thins a long passage's tick labels to the chart's width, and
    the answer's own could be among those left out). Red for start and blue for end, the lecture's colours.
    `names`: the two series' labels and the span's."""
    # A category axis, whose tick labels plotly thins to what the chart's width holds (a phone's 77 tokens drawn
    # all at once ran into each other); a repeated word keeps its own place, made distinct by zero-width spaces
    seen: dict[str, int] = {}
    x = []
    for word in _texts(tokens):
        x.append(word + "\u200b" * seen.get(word, 0))
        seen[word] = seen.get(word, 0) + 1
    hover = [f"{i}: {w}" for i, w in enumerate(_texts(tokens), first)]
    data: list[dict] = [
        {
            "type": "bar",
            "x": x,
            "y": [float(v) for v in ys],
            "name": _text(name),
            "marker": {"color": colour},
            "hovertext": hover,
            "hovertemplate": "%{hovertext}<br>%{y:.1%}<extra>" + _text(name) + "</extra>",
        }
        for ys, name, colour in ((start, names[0], "#d62728"), (end, names[1], "#1f77b4"))
    ]
    shapes = []
    if span is not None:
        shade = "rgba(255, 190, 0, 0.3)"
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": span[0] - first - 0.5,  # a category's place: its index
                "x1": span[1] - first + 0.5,
                "y0": 0,
                "y1": 1,
                "fillcolor": shade,
                "line": {"width": 0},
                "layer": "below",
            }
        )
        legend_only = {"type": "bar", "x": [None], "y": [None], "name": _text(names[2]), "marker": {"color": shade}}
        data.append(legend_only)
    notes = []
    peak = max([float(v) for v in (*start, *end)], default=0.0)
    if span is not None and answer.strip():
        notes.append(
            {
                "x": (span[0] + span[1]) / 2 - first,  # the span's middle place (categories count from 0)
                "xref": "x",
                "y": 1,
                "yref": "paper",
                "yanchor": "top",
                "text": _text(cut(answer.strip(), SPAN_LABEL)),
                "showarrow": False,
                "font": {"size": 11},
                "bgcolor": "rgba(255, 255, 255, 0.85)",
            }
        )
    heading, extra = chart_title(title)
    layout = {  # the title at the top, the legend between it and the plot
        "title": top_title(heading, extra),
        "height": 390 + extra,
        "barmode": "group",
        "bargap": 0.15,
        "margin": {"l": 10, "r": 10, "t": 80 + extra, "b": 10},
        "xaxis": {"type": "category", "tickangle": -90, "tickfont": {"size": 10}},
        # room above the tallest bar for the span's label
        "yaxis": {"tickformat": ".0%", "range": [0, (peak or 1.0) * (1.2 if notes else 1.05)]},
        "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        "shapes": shapes,
        **({"annotations": notes} if notes else {}),  # no answer, no label: no list (plotly's checks drop an empty one)
    }
    return plain_figure(data, layout)


SPAN_LABEL = 32  # characters of the answer written over its span


PHONE_CHART_PX = 350  # a full-width chart's plot on a phone (390 px): what a diagram's token boxes must fit
TOKEN_CHAR_PX = 5.6  # px a character of a token takes at plotly's 11 px (measured in Chromium: 5.0-5.5)


def build_task_diagram(
    kind: str, tokens: list[str], segments: list[int], positions: list[int | None], labels: dict[str, str]
) -> go.Figure:
    """Which output vector feeds which classifier, drawn over the learner's own tokens (the lecture's four
    figures): `kind` "sentence" or "pair" (one linear layer on C, the [CLS] output), "mean" (one linear
    layer on the mean of the tokens' outputs), "token" (the same linear layer on every token's output),
    "qa" (a start vector and an end vector dotted with every passage token's output). `segments`: 0 for
    sentence A, 1 for B (filled differently); `positions`: each token's place (None for an elided "…"),
    written Tk, C for [CLS], and dk for a passage's k-th token; `labels`: "bert", "linear", "class",
    "tag", "start", "end"."""
    n = len(tokens)
    specials = {"[CLS]", "[SEP]", "…"}
    shapes: list[dict] = []
    notes: list[dict] = []

    def box(x0: float, x1: float, y0: float, y1: float, fill: str, text: str | list[str] = "", size: int = 12) -> None:
        shapes.append(
            {"type": "rect", "x0": x0, "x1": x1, "y0": y0, "y1": y1, "fillcolor": fill, "line": {"color": "#555"}}
        )
        if text:
            notes.append(
                {
                    "x": (x0 + x1) / 2,
                    "y": (y0 + y1) / 2,
                    "text": "<br>".join(_texts([text] if isinstance(text, str) else text)),
                    "showarrow": False,
                    "font": {"size": size},
                }
            )

    def line(x0: float, y0: float, x1: float, y1: float, colour: str = "#555") -> None:
        shapes.append({"type": "line", "x0": x0, "x1": x1, "y0": y0, "y1": y1, "line": {"color": colour, "width": 1.5}})

    size = 11 if n <= 10 else 9  # px of a token's text: a question and its passage have many
    fit = max(2, int(0.9 * PHONE_CHART_PX / (n + 0.2) / (TOKEN_CHAR_PX * size / 11)))  # characters a box holds
    for i, (token, segment, position) in enumerate(zip(tokens, segments, positions)):
        box(i - 0.45, i + 0.45, 0.0, 0.6, "#dbeafe" if segment == 0 else "#dcfce7", two_lines(token, fit), size)
        line(i, 0.6, i, 1.0)
        line(i, 2.0, i, 2.4)
        name = (
            "…"
            if position is None
            else "C"
            if position == 0
            else f"{'d' if kind == 'qa' and segment else 'T'}{position}"
        )
        box(i - 0.3, i + 0.3, 2.4, 3.0, "#fef9c3", name, size)
    box(-0.5, n - 0.5, 1.0, 2.0, "#e5e7eb", labels["bert"], 16)
    if kind in ("sentence", "pair"):
        line(0, 3.0, 0, 3.5)
        box(-0.45, 1.45, 3.5, 4.1, "#fde68a", labels["linear"])
        notes.append({"x": 0.5, "y": 4.45, "text": _text(labels["class"]), "showarrow": False})
    elif kind == "mean":
        words = [i for i, token in enumerate(tokens) if token not in specials]
        for i in words:
            line(i, 3.0, (n - 1) / 2, 3.5)
        box((n - 1) / 2 - 1.5, (n - 1) / 2 + 1.5, 3.5, 4.1, "#fde68a", labels["linear"])
        notes.append({"x": (n - 1) / 2, "y": 4.45, "text": _text(labels["class"]), "showarrow": False})
    elif kind == "token":  # one layer, drawn once across the words, applied to each word's vector on its own
        # the words left out of a long sentence ("…") are tagged too: the layer spans them, their tags elided
        words = [i for i, token in enumerate(tokens) if token not in specials or token == "…"]
        for i in words:
            tag = "…" if tokens[i] == "…" else labels["tag"]
            line(i, 3.0, i, 3.5)
            line(i, 4.1, i, 4.25)
            notes.append({"x": i, "y": 4.45, "text": _text(tag), "showarrow": False, "font": {"size": 11}})
        if words:
            box(words[0] - 0.4, words[-1] + 0.4, 3.5, 4.1, "#fde68a", labels["linear"])
    else:  # qa: the passage's tokens are segment B
        passage = [i for i, (tok, seg) in enumerate(zip(tokens, segments)) if seg == 1 and tok not in specials]
        if passage:  # the two vectors' boxes span the diagram (their words fit a phone); lines from the passage
            for i in passage:
                line(i, 3.0, i - 0.12, 3.5, "#d62728")
                line(i, 3.0, i + 0.12, 4.3, "#1f77b4")
            box(-0.45, n - 0.55, 3.5, 4.0, "#fecaca", labels["start"], 11)
            box(-0.45, n - 0.55, 4.3, 4.8, "#bfdbfe", labels["end"], 11)
    layout = {
        "height": 280,
        "margin": {"l": 5, "r": 5, "t": 5, "b": 5},
        "xaxis": {"visible": False, "range": [-0.6, n - 0.4]},
        "yaxis": {"visible": False, "range": [-0.1, 5.0]},
        "shapes": shapes,
        "annotations": notes,
        "showlegend": False,
        "plot_bgcolor": "rgba(0,0,0,0)",
    }
    # plotly's checks of its hundreds of shapes took 19 ms of a 25 ms page part
    return plain_figure([], layout)


def build_lines(
    x: Sequence[float],
    series: dict[str, list[float]],
    baselines: dict[str, float],
    title: str,
    x_title: str,
    percent: bool = False,
    log_x: bool = False,
    mark: float | None = None,
    log_y: bool = False,
) -> go.Figure:
    """One line per series (label -> y at each x), each baseline (label -> value) as a dashed level line;
    `log_x` spaces x by its logarithm (sizes that double), with a tick at each x; `mark`, a dotted vertical
    line at that x (where a slider stands); `log_y`, a logarithmic y axis."""
    fig = go.Figure()
    palette = ("#ff7f0e", "#1f77b4", "#2ca02c", "#9467bd")  # series apart at a glance on a projector
    for k, (label, ys) in enumerate(series.items()):
        colour = palette[k % len(palette)]
        fig.add_trace(go.Scatter(x=x, y=ys, mode="lines+markers", name=_text(label), line=dict(color=colour)))
    for label, value in baselines.items():
        grey = dict(dash="dash", color="#7f7f7f")
        fig.add_trace(go.Scatter(x=[x[0], x[-1]], y=[value, value], mode="lines", name=_text(label), line=grey))
    heading, extra = chart_title(title)
    fig.update_layout(
        title=heading,
        height=320 + extra,
        margin=dict(l=10, r=10, t=50 + extra, b=10),
        xaxis_title=_text(x_title),
        legend=FOOT_LEGEND,
    )
    if percent:
        fig.update_yaxes(tickformat=".0%", rangemode="tozero")
    if log_x:
        fig.update_xaxes(type="log", tickvals=x, ticktext=[f"{v:g}" for v in x])
    if mark is not None:
        fig.add_vline(x=mark, line_dash="dot", line_color="#444444")
    if log_y:
        fig.update_yaxes(**log_axis([v for ys in series.values() for v in ys] + list(baselines.values())))
    return fig


def build_axes_map(
    x: np.ndarray,
    y: np.ndarray,
    groups: list[int],
    names: list[str],
    hover: list[str],
    axes: tuple[str, str],
    title: str,
    colors: Sequence[str] = PALETTE,
) -> go.Figure:
    """Points on two named axes (their titles), one trace (colour, legend entry) per group; `hover` each
    point's card. Each point carries its index as customdata: a click on it (selection) names the point."""
    fig = go.Figure()
    for g, name in enumerate(names):
        idx = [i for i, k in enumerate(groups) if k == g]
        fig.add_trace(
            go.Scatter(
                x=[float(x[i]) for i in idx],
                y=[float(y[i]) for i in idx],
                mode="markers",
                name=_text(name),
                marker=dict(size=9, color=colors[g % len(colors)], line=dict(width=0.5, color="white")),
                customdata=idx,
                hovertext=[_text(hover[i]) for i in idx],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    heading, extra = chart_title(title)
    height = 480 + extra
    fig.update_layout(  # the title's first line under the toolbar on a phone
        title={"text": heading, "y": 1 - 36 / height, "yanchor": "top"},
        height=height,
        margin=dict(l=10, r=10, t=64 + extra, b=10),
        xaxis_title=_text(axes[0]),
        yaxis_title=_text(axes[1]),
        legend=FOOT_LEGEND,
        clickmode="event+select",
    )
    return fig
