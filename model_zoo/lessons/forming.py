"""Senses forming while a model learns (issue 38): the Word senses set read at points of one from-scratch
training run, from random weights to the model shipped. Light: no torch.

`model_zoo.training.train_elmo --sense-snapshots N` writes OUT/senses/step-*.npz during the run (every
word's vectors at every layer, float16); `python scripts/pack_forming.py --run OUT` packs what the
lesson's slider needs into `assets/senses/forming/<model>.npz`, about 0.2 MB in all:

- per step: the tokens seen, and per word and layer the leave-one-out nearest-use sense accuracy and
  the self-similarity (model_zoo.lessons.senses.layer_measures, the measures the page shows);
- per step, word and layer: the uses' 2-D PCA map, each component's sign set to agree with the next
  step's, so that a learner's eyes can follow the points along the slider;
- the run's held-out learning curve (forward perplexity by tokens seen) and its unigram baseline.

The last step is the shipped model itself, read again with the weights here, so its figures are the
figures the page measures for it; the file records those weights' fingerprint and the data's version,
and the page ignores a file made from other weights or other data.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from .projection import pca_2d
from .sense_data import ASSETS, SenseSet, data_version
from .senses import SenseVectors, layer_measures

FORMING = ASSETS / "senses" / "forming"
HALF = 0.5  # a layer "separates" the senses once its accuracy has made this share of its rise


@dataclass(frozen=True)
class Forming:
    """One training run read at S steps, for W words at L layers ([0] = the character embeddings)."""

    model: str
    steps: np.ndarray  # (S,) optimizer steps
    tokens: np.ndarray  # (S,) tokens seen
    words: tuple[str, ...]  # (W,)
    accuracy: np.ndarray  # (S, W, L) leave-one-out nearest-use sense accuracy
    self_similarity: np.ndarray  # (S, W, L)
    maps: dict[str, np.ndarray]  # word -> (S, L, n, 2) PCA map of its uses
    curve_tokens: np.ndarray  # (C,) the learning curve's points
    curve_perplexity: np.ndarray  # (C,) held-out forward perplexity
    unigram_perplexity: float  # the held-out perplexity of word counts alone
    script: str  # the command that trained the run

    def word_accuracy(self, word: str) -> np.ndarray:
        """(S, L) for one word."""
        return self.accuracy[:, self.words.index(word)]

    def mean_accuracy(self) -> np.ndarray:
        """(S, L) averaged over the words."""
        return self.accuracy.mean(1)

    def share(self, step: int) -> float:
        """How far into the run step number `step` (an index of `steps`) is, by tokens seen, in [0, 1]."""
        return float(self.tokens[step] / self.tokens[-1])


# -- packing a run ----------------------------------------------------------------------------------------
def snapshot_files(run: Path) -> list[Path]:
    """The run's sense snapshots (train_elmo's OUT/senses/step-*.npz), in step order."""
    return sorted((run / "senses").glob("step-*.npz"))


def read_snapshot(path: Path, sets: Mapping[str, SenseSet]) -> tuple[int, int, dict[str, np.ndarray]]:
    """(step, tokens, word -> (n, L, D) float32) of one snapshot; refused if it read another sense set."""
    with np.load(path) as saved:
        if "data_version" in saved and str(saved["data_version"]) != data_version():
            raise ValueError(f"{path} read another version of the sense set than assets/senses/senses.tsv")
        vectors = {w: saved[f"vectors_{w}"].astype(np.float32) for w in sets}
        return int(saved["step"]), int(saved["tokens"]), vectors


def measure(
    vectors: Mapping[str, np.ndarray], sets: Mapping[str, SenseSet]
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Per word (in `sets`' order) and layer: accuracy (W, L), self-similarity (W, L), and the PCA maps
    word -> (L, n, 2), from each word's vectors (n, L, D)."""
    accuracy, similarity, maps = [], [], {}
    for word, sense_set in sets.items():
        v = vectors[word]
        layers = v.shape[1]
        nan = np.full(layers, np.nan)
        m = layer_measures(SenseVectors(word, v, nan, nan), sense_set.senses)
        accuracy.append(m.accuracy)
        similarity.append(m.self_similarity)
        maps[word] = np.stack([_map(v[:, k]) for k in range(layers)]).astype(np.float32)
    return np.array(accuracy), np.array(similarity), maps


def _map(vectors: np.ndarray) -> np.ndarray:
    """(n, D) -> (n, 2) PCA; all zeros where the uses are one point (a word's layer 0: one vector per form)."""
    if np.ptp(vectors, axis=0).max() < 1e-6:
        return np.zeros((len(vectors), 2))
    return pca_2d(vectors)


