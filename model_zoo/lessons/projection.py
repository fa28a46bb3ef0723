"""2-D projections of word vectors: PCA (instant, exact) and UMAP (slower, keeps neighbourhoods)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import ModuleType
from typing import Literal

import numpy as np

Method = Literal["pca", "umap"]


@dataclass(frozen=True)
class Pca2:
    """A fitted 2-D PCA: the data's mean (dim,) and its two directions of largest variance (2, dim)."""

    mean: np.ndarray
    axes: np.ndarray

    def place(self, vectors: np.ndarray) -> np.ndarray:
        """(n, dim) -> (n, 2) on these axes: a new point joins a map without moving the old ones."""
        out = (vectors - self.mean) @ self.axes.T
        return out if out.shape[1] == 2 else np.pad(out, ((0, 0), (0, 2 - out.shape[1])))


def fit_pca_2d(vectors: np.ndarray) -> Pca2:
    """The two directions of largest variance of (n, dim) vectors; signs fixed for repeatability."""
    mean = vectors.mean(0)
    _, _, vt = np.linalg.svd(vectors - mean, full_matrices=False)
    axes = vt[:2]
    axes *= np.sign(axes[np.arange(len(axes)), np.abs(axes).argmax(1)])[:, None]
    return Pca2(mean, axes)


def pca_2d(vectors: np.ndarray) -> np.ndarray:
    """(n, dim) -> (n, 2) along the two directions of largest variance; signs fixed for repeatability."""
    return fit_pca_2d(vectors).place(vectors)


def umap_2d(vectors: np.ndarray, seed: int = 0, n_neighbors: int = 15, min_dist: float = 0.1) -> np.ndarray:
    """(n, dim) -> (n, 2) with umap-learn, seeded: the same input draws the same picture."""
    n = len(vectors)
    reducer = _umap().UMAP(
        n_components=2,
        n_neighbors=max(2, min(n_neighbors, n - 1)),
        min_dist=min_dist,
        metric="cosine",
        random_state=seed,
        n_jobs=1,  # a seed makes UMAP single-threaded anyway; saying so silences its warning
        init="random" if n < 10 else "spectral",
    )
    return np.asarray(reducer.fit_transform(vectors))


@functools.cache
def _umap() -> ModuleType:
    """umap-learn, imported on the first map (importing it costs seconds), its compiled functions kept on disk
    for the next process (disk.keep_compiled: a fresh process maps in 3-5 s rather than 20)."""
    import os

    # numba's OpenMP layer sets the calling thread's OpenMP thread count to NUMBA_NUM_THREADS (every core by
    # default) when it first runs, and torch in that thread then takes the same count: a worker given one thread
    # of two cores (scripts/serve.py, make test-fast) ran its models on two after its first map, each such
    # thread competing with the other worker's. The map is seeded, so single-threaded anyway (n_jobs=1 below).
    if os.environ.get("OMP_NUM_THREADS"):
        os.environ.setdefault("NUMBA_NUM_THREADS", os.environ["OMP_NUM_THREADS"])
    import umap

    from .. import disk
    from ..registry import cache_root

    disk.keep_compiled(("umap", "pynndescent"), cache_root() / "numba")
    return umap


def project_2d(vectors: np.ndarray, method: Method = "pca", seed: int = 0) -> np.ndarray:
    if len(vectors) < 3:
        raise ValueError("A map needs at least three words.")
    return umap_2d(vectors, seed) if method == "umap" else pca_2d(vectors)
