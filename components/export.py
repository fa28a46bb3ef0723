"""What a page lets a learner download: tables as CSV text, and the button that hands one over."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

import streamlit as st


def csv_text(header: list[str], rows: Iterable[list[object]]) -> str:
    """A table as CSV text (a header, then the rows)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def csv_safe(text: str) -> str:
    """A cell of text a spreadsheet shows as text: a leading =, +, -, @, tab or carriage return would start a
    formula (CSV injection). The class store's export (serving.classroom.store._csv_safe) does the same below
    components, which serving may not import."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def download_csv(label: str, data: str, name: str, key: str) -> None:
    """The download button of a CSV table."""
    st.download_button(label, data, file_name=name, mime="text/csv", icon=":material/download:", key=key)
