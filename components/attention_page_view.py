"""What the Attention lesson draws: one head's q·k worked out for a query token, and every head's
habits (Clark et al. 2019) as heatmaps with their table as CSV."""

from __future__ import annotations

import streamlit as st

from components.charts import build_matrix, build_score_bars, build_vector_strip
from components.i18n import t, t_plain
from model_zoo.lessons.attention import HeadSummary, QueryKey, shown_metrics

PNG = {"toImageButtonOptions": {"format": "png", "scale": 2, "filename": "contextlab-attention"}}


def render_query_key(qk: QueryKey, labels: list[str], query: int) -> None:
    """The query's scores and weights over the keys it sees, its q beside their k, and the head's matrix."""
    row = qk.row(query)
    shown = [labels[j] for j in row.keys]
    left, right = st.columns(2)
    left.plotly_chart(
        build_score_bars(list(zip(shown, row.scores)), t("attn.scores_title"), percent=False),
        key="qk_scores",
    )
    right.plotly_chart(build_score_bars(list(zip(shown, row.weights)), t("attn.weights_title")), key="qk_weights")
    st.caption(
        t("attn.qk_check", d=qk.queries.shape[1], scaling=f"{qk.scaling:.4f}", diff=f"{qk.max_difference:.1e}")
        + (" " + t("attn.qk_causal") if qk.causal else "")
    )
    st.plotly_chart(
        build_vector_strip(
            [f"q · {labels[query]}"] + [f"k · {s}" for s in shown],
            row.vectors,
            t("attn.vectors_title"),
        ),
        key="qk_vectors",
    )
    st.plotly_chart(
        build_matrix(
            qk.weights,
            labels,
            labels,
            t_plain("attn.matrix_title", layer=qk.layer + 1, head=qk.head + 1),
            zmin=0,
            zmax=1,
            colorscale="Blues",
            hover="%{y} → %{x}<br>%{z:.3f}",
        ),
        key="qk_matrix",
        config=PNG,
    )


def render_summary(model_name: str, causal: bool, summary: HeadSummary) -> None:
    """One heatmap per measure (layers down, heads across), then the table as CSV."""
    rows = [str(i + 1) for i in range(summary.shape[0])]
    cols = [str(i + 1) for i in range(summary.shape[1])]
    grid = st.columns(2)
    for i, metric in enumerate(shown_metrics(causal)):
        entropy = metric == "entropy"
        fig = build_matrix(
            summary.metrics[metric],
            rows,
            cols,
            t(f"attn.metric_{metric}"),
            zmin=0,
            zmax=summary.ceiling(metric),
            colorscale="Viridis" if entropy else "Blues",
            hover=t("attn.metric_hover") + ("%{z:.2f}" if entropy else "%{z:.1%}"),
            height=120 + 24 * len(rows),
        )
        fig.update_layout(xaxis_title=t("attn.head"), yaxis_title=t("attn.layer"))
        grid[i % 2].plotly_chart(fig, key=f"summary_{metric}", config=PNG)
    if causal:
        st.caption(t("attn.summary_causal"))
    st.caption(
        t("attn.summary_basis", sentences=summary.sentences, tokens=f"{summary.tokens:,}")
        + " "
        + t("attn.summary_entropy", uniform=f"{summary.uniform_entropy:.2f}")
    )
    st.download_button(
        t("attn.download_csv"),
        summary.to_csv(),
        file_name=f"contextlab-head-summary-{model_name}.csv",
        mime="text/csv",
        icon=":material/download:",
        key="download_csv",
    )
    st.caption(t("attn.png_hint"))
