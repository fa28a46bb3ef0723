"""What the word-vector lessons compute (One-hot, Embeddings, ELMo, Playground): the learner's words read
from their text, and cosines and mixes of the models' vectors, as plain data or frozen dataclasses.

The pages hold no lesson function of model_zoo (issue 32): they ask this module. Calls that read a model
are cached as serving's own wrappers are (st.cache_data, keyed on the model's name); the rest take
microseconds and are plain functions. Importing this module imports no torch and no gensim.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import streamlit as st

import model_zoo
from model_zoo.lessons.axes import WordAxes, unit
from model_zoo.lessons.axes import word_axes as place
from model_zoo.lessons.elmo_mix import ONE_VECTOR, WordMix, layer_cosines, lowest_lstm_cosine, mix_word
from model_zoo.lessons.elmo_mix import top_layer_cosine as _top_layer_cosine
from model_zoo.lessons.lexicon import BUILD_SCRIPT, dictionary_form, unique, word_class
from model_zoo.lessons.onehot import bytes_per_vector, cosine_matrix
from model_zoo.lessons.onehot import one_hot as _one_hot
from model_zoo.words import split_words, words_in

from . import hidden_states, loaded, word_vectors

__all__ = [
    "BUILD_SCRIPT",  # the script that builds the shipped corpus and word classes (the Embeddings page names it)
    "ONE_VECTOR",  # a cosine above this is one vector, up to float rounding (ELMo's check-yourself)
    "ClassTable",
    "ContextCosines",
    "KnownWords",
    "Repeated",
    "StaticCosines",
    "bytes_per_vector",  # what one dense one-hot vector costs (float32), for a vocabulary size
    "classes_of",
    "context_cosines",
    "known_words",
    "mixed_word",
    "one_hot",
    "one_hot_cosines",
    "repeated_word",
    "shared_words",
    "static_cosines",
    "token_cosines",
    "vocabulary_of",
    "word_class_table",
    "words_typed",
]


# -- the learner's words -------------------------------------------------------------------------------
@st.cache_data(max_entries=64, show_spinner=False)
def vocabulary_of(text: str) -> list[str]:
    """The distinct words of `text` in first-seen order, lower-cased (model_zoo.words.split_words)."""
    return unique(split_words(text))


@dataclass(frozen=True)
class KnownWords:
    """The distinct words of a learner's text, as a static model reads them."""

    shown: list[str]  # the words the model knows, the first `limit` of them
    missing: list[str]  # the words it does not know
    total: int  # distinct words in the text
    known: int  # how many of them the model knows (shown is at most `limit` of them)


@st.cache_data(max_entries=256, show_spinner=False)
def known_words(model_name: str, text: str, limit: int) -> KnownWords:
    """The distinct words of `text` that static model `model_name` knows (at most `limit`), and those it does not."""
    model = loaded(model_name, model_zoo.StaticModel)
    words = vocabulary_of(text)
    known = [w for w in words if w in model]
    return KnownWords(known[:limit], [w for w in words if w not in model], len(words), len(known))


def words_typed(text: str) -> list[str]:
    """The words of the learner's text as written (case kept), a [MASK] not among them."""
    return words_in(text.replace("[MASK]", " "))


def shared_words(a: str, b: str) -> list[str]:
    """The distinct words of `a`, as written there, that `b` holds too (in any case)."""
    in_b = {x.lower() for x in words_in(b)}
    return [w for w in unique(words_in(a)) if w.lower() in in_b]


def classes_of(words: Sequence[str], none: str) -> list[str]:
    """Each word's WordNet class (noun.animal, verb.motion, ...) as its dictionary form ("sat": sit's, "rivers":
    river's), `none` where WordNet has none."""
    return [word_class(w) or none for w in words]


# -- one-hot vectors -----------------------------------------------------------------------------------
def one_hot(words: Sequence[str], vocabulary: Sequence[str]) -> np.ndarray:
    """(len(words), len(vocabulary)): a single 1 per row, at the word's index in `vocabulary`."""
    return _one_hot(list(words), list(vocabulary))


def one_hot_cosines(words: Sequence[str], vocabulary: Sequence[str] | None = None) -> np.ndarray:
    """(n, n): the cosine of every pair of the words' one-hot vectors (over `vocabulary`, by default the
    words themselves): 1 on the diagonal, 0 everywhere else."""
    return cosine_matrix(one_hot(words, words if vocabulary is None else vocabulary))


@dataclass(frozen=True)
class ClassTable:
    """Words one-hot over their word classes: the middle step between one-hot words and vectors."""

    classes: list[str]  # each word's class (the `none` label where it has none)
    read_as: list[tuple[str, str]]  # (word, the dictionary form it was read as) where the two differ
    names: list[str]  # the distinct classes, first-seen order
    matrix: np.ndarray  # (words, names): a single 1 per row


