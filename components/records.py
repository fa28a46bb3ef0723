"""Published results (assets/records): small tables, each with its source, shown as typed in, not measured."""

from __future__ import annotations

import csv
from pathlib import Path

import streamlit as st

from .i18n import t

RECORDS = Path(__file__).resolve().parent.parent / "assets" / "records"


@st.cache_data(show_spinner=False)
def read_record(name: str) -> list[dict[str, str]]:
    """The rows of assets/records/NAME.tsv (tab-separated, a header row, no quoting)."""
    with (RECORDS / f"{name}.tsv").open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def render_record(name: str) -> None:
    """One published table, its title above and its source below."""
    st.markdown(f"**{t(f'records.{name}_title')}**")
    st.dataframe(read_record(name), hide_index=True, width="stretch")
    st.caption(t(f"records.{name}_source"))
