"""What the Word senses page computes: its sentence set, maps, votes and measures, over serving's cached
model calls (issue 32: the page takes types from model_zoo, and everything it computes from here).

Importing this module does not import torch: the page draws its precomputed figures first (the lessons
imported here, sense_data and senses, are numpy only), and calls `serving` for what needs a model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import serving
from model_zoo.lessons import forming as forming_data
from model_zoo.lessons import sense_data, senses
from model_zoo.lessons.forming import Forming
from model_zoo.lessons.sense_data import CHINESE, UMAP_DEFAULTS, MapView, SenseModel, SenseSet
from model_zoo.lessons.senses import MeasureLines, PlacedOwn, SenseVectors
from model_zoo.words import find_word, forms_of

__all__ = ["CHINESE", "UMAP_DEFAULTS"]  # re-exported: the page's Chinese sentences and UMAP's defaults


# -- the shipped set ---------------------------------------------------------------------------------
def sense_sets() -> dict[str, SenseSet]:
    """The shipped set: word -> SenseSet, in file order (read once per process)."""
    return sense_data.load_senses()


def lesson_words() -> list[str]:
    """The words as the page offers them: the lesson's own examples (bank, stick) first, then the others."""
    return sense_data.lesson_words(sense_sets())


def total_uses() -> int:
    """The sentences of every word of the shipped set together."""
    return sense_data.total_uses(sense_sets())


# -- the models ----------------------------------------------------------------------------------------
def precomputed_model(model_name: str, word: str) -> SenseModel | None:
    """`model_name` as the page shows it from the figures precomputed for `word` with its weights here
    (no model loaded), or None where there are none."""
    pre = (sense_data.load_precomputed(model_name) or {}).get(word)
    return None if pre is None else SenseModel(model_name, False, pre.pca.shape[1] - 1, pre)


# -- the maps ------------------------------------------------------------------------------------------
def ready_map(model: SenseModel, view: MapView, sense_set: SenseSet, own: bool) -> np.ndarray | None:
    """`model`'s map of the word's uses at the view's layer where nothing has to be computed (a static
    model's single point, or the precomputed map unless the learner's use `own` must be placed): (n, 2);
    None where it must be computed (live_map)."""
    return sense_data.ready_map(model, view, len(sense_set.sentences), own)


def live_map(model_name: str, word: str, layer: int, view: MapView, own: np.ndarray | None) -> np.ndarray:
    """The map computed with `model_name` (cached per server): the word's uses at `layer` by the view's
    projection, with the learner's use last where `own` (its vector at every layer, (S, D)) is given:
    (n [+1], 2)."""
    point = None if own is None else senses.own_point(own, layer)
    return serving.sense_map(model_name, word, layer, view.method, point, view.seed, view.neighbours, view.min_dist)


def place_own(
    xy: np.ndarray, uses: SenseVectors, sense_set: SenseSet, own: np.ndarray, layer: int
) -> tuple[np.ndarray, PlacedOwn]:
    """A live map with the learner's use last, split into the uses' points (n, 2) and the learner's star,
    with the sense its nearest uses vote for at `layer`."""
    return senses.place_own(xy, uses.vectors, sense_set.senses, own, layer)


def own_votes(uses: SenseVectors, sense_set: SenseSet, own: np.ndarray, depth: int) -> list[str]:
    """The sense the learner's use (S, D) gets from its nearest uses at every layer 0..depth: a sense key each."""
    return senses.own_votes(uses.vectors, sense_set.senses, own, depth)


def other_forms(text: str, word: str) -> list[str] | None:
    """None where the learner's `text` uses `word`; else the other forms of it the text has (may be [])."""
    if find_word(text, word) is not None:
        return None
    return forms_of(text, word)


# -- the measures --------------------------------------------------------------------------------------
def measure_lines(models: Sequence[SenseModel], sense_set: SenseSet) -> MeasureLines:
    """Each model's per-layer sense accuracy, self- and intra-sentence similarity and baseline, as the
    lines of the page's three charts: precomputed where they were, else measured (cached per server)."""
    found = {
        m.name: m.pre if m.pre is not None else None if m.static else serving.sense_measures(m.name, sense_set.word)
        for m in models
    }
    return senses.measure_lines(found, sense_set.senses, max(m.depth for m in models))


def chinese_similarity(model_name: str, word: str) -> np.ndarray:
    """The cosine similarity of `word`'s last-layer vectors in its six CHINESE sentences, read by `model_name`: (6, 6)."""
    vectors = serving.word_vectors(model_name, tuple(s for s, _ in CHINESE[word]), word)
    return senses.last_layer_similarity(vectors)


# -- check yourself -----------------------------------------------------------------------------------
def static_points(model_name: str, word: str) -> int:
    """How many different points a static model gives `word` over its sentences in the shipped set (the
    vector it gives in each); raises ModelUnavailable where the model cannot be had."""
    model, unavailable = serving.static_model(model_name)
    if unavailable is not None:
        raise unavailable
    return senses.distinct_points([model.vector(word) for _ in sense_sets()[word].sentences])


# -- predict, then see (issue 34) ---------------------------------------------------------------------
def pair_uses(word: str) -> tuple[str, str, str] | None:
    """Three uses of `word` from the shipped set: A and B the first two of its first sense, C the first of
    another sense; None for a word with one sense."""
    sense_set = sense_sets()[word]
    if len(sense_set.sense_keys) < 2:
        return None
    first, other = sense_set.sense_keys[:2]
    same = [s for s, k in zip(sense_set.sentences, sense_set.senses) if k == first]
    return same[0], same[1], next(s for s, k in zip(sense_set.sentences, sense_set.senses) if k == other)


def pair_cosines(model_name: str, word: str) -> tuple[list[float], list[float]]:
    """The cosine of `word`'s vector in A with its vector in B, and in A with C (pair_uses), at every layer of
    contextual model `model_name` (its vectors of the shipped set, encoded once per server and kept on disk)."""
    uses = pair_uses(word)
    assert uses is not None  # the page asks only for a word with two senses
    sentences = sense_sets()[word].sentences
    a, b, c = (serving.sense_vectors(model_name, word).vectors[sentences.index(s)] for s in uses)
    return senses.cosine_rows(a, b).tolist(), senses.cosine_rows(a, c).tolist()


def vote_shares(model_name: str, sentence: str, word: str) -> list[tuple[str, float]]:
    """For `word` in `sentence`: the sense its 5 nearest uses in the shipped set vote for at every layer of
    contextual model `model_name`, and that sense's share of the votes."""
    own = serving.own_sentence_vector(model_name, sentence, word)  # cached per server
    uses = serving.sense_vectors(model_name, word).vectors
    keys = sense_sets()[word].senses
    return [senses.vote(uses[:, layer], keys, own[layer]) for layer in range(min(len(own), uses.shape[1]))]


# -- senses forming while a model learns (issue 38) ------------------------------------------------------
FORMING_MODEL = "elmo-mini"  # trained here from scratch, its run read at points by scripts/pack_forming.py


def forming() -> Forming | None:
    """elmo-mini's training run read at points from random weights to the weights here, or None where the
    packed run is missing or was made from other weights (the model trained again) or another sense set."""
    from model_zoo.registry import weights_fingerprint

    if forming_data.packed(FORMING_MODEL) is None:  # no run packed: no need to hash the weights
        return None
    return forming_data.load_forming(FORMING_MODEL, weights_fingerprint(FORMING_MODEL))
