"""Nearest uses in a corpus (exBERT's search, Context Atlas's neighbours): every word of the shipped
sentences (the Probing lesson's 3,990: 3,000 Wikipedia sentences with spaCy's silver labels and the 990
Word senses sentences, whose word carries its WordNet sense) read by a contextual model at every layer,
kept on disk, and searched by cosine from any use or a learner's own.

The index is one float16 file per model, weights and data version, layer-major (layers, uses, dim), each
row scaled to length 1 and memory-mapped: the workers of a server share its pages rather than each holding
a copy. On unit rows the cosine order is the dot-product order, so a search is one float16 matrix-vector
product per layer, which torch runs on the mapped rows as they are: 0.04 s for the 7 layers of minilm-l6's
73k uses on one thread here, against 0.6 s for numpy (which casts every row to float32 first). scikit-learn's
NearestNeighbors was not used: it would hold a float32 copy of each layer in every worker (twice the bytes,
not shared), and its float32 search costs what numpy's does."""

from __future__ import annotations

import functools
import hashlib
import json
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import disk
from ..errors import MissingCapability
from .axes import unit
from .probing import Sentence, read_words

if TYPE_CHECKING:
    from ..contextual import Contextual

SKIPPED = frozenset({"PUNCT", "SPACE", "SYM", "X"})  # spaCy's tags of tokens that are not words
MAX_INDEX_BYTES = 600_000_000  # the index on disk at most (minilm-l6: 7 layers x 384 x 73k uses: 0.39 GB)
BLOCK = 16_384  # rows read and multiplied at a time
Progress = Callable[[float], object]


@dataclass(frozen=True)
class Use:
    """One word of one shipped sentence: where it is and what the labels say of it."""

    row: int
    sentence: int  # index into the sentence list
    position: int  # the word's place in the sentence
    word: str
    pos: str | None  # spaCy's universal POS tag (silver)
    dep: str | None  # spaCy's dependency relation (silver)
    sense: str | None  # the WordNet sense key, for the word of a Word senses sentence (gold)


@dataclass(frozen=True, eq=False)
class Uses:
    """The rows of an index: every word of the sentences but punctuation and symbols."""

    sentences: tuple[Sentence, ...]
    sentence: np.ndarray  # (N,)
    position: np.ndarray  # (N,)

    def __len__(self) -> int:
        return len(self.sentence)

    def use(self, row: int) -> Use:
        s, j = self.sentences[int(self.sentence[row])], int(self.position[row])
        return Use(row, int(self.sentence[row]), j, s.words[j], s.labels["pos"][j], s.labels["dep"][j], _sense(s, j))

    @functools.cached_property
    def words(self) -> np.ndarray:
        """(N,) each use's word, lower-cased."""
        return np.array([self.sentences[i].words[j].lower() for i, j in zip(self.sentence, self.position)])

    @functools.cached_property
    def senses(self) -> np.ndarray:
        """(N,) each use's sense key, "" where it has none."""
        return np.array([_sense(self.sentences[i], j) or "" for i, j in zip(self.sentence, self.position)])

    def rows_of(self, word: str) -> np.ndarray:
        """The rows where `word` is used (any case)."""
        return np.flatnonzero(self.words == word.lower())

    def row_of(self, sentence_id: str, word: str) -> int | None:
        """The row of `word` in the sentence with id `sentence_id` (its first use there), if indexed."""
        for row in np.flatnonzero(self.sentence == self._ids.get(sentence_id, -1)):
            if self.sentences[int(self.sentence[row])].words[int(self.position[row])].lower() == word.lower():
                return int(row)
        return None

    @functools.cached_property
    def _ids(self) -> dict[str, int]:
        return {s.id: i for i, s in enumerate(self.sentences)}

    def row_in(self, sentence: str, word: str) -> int | None:
        """The row of `word` in the shipped sentence whose text is `sentence` (spacing and punctuation aside):
        where a Word senses use sits in the index."""
        i = self._texts.get(_letters(sentence))
        return None if i is None else self.row_of(self.sentences[i].id, word)

    @functools.cached_property
    def _texts(self) -> dict[str, int]:
        return {_letters("".join(s.words)): i for i, s in enumerate(self.sentences)}


def _letters(text: str) -> str:
    return "".join(c for c in text.lower() if c.isalnum())


def _sense(sentence: Sentence, j: int) -> str | None:
    senses = sentence.labels.get("sense")
    return senses[j] if senses is not None else None


def select_uses(sentences: Sequence[Sentence]) -> Uses:
    """Every word of every sentence, punctuation and symbols left out."""
    rows = [(i, j) for i, s in enumerate(sentences) for j, tag in enumerate(s.labels["pos"]) if tag not in SKIPPED]
    a = np.array(rows, dtype=np.int64).reshape(-1, 2)
    return Uses(tuple(sentences), a[:, 0], a[:, 1])


