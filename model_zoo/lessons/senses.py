"""Word senses in space: a sense-labelled sentence set, each word's vector in every sentence at
every layer, and the measures of how contextual those vectors are.

- Nearest-neighbour sense accuracy, leave one out (Coenen et al. 2019, "Visualizing and
  Measuring the Geometry of BERT"): does a use's nearest other use share its sense?
- Self-similarity and intra-sentence similarity (Ethayarajh 2019, "How Contextual are
  Contextualized Word Representations?"), each shown beside the anisotropy baseline: the
  mean cosine of random pairs of words from different sentences at that layer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import disk
from .onehot import cosine_matrix
from .probing import nn_sense_accuracy  # a 1-NN probe
from .sense_data import (  # noqa: F401 (re-exported)
    SENSES,
    Precomputed,
    SenseSet,
    chance_accuracy,
    data_version,
    load_senses,
)

if TYPE_CHECKING:  # torch loads only to encode: the Word senses page votes and measures with numpy,
    # and its first map (precomputed) must not wait seconds for `import torch`
    from ..contextual import Contextual


# -- encoding ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SenseVectors:
    """A model's view of a SenseSet: (n, layers, dim) plus the per-layer similarity measures."""

    word: str
    vectors: np.ndarray  # (n, layers, dim) float32: the word's vector in each sentence at each layer
    intra_similarity: np.ndarray  # (layers,) mean over sentences of cos(word-token, sentence mean)
    baseline: np.ndarray  # (layers,) mean cosine of random word pairs from different sentences


def encode_senses(
    encoder: Contextual,
    sense_set: SenseSet,
    on_progress: Callable[[float], object] | None = None,
    seed: int = 0,
) -> SenseVectors:
    """The word's vector in every sentence at every layer (mean of its pieces; [0] = embeddings).

    Also Ethayarajh's intra-sentence similarity (each word token of a sentence against the
    sentence's mean word vector, averaged) and the anisotropy baseline (random pairs of word
    tokens from different sentences), both per layer.
    """
    batches = getattr(encoder, "batches", None)  # an Encoder's padded batches of WordPieces
    if batches is None:  # ELMo: words, and no special tokens
        return _encode_senses_by_words(encoder, sense_set, on_progress, seed)
    import torch

    from ..contextual import word_vector

    sentences = list(sense_set.sentences)
    vectors: list[np.ndarray] = []
    intra: list[np.ndarray] = []
    pool: list[tuple[int, np.ndarray]] = []  # (sentence, (layers, dim)) tokens for the baseline
    rng = np.random.default_rng(seed)
    for start, batch, special, out in batches(sentences):
        states = torch.stack(out.hidden_states, 1).float()  # (batch, layers, tokens, dim)
        mask = batch["attention_mask"].bool()
        for i in range(len(states)):
            vectors.append(
                word_vector(states[i], batch, i, sentences[start + i], sense_set.word, start + i).cpu().numpy()
            )
            words = (mask[i] & ~special[i]).nonzero().flatten()
            intra.append(_intra_and_pool(states[i][:, words].cpu().numpy(), start + i, rng, pool))
        if on_progress is not None:
            on_progress(min(1.0, (start + len(states)) / len(sentences)))
    return SenseVectors(
        word=sense_set.word,
        vectors=np.stack(vectors),
        intra_similarity=np.mean(intra, axis=0),
        baseline=_random_pair_cosine(pool, rng),
    )


def _intra_and_pool(
    tokens: np.ndarray, sentence: int, rng: np.random.Generator, pool: list[tuple[int, np.ndarray]]
) -> np.ndarray:
    """One sentence's intra-sentence similarity per layer, from its word tokens (layers, words, dim);
    adds up to 4 of its tokens to the baseline's pool."""
    unit = tokens / np.linalg.norm(tokens, axis=-1, keepdims=True).clip(1e-12)
    centre = tokens.mean(1, keepdims=True)
    centre = centre / np.linalg.norm(centre, axis=-1, keepdims=True).clip(1e-12)
    for j in rng.choice(tokens.shape[1], size=min(4, tokens.shape[1]), replace=False):
        pool.append((sentence, tokens[:, j]))
    return np.asarray((unit * centre).sum(-1).mean(-1))  # (layers,)


