"""Layer-wise probing: what each layer of a frozen contextual model knows.

Tenney, Das & Pavlick 2019, "BERT Rediscovers the Classical NLP Pipeline": for each task, learn a
softmax-normalised weight per layer (ELMo's scalar mix: s = softmax(w), a scale gamma) and a
classifier on the weighted sum of the frozen layers, then read the weights. Here:

- Words of a token-labelled sentence set (assets/probing, silver labels) are read by any
  contextual model through its `span_vectors` (BERT family, causal LMs, ELMo): one vector per
  word and layer, the mean of the tokens that make the word. Computed once, kept on disk.
- Each layer is standardised on the training words (zero mean, unit variance per dimension), so
  the weights compare layers, not their scales. The classifier is linear: a probe reads what is
  there, it does not compute the answer itself.
- Single-layer probes give accuracy by layer; a majority-class baseline and a control task
  (Hewitt & Liang 2019: every word type gets a random label) say whether a probe learned the
  task or memorised the words. Selectivity = task accuracy - control accuracy.
- Centre of gravity of the weights (sum_j j s_j) and Tenney's expected layer, from cumulative
  probes on layers 0..l: E[l] = sum_l l Delta(l) / sum_l Delta(l), Delta(l) = score(0..l) - score(0..l-1).
- The nearest-neighbour sense accuracy of the Word senses lesson is a probe too (a 1-NN one).

Numpy at import; torch only to read a model and to train probes. `python -m model_zoo.probing`
writes the results the Probing page shows at once (assets/probing/results/).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import disk
from ..errors import MissingCapability
from .onehot import cosine_matrix

if TYPE_CHECKING:
    from ..contextual import Contextual

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "assets" / "probing" / "probing.jsonl.gz"
RESULTS = ROOT / "assets" / "probing" / "results"
TASKS = ("pos", "ner", "dep", "sense", "agreement")
# "ner" is Tenney's entity task: the type of a word inside a (silver) entity, the span given. TAGGING is
# CoNLL-2003's: B-/I-/O over every word, scored as entity F1 (BERT's feature table)
TAGGING = "ner_tagging"
DENSE = ("pos", "dep", TAGGING)  # every word of a sentence is a target; the others label a few words
SPLITS = ("train", "dev", "test")
CAPS = {"train": 10000, "dev": 3000, "test": 3000}  # words of whole sentences per split, dense tasks
MAX_FEATURE_BYTES = 600_000_000  # every probed word at every layer, float16, on disk (BERT-base: 0.5 GB)
FEATURE_BUDGET = 40_000_000  # floats of training features per task (train words x layers x dim)
SCRIPT = "python -m model_zoo.probing"
Progress = Callable[[float], object]

# Tenney et al. 2019, Figure 1 (BERT-large, layers 0-24, their edge-probing tasks on gold data):
# expected layer from cumulative scores, and centre of gravity of the scalar-mix weights
PAPER_BERT_LARGE = {
    "pos": {"expected_layer": 3.39, "center_of_gravity": 11.68},
    "consts": {"expected_layer": 3.79, "center_of_gravity": 13.06},
    "ner": {"expected_layer": 4.64, "center_of_gravity": 13.16},  # their "Entities"
    "dep": {"expected_layer": 5.69, "center_of_gravity": 13.75},  # their "Deps." (labelled arcs)
    "srl": {"expected_layer": 6.54, "center_of_gravity": 13.63},
    "coref": {"expected_layer": 9.47, "center_of_gravity": 15.80},
}
PAPER_LAYERS = 24
# Devlin et al. 2019, Table 7: CoNLL-2003 NER dev F1, BERT-base features into a 2-layer BiLSTM
PAPER_FEATURE_F1 = {
    "embeddings": 91.0,
    "second_to_last": 95.6,
    "last": 94.9,
    "sum_last_four": 95.9,
    "concat_last_four": 96.1,
    "sum_all": 95.5,
    "fine_tuned": 96.4,
}


# -- data ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sentence:
    id: str
    split: str
    source: str
    words: tuple[str, ...]
    labels: dict[str, tuple[str | None, ...]]  # task -> one label per word, None where not a target


def load_sentences(path: Path = DATA) -> list[Sentence]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [
        Sentence(
            id=r["id"],
            split=r["split"],
            source=r["source"],
            words=tuple(r["words"]),
            labels={task: tuple(r["labels"][task]) for task in TASKS},
        )
        for r in rows
    ]


def data_version(path: Path = DATA) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()[:10]


def text_and_spans(words: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
    """The sentence a model reads (words joined by spaces) and each word's character span in it."""
    spans, at = [], 0
    for word in words:
        spans.append((at, at + len(word)))
        at += len(word) + 1
    return " ".join(words), spans


