"""Published results (assets/records): small tables, each with its source, shown as typed in, not measured."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow as pa
import streamlit as st

from .i18n import t

RECORDS = Path(__file__).resolve().parent.parent / "assets" / "records"


def read_record(name: str) -> list[dict[str, str]]:
    """The rows of assets/records/NAME.tsv (tab-separated, a header row, no quoting)."""
    with (RECORDS / f"{name}.tsv").open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


@st.cache_resource(show_spinner=False)
def record_table(name: str) -> pa.Table:
    """read_record's rows as an Arrow table, built once per server and never changed: st.dataframe sends
    it as it is. Rows as dicts were copied out of the cache, made a pandas frame and then Arrow on every
    run, a sixth of Using BERT's time with a class of thirty (py-spy)."""
    return pa.Table.from_pylist(read_record(name))


def render_record(name: str) -> None:
    """One published table, its title above and its source below."""
    st.markdown(f"**{t(f'records.{name}_title')}**")
    st.dataframe(record_table(name), hide_index=True, width="stretch")
    st.caption(t(f"records.{name}_source"))
