"""Choices kept in the URL by their keys (?task=spam, ?tasks=pos,agreement): a shared link reopens the same
view in either language. (A widget bound with bind="query-params" writes its translated label instead.)"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import streamlit as st

from .i18n import t

SHOWN = 40  # characters of a link's value repeated in the sentence that says it is unknown


def keys_from_url(name: str, options: Sequence[str], default: list[str]) -> list[str]:
    """The options named in ?name=a,b, else `default`; unknown ones are dropped, and one sentence says so."""
    given = [x for x in st.query_params.get(name, "").split(",") if x]
    unknown = [x for x in given if x not in options]
    if unknown:
        st.info(
            t(
                "url.unknown_some",
                name=name,
                value=",".join(given)[:SHOWN],
                unknown=", ".join(unknown)[:SHOWN],
                options=", ".join(options),
            )
        )
    picked = [x for x in given if x in options]
    return list(dict.fromkeys(picked)) or default


def key_from_url(name: str, options: Sequence[str], default: str, aliases: Mapping[str, str] | None = None) -> str:
    """The option named in ?name=... (or by one of its `aliases`, such as the word on its button), else
    `default`. A value the page does not know gets one sentence saying what opened instead, never a
    silent default."""
    value = st.query_params.get(name, "")
    value = (aliases or {}).get(value.lower(), value)
    if value in options:
        return value
    if value:
        st.info(t("url.unknown", name=name, value=value[:SHOWN], default=default, options=", ".join(options)))
    return default


def keep_in_url(name: str, value: str | list[str]) -> None:
    st.query_params[name] = value if isinstance(value, str) else ",".join(value)
