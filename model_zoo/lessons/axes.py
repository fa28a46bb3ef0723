"""Axes with a meaning (the Embedding Projector's custom projections, whatlies' `project`): a direction
between two poles, each pole a word's vector or the mean vector of a sense's uses, and every use placed by
its projection on it; how well that one number separates two senses (ROC AUC, layer by layer); and what
is left when the direction is removed from every vector (Bolukbasi et al. 2016's projection).

A use that helps build a pole is left out of that pole when it is placed: its position then says
where the others put it, not where it put itself."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

EPS = 1e-9


def unit(x: np.ndarray) -> np.ndarray:
    """Rows of `x` (..., dim) scaled to length 1 (rows of zeros stay zeros)."""
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.divide(x, norm, out=np.zeros_like(x, dtype=np.float64), where=norm > 0)


@dataclass(frozen=True)
class Pole:
    """One end of an axis: the mean of `members` (rows of the uses), or a fixed `vector` (a word's)."""

    label: str
    members: tuple[int, ...] = ()
    vector: np.ndarray | None = field(default=None, compare=False)

    def seen_by(self, vectors: np.ndarray) -> np.ndarray:
        """(n, dim): the pole as each use sees it, a member's own vector left out of the mean."""
        if not self.members:
            if self.vector is None:
                raise ValueError(f"pole {self.label!r} has neither uses nor a vector")
            return np.broadcast_to(np.asarray(self.vector, dtype=np.float64), vectors.shape)
        rows = np.asarray(self.members)
        total = vectors[rows].astype(np.float64).sum(0)
        seen = np.broadcast_to(total / len(rows), vectors.shape).copy()
        if len(rows) > 1:
            seen[rows] = (total - vectors[rows]) / (len(rows) - 1)
        return seen

    def mean(self, vectors: np.ndarray) -> np.ndarray:
        """(dim,): the pole with every member in."""
        if not self.members:
            return self.seen_by(vectors[:1])[0]
        return vectors[np.asarray(self.members)].astype(np.float64).mean(0)


def positions(vectors: np.ndarray, a: Pole, b: Pole) -> np.ndarray:
    """(n,) each use's place on the axis from `a` (0) to `b` (1): its projection on the line through the
    two poles. NaN where the two poles are one point (a static model's senses): that axis has no direction."""
    x = vectors.astype(np.float64)
    start, end = a.seen_by(x), b.seen_by(x)
    direction = end - start
    length2 = (direction * direction).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = ((x - start) * direction).sum(1) / length2
    scale = np.maximum((start * start).sum(1), (end * end).sum(1))
    out[length2 <= EPS * np.maximum(scale, EPS)] = np.nan
    return out


def auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """ROC AUC of `scores` for telling `positive` (bool) uses from the others: the chance that a positive
    use sits further along than a negative one, ties counting half (the Mann-Whitney statistic).
    0.5 where the scores do not separate them (or cannot be computed)."""
    from scipy.stats import rankdata

    placed = ~np.isnan(scores)  # a use with no place on the axis (its poles were one point) does not count
    scores, positive = scores[placed], positive[placed]
    pos, neg = int(positive.sum()), int((~positive).sum())
    if not pos or not neg:
        return 0.5
    ranks = rankdata(scores)
    return float((ranks[positive].sum() - pos * (pos + 1) / 2) / (pos * neg))


@dataclass(frozen=True)
class Separation:
    """How well one axis tells two senses apart at every layer."""

    auc: np.ndarray  # (layers,) ROC AUC of the positions, the second sense's uses as the positive class
    best_layer: int  # the first layer with the highest AUC
    flat: bool  # the two poles were one point at every layer (a static model's senses)


def separation(
    vectors: np.ndarray, poles_at: Callable[[int], tuple[Pole, Pole]], senses: np.ndarray, first: str, second: str
) -> Separation:
    """Per layer of `vectors` (n, layers, dim): the AUC of the axis between the layer's two poles (`poles_at`:
    a word's vector changes with the layer) for `second` against `first` among the uses of those two senses
    (`senses` (n,) each use's sense)."""
    keep = (senses == first) | (senses == second)
    values, flat = [], True
    for layer in range(vectors.shape[1]):
        placed = positions(vectors[:, layer], *poles_at(layer))
        flat = flat and bool(np.isnan(placed).all())
        values.append(auc(placed[keep], senses[keep] == second))
    scores = np.array(values)
    return Separation(scores, int(scores.argmax()), flat)


def without(vectors: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """`vectors` (..., dim) with their component along `direction` removed (nothing to remove: unchanged)."""
    norm = float(np.linalg.norm(direction))
    if norm <= EPS:
        return vectors
    unit = direction / norm
    return vectors - (vectors @ unit)[..., None] * unit


@dataclass(frozen=True)
class PoleChoice:
    """One end of an axis as the learner chose it: a sense of the word (its key) or a word."""

    sense: str = ""
    word: str = ""


@dataclass(frozen=True)
class AxisView:
    """One model's uses of the word on the learner's axes at one layer, and how the x axis separates."""

    x: np.ndarray  # (uses,) from the first pole (0) to the second (1); NaN where the poles are one point
    y: np.ndarray  # (uses,) on the second axis, or the largest spread left once x's direction is removed
    y_is_pca: bool
    separation: Separation  # the x axis, every layer
    first: str  # the senses it is scored on: `second` is the positive class
    second: str
    accuracy: np.ndarray  # (layers,) nearest-use sense accuracy of the uses as they are
    removed: np.ndarray  # (layers,) the same with x's direction removed from every vector
    chance: float  # that accuracy by chance (the senses' shares)


def first_component(x: np.ndarray) -> np.ndarray:
    """(n,) the rows of `x` along the direction of their largest spread (0 where they do not spread)."""
    centred = x - x.mean(0)
    if not np.abs(centred).max() > 0:
        return np.zeros(len(x))
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    return centred @ vt[0]


@dataclass(frozen=True)
class WordAxes:
    """Words of a static model on two named axes, and what removing the first axis's direction changes."""

    words: list[str]
    xy: np.ndarray  # (n, 2): x from the first pole word (0) to the second (1); y likewise, or the largest spread left
    y_is_pca: bool
    nearest_before: list[str]  # each word's nearest other word of the list, by cosine
    nearest_after: list[str]  # the same once the x direction is removed from every vector


def word_axes(
    vectors: np.ndarray,
    words: list[str],
    x_poles: tuple[np.ndarray, np.ndarray],
    y_poles: tuple[np.ndarray, np.ndarray] | None,
) -> WordAxes:
    """`vectors` (n, dim), one row per word of `words` (unit length: cosine geometry), placed on the axis
    between the two x pole vectors and on the y one (else the largest spread left once x's direction is gone)."""
    a, b = (Pole("x0", vector=x_poles[0]), Pole("x1", vector=x_poles[1]))
    x = positions(vectors, a, b)
    left = without(vectors, x_poles[1] - x_poles[0])
    if y_poles is None:
        y, y_is_pca = first_component(left), True
    else:
        y, y_is_pca = positions(vectors, Pole("y0", vector=y_poles[0]), Pole("y1", vector=y_poles[1])), False
    return WordAxes(
        words, np.column_stack([x, y]), y_is_pca, _nearest_words(vectors, words), _nearest_words(left, words)
    )


def _nearest_words(vectors: np.ndarray, words: list[str]) -> list[str]:
    norm = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit_rows = np.divide(vectors, norm, out=np.zeros_like(vectors), where=norm > 0)
    sims = unit_rows @ unit_rows.T
    np.fill_diagonal(sims, -np.inf)
    return [words[int(j)] for j in sims.argmax(1)] if len(words) > 1 else list(words)
