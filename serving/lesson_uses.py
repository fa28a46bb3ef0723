"""What Word senses' two instruments compute (issue 38): axes named by the learner, and the nearest uses in
the shipped sentences, over serving's cached model calls."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import streamlit as st

import model_zoo
import serving
from model_zoo.lessons import axes
from model_zoo.lessons.axes import AxisView, PoleChoice, unit
from model_zoo.lessons.probing import nn_sense_accuracy
from model_zoo.lessons.sense_data import SenseSet
from model_zoo.lessons.uses import Found, Uses, nearest_many, shares_of
from serving.runtime import MicroBatcher

NEIGHBOURS = 10  # the nearest uses listed, and counted in the shares by layer


# -- the index ---------------------------------------------------------------------------------------
@st.cache_resource(show_spinner=False)
def shipped_uses() -> Uses:
    """Every word of the shipped sentences (the Probing lesson's 3,990), punctuation left out."""
    from model_zoo.lessons import probing
    from model_zoo.lessons.uses import select_uses

    return select_uses(probing.load_sentences())


def use_index(model_name: str, on_progress: Callable[[float], object] | None = None) -> np.ndarray:
    """(layers, uses, dim) float16, rows of length 1: built once per server and model (weights and data
    version), kept on disk and memory-mapped (every worker reads the same pages)."""
    from model_zoo.disk import weights_version
    from model_zoo.lessons.uses import cached_index

    if (refused := _REFUSED.get(model_name)) is not None:  # too large for this server: said again, not read again
        raise refused

    def compute() -> np.ndarray:
        model = serving.contextual(model_name)
        folder = model_zoo.cache_root() / "uses"
        with serving.low_priority_threads():
            return cached_index(model, shipped_uses(), weights_version(model), folder, on_progress)

    try:
        return serving._shared(("use index", model_name), compute)
    except model_zoo.errors.MissingCapability as err:
        _REFUSED[model_name] = err
        raise


_REFUSED: dict[str, model_zoo.errors.MissingCapability] = {}  # models whose index this server cannot hold


def use_row(sentence: str, word: str) -> int | None:
    """Where a Word senses use (its sentence and word) sits in the index."""
    return shipped_uses().row_in(sentence, word)


@dataclass(frozen=True)
class Query:
    """What a search looks from: a vector at every layer and what is known of it."""

    vectors: np.ndarray  # (layers, dim)
    word: str
    sense: str | None  # its sense key, where the use is labelled
    pos: str | None  # its part of speech, where spaCy tagged it
    row: int | None  # its own row of the index (left out of its neighbours)


def look_from(model_name: str, sense_set: SenseSet, use: int | None, mine: str) -> Query:
    """The query for the word's `use` (its number in the set) or, where `use` is None, the learner's sentence
    `mine`: an indexed use is read from the index, so it is left out of its own neighbours."""
    word = sense_set.word
    if use is None:
        return Query(serving.own_sentence_vector(model_name, mine, word), word, None, None, None)
    row = use_row(sense_set.sentences[use], word)
    if row is None:  # not in the index (it should be: every Word senses sentence is)
        vectors = serving.sense_vectors(model_name, word).vectors[use]
        return Query(vectors, word, sense_set.senses[use], None, None)
    found = shipped_uses().use(row)
    return Query(np.asarray(use_index(model_name)[:, row], dtype=np.float32), word, found.sense, found.pos, row)


def nearest_uses(model_name: str, query: Query, layer: int) -> Found:
    """The NEIGHBOURS uses nearest `query` at `layer`, and the share of the same word, sense and part of
    speech among them at every layer. A class's clicks that arrive together share one search (_searches)."""
    rows, cosines = _searches(model_name)((query.vectors, query.row))
    found = shipped_uses()
    listed = [(found.use(int(r)), float(c)) for r, c in zip(rows[layer], cosines[layer])]
    return Found(listed, shares_of(found, rows, query.word, query.sense, query.pos))


@st.cache_resource(show_spinner=False)
def _searches(model_name: str) -> MicroBatcher[tuple[np.ndarray, int | None], tuple[np.ndarray, np.ndarray]]:
    """The clicks of a class that arrive together, searched at every layer in one product per layer
    (uses.nearest_many): thirty clicks at once in one process, p95 2.8 s one by one, 2.0-2.3 s together on
    this machine (one search of thirty: 1.05 s, most of it each layer cast to float32)."""

    def run(items: list[tuple[np.ndarray, int | None]]) -> list[tuple[np.ndarray, np.ndarray]]:
        queries = np.stack([vectors for vectors, _ in items])
        rows, cosines = nearest_many(use_index(model_name), queries, NEIGHBOURS, [row for _, row in items])
        return [(rows[:, i], cosines[:, i]) for i in range(len(items))]

    return MicroBatcher(run)


def class_shares(model_name: str) -> tuple[np.ndarray, np.ndarray]:
    """Over all 990 sense-labelled uses: the share of their nearest uses that are the same word, and the same
    word in the same sense, at every layer (about 20 s of two cores for minilm-l6, once per server)."""
    from model_zoo.lessons.uses import sense_share_by_layer

    def compute() -> tuple[np.ndarray, np.ndarray]:
        with serving.low_priority_threads():
            return sense_share_by_layer(use_index(model_name), shipped_uses(), NEIGHBOURS)

    return serving._shared(("sense shares", model_name), compute)


def class_shares_ready(model_name: str) -> bool:
    """Whether this server has class_shares for `model_name` already (then the page draws it at once)."""
    return serving.SLOW.peek(("sense shares", model_name)) is not None


# -- axes --------------------------------------------------------------------------------------------
def use_vectors(model_name: str, static: bool, word: str) -> np.ndarray:
    """(uses, layers, dim) the word's uses in the shipped set, each of length 1 (cosine geometry: a word's
    pole from the index is a mean of unit rows too). A static model: one layer, the same row for every use."""
    from model_zoo.lessons.sense_data import load_senses

    if static:
        model, unavailable = serving.static_model(model_name)
        if unavailable is not None:
            raise unavailable
        n = len(load_senses()[word].sentences)
        return np.repeat(unit(np.asarray(model.vector(word), dtype=np.float64))[None, None], n, axis=0)
    return unit(serving.sense_vectors(model_name, word).vectors.astype(np.float64))


WORD_POLE_USES = 200  # a word's pole is the mean of at most this many of its uses (the first, in file order)


def word_pole(model_name: str, static: bool, word: str) -> np.ndarray:
    """(layers, dim) a word as a pole: a static model's vector, or the mean of the word's uses in the shipped
    sentences at every layer of a contextual model (raises WordNotInCorpus where it has none there)."""
    if static:
        model, _ = serving.static_model(model_name)
        return unit(np.asarray(model.vector(word.lower()), dtype=np.float64))[None]
    return _contextual_word_pole(model_name, word.lower())


@st.cache_data(max_entries=256, show_spinner=False)
def _contextual_word_pole(model_name: str, word: str) -> np.ndarray:
    """The word's uses read from the index where this server has built it, else those sentences alone (a
    few dozen: the 73k-use index is not built for one pole)."""
    from model_zoo.lessons.probing import read_words

    found = shipped_uses()
    rows = found.rows_of(word)[:WORD_POLE_USES]
    if not len(rows):
        raise model_zoo.errors.WordNotInCorpus(word, len(found))
    index = serving.SLOW.peek(("use index", model_name))
    if isinstance(index, np.ndarray):
        return np.asarray(index[:, rows], dtype=np.float64).mean(1)
    model = serving.contextual(model_name)
    read = read_words(model, found.sentences, found.sentence[rows], found.position[rows])
    vectors = np.concatenate([v for _, v in read])  # (rows, layers, dim), in the order read_words gives them
    return unit(np.nan_to_num(vectors.astype(np.float64), nan=0.0)).mean(0)


def poles(
    model_name: str, static: bool, senses: tuple[str, ...], ends: tuple[PoleChoice, PoleChoice]
) -> tuple[Callable[[int], tuple[axes.Pole, axes.Pole]], str, str]:
    """The axis's two poles at any layer, and the two senses it is scored on: the sense each end names, an end
    that names a word taking the first of the word's other senses (both ends words: the first two senses,
    oriented later by axis_view)."""
    built = [(end.sense, None) if end.sense else ("", word_pole(model_name, static, end.word)) for end in ends]
    sense_array = np.asarray(senses)

    def at(layer: int) -> tuple[axes.Pole, axes.Pole]:
        out = []
        for key, vectors in built:
            if key:
                out.append(axes.Pole(key, tuple(int(i) for i in np.flatnonzero(sense_array == key))))
            else:
                assert vectors is not None
                out.append(axes.Pole("word", vector=vectors[min(layer, len(vectors) - 1)]))
        return out[0], out[1]

    keys = list(dict.fromkeys(senses))
    if len(keys) < 2:
        raise model_zoo.errors.MissingCapability(
            "the shipped set", "an axis between two senses", "this word has one sense in the set"
        )
    named = [end.sense for end in ends]
    free = iter(k for k in keys if k not in named)
    first = named[0] or next(free)
    second = named[1] if named[1] and named[1] != first else next(free, next(k for k in keys if k != first))
    return at, first, second


def axis_view(
    model_name: str,
    static: bool,
    word: str,
    layer: int,
    x_ends: tuple[PoleChoice, PoleChoice],
    y_ends: tuple[PoleChoice, PoleChoice] | None,
) -> AxisView:
    """Everything the axes section draws for one model (computed per rerun: a word's hundred uses, milliseconds)."""
    from model_zoo.lessons.sense_data import chance_accuracy, load_senses

    senses = load_senses()[word].senses
    vectors = use_vectors(model_name, static, word)
    layer = min(layer, vectors.shape[1] - 1)
    x_at, first, second = poles(model_name, static, senses, x_ends)
    a, b = x_at(layer)
    x = axes.positions(vectors[:, layer], a, b)
    labels = np.asarray(senses)
    if not x_ends[0].sense and not x_ends[1].sense:  # two words name no sense: the one further along is second
        if np.nanmean(x[labels == first]) > np.nanmean(x[labels == second]):
            first, second = second, first
    if y_ends is not None:
        y_at, _, _ = poles(model_name, static, senses, y_ends)
        y, y_is_pca = axes.positions(vectors[:, layer], *y_at(layer)), False
    else:
        left = axes.without(vectors[:, layer], b.mean(vectors[:, layer]) - a.mean(vectors[:, layer]))
        y, y_is_pca = axes.first_component(left), True
    accuracy, removed = [], []
    for at in range(vectors.shape[1]):
        pa, pb = x_at(at)
        here = vectors[:, at]
        accuracy.append(nn_sense_accuracy(here, senses))
        removed.append(nn_sense_accuracy(axes.without(here, pb.mean(here) - pa.mean(here)), senses))
    return AxisView(
        x,
        y,
        y_is_pca,
        axes.separation(vectors, x_at, labels, first, second),
        first,
        second,
        np.array(accuracy),
        np.array(removed),
        chance_accuracy(senses),
    )
