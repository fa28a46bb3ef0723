"""The sense-labelled sentence set and the figures precomputed from it. Light: no torch.

The Word senses page draws its first maps and charts from `assets/senses/precomputed/`,
made by `python scripts/precompute_senses.py` with the real model over this very data (a
file whose data hash differs is ignored), so a learner sees a picture before torch and the
model have loaded. Everything else (other models, UMAP settings, the learner's sentence) is
computed live.
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

ASSETS = Path(__file__).resolve().parent.parent / "assets"
SENSES = ASSETS / "senses" / "senses.tsv"


@dataclass(frozen=True)
class SenseSet:
    """One polysemous word in many sentences, each tagged with its WordNet sense."""

    word: str
    sentences: tuple[str, ...]  # (n,)
    senses: tuple[str, ...]  # (n,) WordNet sense key of the word in each sentence
    glosses: dict[str, str]  # sense key -> WordNet gloss

    @property
    def sense_keys(self) -> list[str]:
        return list(dict.fromkeys(self.senses))


@cache
def load_senses(path: Path = SENSES) -> dict[str, SenseSet]:
    """The shipped set: word -> SenseSet, in file order."""
    rows: dict[str, list[dict[str, str]]] = {}
    with path.open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE):
            rows.setdefault(row["word"], []).append(row)
    return {
        word: SenseSet(
            word=word,
            sentences=tuple(r["sentence"] for r in items),
            senses=tuple(r["sense_key"] for r in items),
            glosses={r["sense_key"]: r["gloss"] for r in items},
        )
        for word, items in rows.items()
    }


def data_version(path: Path = SENSES) -> str:
    """A short hash of the set's bytes: encodings cached on disk are keyed on it. Hashed once per version
    of the file (the Word senses page asks on every rerun)."""
    stat = path.stat()
    return _file_hash(path, stat.st_size, stat.st_mtime_ns)


@cache
def _file_hash(path: Path, size: int, mtime_ns: int) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def chance_accuracy(senses: list[str] | tuple[str, ...]) -> float:
    """What a random other use scores: sum over senses of p(sense) * p(another use shares it)."""
    labels = np.asarray(senses)
    n = len(labels)
    counts = np.unique(labels, return_counts=True)[1]
    return float((counts * (counts - 1)).sum() / (n * (n - 1)))


PRECOMPUTED = ASSETS / "senses" / "precomputed"


@dataclass(frozen=True)
class UmapSettings:
    n_neighbors: int = 15
    min_dist: float = 0.1
    seed: int = 0


UMAP_DEFAULTS = UmapSettings()  # the page's defaults, and what the precomputed UMAP used


@dataclass(frozen=True)
class Precomputed:
    """One model's figures for one word, as the page draws them by default."""

    pca: np.ndarray  # (n, layers, 2) PCA of the word's vectors at each layer
    umap: np.ndarray  # (n, layers, 2) UMAP with UMAP_DEFAULTS
    accuracy: np.ndarray  # (layers,) leave-one-out nearest-neighbour sense accuracy
    self_similarity: np.ndarray  # (layers,)
    intra_similarity: np.ndarray  # (layers,)
    baseline: np.ndarray  # (layers,) random word pairs


def precomputed_file(model_name: str) -> Path:
    return PRECOMPUTED / f"{model_name}.npz"


def load_precomputed(model_name: str) -> dict[str, Precomputed] | None:
    """word -> Precomputed for `model_name`, or None if absent, or made from other data or other weights
    than the model `model_name` is here now (`registry.weights_fingerprint`)."""
    from .registry import weights_fingerprint

    return _load_precomputed(model_name, weights_fingerprint(model_name), data_version())


@cache
def _load_precomputed(model_name: str, weights: str | None, data: str) -> dict[str, Precomputed] | None:
    path = precomputed_file(model_name)
    if not path.exists():
        return None
    with np.load(path) as saved:
        if str(saved["data_version"]) != data:
            return None
        if "weights" not in saved or str(saved["weights"]) != str(weights):
            return None
        words = [str(w) for w in saved["words"]]
        return {
            word: Precomputed(
                pca=saved[f"{word}.pca"],
                umap=saved[f"{word}.umap"],
                accuracy=saved[f"{word}.accuracy"],
                self_similarity=saved[f"{word}.self_similarity"],
                intra_similarity=saved[f"{word}.intra_similarity"],
                baseline=saved[f"{word}.baseline"],
            )
            for word in words
        }
