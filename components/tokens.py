"""Tokens as chips. Every token is HTML-escaped: user text never becomes markup."""

from __future__ import annotations

import html

import streamlit as st

from model_zoo.words import BYTE_PIECE

from .i18n import t

_CHIP = (
    '<span title="{title}" style="display:inline-block;margin:2px;padding:2px 8px;border-radius:6px;'
    'font-family:monospace;background:{bg};border:1px solid #0002">{text}</span>'
)
_PALETTE = ("#dbeafe", "#dcfce7", "#fef9c3", "#fce7f3", "#ede9fe", "#ffedd5")
# Byte-level BPE (GPT-2, SmolLM2) marks a leading space with Ġ and a newline with Ċ.
_VISIBLE = str.maketrans({"Ġ": "␣", "Ċ": "↵"})


_SPACED = str.maketrans({" ": "␣", "\n": "↵", "\t": "⇥"})


def spaced(text: str) -> str:
    """Decoded text as a learner should read a token of it: ␣ for a space, ↵ for a new line (" out" is "␣out")."""
    return text.translate(_SPACED)


def readable(token: str) -> str:
    """A token as a learner should read it: a visible ␣ where the model sees a space."""
    return token.translate(_VISIBLE)


def build_token_chips(tokens: list[str], word_ids: list[int | None]) -> str:
    """HTML for a row of token chips; pieces of one word share a colour, specials are grey."""
    chips = []
    for i, (token, word) in enumerate(zip(tokens, word_ids)):
        bg = "#e5e7eb" if word is None else _PALETTE[word % len(_PALETTE)]
        title = f"#{i} {token}" + ("" if word is None else f" · word {word}")
        chips.append(_CHIP.format(title=html.escape(title), bg=bg, text=html.escape(readable(token))))
    return '<div data-testid="token-chips">' + "".join(chips) + "</div>"


def render_tokens(tokens: list[str], word_ids: list[int | None]) -> None:
    st.html(build_token_chips(tokens, word_ids))
    if any(BYTE_PIECE.fullmatch(token) for token in tokens):  # an emoji or a Chinese character, cut in pieces
        st.caption(t("notice.byte_pieces"))