# -- the index on disk ----------------------------------------------------------------------------
def index_path(folder: Path, model_name: str, weights: str, uses: Uses) -> Path:
    """Where the index of `model_name` (its weights' version) over `uses` lives: a new file for new data."""
    ids = [s.id for s in uses.sentences]
    words = hashlib.sha1(json.dumps([s.words for s in uses.sentences]).encode()).hexdigest()  # the text itself
    key = hashlib.sha1(json.dumps([model_name, weights, ids, len(uses), words]).encode()).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in model_name)
    return folder / f"{safe}-{key}.npy"


def cached_index(
    model: Contextual, uses: Uses, weights: str, folder: Path, on_progress: Progress | None = None
) -> np.ndarray:
    """The index of `model` over `uses`: read memory-mapped from `folder`, or built there first."""
    path = index_path(folder, model.name, weights, uses)
    if (kept := disk.read(path, lambda found: np.load(found, mmap_mode="r"))) is not None:
        return kept

    def write(partial: Path) -> None:
        build_index(model, uses, partial, on_progress)

    if disk.keep(path, write, ".tmp.npy"):
        return np.load(path, mmap_mode="r")
    return build_index(model, uses, None, on_progress)  # a cache that cannot be written: kept in memory


def build_index(model: Contextual, uses: Uses, path: Path | None, on_progress: Progress | None = None) -> np.ndarray:
    """Every use's vector at every layer, each of length 1 (zeros where the model cut the sentence before
    the word), written into `path` as it is read (a float16 .npy, never whole in memory) or kept in memory."""
    out: np.ndarray | None = None
    for rows, v in read_words(model, uses.sentences, uses.sentence, uses.position, on_progress):
        if out is None:
            out = _open(path, (v.shape[1], len(uses), v.shape[2]), model.name)
        out[:, rows] = unit(np.nan_to_num(v, nan=0.0)).transpose(1, 0, 2).astype(np.float16)
    assert out is not None, "no uses to index"
    if isinstance(out, np.memmap):
        out.flush()
    return out


def _open(path: Path | None, shape: tuple[int, int, int], name: str) -> np.ndarray:
    size = int(np.prod(shape)) * 2
    if size > MAX_INDEX_BYTES:  # a shared server's disk and page cache: refused after the first 32 sentences
        raise MissingCapability(
            name,
            "nearest uses on this server",
            f"its {shape[0]} layers x {shape[2]} dimensions for {shape[1]:,} uses would take "
            f"{size / 1e9:.1f} GB (the limit is {MAX_INDEX_BYTES / 1e9:.1f} GB)",
        )
    if path is None:
        return np.zeros(shape, dtype=np.float16)
    return np.lib.format.open_memmap(path, mode="w+", dtype=np.float16, shape=shape)


