"""One contract per capability a model card declares (registry.VECTORS, FILL_MASK, ...): a
runtime-checkable Protocol naming the methods a model object must have to do it. A card says what
a model can do; `can(model, capability)` asks both the card and the object, the same way everywhere
(pages draw what `can` allows; serving hands out a model only where it has what a call needs), and
tests/test_capabilities.py checks every card of the registry against the class that loads it.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from .contextual import Contextual, Guess, Reading
from .errors import MissingCapability, UnknownModel
from .registry import (
    ANSWER_SPAN,
    ATTENTIONS,
    FILL_MASK,
    HIDDEN_STATES,
    NEXT_SENTENCE,
    NEXT_WORDS,
    PREVIOUS_WORDS,
    VECTORS,
    get_card,
)


@runtime_checkable
class StaticVectors(Protocol):
    """One vector per word type (GloVe, word2vec): VECTORS."""

    name: str

    def vector(self, word: str) -> np.ndarray: ...  # (dim,)

    def vectors(self, words: list[str]) -> np.ndarray: ...  # (len(words), dim)

    def most_similar(self, word: str, top_k: int = 10) -> list[tuple[str, float]]: ...

    def analogy(self, a: str, b: str, c: str, top_k: int = 5) -> list[tuple[str, float]]: ...


@runtime_checkable
class FillsMask(Protocol):
    """A masked LM: the words it expects at each [MASK] (its own mask token), FILL_MASK."""

    name: str
    mask_token: str

    def fill_mask(self, text: str, top_k: int = 5) -> list[list[Guess]]: ...  # one list per [MASK]

    def fill_masks(self, texts: list[str], top_k: int = 5) -> list[list[list[Guess]]]: ...  # per text

    def check_masked(self, text: str) -> None: ...


@runtime_checkable
class JudgesNextSentence(Protocol):
    """BERT's NSP head: the probability that b follows a, NEXT_SENTENCE."""

    name: str

    def next_sentence(self, a: str, b: str) -> float: ...


@runtime_checkable
class WritesNext(Protocol):
    """A left-to-right LM (GPT, or an ELMo's forward LM): the likeliest next words, NEXT_WORDS."""

    name: str

    def next_words(self, text: str, top_k: int = 10) -> list[Guess]: ...


@runtime_checkable
class WritesPrevious(Protocol):
    """A right-to-left LM (an ELMo's backward LM): the likeliest words before a text, PREVIOUS_WORDS."""

    name: str

    def previous_words(self, text: str, top_k: int = 10) -> list[Guess]: ...


@runtime_checkable
class ReadsSpan(Protocol):
    """An extractive reader: start and end scores over a passage for a question, ANSWER_SPAN."""

    name: str

    def read(self, question: str, passage: str) -> Reading: ...


PROTOCOLS: dict[str, type] = {
    VECTORS: StaticVectors,
    HIDDEN_STATES: Contextual,
    ATTENTIONS: Contextual,  # the same encode(), asked for its attentions
    FILL_MASK: FillsMask,
    NEXT_SENTENCE: JudgesNextSentence,
    NEXT_WORDS: WritesNext,
    PREVIOUS_WORDS: WritesPrevious,
    ANSWER_SPAN: ReadsSpan,
}


def can(model: Any, capability: str) -> bool:
    """Whether `model` does `capability`: its card declares it and the object keeps its contract. A
    fallback model answers for itself (its own card), never for the model that was asked for."""
    try:
        declared = capability in get_card(model.name).capabilities
    except UnknownModel:  # a checkpoint loaded from a folder has no card: what its class keeps is all it says
        declared = True
    return declared and isinstance(model, PROTOCOLS[capability])


def require(model: Any, capability: str) -> None:
    """MissingCapability (one sentence) unless `can(model, capability)`."""
    if not can(model, capability):
        raise MissingCapability(
            model.name, capability, f"its card does not declare it or {type(model).__name__} lacks it"
        )
