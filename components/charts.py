"""Pure figure builders: plain data in, plotly figures out."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go


def build_prob_bars(pairs: list[tuple[str, float]], title: str = "") -> go.Figure:
    """Horizontal bars of (label, probability), the most likely on top."""
    labels = [repr(label.strip()) if label.strip() != label else label for label, _ in pairs]
    probs = [p for _, p in pairs]
    fig = go.Figure(go.Bar(x=probs[::-1], y=labels[::-1], orientation="h", text=[f"{p:.1%}" for p in probs[::-1]]))
    fig.update_layout(
        title=title,
        height=max(220, 34 * len(pairs) + 80),
        margin=dict(l=10, r=10, t=40, b=10),
        xaxis=dict(tickformat=".0%", range=[0, max(probs + [0.01]) * 1.15]),
    )
    return fig


def build_similarity_heatmap(labels: list[str], matrix: np.ndarray, title: str = "") -> go.Figure:
    """A (n, n) cosine-similarity matrix as a heatmap with the values on hover."""
    # Repeated labels (two "the"s) would merge on a categorical axis: number them.
    ticks = [f"{i}:{label}" for i, label in enumerate(labels)]
    fig = go.Figure(
        go.Heatmap(
            z=matrix,
            x=ticks,
            y=ticks,
            zmin=-1,
            zmax=1,
            colorscale="RdBu",
            reversescale=True,
            hovertemplate="%{y} · %{x}<br>cos = %{z:.3f}<extra></extra>",
        )
    )
    fig.update_layout(title=title, height=520, margin=dict(l=10, r=10, t=40, b=10), yaxis=dict(autorange="reversed"))
    return fig