# -- search ---------------------------------------------------------------------------------------
def _dot(rows: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """(N, q) float32: every row (N, dim) float16, memory-mapped, against each query (q, dim), in float16
    products of BLOCK rows at a time (torch's; see the module's docstring)."""
    import torch

    q = torch.from_numpy(np.ascontiguousarray(queries.T, dtype=np.float16))
    out = np.empty((len(rows), queries.shape[0]), dtype=np.float32)
    with warnings.catch_warnings():  # the mapped file is read-only, and torch only reads it
        warnings.simplefilter("ignore", UserWarning)
        for start in range(0, len(rows), BLOCK):
            block = torch.from_numpy(np.asarray(rows[start : start + BLOCK]))
            out[start : start + BLOCK] = (block @ q).float().numpy()
    return out


def nearest(index: np.ndarray, layer: int, query: np.ndarray, k: int, leave_out: int | None = None) -> Neighbours:
    """The k uses nearest `query` (dim,) at `layer` by cosine, nearest first (`leave_out`: a row not to count,
    the clicked use itself): nearest_many on that one layer."""
    rows, cosines = nearest_many(index[layer : layer + 1], np.asarray(query)[None, None], k, [leave_out])
    return Neighbours(rows[0, 0], cosines[0, 0])


@dataclass(frozen=True)
class Neighbours:
    rows: np.ndarray  # (k,) rows of the index, nearest first
    cosines: np.ndarray  # (k,)


@dataclass(frozen=True)
class Shares:
    """What the k nearest uses of one query are, at every layer: each (layers,) a share of k."""

    same_word: np.ndarray  # the query's word (any sense)
    same_sense: np.ndarray  # the query's word in the query's sense (NaN: the query has no sense label)
    same_pos: np.ndarray  # the query's part of speech (NaN: unknown)


def nearest_many(
    index: np.ndarray, queries: np.ndarray, k: int, leave_out: Sequence[int | None]
) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest uses of each query (q, layers, dim) at every layer, nearest first: rows and cosines, each
    (layers, q, k); `leave_out[i]` is a row query i must not count (its own use). One query: torch's float16
    matrix-vector product. Several (a class clicking together, serving's batcher): one float32 copy of each
    layer for all of them, then one BLAS product, which costs about what one query's float16 search does."""
    layers, q = index.shape[0], len(queries)
    k = min(k, index.shape[1] - any(row is not None for row in leave_out))  # a left-out row is never listed
    rows_out = np.empty((layers, q, k), dtype=np.int64)
    cos_out = np.empty((layers, q, k), dtype=np.float64)
    for layer in range(layers):
        wanted = unit(np.asarray(queries[:, layer], dtype=np.float64))
        if q == 1:
            scores = _dot(index[layer], wanted).T
        else:
            scores = wanted.astype(np.float32) @ np.asarray(index[layer], dtype=np.float32).T
        for i, row in enumerate(leave_out):
            if row is not None:
                scores[i, row] = -np.inf
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        picked = np.take_along_axis(scores, top, 1)
        order = np.argsort(-picked, axis=1, kind="stable")
        rows_out[layer] = np.take_along_axis(top, order, 1)
        cos_out[layer] = np.take_along_axis(picked, order, 1)
    return rows_out, cos_out


def shares_of(uses: Uses, rows: np.ndarray, word: str, sense: str | None, pos: str | None) -> Shares:
    """From one query's nearest rows at every layer (layers, k): the share that is the same word, the same word
    in the same sense, and the same part of speech (NaN where the query's sense or part of speech is unknown)."""
    out: dict[str, list[float]] = {"word": [], "sense": [], "pos": []}
    for found_rows in rows:
        found = [uses.use(int(r)) for r in found_rows]
        same = [u.word.lower() == word.lower() for u in found]
        out["word"].append(float(np.mean(same)))
        out["sense"].append(float(np.mean([s and u.sense == sense for s, u in zip(same, found)])) if sense else np.nan)
        out["pos"].append(float(np.mean([u.pos == pos for u in found])) if pos else np.nan)
    return Shares(np.array(out["word"]), np.array(out["sense"]), np.array(out["pos"]))


def shares(
    index: np.ndarray,
    uses: Uses,
    query: np.ndarray,
    word: str,
    sense: str | None,
    pos: str | None,
    k: int,
    leave_out: int | None = None,
) -> Shares:
    """At every layer, the share of the k nearest uses of `query` (layers, dim) that are the same word, the
    same word in the same sense, and the same part of speech: neighbours going from the word's form to its
    meaning or role."""
    rows, _ = nearest_many(index, np.asarray(query)[None], k, [leave_out])
    return shares_of(uses, rows[:, 0], word, sense, pos)


def label_counts(found: Sequence[Use], label: str) -> Counter[str]:
    """How often each value of `label` ("pos", "dep", "sense" or "word") occurs among the neighbours."""
    values = [getattr(u, label) if label != "word" else u.word.lower() for u in found]
    return Counter(v for v in values if v is not None)


def sense_share_by_layer(index: np.ndarray, uses: Uses, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Over every sense-labelled use: the mean share of its k nearest uses (itself left out) that are the same
    word, and the same word in the same sense, at every layer (Coenen et al. 2019's rise with depth). For a
    thousand queries float32 BLAS beats torch's float16 product (18 s against 149 s for minilm-l6 here), at
    the price of one layer's float32 copy while it runs."""
    words, senses = uses.words, uses.senses
    labelled = np.flatnonzero(senses != "")
    word_share, sense_share = [], []
    for layer in range(index.shape[0]):
        rows = np.asarray(index[layer], dtype=np.float32)  # many queries: one float32 copy, then BLAS
        same_word, same_sense = [], []
        for part in np.array_split(labelled, max(1, len(labelled) // 128)):  # (128, N) scores at a time
            scores = rows[part] @ rows.T
            scores[np.arange(len(part)), part] = -np.inf
            top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
            word = words[top] == words[part][:, None]
            same_word.append(word)
            same_sense.append(word & (senses[top] == senses[part][:, None]))
        word_share.append(float(np.concatenate(same_word).mean()))
        sense_share.append(float(np.concatenate(same_sense).mean()))
    return np.array(word_share), np.array(sense_share)


@dataclass(frozen=True)
class Found:
    """The nearest uses of one query at one layer, and what they are at every layer."""

    neighbours: list[tuple[Use, float]]  # nearest first, with the cosine
    shares: Shares
