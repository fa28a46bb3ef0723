"""Pure figure builders: plain data in, plotly figures out.

Plotly reads a subset of HTML in every text it draws (titles, tick labels, point labels: <a href>,
<b>, <br>), so every text given to a builder passes through `_text` and shows as written."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go


def _text(text: str) -> str:
    """Plain text as plotly draws it literally (&, < and > as entities, which plotly decodes)."""
    return html.escape(text, quote=False)


def _texts(texts: list[str]) -> list[str]:
    return [_text(s) for s in texts]


def build_score_bars(pairs: list[tuple[str, float]], title: str = "", percent: bool = True) -> go.Figure:
    """Horizontal bars of (label, score), the highest on top: probabilities or cosine similarities.

    Built from one plain spec (not go.Bar + update_layout, whose per-property validation took
    twice as long): the Masked LM page draws these on every sentence a class types."""
    labels = _texts([repr(label) if label.strip() != label else label for label, _ in pairs])
    scores = [s for _, s in pairs]
    text = [f"{s:.1%}" if percent else f"{s:.3f}" for s in scores]
    bars = {"type": "bar", "x": scores[::-1], "y": labels[::-1], "orientation": "h", "text": text[::-1]}
    layout = {
        "title": {"text": _text(title)},
        "height": max(220, 34 * len(pairs) + 80),
        "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
        "xaxis": {
            "tickformat": ".0%" if percent else ".2f",
            "range": [min(scores + [0.0]) * 1.15, max(scores + [0.01]) * 1.15],  # scores such as q·k can be negative
        },
    }
    return go.Figure({"data": [bars], "layout": layout})


def build_learning_curve(
    curve: list[dict[str, float]], names: dict[str, str], baselines: dict[str, float], percent: bool = True
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
        yaxis=dict(tickformat=".0%", range=[0, 1]) if percent else dict(type="log"),
        legend=dict(orientation="h", y=-0.3),
    )
    return fig


def build_layer_cosines(cosines: dict[str, float], title: str = "") -> go.Figure:
    """One bar per layer (label -> cosine similarity of a word's two uses), on a fixed -1..1 scale
    so that two pairs of sentences can be compared by eye."""
    labels = _texts(list(cosines))
    values = list(cosines.values())
    bars = {"type": "bar", "x": labels, "y": values, "text": [f"{v:.2f}" for v in values], "textposition": "outside"}
    layout = {
        "title": {"text": _text(title)},
        "height": 320,
        "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
        "yaxis": {"range": [min(0.0, *values) * 1.1, 1.1], "title": {"text": "cos"}},
    }
    return go.Figure({"data": [bars], "layout": layout})


def build_matrix(
    z: np.ndarray,
    rows: list[str],
    cols: list[str],
    title: str = "",
    zmin: float | None = None,
    zmax: float | None = None,
    colorscale: str = "RdBu",
    hover: str = "%{y} · %{x}<br>%{z:.3f}",
    height: int | None = None,
) -> go.Figure:
    """A labelled matrix as a heatmap, value on hover; rows top to bottom in the given order."""
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=_texts(cols),
            y=_texts(rows),
            zmin=zmin,
            zmax=zmax,
            colorscale=colorscale,
            reversescale=colorscale == "RdBu",
            hovertemplate=hover + "<extra></extra>",
        )
    )
    fig.update_layout(
        title=_text(title),
        height=height or max(260, 26 * len(rows) + 140),
        margin=dict(l=10, r=10, t=40, b=10),
        yaxis=dict(autorange="reversed", type="category"),
        xaxis=dict(type="category"),
    )
    return fig


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
    fig = build_matrix(
        vectors,
        words,
        dims,
        title,
        zmin=-limit,
        zmax=limit,
        hover="%{y} · dim %{x}<br>%{z:.3f}",
        height=(70 if len(words) <= 6 else 30) * len(words) + 120,  # many tokens: thinner rows
    )
    fig.update_xaxes(showticklabels=False)
    return fig


def _groups(labels: list[str]) -> list[tuple[str, list[int]]]:
    """Each distinct label in first-seen order, with the indices that carry it: one trace each."""
    return [(label, [i for i, lab in enumerate(labels) if lab == label]) for label in dict.fromkeys(labels)]


def build_word_map(words: list[str], xy: np.ndarray, groups: list[str], title: str = "") -> go.Figure:
    """Words as labelled points in 2-D, one colour per group (a WordNet class)."""
    fig = go.Figure()
    for group, idx in _groups(groups):
        fig.add_trace(
            go.Scatter(
                x=xy[idx, 0],
                y=xy[idx, 1],
                mode="markers+text",
                name=_text(group),
                text=[_text(words[i]) for i in idx],
                textposition="top center",
                hovertemplate="%{text}<br>" + _text(group) + "<extra></extra>",
            )
        )
    fig.update_layout(title=_text(title), height=620, margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h"))
    fig.update_xaxes(showticklabels=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, zeroline=False)
    return fig
