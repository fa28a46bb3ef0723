"""ELMo's lesson in numbers: the scalar mix of a word's layers (Peters et al. 2018, eq. 1), and how far
context moves a word from layer to layer (cosines of its two vectors, one per text)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .onehot import cosine_matrix


@dataclass(frozen=True)
class ScalarMix:
    """ELMo's task-specific combination of a word's layers: gamma * sum_j s_j h_j, s = softmax(w)."""

    weights: np.ndarray  # (S,) s: the softmax of the raw weights w
    gamma: float
    vector: np.ndarray  # (D,) the mixed vector

    @property
    def norm(self) -> float:
        return float(np.linalg.norm(self.vector))


def scalar_mix(layers: np.ndarray, raw: Sequence[float] | np.ndarray, gamma: float) -> ScalarMix:
    """ELMo's scalar mix (Peters et al. 2018, eq. 1) of one word's layers (S, D) with raw weights w (S,)
    and scale gamma: what model_zoo.lessons.probing learns (`fit_probe`), here with weights a learner sets."""
    w = np.asarray(raw, dtype=np.float64)
    s = np.exp(w - w.max())
    s /= s.sum()
    return ScalarMix(s, float(gamma), (gamma * (s[:, None] * np.asarray(layers)).sum(0)).astype(np.float32))


def layer_cosines(pair: np.ndarray) -> np.ndarray:
    """(S,): the cosine of a word's two vectors (2, S, D), one per text, at each layer."""
    unit = pair / np.linalg.norm(pair, axis=-1, keepdims=True).clip(1e-12)
    return (unit[0] * unit[1]).sum(-1)


def lowest_lstm_cosine(cosines: np.ndarray) -> float:
    """The lowest of layer_cosines (S,) above the token layer: how far context moves a word at most."""
    return float(np.asarray(cosines)[1:].min())


ONE_VECTOR = 0.9999  # a cosine above this is one vector, up to float rounding


def top_layer_cosine(pair: np.ndarray) -> float:
    """The cosine of a word's two vectors (2, S, D), one per text, at the top layer."""
    return float(cosine_matrix(np.asarray(pair)[:, -1])[0, 1])  # (2, D) -> (2, 2)


@dataclass(frozen=True)
class WordMix:
    """One word's S layers and their scalar mix, cut to the first `shown` of D dimensions for a strip."""

    rows: np.ndarray  # (S + 1, shown) the layers, then the mix
    mix: ScalarMix
    shown: int
    dim: int  # D


def mix_word(hidden_states: np.ndarray, at: int, raw: Sequence[float], gamma: float, dims: int) -> WordMix:
    """scalar_mix of token `at`'s layers in hidden_states (S, T, D), and the rows a strip draws (at most `dims`)."""
    layers = np.asarray(hidden_states)[:, at]  # (S, D)
    mix = scalar_mix(layers, raw, gamma)
    shown = min(dims, layers.shape[1])
    return WordMix(np.vstack([layers, mix.vector[None]])[:, :shown], mix, shown, int(layers.shape[1]))