def _encode_senses_by_words(
    model: Contextual, sense_set: SenseSet, on_progress: Callable[[float], object] | None, seed: int
) -> SenseVectors:
    """encode_senses for a model that reads words (ELMo), through the contextual contract alone:
    the word's vectors from word_vectors, every word token's from encode_many (punctuation left out
    of the intra-sentence measure and the baseline, as a WordPiece model's special tokens are)."""
    sentences = list(sense_set.sentences)
    rng = np.random.default_rng(seed)
    vectors: list[np.ndarray] = []
    intra: list[np.ndarray] = []
    pool: list[tuple[int, np.ndarray]] = []
    step = 64
    for start in range(0, len(sentences), step):
        chunk = sentences[start : start + step]
        vectors.append(model.word_vectors(chunk, sense_set.word))
        for i, encoding in enumerate(model.encode_many(chunk)):
            words = [k for k, token in enumerate(encoding.tokens) if any(c.isalnum() for c in token)]
            intra.append(_intra_and_pool(encoding.hidden_states[:, words], start + i, rng, pool))
        if on_progress is not None:
            on_progress(min(1.0, (start + len(chunk)) / len(sentences)))
    return SenseVectors(
        word=sense_set.word,
        vectors=np.concatenate(vectors).astype(np.float32),
        intra_similarity=np.mean(intra, axis=0),
        baseline=_random_pair_cosine(pool, rng),
    )


def static_sense_vectors(vector: np.ndarray, sense_set: SenseSet) -> SenseVectors:
    """A static model (GloVe): the same vector in every sentence, one 'layer'."""
    n = len(sense_set.sentences)
    return SenseVectors(
        word=sense_set.word,
        vectors=np.repeat(vector[None, None, :].astype(np.float32), n, axis=0),
        intra_similarity=np.full(1, np.nan),
        baseline=np.full(1, np.nan),
    )


def _random_pair_cosine(pool: list[tuple[int, np.ndarray]], rng: np.random.Generator, pairs: int = 2000) -> np.ndarray:
    """Mean cosine of random pairs of pooled tokens that come from different sentences: (layers,)."""
    if len(pool) < 2:
        return np.full(pool[0][1].shape[0] if pool else 1, np.nan)
    owners = np.array([s for s, _ in pool])
    stack = np.stack([v for _, v in pool])  # (tokens, layers, dim)
    a, b = rng.integers(0, len(pool), size=(2, pairs))
    keep = owners[a] != owners[b]
    a, b = a[keep], b[keep]
    return cosine_rows(stack[a], stack[b]).mean(0)


def cosine_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Cosine of x[i] and y[i] along the last axis."""
    num = (x * y).sum(-1)
    den = np.linalg.norm(x, axis=-1) * np.linalg.norm(y, axis=-1)
    return num / np.maximum(den, 1e-12)


# -- measures (nn_sense_accuracy, a probe, lives in model_zoo.lessons.probing) ----------------------------
def self_similarity(vectors: np.ndarray) -> float:
    """Ethayarajh's SelfSim: mean cosine between the word's vectors in different sentences."""
    sims = cosine_matrix(vectors)
    n = len(vectors)
    return float((sims.sum() - np.trace(sims)) / (n * (n - 1)))


@dataclass(frozen=True)
class LayerMeasures:
    """Per-layer measures of one model on one word: each (layers,)."""

    accuracy: np.ndarray  # leave-one-out nearest-neighbour sense accuracy
    self_similarity: np.ndarray
    intra_similarity: np.ndarray
    baseline: np.ndarray  # anisotropy: random word pairs
    chance: float

    @property
    def best_layer(self) -> int:
        """The layer whose uses' nearest neighbours share their sense most often (the first, on a tie)."""
        return int(self.accuracy.argmax())