def word_class_table(words: Sequence[str], none: str) -> ClassTable:
    """Each word's WordNet class and the words' one-hot matrix over the classes."""
    forms = {w: dictionary_form(w) for w in words}  # each word read once
    classes = [found[1] if (found := forms[w]) is not None else none for w in words]
    names = unique(classes)
    read_as = [(w, found[0]) for w, found in forms.items() if found is not None and found[0] != w]
    return ClassTable(classes, read_as, names, one_hot(classes, names))


# -- static vectors ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StaticCosines:
    """A static model's cosines of those of a learner's words it knows."""

    known: list[str]  # the words the model has, in the order given
    missing: list[str]  # the words it does not have
    cosines: np.ndarray  # (known, known)

    def extremes(self) -> tuple[tuple[str, str, float], tuple[str, str, float]] | None:
        """The closest and the farthest pair of different known words, (a, b, cosine) each; None with fewer
        than three words (one pair is both)."""
        n = len(self.known)
        if n < 3:
            return None
        pairs = [(float(self.cosines[i, j]), i, j) for i in range(n) for j in range(i + 1, n)]
        (high, a, b), (low, c, d) = max(pairs), min(pairs)
        return (self.known[a], self.known[b], high), (self.known[c], self.known[d], low)


@st.cache_data(max_entries=64, show_spinner=False)
def static_cosines(model_name: str, words: tuple[str, ...]) -> StaticCosines:
    """The cosine of every pair of `words` that static model `model_name` knows."""
    model = loaded(model_name, model_zoo.StaticModel)
    known = [w for w in words if w in model]
    return StaticCosines(known, [w for w in words if w not in model], cosine_matrix(model.vectors(known)))


@dataclass(frozen=True)
class Repeated:
    """One word's vector from a static model, once for each of several uses: the same every time."""

    vectors: np.ndarray  # (times, dim)
    cosines: np.ndarray  # (times,): the cosine of each with the first


@st.cache_data(max_entries=64, show_spinner=False)
def repeated_word(model_name: str, word: str, times: int) -> Repeated:
    """Static model `model_name`'s vector of `word` for each of `times` sentences, and each one's cosine with
    the first (raises WordNotInVocabulary)."""
    vectors = loaded(model_name, model_zoo.StaticModel).vectors([word] * times)
    return Repeated(vectors, cosine_matrix(vectors)[0])


# -- contextual vectors --------------------------------------------------------------------------------
@st.cache_data(max_entries=64, show_spinner=False)
def token_cosines(model_name: str, text: str, layer: int) -> np.ndarray:
    """(tokens, tokens): the cosine of every pair of `text`'s token vectors at `layer` (serving.hidden_states)."""
    return cosine_matrix(hidden_states(model_name, text).hidden_states[layer])


@st.cache_data(max_entries=256, show_spinner=False)
def mixed_word(model_name: str, text: str, at: int, raw: tuple[float, ...], gamma: float, dims: int) -> WordMix:
    """ELMo's scalar mix (weights `raw` before the softmax, scale `gamma`) of token `at`'s layers in `text`,
    with the rows a strip draws (the layers, then the mix, at most `dims` dimensions)."""
    return mix_word(hidden_states(model_name, text).hidden_states, at, raw, gamma, dims)


@dataclass(frozen=True)
class ContextCosines:
    """How far context moves one word: the cosine of its vectors in two texts, layer by layer."""

    layers: np.ndarray  # (layers + 1,): at each layer, the token layer first
    lowest_lstm: float  # the lowest above the token layer
    top: float  # at the top layer


def context_cosines(model_name: str, a: str, b: str, word: str) -> ContextCosines:
    """`word`'s vectors in `a` and in `b` from contextual model `model_name` (serving.word_vectors, cached),
    compared at each layer (raises WordNotInText where a text lacks the word)."""
    pair = word_vectors(model_name, (a, b), word)  # (2, layers + 1, dim)
    cosines = layer_cosines(pair)
    return ContextCosines(cosines, lowest_lstm_cosine(cosines), _top_layer_cosine(pair))


# -- axes with a meaning (issue 38) ----------------------------------------------------------------------
@st.cache_data(max_entries=64, show_spinner=False)
def word_axes(model_name: str, words: tuple[str, ...], x: tuple[str, str], y: tuple[str, str] | None) -> WordAxes:
    """`words` of static model `model_name` on the axis x[0] -> x[1] and y[0] -> y[1] (else the largest spread
    left), each pole a word's vector; raises WordNotInVocabulary (with spellings) for a pole it lacks."""
    model = loaded(model_name, model_zoo.StaticModel)

    def pole(word: str) -> np.ndarray:
        return unit(np.asarray(model.vector(word), dtype=np.float64))

    vectors = unit(model.vectors(list(words)).astype(np.float64))
    y_poles = None if y is None else (pole(y[0]), pole(y[1]))
    return place(vectors, list(words), (pole(x[0]), pole(x[1])), y_poles)
