"""1-of-N encoding and word classes: the representations before learned vectors."""

from __future__ import annotations

import numpy as np


def one_hot(words: list[str], vocabulary: list[str]) -> np.ndarray:
    """(len(words), len(vocabulary)) matrix with a single 1 per row, at the word's index."""
    index = {w: i for i, w in enumerate(vocabulary)}
    matrix = np.zeros((len(words), len(vocabulary)), dtype=np.float32)
    matrix[np.arange(len(words)), [index[w] for w in words]] = 1.0
    return matrix


def cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    """Cosine similarity of every pair of rows: (n, dim) -> (n, n)."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)
    return unit @ unit.T


def bytes_per_vector(vocabulary_size: int, dtype_bytes: int = 4) -> int:
    """What one dense one-hot vector costs (float32): it grows with the vocabulary."""
    return vocabulary_size * dtype_bytes
