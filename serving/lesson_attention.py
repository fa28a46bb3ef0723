"""What the attention lessons compute for their pages (Attention, the Transformer, GPT next to BERT, the
Masked LM): readings of a model's attention and of the learner's text, as plain data or frozen dataclasses
(issue 32: pages take from model_zoo only types, errors and registry queries).

Every model call goes through the cached wrappers of `serving` (attention_view, token_strings,
left_vs_whole, first_token_shares), looked up when called; what is added here is arithmetic on their
results that takes microseconds, so it is not cached again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

import serving
from model_zoo.contextual import Encoding
from model_zoo.errors import WordNotInText
from model_zoo.lessons import attention, cloze, generation, lexicon, why_mask
from model_zoo.lessons.generation import BLANK, LESSON_BLANKS, MAX_NEW_TOKENS, STRATEGIES, STRATEGY_ALIASES

__all__ = [
    "BLANK",
    "LESSON_BLANKS",
    "MAX_NEW_TOKENS",
    "STRATEGIES",
    "STRATEGY_ALIASES",
    "LaterTokens",
    "Link",
    "QueryStart",
    "Reach",
    "WordLink",
    "example_sentences",
    "first_token_sink",
    "head_habits",
    "heads_grid",
    "later_tokens",
    "later_word_change",
    "left_first",
    "mask_first",
    "maskable_words",
    "most_attended",
    "query_start",
    "reach",
    "rollout",
    "spelled_tokens",
    "strongest_link",
    "word_links",
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


@dataclass(frozen=True)
class WordLink:
    """The head (of any layer) that ties one word most strongly to another: the Attention lesson's
    predict-first moments about "it" and the nouns it may stand for."""

    word: str  # the word tied to, lower case
    layer: int  # from 0
    head: int  # from 0
    share: float  # that head's attention from the first word's first token to all of this word's tokens
    tokens: tuple[str, ...]  # the text's tokens, spelled without a space mark
    row: tuple[float, ...]  # that head's attention from the first word over every token


@st.cache_data(max_entries=64, show_spinner=False)
def word_links(model_name: str, text: str, source: str, targets: tuple[str, ...]) -> tuple[WordLink, ...]:
    """For each of `targets` (words of `text`, lower case), the head that gives it the most attention from
    `source`'s first token. A lesson's own sentence: computed once per server and model, not once per
    session (attention_view keeps only the last 16 texts of a class). Raises WordNotInText for a word that
    is not one of `text`'s words."""
    view = serving.attention_view(model_name, text, None)
    assert view.attentions is not None  # attention_view always asks for them
    words = [word.strip().lower() for word in view.words]

    def tokens_of(word: str) -> list[int]:
        if word not in words:
            raise WordNotInText(word, text, 0)
        return [i for i, w in enumerate(view.word_ids) if w == words.index(word)]

    i = tokens_of(source)[0]
    spelled = tuple(attention.spelled(token) for token in view.tokens)
    links = []
    for word in targets:
        shares = view.attentions[:, :, i, tokens_of(word)].sum(-1)  # (layers, heads)
        layer, head = (int(x) for x in np.unravel_index(shares.argmax(), shares.shape))
        row = tuple(float(x) for x in view.attentions[layer, head, i])
        links.append(WordLink(word, layer, head, float(shares[layer, head]), spelled, row))
    return tuple(links)


def head_habits(model_name: str, texts: tuple[str | tuple[str, str], ...]) -> dict[str, float]:
    """Clark et al.'s measures (attention to the first token, to [SEP], to itself, to the previous and the
    next token; entropy) averaged over every head of the model and over `texts` (serving.head_summary:
    once per server)."""
    summary = serving.head_summary(model_name, texts)
    return {name: float(values.mean()) for name, values in summary.metrics.items()}


# -- the Transformer -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Reach:
    """How far one token's attention reaches, layer by layer."""

    strongest: list[list[float]]  # (layers, tokens): the most weight any one head of the layer gives each token
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


def later_word_change(model_name: str, text: str, changed: str, word: int) -> list[float]:
    """How far word number `word`'s first token moves when `text` becomes `changed` (only words after it
    differ): the largest change of one of its numbers at each layer, embeddings first (hidden_states, cached)."""
    before, after = serving.hidden_states(model_name, text), serving.hidden_states(model_name, changed)
    i, j = before.word_ids.index(word), after.word_ids.index(word)
    return np.abs(before.hidden_states[:, i] - after.hidden_states[:, j]).max(-1).tolist()


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
