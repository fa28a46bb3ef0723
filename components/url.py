"""Choices kept in the URL by their keys (?task=spam, ?tasks=pos,agreement): a shared link reopens the same
view in either language. (A widget bound with bind="query-params" writes its translated label instead.)"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st


def keys_from_url(name: str, options: Sequence[str], default: list[str]) -> list[str]:
    """The options named in ?name=a,b (unknown ones dropped), else `default`."""
    picked = [x for x in st.query_params.get(name, "").split(",") if x in options]
    return list(dict.fromkeys(picked)) or default


def key_from_url(name: str, options: Sequence[str], default: str) -> str:
    """The option named in ?name=..., else `default`."""
    value = st.query_params.get(name, "")
    return value if value in options else default


def keep_in_url(name: str, value: str | list[str]) -> None:
    st.query_params[name] = value if isinstance(value, str) else ",".join(value)
