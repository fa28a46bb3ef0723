"""The one translation mechanism: every UI string is a key in assets/i18n/<lang>.toml."""

from __future__ import annotations

import re
import string
import threading
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import streamlit as st

LANGS = {"en": "English", "zh": "简体中文"}
DEFAULT_LANG = "en"
I18N_DIR = Path(__file__).resolve().parent.parent / "assets" / "i18n"


def _flatten(table: dict[str, Any], prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = str(value)
    return flat


@cache
def strings(lang: str) -> dict[str, str]:
    """All strings of one language, flattened to dotted keys ("home.title")."""
    with open(I18N_DIR / f"{lang}.toml", "rb") as fh:
        return _flatten(tomllib.load(fh))


T = TypeVar("T")
_SPEAKING = threading.local()  # a script thread's language for a moment (speaking), over the session's


def current_lang() -> str:
    lang = getattr(_SPEAKING, "lang", None) or st.session_state.get("lang", DEFAULT_LANG)
    return lang if lang in LANGS else DEFAULT_LANG


@contextmanager
def speaking(lang: str) -> Iterator[None]:
    """Strings in `lang` for a moment, whatever the session reads: what the teacher sends the class is written
    in every language, and each student reads their own (the session's "lang" is the language switch's
    widget, which a script may not set once drawn)."""
    before = getattr(_SPEAKING, "lang", None)
    _SPEAKING.lang = lang
    try:
        yield
    finally:
        _SPEAKING.lang = before


def in_every_language(write: Callable[[], T]) -> dict[str, T]:
    """What `write` gives in each language of the app, keyed by language."""
    written: dict[str, T] = {}
    for lang in LANGS:
        with speaking(lang):
            written[lang] = write()
    return written


_PUNCTUATION = frozenset(string.punctuation)
QUOTED = 80  # characters of a learner's text (or a link's value) that a sentence repeats


def shortened(text: str, limit: int = QUOTED) -> str:
    """What a sentence repeats of a learner's text or a link's value: its first `limit` characters, and "…"
    where it goes on (a 3,000-character paste was repeated whole, a box 560 px tall)."""
    return text if len(text) <= limit else text[:limit] + "…"


class Markdown(str):
    """Markdown that is safe as it is (what `t` returns): filled into another string unescaped."""


_AUTOLINK = re.compile(r"(?i)(?<=https)(?=://)|(?<=http)(?=://)|(?<=www)(?=\.)|(?<=@)")
_WORD_JOINER = "\u2060"  # invisible, and not a character a URL or e-mail address is made of


def md_escape(text: str) -> str:
    """`text` as Markdown that shows exactly `text`: every ASCII punctuation mark backslash-escaped
    (CommonMark allows it for all of them), so no link, image, emphasis, HTML, LaTeX ($) or
    Streamlit directive (:red[...], :material/icon:) can form; line breaks become spaces.
    GitHub's autolinks (http://..., www...., a@b.c) are found in the text after escapes are
    read, so an invisible word joiner goes after "http", "www" and "@", where it breaks them."""
    text = _AUTOLINK.sub(_WORD_JOINER, text)
    return "".join("\\" + ch if ch in _PUNCTUATION else " " if ch in "\r\n" else ch for ch in text)


def _fill(template: str, kwargs: dict[str, Any], escape: bool) -> str:
    """`template` with its {placeholders} filled. With `escape`, each value is shown as text: escaped
    for Markdown, or, inside a `code span` of the template, with backticks (which would close it)
    turned into quotes, since escapes are not read inside code."""
    out: list[str] = []
    in_code = False
    for literal, field, spec, conversion in string.Formatter().parse(template):
        out.append(literal)
        in_code ^= literal.count("`") % 2 == 1
        if field is None:
            continue
        value = kwargs[field]
        value = repr(value) if conversion == "r" else str(value) if conversion == "s" else value
        text = format(value, spec or "")
        if escape and isinstance(value, str) and not isinstance(value, Markdown):  # numbers are safe
            text = text.replace("`", "'") if in_code else md_escape(text)
        out.append(text)
    return "".join(out)


def translate(key: str, lang: str, *, plain: bool = False, **kwargs: Any) -> str:
    """`key` in `lang`, falling back to English; a key missing everywhere is a bug (KeyError).
    The values filled in are escaped for Markdown unless `plain` (see `t_plain`)."""
    text = strings(lang).get(key)
    if text is None:
        text = strings(DEFAULT_LANG)[key]
    return _fill(text, kwargs, escape=not plain) if kwargs else text


def t_data(key: str, english: str) -> str:
    """Text that the model zoo writes in English (a model card's size, source or licence), as plain text: the
    learner's language's `key` where it has one, else `english` as it is (a name, a URL needs none)."""
    return strings(current_lang()).get(key, english)


def t(key: str, **kwargs: Any) -> Markdown:
    """The UI string `key` in the learner's language, as Markdown, with {placeholders} filled in.
    Whatever is filled in (a learner's word, a model's answer) is shown as text, never as
    Markdown: every st.write/markdown/info/caption/button label reads its string as Markdown.
    Another `t` result filled in stays as it is."""
    return Markdown(translate(key, current_lang(), **kwargs))


def t_plain(key: str, **kwargs: Any) -> str:
    """`t` for places that show a string as plain text, not Markdown: chart titles (escaped for
    plotly by the chart builders), st.dataframe columns, input placeholders, file titles. (st.table
    reads its cells and headers as Markdown: use `t` and `md_escape` there.)"""
    return translate(key, current_lang(), plain=True, **kwargs)
