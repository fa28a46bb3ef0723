"""Pure figure builders: plain data in, plotly figures out."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go


def build_score_bars(pairs: list[tuple[str, float]], title: str = "", percent: bool = True) -> go.Figure:
    """Horizontal bars of (label, score), the highest on top: probabilities or cosine similarities."""
    labels = [repr(label) if label.strip() != label else label for label, _ in pairs]
    scores = [s for _, s in pairs]
    text = [f"{s:.1%}" if percent else f"{s:.3f}" for s in scores]
    fig = go.Figure(go.Bar(x=scores[::-1], y=labels[::-1], orientation="h", text=text[::-1]))
    fig.update_layout(
        title=title,
        height=max(220, 34 * len(pairs) + 80),
        margin=dict(l=10, r=10, t=40, b=10),
        xaxis=dict(
            tickformat=".0%" if percent else ".2f",
            range=[min(scores + [0.0]) * 1.15, max(scores + [0.01]) * 1.15],  # scores such as q·k can be negative
        ),
    )
    return fig


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
            x=cols,
            y=rows,
            zmin=zmin,
            zmax=zmax,
            colorscale=colorscale,
            reversescale=colorscale == "RdBu",
            hovertemplate=hover + "<extra></extra>",
        )
    )
    fig.update_layout(
        title=title,
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
                name=group,
                text=[words[i] for i in idx],
                textposition="top center",
                hovertemplate="%{text}<br>" + group + "<extra></extra>",
            )
        )
    fig.update_layout(title=title, height=620, margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h"))
    fig.update_xaxes(showticklabels=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, zeroline=False)
    return fig


def build_sense_map(
    xy: np.ndarray,
    labels: list[str],
    hover: list[str],
    title: str = "",
    own: tuple[np.ndarray, str] | None = None,
    own_name: str = "★",
) -> go.Figure:
    """Uses of one word as points coloured by sense; `hover` is HTML already escaped.

    own: (x, y) of the learner's sentence and its hover text, drawn as a star named `own_name`.
    All points in one place (a static model) are drawn as one point in the middle.
    """
    fig = go.Figure()
    for label, idx in _groups(labels):
        fig.add_trace(
            go.Scatter(
                x=xy[idx, 0],
                y=xy[idx, 1],
                mode="markers",
                name=label,
                text=[hover[i] for i in idx],
                hovertemplate="%{text}<extra></extra>",
                marker=dict(size=8, opacity=0.8),
            )
        )
    if own is not None:
        point, text = own
        fig.add_trace(
            go.Scatter(
                x=[point[0]],
                y=[point[1]],
                mode="markers",
                name=own_name,
                text=[text],
                hovertemplate="%{text}<extra></extra>",
                marker=dict(size=18, symbol="star", color="black", line=dict(color="white", width=1)),
            )
        )
    fig.update_layout(
        title=title,
        height=420,
        margin=dict(l=10, r=10, t=40, b=10),
        legend=dict(orientation="h", y=-0.05),
        hoverlabel=dict(align="left"),
    )
    flat = bool(np.ptp(xy, axis=0).max() < 1e-9) if len(xy) else True
    fig.update_xaxes(showticklabels=False, zeroline=False, range=[-1, 1] if flat else None)
    fig.update_yaxes(showticklabels=False, zeroline=False, range=[-1, 1] if flat else None)
    return fig


def build_layer_lines(
    series: dict[str, np.ndarray], title: str = "", y_title: str = "", dashed: tuple[str, ...] = ()
) -> go.Figure:
    """One line per named series over layers (x = layer index); names in `dashed` drawn dashed."""
    fig = go.Figure()
    for name, values in series.items():
        fig.add_trace(
            go.Scatter(
                x=list(range(len(values))),
                y=values,
                mode="lines+markers" if len(values) > 1 else "markers",
                name=name,
                line=dict(dash="dash" if name in dashed else "solid"),
            )
        )
    fig.update_layout(
        title=title,
        height=340,
        margin=dict(l=10, r=10, t=40, b=10),
        xaxis_title="layer",
        yaxis_title=y_title,
        legend=dict(orientation="h", y=-0.25),
    )
    return fig
