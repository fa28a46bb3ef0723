"""Choices kept in the URL by their keys (?task=spam, ?tasks=pos,agreement): a shared link reopens the same
view in either language. (A widget bound with bind="query-params" writes its translated label instead.)

A page reads a link's value before it draws the widget, and writes the widget's value back after it:
`key_from_url` (one of a list), `keys_from_url` (several), `number_from_url` (a number in a range),
`flag_from_url` (true or false), `index_from_url` (a token of the text), then `keep_in_url`. A widget bound
natively (bind="query-params", the key is the name) drops a value it cannot take without a word: called
before it, `key_from_url` (one of the labels it shows) or `flag_from_url` say so; `text_box` draws a text box
that says so of a link's longer text (`said_if_cut`) and of a paste (`limited_box`). A value the page does not
know gets one sentence, never a silent default; each name is said at most once a session (the first time the
page reads it: later, the learner's own typing may leave a kept value behind, and that is no link's fault)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import streamlit as st

from .i18n import shortened, t

WORD_CHARS = 40  # what a box for one word (or a short phrase) holds
SAID = "_url_said"  # session state: the names whose link value this session has read
N = TypeVar("N", int, float)


def _first_time(name: str) -> bool:
    """True the first time this session reads ?name= (whatever it holds): only then may a sentence be said."""
    said: set[str] = st.session_state.setdefault(SAID, set())
    first = name not in said
    said.add(name)
    return first


def keys_from_url(name: str, options: Sequence[str], default: list[str]) -> list[str]:
    """The options named in ?name=a,b (or ?name=a&name=b), else `default`; unknown ones are dropped, and one
    sentence says so."""
    given = [x for part in st.query_params.get_all(name) for x in part.split(",") if x]
    unknown = [x for x in given if x not in options]
    if _first_time(name) and unknown:
        st.info(
            t(
                "url.unknown_some",
                name=name,
                value=shortened(",".join(given)),
                unknown=shortened(", ".join(unknown)),
                options=", ".join(options),
            )
        )
    picked = [x for x in given if x in options]
    return list(dict.fromkeys(picked)) or default


def key_from_url(name: str, options: Sequence[str], default: str, aliases: Mapping[str, str] | None = None) -> str:
    """The option named in ?name=... (or by one of its `aliases`, such as the word on its button), else
    `default`. A value the page does not know gets one sentence saying what opened instead, never a
    silent default."""
    first = _first_time(name)
    value = st.query_params.get(name, "")
    value = (aliases or {}).get(value.lower(), value)
    if value in options:
        return value
    if first and value:
        st.info(t("url.unknown", name=name, value=shortened(value), default=default, options=", ".join(options)))
    return default


def number_from_url(name: str, low: N, high: N, default: N) -> N:
    """The number in ?name=..., else `default`; a whole number where `default` is one. A value that is no such
    number opens on `default`, one outside [low, high] on the nearer end; one sentence says which."""
    value = st.query_params.get(name, "")
    first = _first_time(name)
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    kind = type(default)
    if math.isfinite(number) and (kind is float or number.is_integer()):
        used = kind(min(max(number, low), high))
    else:
        used = default
    if first and (not math.isfinite(number) or used != number):
        st.info(t("url.number", name=name, value=shortened(value), low=low, high=high, used=used))
    return used


def flag_from_url(name: str, default: bool) -> bool:
    """?name=true or false (in any case, as a toggle bound natively reads it), else `default`; another value
    gets one sentence."""
    flags = {"true": "true", "false": "false"}
    return key_from_url(name, list(flags), flags[str(default).lower()], flags) == "true"


def index_from_url(name: str, options: Sequence[str], default: int) -> int:
    """For a picker among the tokens of a text: the position of the first option that ?name= names, else
    `default`. A link's token that the text does not have gets one sentence."""
    first = _first_time(name)
    value = st.query_params.get(name, "")
    if value in options:
        return list(options).index(value)
    if first and value:
        st.info(t("url.not_in_text", name=name, value=shortened(value), used=options[default]))
    return default


def said_if_cut(name: str, limit: int, around: str | None = None) -> None:
    """Before a text box bound to ?name= that holds `limit` characters: a link's longer text gets one sentence
    (the page reads `limit` characters of it, kept_part's, and the address keeps those)."""
    value = st.query_params.get(name, "")
    if _first_time(name) and len(value) > limit:
        kept = st.query_params[name] = kept_part(value, limit, around)
        said = "url.too_long" if kept == value[:limit] else "url.too_long_around"
        st.info(t(said, name=name, n=len(value), limit=limit, value=shortened(value), mark=around or ""))


def kept_part(text: str, limit: int, around: str | None = None) -> str:
    """`limit` characters of a longer `text`: its first ones, or, where the page reads a mark (`around`: GPT's
    ___, a [MASK]) that comes only after them, those that end a little past the mark, begun at a word. A paste
    of 300 words with its blank near word 150 was cut before the blank, and the page said there was none."""
    if not around or (mark := text.find(around)) < 0 or mark + len(around) <= limit:
        return text[:limit]
    end = min(len(text), mark + len(around) + limit // 4)  # some of the sentence after the mark too
    start = end - limit
    space = text.find(" ", start, mark)  # begin at a word where one begins before the mark
    return text[space + 1 if space >= 0 else start : end]


PASTED = "_url_pasted_"  # session state, + a box's key: how long the text was that the box just cut


def _keep_first(key: str, limit: int, around: str | None) -> None:
    """on_change of limited_box: a text over `limit` characters is cut (kept_part), and its length remembered."""
    value = st.session_state[key]
    if len(value) > limit:
        kept = st.session_state[key] = kept_part(value, limit, around)
        st.session_state[PASTED + key] = (len(value), around if kept != value[:limit] else None)


def limited_box(
    widget: Callable[..., str], label: str, key: str, limit: int, around: str | None = None, **kwargs: Any
) -> str:
    """A text box (`widget`: st.text_input or st.text_area, or a column's) that reads at most `limit`
    characters. Not Streamlit's max_chars: its box ignores a paste over the limit without a word (the box
    stays as it was, streamlit/streamlit#9221: its frontend drops any change longer than the limit), and a
    learner pasting a page of text saw nothing happen. This box takes the paste, keeps `limit` characters
    (kept_part: the first ones, or those around the mark `around` the page reads) and says so in one sentence.
    (A box in a form, which has no on_change, has no max_chars either: the form's page says in one sentence that
    the text sent is too long.)"""
    value = widget(label, key=key, on_change=_keep_first, args=(key, limit, around), **kwargs)
    if (pasted := st.session_state.pop(PASTED + key, None)) is not None:
        n, moved = pasted
        said = "url.pasted_around" if moved else "url.pasted_too_long"
        st.info(t(said, n=f"{n:,}", limit=f"{limit:,}", mark=moved or ""), icon=":material/content_cut:")
    return value[:limit]


def text_box(
    widget: Callable[..., str], label: str, key: str, limit: int, around: str | None = None, **kwargs: Any
) -> str:
    """A lesson's `limited_box` bound to ?key=; a link's longer text is cut as said_if_cut says."""
    said_if_cut(key, limit, around)
    return limited_box(widget, label, key, limit, around, bind="query-params", **kwargs)


def keep_in_url(name: str, value: str | list[str] | bool | float) -> None:
    """Write a widget's value back to ?name= (a list as a,b; a number as short as it reads; true/false)."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float):
        text = f"{value:g}"
    elif isinstance(value, int):
        text = str(value)
    else:
        text = value if isinstance(value, str) else ",".join(value)
    st.query_params[name] = text