@dataclass(frozen=True)
class Targets:
    """The words that get features: row r is word `word[r]` of sentence `sentence[r]`."""

    sentence: np.ndarray  # (N,) index into the sentence list
    word: np.ndarray  # (N,)
    dense: np.ndarray  # (N,) bool: a word of a sentence chosen for the dense tasks

    def __len__(self) -> int:
        return len(self.sentence)


def label_of(sentence: Sentence, task: str, j: int) -> str | None:
    """Word j's label for `task` (None: not a target). The entity task reads the type out of a BIO tag."""
    if task == TAGGING:
        return sentence.labels["ner"][j]
    label = sentence.labels[task][j]
    if task == "ner" and label is not None:
        return None if label == "O" else label[2:]
    return label


def select_targets(sentences: Sequence[Sentence], caps: dict[str, int] = CAPS, seed: int = 0) -> Targets:
    """Whole sentences for the dense tasks (shuffled, up to caps[split] words per split), plus every
    word that a sparse task (sense, agreement) labels anywhere."""
    rng = np.random.default_rng(seed)
    dense_sentences: set[int] = set()
    for split in SPLITS:
        pool = [i for i, s in enumerate(sentences) if s.split == split and s.source != "senses"]
        words = 0
        for i in rng.permutation(pool):
            if words >= caps[split]:
                break
            dense_sentences.add(int(i))
            words += len(sentences[i].words)
    rows: list[tuple[int, int, bool]] = []
    for i, s in enumerate(sentences):
        dense = i in dense_sentences
        for j in range(len(s.words)):
            if dense or any(label_of(s, task, j) is not None for task in TASKS if task not in DENSE):
                rows.append((i, j, dense))
    a = np.array(rows, dtype=np.int64).reshape(-1, 3)
    return Targets(sentence=a[:, 0], word=a[:, 1], dense=a[:, 2].astype(bool))


# -- features -----------------------------------------------------------------------------------
def feature_bytes(layers: int, dim: int, targets: Targets) -> int:
    """What word_features takes for a model of `layers` (embeddings included) x `dim`: float16."""
    return len(targets) * layers * dim * 2


def fits(layers: int, dim: int, targets: Targets) -> bool:
    """Whether a model of `layers` x `dim` can be probed on this server (MAX_FEATURE_BYTES)."""
    return feature_bytes(layers, dim, targets) <= MAX_FEATURE_BYTES


