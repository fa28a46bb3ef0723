"""The "Models" panel: every model in the registry, what it can do, and whether it is here now."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from model_zoo import Availability, ModelCard

from .i18n import md_escape, t, t_data

# A status as Streamlit's icon font draws it (the app serves the font itself): an emoji needs an emoji font, which
# a browser may lack (Debian's Chromium without fonts-noto-color-emoji drew ✅ and 💾 as empty boxes).
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
    """One row a model, every cell Markdown in the learner's language (st.table reads its cells as Markdown): a
    card's own text escaped, so it shows as written; the UI's strings as t gives them."""
    rows = []
    for card in cards:
        state = states[card.name]
        rows.append(
            {
                t("models.col.name"): md_escape(card.name),
                t("models.col.family"): md_escape(card.family),
                t("models.col.kind"): t(f"kind.{card.kind}"),
                t("models.col.source"): md_escape(t_data(f"card.{card.name}.source", card.source)),
                t("models.col.size"): md_escape(t_data(f"card.{card.name}.size", card.size)),
                t("models.col.licence"): md_escape(t_data(f"card.{card.name}.licence", card.licence)),
                t("models.col.capabilities"): t("models.list_separator").join(t(f"cap.{c}") for c in card.capabilities),
                t("models.col.status"): f"{STATUS_MARK[state.status]} {t('status.' + status_key(state.status))}",
                t("models.col.reason"): reason(card, state),
            }
        )
    return pd.DataFrame(rows)


def reason(card: ModelCard, state: Availability) -> str:
    """Why a model is here or not, in the learner's language: a model installed without a package of its own
    came with ContextLab itself (elmo-mini, trained by the project), not "from PyPI package" (blank)."""
    key = "shipped" if state.status == "installed" and not card.package else status_key(state.status)
    return t(f"reason.{key}", package=card.package or "", name=card.name)


# What a teacher reads at a glance fits a projector's width (1440 px); where each model comes from, its
# licence and why it is not here follow in a second table below.
GLANCE = ("name", "status", "kind", "size", "capabilities")
DETAILS = ("name", "family", "source", "licence", "reason")


def render_models_panel(cards: list[ModelCard], states: dict[str, Availability]) -> None:
    with st.container(key="models_panel"):  # the key names it for the phone's style (frame.STYLE)
        _models_panel(cards, states)


def _models_panel(cards: list[ModelCard], states: dict[str, Availability]) -> None:
    st.subheader(t("models.title"), anchor="models")
    st.caption(t("models.caption"))
    table = build_model_table(cards, states)
    # Static tables: a cell's text wraps, and every row shows. st.dataframe's grid cut a source, a model's
    # abilities and why it is missing at the column's edge, and scrolled the 18 rows inside a ten-row box.
    for columns, note in ((GLANCE, "models.size_help"), (DETAILS, None)):
        st.table(table[[t(f"models.col.{c}") for c in columns]], hide_index=True)
        if note:
            st.caption(t(note))
    ready = sum(s.ready for s in states.values())
    st.caption(t("models.summary", ready=ready, total=len(cards)))
