"""The one translation mechanism: every UI string is a key in assets/i18n/<lang>.toml."""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Any

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


def current_lang() -> str:
    lang = st.session_state.get("lang", DEFAULT_LANG)
    return lang if lang in LANGS else DEFAULT_LANG


def translate(key: str, lang: str, **kwargs: Any) -> str:
    """`key` in `lang`, falling back to English; a key missing everywhere is a bug (KeyError)."""
    text = strings(lang).get(key)
    if text is None:
        text = strings(DEFAULT_LANG)[key]
    return text.format(**kwargs) if kwargs else text


def t(key: str, **kwargs: Any) -> str:
    """The UI string `key` in the learner's language, with {placeholders} filled in."""
    return translate(key, current_lang(), **kwargs)