def layer_measures(encoded: SenseVectors, senses: tuple[str, ...]) -> LayerMeasures:
    layers = encoded.vectors.shape[1]
    return LayerMeasures(
        accuracy=np.array([nn_sense_accuracy(encoded.vectors[:, layer], senses) for layer in range(layers)]),
        self_similarity=np.array([self_similarity(encoded.vectors[:, layer]) for layer in range(layers)]),
        intra_similarity=encoded.intra_similarity,
        baseline=encoded.baseline,
        chance=chance_accuracy(senses),
    )


def vote(vectors: np.ndarray, senses: tuple[str, ...], query: np.ndarray, k: int = 5) -> tuple[str, float]:
    """The sense the k nearest uses (cosine) of `query` (dim,) vote for, and its share of the votes."""
    nearest = np.argsort(-cosine_rows(vectors, query[None]))[:k]
    keys, counts = np.unique(np.asarray(senses)[nearest], return_counts=True)
    return str(keys[counts.argmax()]), float(counts.max() / len(nearest))


def votes_by_layer(vectors: np.ndarray, senses: tuple[str, ...], query: np.ndarray, k: int = 5) -> list[str]:
    """The sense `vote` gives the learner's use at every layer: vectors (uses, S, D), query (S, D) -> (S,)."""
    return [vote(vectors[:, layer], senses, query[layer], k)[0] for layer in range(query.shape[0])]


# -- what the Word senses page draws ----------------------------------------------------------------
OwnVectors = dict[str, np.ndarray]  # model -> the learner's use at every layer of that model: (S, D)


def own_point(own: np.ndarray, layer: int) -> bytes:
    """The learner's use at `layer`, from its vector at every layer (S, D): its (D,) float64s as bytes, a cache key
    Streamlit hashes in one step (a tuple of 1,024 floats, ELMo's, took it 15 ms, one float at a time)."""
    return np.asarray(own[layer], dtype=np.float64).tobytes()


@dataclass(frozen=True)
class PlacedOwn:
    """The learner's use on a map: where it falls, and the sense its nearest uses vote for."""

    x: float
    y: float
    sense: str  # sense key
    share: float  # of the votes, in [0, 1]


def place_own(
    xy: np.ndarray, uses: np.ndarray, senses: tuple[str, ...], own: np.ndarray, layer: int
) -> tuple[np.ndarray, PlacedOwn]:
    """Split a map computed with the learner's use last, xy (n + 1, 2), into the uses' points (n, 2) and
    the learner's, with the vote of its nearest uses at `layer` (uses (n, S, D), own (S, D))."""
    sense, share = vote(uses[:, layer], senses, own[layer])
    return xy[:-1], PlacedOwn(float(xy[-1, 0]), float(xy[-1, 1]), sense, share)


def own_votes(uses: np.ndarray, senses: tuple[str, ...], own: np.ndarray, depth: int) -> list[str]:
    """votes_by_layer of the learner's use (S, D) over a model's layers 0..depth (uses (n, S, D)): (depth + 1,)."""
    return votes_by_layer(uses, senses, own[: depth + 1])


@dataclass(frozen=True)
class MeasureLines:
    """The Word senses page's per-layer measures, a line per model (each (layers,)), in the models' order."""

    accuracy: dict[str, np.ndarray]  # nearest-neighbour sense accuracy; a static model's is chance throughout
    self_similarity: dict[str, np.ndarray]  # contextual models only, as the next two
    intra_similarity: dict[str, np.ndarray]
    baseline: dict[str, np.ndarray]  # anisotropy: random word pairs
    chance: np.ndarray  # (deepest + 1,) chance accuracy at every layer


