"""The "Models" panel: every model in the registry, what it can do, and whether it is here now."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from model_zoo import Availability, ModelCard

from .i18n import t, t_data

# A table is drawn on a canvas, in the page's text font: its marks are characters every text font has (an emoji
# needs an emoji font, which a browser may lack: Debian's Chromium without fonts-noto-color-emoji drew ✅ and 💾
# as empty boxes). Markdown gets Streamlit's icon font (served by the app itself) instead.
STATUS_ICON = {"installed": "✓", "cached": "✓", "needs download": "↓", "coming": "…", "missing": "✗"}
STATUS_MARK = {
    "installed": ":material/check_circle:",
    "cached": ":material/save:",
    "needs download": ":material/download:",
    "coming": ":material/schedule:",
    "missing": ":material/cancel:",
}


def status_key(status: str) -> str:
    return status.replace(" ", "_")


def build_model_table(cards: list[ModelCard], states: dict[str, Availability]) -> pd.DataFrame:
    """One row a model, every cell already in the learner's language."""
    rows = []
    for card in cards:
        state = states[card.name]
        rows.append(
            {
                t("models.col.name"): card.name,
                t("models.col.family"): card.family,
                t("models.col.kind"): t(f"kind.{card.kind}"),
                t("models.col.source"): t_data(f"card.{card.name}.source", card.source),
                t("models.col.size"): t_data(f"card.{card.name}.size", card.size),
                t("models.col.licence"): t_data(f"card.{card.name}.licence", card.licence),
                t("models.col.capabilities"): t("models.list_separator").join(t(f"cap.{c}") for c in card.capabilities),
                t("models.col.status"): f"{STATUS_ICON[state.status]} {t('status.' + status_key(state.status))}",
                t("models.col.reason"): t(
                    "reason." + status_key(state.status), package=card.package or "", name=card.name
                ),
            }
        )
    return pd.DataFrame(rows)


# What a teacher reads at a glance fits a projector's width (1440 px); where each model comes from, its
# licence and why it is not here follow in a second table below.
GLANCE = ("name", "status", "kind", "size", "capabilities")
DETAILS = ("name", "family", "source", "licence", "reason")


def render_models_panel(cards: list[ModelCard], states: dict[str, Availability]) -> None:
    st.subheader(t("models.title"), anchor="models")
    st.caption(t("models.caption"))
    table = build_model_table(cards, states)
    for columns in (GLANCE, DETAILS):
        st.dataframe(
            table[[t(f"models.col.{c}") for c in columns]],
            hide_index=True,
            width="stretch",
            column_config={t("models.col.size"): st.column_config.TextColumn(help=t("models.size_help"))},
        )
    ready = sum(s.ready for s in states.values())
    st.caption(t("models.summary", ready=ready, total=len(cards)))