def align(maps: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Maps of the same uses at successive steps (each (L, n, 2)), each component's sign flipped where it
    runs against the next step's (from the last step back): a PCA's sign is arbitrary, and a map that
    mirrors itself between two steps of the slider would read as a change the model did not make."""
    out = [np.array(m, dtype=np.float32) for m in maps]
    for s in range(len(out) - 2, -1, -1):
        for layer in range(out[s].shape[0]):
            for c in range(2):
                if float(out[s][layer, :, c] @ out[s + 1][layer, :, c]) < 0:
                    out[s][layer, :, c] *= -1
    return out


def pack(
    snapshots: Iterable[tuple[int, int, Mapping[str, np.ndarray]]],
    sets: Mapping[str, SenseSet],
    curve: Sequence[Mapping[str, Any]],
    model: str,
    weights: str,
    script: str,
) -> dict[str, np.ndarray]:
    """The arrays of `assets/senses/forming/<model>.npz` from the run's (step, tokens, vectors) in order,
    the last of them the shipped model's own."""
    steps, tokens, accuracy, similarity, maps = [], [], [], [], []
    for step, seen, vectors in snapshots:
        a, s, m = measure(vectors, sets)
        steps.append(step)
        tokens.append(seen)
        accuracy.append(a)
        similarity.append(s)
        maps.append(m)
    points = [p for p in curve if p.get("forward_perplexity") is not None]
    arrays: dict[str, np.ndarray] = {
        "model": np.array(model),
        "weights": np.array(weights),
        "data_version": np.array(data_version()),
        "script": np.array(script),
        "steps": np.array(steps),
        "tokens": np.array(tokens),
        "words": np.array(list(sets)),
        "accuracy": np.array(accuracy),
        "self_similarity": np.array(similarity),
        "curve_tokens": np.array([p["tokens"] for p in points]),
        "curve_perplexity": np.array([p["forward_perplexity"] for p in points]),
        "unigram_perplexity": np.array(points[-1].get("unigram_perplexity", np.nan) if points else np.nan),
    }
    for word in sets:  # words differ in their number of uses: one array each
        arrays[f"map_{word}"] = np.stack(align([m[word] for m in maps])).astype(np.float16)
    return arrays


def pack_run(
    run: Path,
    final: Mapping[str, np.ndarray],
    sets: Mapping[str, SenseSet],
    model: str,
    weights: str,
    script: str,
) -> dict[str, np.ndarray]:
    """`pack` a train_elmo run folder (its senses/step-*.npz and learning_curve.json), its last step read by
    the shipped model (`final`: word -> (n, L, D)) in place of the run's own last snapshot, so the slider's
    last step shows the figures the page measures for the weights here."""
    import json

    files = snapshot_files(run)
    if len(files) < 2:
        raise ValueError(f"{run} has {len(files)} sense snapshots; the slider needs at least two")
    curve = json.loads((run / "learning_curve.json").read_text(encoding="utf-8"))
    snapshots = [read_snapshot(f, sets) for f in files]
    last_step, last_tokens = int(curve[-1]["step"]), int(curve[-1]["tokens"])
    if snapshots[-1][0] >= last_step:  # the run's own reading of its last step: the shipped model's instead
        last_step, last_tokens = snapshots.pop()[:2]
    return pack([*snapshots, (last_step, last_tokens, final)], sets, curve, model, weights, script)


def packed(model: str, folder: Path | None = None) -> Path | None:
    """The file of `model`'s packed run, if there is one (in `folder`, else FORMING)."""
    path = (folder or FORMING) / f"{model}.npz"
    return path if path.exists() else None


def load_forming(model: str, weights: str | None, folder: Path | None = None) -> Forming | None:
    """The packed run of `model` (in `folder`, else FORMING), or None if there is none, or it was made from
    other weights than `weights` (the model here was trained again) or from another version of the sense set.
    Read once per version of the file: a run packed while the server runs is seen on the next page view."""
    path = packed(model, folder)
    if path is None:
        return None
    return _load(path, path.stat().st_mtime_ns, str(weights), data_version())


@cache
def _load(path: Path, version: int, weights: str, data: str) -> Forming | None:
    with np.load(path) as saved:
        if str(saved["weights"]) != weights or str(saved["data_version"]) != data:
            return None
        words = tuple(str(w) for w in saved["words"])
        return Forming(
            model=str(saved["model"]),
            steps=saved["steps"],
            tokens=saved["tokens"],
            words=words,
            accuracy=saved["accuracy"],
            self_similarity=saved["self_similarity"],
            maps={w: saved[f"map_{w}"].astype(np.float32) for w in words},
            curve_tokens=saved["curve_tokens"],
            curve_perplexity=saved["curve_perplexity"],
            unigram_perplexity=float(saved["unigram_perplexity"]),
            script=str(saved["script"]),
        )


# -- what the slider says ------------------------------------------------------------------------------
LEAST_RISE = 0.05  # a rise in accuracy smaller than this (4 uses of a word's 80) is not read as separating


def halfway(accuracy: np.ndarray, least_rise: float = LEAST_RISE) -> list[int | None]:
    """Per layer of accuracy (S, L): the first step at which it has made HALF of its rise from its lowest
    point before its peak to its last value; None where that rise is under `least_rise` or a value is not a
    number (layer 0, one vector per word form, never moves)."""
    out: list[int | None] = []
    for layer in range(accuracy.shape[1]):
        line = accuracy[:, layer]
        if not np.isfinite(line).all():
            out.append(None)
            continue
        low = int(np.argmin(line[: int(np.argmax(line)) + 1]))  # a dip after the peak is not where it began
        rise = float(line[-1] - line[low])
        if rise < least_rise:
            out.append(None)
            continue
        target = line[low] + HALF * rise
        out.append(next(s for s in range(low, len(line)) if line[s] >= target - 1e-12))
    return out


def first_to_separate(accuracy: np.ndarray) -> tuple[str, int | None]:
    """Which layer separates the senses first (its accuracy halfway up its rise, `halfway`), and at which
    step: ("1", s), or "together" where two or more layers get there at the same step, or "never"."""
    found = [(s, layer) for layer, s in enumerate(halfway(accuracy)) if s is not None]
    if not found:
        return "never", None
    first = min(s for s, _ in found)
    layers = [layer for s, layer in found if s == first]
    return ("together" if len(layers) > 1 else str(layers[0])), first


def dip(accuracy: np.ndarray, layer: int, least: float = LEAST_RISE) -> int | None:
    """The step where `layer`'s accuracy is lowest before its peak, if that is below the random weights' (step
    0) by at least `least`: early training can first make the vectors less context-bound."""
    line = accuracy[:, layer]
    if not np.isfinite(line).all():
        return None
    low = int(np.argmin(line[: int(np.argmax(line)) + 1]))
    return low if 0 < low < len(line) - 1 and line[0] - line[low] >= least else None