def read_words(
    model: Contextual,
    sentences: Sequence[Sentence],
    sentence_of: np.ndarray,
    word_of: np.ndarray,
    on_progress: Progress | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Rows r = (sentence_of[r], word_of[r]) read by `model`, each sentence once (32 to a pass): for each
    sentence, its rows and their vectors at every layer, (rows, S, D) float32 (NaN where the model cut the
    sentence before the word: the mean of the model's tokens that overlap the word)."""
    order = np.unique(sentence_of)
    rows_of = {int(i): np.flatnonzero(sentence_of == i) for i in order}
    step = 32
    for start in range(0, len(order), step):
        chunk = [int(i) for i in order[start : start + step]]
        read = [text_and_spans(sentences[i].words) for i in chunk]
        spans = [[read[k][1][int(word_of[r])] for r in rows_of[i]] for k, i in enumerate(chunk)]
        for i, v in zip(chunk, model.span_vectors([text for text, _ in read], spans)):
            yield rows_of[i], v
        if on_progress is not None:
            on_progress(min(1.0, (start + len(chunk)) / len(order)))


def word_features(
    model: Contextual, sentences: Sequence[Sentence], targets: Targets, on_progress: Progress | None = None
) -> np.ndarray:
    """Every target word's vector at every layer: (N, S, D) float16, NaN where the model cut the
    sentence before the word. The mean of the model's tokens that overlap the word."""
    out: np.ndarray | None = None
    for rows, v in read_words(model, sentences, targets.sentence, targets.word, on_progress):
        if out is None:
            if not fits(v.shape[1], v.shape[2], targets):  # a shared server's disk and memory: refuse first
                raise MissingCapability(
                    model.name,
                    "layer-wise probing on this server",
                    f"its {v.shape[1]} layers x {v.shape[2]} dimensions for {len(targets):,} words would take "
                    f"{feature_bytes(v.shape[1], v.shape[2], targets) / 1e9:.1f} GB "
                    f"(the limit is {MAX_FEATURE_BYTES / 1e9:.1f} GB)",
                )
            out = np.full((len(targets), v.shape[1], v.shape[2]), np.nan, dtype=np.float16)
        out[rows] = v.astype(np.float16)
    assert out is not None, "no target words"
    return out


def cached_features(
    model: Contextual,
    sentences: Sequence[Sentence],
    targets: Targets,
    folder: Path,
    on_progress: Progress | None = None,
) -> np.ndarray:
    """word_features, kept on disk in `folder` across restarts (read back memory-mapped), keyed on the model's
    weights as well as its name: a model trained again under its name (elmo-mini) is probed anew."""
    read = [
        model.name,
        disk.weights_version(model),
        [s.id for s in sentences],
        targets.sentence.tolist(),
        targets.word.tolist(),
    ]
    key = hashlib.sha1(json.dumps(read).encode()).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in model.name)
    path = folder / f"{safe}-{key}.npy"
    if (kept := disk.read(path, lambda found: np.load(found, mmap_mode="r"))) is not None:
        return kept
    features = word_features(model, sentences, targets, on_progress)
    if disk.keep(path, lambda partial: np.save(partial, features), ".tmp.npy"):
        return np.load(path, mmap_mode="r")  # mapped: the workers share the pages
    return features  # a cache that cannot be written: this process keeps them in memory


# -- tasks --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskSet:
    """One task's examples: per split, rows of the feature matrix, class ids and word-type ids."""

    task: str
    classes: tuple[str, ...]
    rows: dict[str, np.ndarray]
    labels: dict[str, np.ndarray]
    control: dict[str, np.ndarray]  # Hewitt & Liang's control labels: one random class per word type
    sentence: dict[str, np.ndarray]  # the sentence of each row (entity spans never cross sentences)
    types: dict[str, np.ndarray]  # the word of each row, lower-cased

    @property
    def has_control(self) -> bool:
        """Word senses label a dozen word types: a random label per type is the word itself, which any
        layer gives away; the right baseline there is each word's commonest sense, not a control task."""
        return self.task != "sense"

    def majority(self) -> float:
        """Test accuracy of always answering the commonest training class (for word senses: each word's
        commonest training sense, the classic baseline of word-sense disambiguation)."""
        train, test = self.labels["train"], self.labels["test"]
        common = np.bincount(train, minlength=len(self.classes)).argmax()
        if self.task != "sense":
            return float((test == common).mean())
        by_word = {w: np.bincount(train[self.types["train"] == w]).argmax() for w in set(self.types["train"])}
        guess = np.array([by_word.get(w, common) for w in self.types["test"]])
        return float((test == guess).mean())


def task_set(
    sentences: Sequence[Sentence], targets: Targets, task: str, *, seed: int = 0, max_train: int | None = None
) -> TaskSet:
    """The target words labelled for `task`, by split; classes are those seen in training (a dev or
    test word with another label is left out). `max_train` keeps the first that many training rows."""
    if task not in (*TASKS, TAGGING):
        raise ValueError(f"unknown task {task!r}: one of {', '.join(TASKS)}")
    split_of = np.array([SPLITS.index(s.split) for s in sentences])
    label = [label_of(sentences[i], task, j) for i, j in zip(targets.sentence, targets.word)]
    keep = np.array([y is not None for y in label]) & (targets.dense if task in DENSE else True)
    train = keep & (split_of[targets.sentence] == 0)
    classes = tuple(sorted({str(label[r]) for r in np.flatnonzero(train)}))
    index = {c: k for k, c in enumerate(classes)}
    # control task: each word type (lower-cased) draws a label from the training label distribution
    counts = Counter(label[r] for r in np.flatnonzero(train))
    p = np.array([counts[c] for c in classes], dtype=float)
    rng = np.random.default_rng(seed + 1)
    types = sorted({sentences[i].words[j].lower() for i, j in zip(targets.sentence, targets.word)})
    control_of = dict(zip(types, rng.choice(len(classes), size=len(types), p=p / p.sum())))
    rows, labels, control, sentence, words = {}, {}, {}, {}, {}
    for k, split in enumerate(SPLITS):
        r = np.flatnonzero(keep & (split_of[targets.sentence] == k) & np.array([y in index for y in label]))
        if split == "train" and max_train is not None:
            r = r[:max_train]
        rows[split] = r
        labels[split] = np.array([index[str(label[x])] for x in r], dtype=np.int64)
        control[split] = np.array(
            [control_of[sentences[targets.sentence[x]].words[targets.word[x]].lower()] for x in r], dtype=np.int64
        )
        sentence[split] = targets.sentence[r]
        words[split] = np.array([sentences[targets.sentence[x]].words[targets.word[x]].lower() for x in r], dtype=str)
    return TaskSet(task, classes, rows, labels, control, sentence, words)


# -- scores -------------------------------------------------------------------------------------
def entity_spans(tags: Sequence[str], sentence: Sequence[int]) -> set[tuple[int, int, str]]:
    """(start, end, type) of each BIO entity; an I- without its B- starts one (conlleval's rule)."""
    spans: set[tuple[int, int, str]] = set()
    start, kind = -1, ""
    for k, tag in enumerate([*tags, "O"]):
        new_sentence = k < len(tags) and k > 0 and sentence[k] != sentence[k - 1]
        inside = tag.startswith("I-") and tag[2:] == kind and not new_sentence
        if start >= 0 and not inside:
            spans.add((start, k, kind))
            start, kind = -1, ""
        if tag.startswith("B-") or (tag.startswith("I-") and not inside):
            start, kind = k, tag[2:]
    return spans


def entity_f1(gold: Sequence[str], predicted: Sequence[str], sentence: Sequence[int]) -> float:
    """Entity-level F1 (exact span and type), as CoNLL-2003 scores NER."""
    g, p = entity_spans(gold, sentence), entity_spans(predicted, sentence)
    if not g and not p:
        return 1.0
    hit = len(g & p)
    return 0.0 if hit == 0 else 2 * hit / (len(g) + len(p))


def score(data: TaskSet, split: str, predicted: np.ndarray, *, control: bool = False) -> float:
    """The task's measure: entity F1 for NER tagging (on the control task's random tags too), else accuracy."""
    gold = (data.control if control else data.labels)[split]
    if data.task == TAGGING:
        names = np.array(data.classes)
        return entity_f1(list(names[gold]), list(names[predicted]), list(data.sentence[split]))
    return float((predicted == gold).mean())


# -- probes -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProbeSettings:
    epochs: int = 30
    patience: int = 3
    batch_size: int = 512
    lr: float = 5e-3
    weight_decay: float = 1e-4
    mix_lr_scale: float = 10.0
    seed: int = 0


@dataclass
class FittedProbe:
    weights: np.ndarray  # (S,) softmax-normalised layer weights (one layer: [1.0])
    gamma: float
    dev: float  # the task's score on dev (the stopping criterion) and on test
    test: float
    epochs: int


def _standardised(features: np.ndarray, rows: dict[str, np.ndarray], layers: Sequence[int]) -> dict[str, Any]:
    """Float32 tensors (n, len(layers), D) per split, each layer standardised with training statistics."""
    import torch

    x = {split: np.asarray(features[rows[split]][:, list(layers)], dtype=np.float32) for split in SPLITS}
    mean = np.nanmean(x["train"], axis=0, keepdims=True)
    std = np.nanstd(x["train"], axis=0, keepdims=True) + 1e-4
    return {split: torch.from_numpy(np.nan_to_num((v - mean) / std)) for split, v in x.items()}


def fit_probe(
    x: dict[str, Any],
    data: TaskSet,
    *,
    control: bool = False,
    concat: bool = False,
    settings: ProbeSettings = ProbeSettings(),
) -> FittedProbe:
    """A scalar mix of x's layers (or, with `concat`, their concatenation) into a linear classifier,
    trained with Adam on train, stopped early on dev. x[split]: (n, S, D) float32 tensors."""
    import torch
    from torch import nn

    torch.manual_seed(settings.seed)
    n, layers, dim = x["train"].shape
    y = {s: torch.from_numpy(data.control[s] if control else data.labels[s]) for s in SPLITS}
    mix = nn.Parameter(torch.zeros(layers))
    gamma = nn.Parameter(torch.ones(()))
    linear = nn.Linear(dim * layers if concat else dim, len(data.classes))
    groups = [{"params": [*linear.parameters()], "lr": settings.lr}]
    if not concat:  # the mix learns faster than the classifier: its weights are what the page reads
        groups.append({"params": [mix, gamma], "lr": settings.lr * settings.mix_lr_scale})
    optimizer = torch.optim.Adam(groups)

    def logits(v: torch.Tensor) -> torch.Tensor:  # v (B, S, D)
        if concat:
            return linear(v.flatten(1))
        return linear(gamma * torch.einsum("s,bsd->bd", mix.softmax(0), v))

    def measure(split: str) -> float:
        with torch.no_grad():
            predicted = logits(x[split]).argmax(-1).numpy()
        return score(data, split, predicted, control=control)

    def dev_loss() -> float:
        with torch.no_grad():
            return float(nn.functional.cross_entropy(logits(x["dev"]), y["dev"]))

    best, best_state, since, ran = float("inf"), None, 0, 0
    generator = torch.Generator().manual_seed(settings.seed)
    for epoch in range(1, settings.epochs + 1):
        ran = epoch
        for batch in torch.randperm(n, generator=generator).split(settings.batch_size):
            loss = nn.functional.cross_entropy(logits(x["train"][batch]), y["train"][batch])
            loss = loss + settings.weight_decay * linear.weight.pow(2).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        current = dev_loss()  # early stopping on the dev loss: it keeps falling while the mix settles
        if current < best - 1e-4:
            best, since = current, 0
            best_state = (
                mix.detach().clone(),
                float(gamma.detach()),
                {k: v.clone() for k, v in linear.state_dict().items()},
            )
        else:
            since += 1
            if since >= settings.patience:
                break
    assert best_state is not None
    with torch.no_grad():
        mix.copy_(best_state[0])
        gamma.fill_(best_state[1])
        linear.load_state_dict(best_state[2])
    return FittedProbe(
        weights=np.ones(1) if concat else mix.softmax(0).detach().numpy().astype(np.float64),
        gamma=1.0 if concat else best_state[1],
        dev=measure("dev"),
        test=measure("test"),
        epochs=ran,
    )


@dataclass
class TaskResult:
    """One task on one model: everything the Probing page draws."""

    task: str
    model: str
    layers: int  # S: the layers probed, [0] the embedding (or char-CNN) layer
    classes: int
    train: int  # examples per split
    dev: int
    test: int
    majority: float  # test score of always answering the commonest class (NER: F1 of no entity, 0;
    # word senses: each word's commonest sense)
    mix_weights: list[float]  # (S,) the scalar mix's softmax weights
    mix_gamma: float
    mix_score: float  # test score of the scalar-mix probe
    by_layer: list[float]  # (S,) test score of a probe on each layer alone
    control_by_layer: list[float]  # (S,) test score of the same probe on the control task ([]: none)
    cumulative: list[float]  # (S,) test score of a scalar mix of layers 0..l
    center_of_gravity: float  # sum_j j s_j, in layers
    expected_layer: float  # Tenney's E_Delta[l], in layers (NaN if no layer adds anything)
    seconds: float
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def selectivity(self) -> list[float]:
        return [a - b for a, b in zip(self.by_layer, self.control_by_layer)]

    @property
    def best_layer(self) -> int:
        """The layer whose probe alone scores highest (the lowest such layer on a tie)."""
        return best_layer(self.by_layer)

    @property
    def control_at_best(self) -> float | None:
        """The control task's score at best_layer; None where the task has no control (word senses)."""
        return self.control_by_layer[self.best_layer] if self.control_by_layer else None


def best_layer(scores: Sequence[float]) -> int:
    """The index of the highest of `scores` (S,), the first on a tie (as np.argmax)."""
    return max(range(len(scores)), key=scores.__getitem__)


def normalised_depth(layer: float, layers: int) -> float:
    """A layer number (of S = `layers` states) as normalised depth: 0 the embedding layer, 1 the last."""
    return layer / max(1, layers - 1)


def center_of_gravity(weights: Sequence[float] | np.ndarray) -> float:
    return float(np.dot(np.arange(len(weights)), weights))


def expected_layer(cumulative: Sequence[float]) -> float:
    """Tenney et al.'s expected layer: the mean layer, weighted by what each layer adds to the
    score of the layers below it (Delta(l) for l >= 1). NaN when the layers add nothing."""
    delta = np.diff(np.asarray(cumulative, dtype=float))
    if delta.sum() <= 0:
        return float("nan")
    return float(np.dot(np.arange(1, len(cumulative)), delta) / delta.sum())


def max_train_rows(features: np.ndarray) -> int:
    """Training rows a task may use so that its features stay within FEATURE_BUDGET floats."""
    return max(500, FEATURE_BUDGET // (features.shape[1] * features.shape[2]))


def probe_task(
    features: np.ndarray,
    data: TaskSet,
    model_name: str,
    settings: ProbeSettings = ProbeSettings(),
    on_progress: Progress | None = None,
) -> TaskResult:
    """The scalar-mix probe, single-layer probes (task and control), and the cumulative probes."""
    began = time.perf_counter()
    layers = features.shape[1]
    steps = 1 + 2 * layers + (layers - 1)
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if on_progress is not None:
            on_progress(done / steps)

    everything = _standardised(features, data.rows, range(layers))
    mixed = fit_probe(everything, data, settings=settings)
    tick()
    by_layer, control, cumulative = [], [], []
    for j in range(layers):
        one = {s: v[:, j : j + 1] for s, v in everything.items()}
        by_layer.append(fit_probe(one, data, settings=settings).test)
        tick()
        if data.has_control:
            control.append(fit_probe(one, data, control=True, settings=settings).test)
        tick()
    cumulative.append(by_layer[0])
    for j in range(1, layers):
        below = {s: v[:, : j + 1] for s, v in everything.items()}
        cumulative.append(fit_probe(below, data, settings=settings).test)
        tick()
    return TaskResult(
        task=data.task,
        model=model_name,
        layers=layers,
        classes=len(data.classes),
        train=len(data.rows["train"]),
        dev=len(data.rows["dev"]),
        test=len(data.rows["test"]),
        majority=0.0 if data.task == TAGGING else data.majority(),
        mix_weights=[float(w) for w in mixed.weights],
        mix_gamma=mixed.gamma,
        mix_score=mixed.test,
        by_layer=by_layer,
        control_by_layer=control,
        cumulative=cumulative,
        center_of_gravity=center_of_gravity(mixed.weights),
        expected_layer=expected_layer(cumulative),
        seconds=time.perf_counter() - began,
        settings=asdict(settings),
    )


def probe_task_from(
    features: np.ndarray | str,
    data: TaskSet,
    model_name: str,
    settings: ProbeSettings,
    on_progress: Progress | None = None,
) -> TaskResult:
    """probe_task, where `features` may be the path of their file on disk (cached_features): a training
    process maps them from there rather than receiving a copy."""
    return probe_task(
        np.load(features, mmap_mode="r") if isinstance(features, str) else features,
        data,
        model_name,
        settings,
        on_progress,
    )


def mapped_path(features: np.ndarray) -> np.ndarray | str:
    """Where `features` lie on disk when they are memory-mapped from a file (cached_features), else themselves."""
    return str(features.filename) if isinstance(features, np.memmap) and features.filename else features


# BERT's feature-based NER table (Devlin et al. 2019, section 5.3), on this model's layers
def feature_choices(layers: int) -> dict[str, tuple[list[int], bool]]:
    """Which layers each row of the table uses and whether they are concatenated (else a learned
    scalar mix). `layers` = S, so the last hidden layer is S - 1; [0] is the embedding layer."""
    last = layers - 1
    four = list(range(max(1, last - 3), last + 1))
    return {
        "embeddings": ([0], False),
        "second_to_last": ([max(0, last - 1)], False),
        "last": ([last], False),
        "sum_last_four": (four, False),
        "concat_last_four": (four, True),
        "sum_all": (list(range(1, last + 1)), False),
    }


def feature_table(
    features: np.ndarray, data: TaskSet, settings: ProbeSettings = ProbeSettings(), on_progress: Progress | None = None
) -> dict[str, float]:
    """Test score (entity F1 for NER) of a linear probe on each of BERT's feature choices."""
    out = {}
    choices = feature_choices(features.shape[1])
    for k, (name, (layers, concat)) in enumerate(choices.items()):
        x = _standardised(features, data.rows, layers)
        out[name] = fit_probe(x, data, concat=concat, settings=settings).test
        if on_progress is not None:
            on_progress((k + 1) / len(choices))
    return out


# -- the nearest-neighbour probe of the Word senses lesson ---------------------------------------
def nn_sense_accuracy(vectors: np.ndarray, senses: list[str] | tuple[str, ...]) -> float:
    """Leave-one-out nearest-neighbour sense accuracy of `vectors` (n, dim) by cosine: a 1-NN probe.

    Ties (identical vectors, as a static model gives) are broken at random in expectation:
    each use scores the share of its equally-near neighbours that share its sense. A static
    model therefore scores exactly chance.
    """
    sims = cosine_matrix(vectors)
    np.fill_diagonal(sims, -np.inf)
    labels = np.asarray(senses)
    best = sims.max(1, keepdims=True)
    nearest = sims >= best - 1e-6
    same = nearest & (labels[:, None] == labels[None, :])
    return float((same.sum(1) / nearest.sum(1)).mean())


# -- shipped results ----------------------------------------------------------------------------
@dataclass
class ModelResults:
    model: str
    data_version: str
    tasks: dict[str, TaskResult]
    features: dict[str, float]  # feature_table on NER
    feature_seconds: float  # extracting the features of every target word
    words: int  # target words read
    weights: str = ""  # registry.weights_fingerprint of the model probed: results of other weights are not served


def results_file(model_name: str, folder: Path = RESULTS) -> Path:
    return folder / f"{re.sub(r'[^A-Za-z0-9._-]', '_', model_name)}.json"


def save_results(results: ModelResults, folder: Path = RESULTS) -> Path:
    path = results_file(results.model, folder)
    folder.mkdir(parents=True, exist_ok=True)
    payload = asdict(results)
    path.write_text(json.dumps(payload, indent=1, allow_nan=True) + "\n", encoding="utf-8")
    return path


def load_results(model_name: str, folder: Path = RESULTS) -> ModelResults | None:
    """The shipped results of `model_name`, or None where none were shipped, or where they were measured on
    other weights than the model of that name here (a model trained again under its name: elmo-mini)."""
    from ..registry import REGISTRY, weights_fingerprint

    path = results_file(model_name, folder)
    if not path.exists():
        return None
    raw = json.loads(path.read_text(encoding="utf-8"))
    tasks = {name: TaskResult(**t) for name, t in raw.pop("tasks").items()}
    results = ModelResults(tasks=tasks, **raw)
    registered = model_name in {c.name for c in REGISTRY}
    if registered and results.weights != str(weights_fingerprint(model_name)):
        return None
    return results


# -- what the Probing page reads off the results -------------------------------------------------
@dataclass(frozen=True)
class Gathered:
    """The results the Probing page shows for the models and tasks picked."""

    results: dict[str, dict[str, TaskResult]]  # model -> task -> result, the models with every task picked
    missing: list[str]  # the models picked that lack a result for some task picked
    live: list[tuple[str, str]]  # (model, task) shown from a probe retrained in this session


def gather_results(
    models: Sequence[str],
    tasks: Sequence[str],
    shipped: dict[str, ModelResults | None],
    retrained: dict[tuple[str, str], TaskResult],
) -> Gathered:
    """Each model's result per task: retrained in this session where it was, else shipped (`shipped` has
    every model of `models`)."""
    results: dict[str, dict[str, TaskResult]] = {}
    missing: list[str] = []
    for name in models:
        ours = shipped[name]
        per_task = {task: retrained.get((name, task)) or (ours.tasks.get(task) if ours else None) for task in tasks}
        if all(per_task.values()):
            results[name] = {task: r for task, r in per_task.items() if r is not None}
        else:
            missing.append(name)
    live = [(m, task) for (m, task) in retrained if m in results and task in tasks]
    return Gathered(results, missing, live)


def paper_depths(tasks: Sequence[str]) -> list[float | None]:
    """Each task's centre of gravity in BERT-large (Tenney et al.) as normalised depth; None where the
    paper has no such task: (tasks,)."""
    return [
        normalised_depth(PAPER_BERT_LARGE[task]["center_of_gravity"], PAPER_LAYERS + 1)
        if task in PAPER_BERT_LARGE
        else None
        for task in tasks
    ]


@dataclass(frozen=True)
class WeightFindings:
    """What one model's scalar-mix weights say, task by task."""

    order: list[tuple[str, float]]  # (task, normalised depth of its centre of gravity), lowest first
    ours: list[str]  # the tasks the paper measured too, in this model's order ([]: fewer than two)
    theirs: list[str]  # the same tasks in BERT-large's order (Tenney et al.)
    elmo_top: tuple[str, float] | None  # an ELMo's task leaning most on LSTM-1, and that weight; else None

    @property
    def agrees(self) -> bool:
        return self.ours == self.theirs


def weight_findings(name: str, per_task: dict[str, TaskResult], tasks: Sequence[str]) -> WeightFindings:
    """Model `name`'s `per_task` (a result for each of `tasks`) read as the page reads it: the tasks by the
    depth of their centre of gravity, against the paper's order, and (an ELMo) which leans most on LSTM-1."""
    from ..registry import get_card

    elmo = get_card(name).kind == "elmo"

    def depth(task: str) -> float:
        return normalised_depth(per_task[task].center_of_gravity, per_task[task].layers)

    ranked = sorted(tasks, key=depth)
    in_paper = [task for task in ranked if task in PAPER_BERT_LARGE]
    if len(in_paper) < 2:
        in_paper = []
    theirs = sorted(in_paper, key=lambda task: PAPER_BERT_LARGE[task]["center_of_gravity"])
    top = max(tasks, key=lambda task: per_task[task].mix_weights[1]) if elmo else None
    return WeightFindings(
        order=[(task, depth(task)) for task in ranked],
        ours=in_paper,
        theirs=theirs,
        elmo_top=None if top is None else (top, per_task[top].mix_weights[1]),
    )


def bert_features(shipped: dict[str, ModelResults | None]) -> dict[str, dict[str, float]]:
    """model -> its shipped feature table on NER ({choice: F1}), for the BERT-architecture models of
    `shipped` that have one (BERT's table is about BERT's layers), in the order of `shipped`."""
    from ..registry import get_card

    return {
        name: results.features
        for name, results in shipped.items()
        if get_card(name).family == "BERT" and results is not None and results.features
    }


def best_features(features: dict[str, float]) -> tuple[str, str]:
    """The best of a model's feature choices ({choice: F1}), and the best feature-based choice in BERT's
    paper (fine-tuning left out)."""
    ours = max(features, key=features.__getitem__)
    theirs = max((k for k in PAPER_FEATURE_F1 if k != "fine_tuned"), key=PAPER_FEATURE_F1.__getitem__)
    return ours, theirs


def extreme_tasks(tasks: dict[str, TaskResult]) -> tuple[str, str]:
    """The tasks whose scalar-mix weights sit highest and lowest (centre of gravity): (highest, lowest)."""
    high = max(tasks, key=lambda k: tasks[k].center_of_gravity)
    low = min(tasks, key=lambda k: tasks[k].center_of_gravity)
    return high, low


def run_model(
    model: Contextual,
    tasks: Sequence[str] = TASKS,
    *,
    cache: Path | None = None,
    settings: ProbeSettings = ProbeSettings(),
    log: Callable[[str], None] = print,
) -> ModelResults:
    """Every task on `model`, and the NER feature table: what the page shows before any retraining."""
    sentences = load_sentences()
    targets = select_targets(sentences)
    began = time.perf_counter()
    if cache is None:
        features = word_features(model, sentences, targets)
    else:
        features = cached_features(model, sentences, targets, cache)
    seconds = time.perf_counter() - began
    log(f"{model.name}: features of {len(targets):,} words {features.shape} in {seconds:.1f} s")
    cap = max_train_rows(features)
    results = {}
    for task in tasks:
        data = task_set(sentences, targets, task, seed=settings.seed, max_train=cap)
        results[task] = probe_task(features, data, model.name, settings)
        r = results[task]
        log(
            f"  {task}: mix {r.mix_score:.3f} (majority {r.majority:.3f}), best layer "
            f"{int(np.argmax(r.by_layer))} {max(r.by_layer):.3f}, control {max(r.control_by_layer, default=float('nan')):.3f}, "
            f"centre {r.center_of_gravity:.2f}, expected {r.expected_layer:.2f}, {r.seconds:.1f} s"
        )
    tagging = task_set(sentences, targets, TAGGING, seed=settings.seed, max_train=cap)
    table = feature_table(features, tagging, settings)
    log(f"  NER feature table: {', '.join(f'{k} {v:.3f}' for k, v in table.items())}")
    return ModelResults(model.name, data_version(), results, table, seconds, len(targets))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Probe every layer of contextual models; write the results.")
    parser.add_argument("models", nargs="+", help="model names (python -m model_zoo list)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    import torch

    from ..loading import load
    from ..registry import weights_fingerprint

    if args.threads:
        torch.set_num_threads(args.threads)
    for name in args.models:
        model = load(name)
        results = run_model(model, args.tasks)  # type: ignore[arg-type]
        results.weights = str(weights_fingerprint(name))
        print(f"wrote {save_results(results, args.out)}")


if __name__ == "__main__":
    main()
