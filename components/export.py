"""What a page lets a learner download: tables as CSV text, and the button that hands one over."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable

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


def download_csv(label: str, make: Callable[[], str], name: str, key: str) -> None:
    """The download button of a CSV table, made when the learner clicks (Streamlit's deferred download), not
    on every run of the page: a class's thirty reruns each built and held a table nobody asked for (Inside
    the model: two tables a rerun, part of each learner's wait under a class). Clicking reruns nothing."""
    st.download_button(
        label, make, file_name=name, mime="text/csv", icon=":material/download:", key=key, on_click="ignore"
    )
