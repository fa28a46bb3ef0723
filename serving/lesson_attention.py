"""What the attention lessons compute for their pages (Attention, the Transformer, GPT next to BERT, the
Masked LM): readings of a model's attention and of the learner's text, as plain data or frozen dataclasses
(issue 32: pages take from model_zoo only types, errors and registry queries).

Every model call goes through the cached wrappers of `serving` (attention_view, token_strings,
left_vs_whole, first_token_shares), looked up when called; what is added here is arithmetic on their
results that takes microseconds, so it is not cached again.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

import serving
from model_zoo.contextual import Encoding
from model_zoo.lessons import attention, cloze, generation, lexicon, why_mask
from model_zoo.lessons.generation import BLANK, MAX_NEW_TOKENS, STRATEGIES, STRATEGY_ALIASES

__all__ = [
    "BLANK",
    "MAX_NEW_TOKENS",
    "STRATEGIES",
    "STRATEGY_ALIASES",
    "LaterTokens",
    "Link",
    "QueryStart",
    "Reach",
    "example_sentences",
    "first_token_sink",
    "heads_grid",
    "later_tokens",
    "left_first",
    "mask_first",
    "maskable_words",
    "most_attended",
    "query_start",
    "reach",
    "rollout",
    "spelled_tokens",
    "strongest_link",
]


# -- Attention -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class QueryStart:
    """What the q·k view's sliders and query box offer for an encoding: its grid of heads and the query
    token it starts on."""

    layers: int
    heads: int
    query: int  # a left-to-right model's last token, else the first token of a word (default_query)


def query_start(encoding: Encoding, causal: bool) -> QueryStart:
    """The layers and heads of `encoding`'s attentions and the query token the view starts on."""
    layers, heads = attention.heads_grid(encoding.attentions)
    return QueryStart(layers, heads, attention.default_query(encoding.word_ids, causal))


@st.cache_data(show_spinner=False)
def example_sentences() -> tuple[str, ...]:
    """The shipped example sentences every head's habits can be averaged over (WordNet's examples)."""
    return tuple(lexicon.examples())


def heads_grid(model_name: str, text: str) -> tuple[int, int]:
    """(layers, heads) of the model's attention over `text` (the page's view of it)."""
    return attention.heads_grid(serving.attention_view(model_name, text, None).attentions)


def most_attended(model_name: str, text: str, word: str) -> tuple[str, float] | None:
    """(token, share): what `word` attends to most in the last layer over `text`, heads averaged, the token
    spelled without a space mark; None when no token of `text` is `word`."""
    view = serving.attention_view(model_name, text, None)
    assert view.attentions is not None  # attention_view always asks for them
    return attention.most_attended(view.attentions, list(view.tokens), word)


def spelled_tokens(model_name: str, text: str) -> list[str]:
    """`text`'s tokens, special tokens included (the tokenizer only, no forward pass), spelled as
    most_attended spells its answer: a quiz's options and its live answer match."""
    return [attention.spelled(token) for token in serving.token_strings(model_name, text)]


# -- the Transformer -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Reach:
    """How far one token's attention reaches, layer by layer."""

    strongest: list[list[float]]  # (layers, tokens): its weight on each token from the layer's strongest head
    link: tuple[int, int, int, float] | None  # (layer, head, token, weight) that carries most attention farthest


def reach(encoding: Encoding, i: int) -> Reach:
    """Token `i`'s reach in `encoding` (with attentions): strongest_head_reach and farthest_link."""
    assert encoding.attentions is not None  # attention_view always asks for them
    strongest = attention.strongest_head_reach(encoding.attentions, i).tolist()
    return Reach(strongest, attention.farthest_link(encoding.attentions, i, encoding.word_ids))


@dataclass(frozen=True)
class Link:
    """The strongest link from one token to another over every layer and head."""

    layer: int  # from 0
    head: int  # from 0
    weight: float
    distance: int  # tokens between the two


def strongest_link(model_name: str, text: str, source: str, target: str) -> Link | None:
    """The layer whose strongest head gives most attention from the token `source` to the token `target`
    in `text` (each its first use, as the tokenizer spells it); None when either is not a token of it."""
    view = serving.attention_view(model_name, text, None)
    tokens = view.tokens
    if source not in tokens or target not in tokens:
        return None
    assert view.attentions is not None  # attention_view always asks for them
    i, j = tokens.index(source), tokens.index(target)
    layer, head, weight = attention.strongest_link(view.attentions, i, j)
    return Link(layer, head, weight, abs(i - j))


# -- GPT next to BERT ----------------------------------------------------------------------------
def first_token_sink(model_name: str, text: str, tokens: int) -> generation.FirstTokenSink:
    """How many heads of the causal LM park their attention on the first token of `text` (`tokens` long in
    the page's view), against an even spread."""
    return generation.first_token_sink(serving.first_token_shares(model_name, text), tokens)


def left_first(model_name: str, text: str) -> str:
    """The causal LM's first guess for the blank (___) in `text` from the words on its left."""
    return generation.left_first(serving.left_vs_whole(model_name, text, ())).candidate


@dataclass(frozen=True)
class LaterTokens:
    """What a model's attention gives the tokens after the one attending."""

    largest: float  # the largest weight any head gives a later token
    only_left: bool  # no more than rounding: a causal mask


def later_tokens(model_name: str, text: str) -> LaterTokens:
    """The attention the model gives later tokens over `text` (the page's view of it)."""
    view = serving.attention_view(model_name, text, None)
    assert view.attentions is not None  # attention_view always asks for them
    return LaterTokens(attention.attention_to_later_tokens(view.attentions), attention.looks_only_left(view.attentions))


# -- the Masked LM -------------------------------------------------------------------------------
def maskable_words(text: str) -> list[str]:
    """The words of the learner's `text` outside its [MASK]s, each once, in first-seen order."""
    return cloze.maskable_words(text)


def mask_first(text: str, word: str) -> str:
    """The learner's `text` with the first use of `word` outside its [MASK]s hidden; unchanged if none."""
    return cloze.mask_first(text, word)


def rollout(model_name: str, text: str) -> tuple[list[str], why_mask.Rollout]:
    """`text`'s tokens (the page's view of it) and the attention rollout over them."""
    encoding = serving.attention_view(model_name, text, None)
    assert encoding.attentions is not None  # attention_view always asks for them
    return encoding.tokens, why_mask.rollout_summary(encoding.attentions)