def measure_lines(
    measures: dict[str, LayerMeasures | Precomputed | None], senses: tuple[str, ...], deepest: int
) -> MeasureLines:
    """Each model's measures (None: a static model) as the lines of the page's three charts, `deepest`
    the layers above the embeddings of the deepest model."""
    chance = np.full(deepest + 1, chance_accuracy(senses))
    lines = MeasureLines({}, {}, {}, {}, chance)
    for name, found in measures.items():
        if found is None:  # static: one vector for every use scores exactly chance, at every depth
            lines.accuracy[name] = chance
            continue
        lines.accuracy[name] = found.accuracy
        lines.self_similarity[name] = found.self_similarity
        lines.intra_similarity[name] = found.intra_similarity
        lines.baseline[name] = found.baseline
    return lines


def last_layer_similarity(vectors: np.ndarray) -> np.ndarray:
    """Cosine similarity of a word's uses at the last layer: vectors (n, S, D) -> (n, n)."""
    return cosine_matrix(vectors[:, -1])


def distinct_points(vectors: list[np.ndarray]) -> int:
    """How many different vectors `vectors` holds (a static model gives one for every use)."""
    return len({v.tobytes() for v in vectors})


def cached_sense_vectors(
    encoder: Contextual,
    sense_set: SenseSet,
    folder: Path,
    on_progress: Callable[[float], object] | None = None,
) -> SenseVectors:
    """encode_senses, kept on disk in `folder` across restarts, keyed on model, its weights, word and data."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in encoder.name)
    path = folder / f"{safe}-{disk.weights_version(encoder)}-{sense_set.word}-{data_version()}.npz"

    def load(found: Path) -> SenseVectors:
        with np.load(found) as saved:
            return SenseVectors(sense_set.word, saved["vectors"], saved["intra"], saved["baseline"])

    if (kept := disk.read(path, load)) is not None:
        return kept
    encoded = encode_senses(encoder, sense_set, on_progress)
    disk.keep(
        path,
        lambda partial: np.savez(
            partial, vectors=encoded.vectors, intra=encoded.intra_similarity, baseline=encoded.baseline
        ),
        ".tmp.npz",
    )
    return encoded


def precompute(encoder: Contextual, folder: Path, on_word: Callable[[str], None] | None = None) -> Path:
    """Write the page's default figures of every word for `encoder` (see sense_data.Precomputed)."""
    from .projection import pca_2d, umap_2d
    from .sense_data import UMAP_DEFAULTS, precomputed_file

    arrays: dict[str, Any] = {}
    sets = load_senses()
    for word, sense_set in sets.items():
        if on_word is not None:
            on_word(word)
        encoded = encode_senses(encoder, sense_set)
        measures = layer_measures(encoded, sense_set.senses)
        layers = range(encoded.vectors.shape[1])
        arrays[f"{word}.pca"] = np.stack([pca_2d(encoded.vectors[:, k]) for k in layers], 1).astype(np.float32)
        arrays[f"{word}.umap"] = np.stack(
            [
                umap_2d(
                    encoded.vectors[:, k],
                    UMAP_DEFAULTS.seed,
                    UMAP_DEFAULTS.n_neighbors,
                    UMAP_DEFAULTS.min_dist,
                )
                for k in layers
            ],
            1,
        ).astype(np.float32)
        arrays[f"{word}.accuracy"] = measures.accuracy
        arrays[f"{word}.self_similarity"] = measures.self_similarity
        arrays[f"{word}.intra_similarity"] = measures.intra_similarity
        arrays[f"{word}.baseline"] = measures.baseline
    path = folder / precomputed_file(encoder.name).name
    folder.mkdir(parents=True, exist_ok=True)
    from ..registry import REGISTRY, weights_fingerprint

    weights = weights_fingerprint(encoder.name) if encoder.name in {c.name for c in REGISTRY} else None
    arrays.update(words=np.array(list(sets)), data_version=np.array(data_version()), weights=np.array(str(weights)))
    np.savez_compressed(path, **arrays)
    return path
