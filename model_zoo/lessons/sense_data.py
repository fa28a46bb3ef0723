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

ASSETS = Path(__file__).resolve().parents[2] / "assets"
SENSES = ASSETS / "senses" / "senses.tsv"
NAMES_ZH = ASSETS / "senses" / "names_zh.tsv"  # a short Chinese name for each sense (written for ContextLab)


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

    @property
    def sense_numbers(self) -> list[int]:
        """(n,) each use's sense as its place in sense_keys (0 for the first sense met)."""
        keys = self.sense_keys
        return [keys.index(k) for k in self.senses]

    @property
    def use_glosses(self) -> list[str]:
        """(n,) the gloss of each use's sense."""
        return [self.glosses[k] for k in self.senses]

    @property
    def labels(self) -> dict[str, str]:
        """Sense key -> "1. sloping land (especially the slope beside a body of water)": the legend's names,
        numbered in the order the senses are met, each gloss cut only at a word boundary (`short_gloss`)."""
        return self.labels_named({})

    def labels_named(self, names: dict[str, str]) -> dict[str, str]:
        """`labels`, each sense's name in `names` (sense key -> a word in the learner's language) put before
        WordNet's English gloss: "1. 河岸 · sloping land (especially the slope beside a body of water)"."""
        return {
            k: f"{i + 1}. {names[k] + ' · ' if k in names else ''}{short_gloss(self.glosses[k])}"
            for i, k in enumerate(self.sense_keys)
        }


GLOSS_CHARS = 60  # a legend entry's gloss at most; the hover card shows it whole
_DANGLING = {"a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "or", "that", "the", "to", "with"}


def short_gloss(gloss: str, limit: int = GLOSS_CHARS) -> str:
    """A gloss's first clause (up to its first ';'), where longer than `limit` characters cut after its last
    whole word that fits (not after a dangling "the" or "of") with an ellipsis: never inside a word."""
    first = gloss.split(";")[0].strip()
    if len(first) <= limit:
        return first
    words = first[: limit + 1].split(" ")[:-1] or [first[:limit]]  # the last piece may be a cut word
    while len(words) > 1 and words[-1].lower() in _DANGLING:
        words.pop()
    return " ".join(words).rstrip(",:;(-") + "…"


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


@cache
def chinese_names(path: Path = NAMES_ZH) -> dict[str, str]:
    """Sense key -> its short Chinese name (银行, 河岸): shown before WordNet's English gloss in Chinese."""
    with path.open(encoding="utf-8", newline="") as fh:
        return {r["sense_key"]: r["name"] for r in csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)}


def lesson_words(sets: dict[str, SenseSet], first: tuple[str, ...] = ("bank", "stick")) -> list[str]:
    """The words of `sets` as the Word senses page offers them: the lesson's own examples `first`, then
    the others alphabetically."""
    return list(first) + sorted(w for w in sets if w not in first)


def total_uses(sets: dict[str, SenseSet]) -> int:
    """The sentences of every word of `sets` together."""
    return sum(len(s.sentences) for s in sets.values())


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
    from ..registry import weights_fingerprint

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


# -- what the Word senses page draws of a model, before asking it anything ------------------------------
@dataclass(frozen=True)
class SenseModel:
    """A model on the Word senses page: where its figures come from."""

    name: str
    static: bool  # one vector per word (GloVe): every use is one point
    depth: int  # layers above the embeddings (0 for a static model)
    pre: Precomputed | None  # figures precomputed for this word, if any


@dataclass(frozen=True)
class MapView:
    """How the maps are drawn: the layer (of the deepest model), the projection and UMAP's settings."""

    layer: int
    deepest: int  # layers above the embeddings of the deepest model shown
    method: str  # "pca" or "umap"
    neighbours: int
    min_dist: float
    seed: int

    @property
    def default_umap(self) -> bool:
        """UMAP's settings are those the precomputed maps used."""
        return (self.neighbours, self.min_dist, self.seed) == (
            UMAP_DEFAULTS.n_neighbors,
            UMAP_DEFAULTS.min_dist,
            UMAP_DEFAULTS.seed,
        )

    def layer_of(self, model: SenseModel) -> int:
        """The slider's layer on `model`'s own depth (a 6-layer and a 12-layer model side by side)."""
        return 0 if model.static else round(self.layer * model.depth / max(self.deepest, 1))


def ready_map(model: SenseModel, view: MapView, uses: int, own: bool) -> np.ndarray | None:
    """`model`'s map of the word's `uses` at the view's layer where nothing has to be computed: (uses, 2).

    A static model's is one point (a projection of one vector would only show rounding noise); a map
    precomputed with these settings is read from its file, unless the learner's own use (`own`) must be
    placed on it. None: the map must be computed.
    """
    if model.static:
        return np.zeros((uses, 2))
    if model.pre is not None and not own and (view.method == "pca" or view.default_umap):
        return (model.pre.pca if view.method == "pca" else model.pre.umap)[:, view.layer_of(model)]
    return None


# 长 as "length" (cháng) and as "grow" (zhǎng): the Chinese notes on The Illustrated BERT
CHANG = (
    ("这条河的长度是多少？", "cháng"),
    ("桌子的长度是两米。", "cháng"),
    ("这件衣服太长了。", "cháng"),
    ("孩子今年长高了很多。", "zhǎng"),
    ("春天草长得很快。", "zhǎng"),
    ("他长大以后想当医生。", "zhǎng"),
)
# 苹果 as a fruit and as the company: the blog post comparing word2vec, ELMo and BERT
APPLE = (
    ("我每天早上吃一个苹果。", "水果 fruit"),
    ("这个苹果又红又甜。", "水果 fruit"),
    ("妈妈在市场买了三斤苹果。", "水果 fruit"),
    ("苹果发布了新款手机。", "公司 company"),
    ("苹果公司的股价今天上涨了。", "公司 company"),
    ("他在苹果做软件工程师。", "公司 company"),
)
CHINESE = {"长": CHANG, "苹果": APPLE}  # the word -> its six sentences, each with its sense
