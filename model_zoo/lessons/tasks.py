"""Using BERT for tasks, the seeds' four ways, on frozen features or fine-tuned.

1. one sentence -> one class, from [CLS] (or the mean of the tokens): sentiment, spam;
2. one sentence -> a class per token: named entities (the probing lesson's silver tags);
3. two sentences -> one class, from "[CLS] A [SEP] B [SEP]": entailment / contradiction / neutral;
4. extractive question answering: two learned vectors score each passage token as the answer's start
   and end; an end before the start means "no answer in this passage" (SQuAD 2.0's case).

Heads train on frozen features in seconds (torch, full batch); `fine_tune` trains a copy of the whole
encoder for comparison. The sets are small and written for ContextLab (assets/tasks/README.md).
"""

from __future__ import annotations

import copy
import csv
import dataclasses
import functools
import math
import re
import string
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from .. import disk
from ..contextual import Contextual, Encoder, Reader, Reading
from ..errors import EmptyInput, MissingCapability
from ..onednn import trainable_fp32
from .probing import TaskSet

TASKS_DIR = Path(__file__).resolve().parents[2] / "assets" / "tasks"
SENTENCE_SETS = ("sentiment", "spam")
MAX_ANSWER_TOKENS = 30
# The answer type of a question (Li & Roth 2002's coarse classes, as QA systems filter candidates by it): a
# What/Who/Which question asks for a noun phrase, and a noun phrase does not open with a preposition. So a
# reader's span for such a question may not start on one of these words. Left out: words that also open a
# noun phrase or an answer of such a question ("about 50 rivers", "over 100 pieces", "past generations",
# "to signal their mood"). In every training set of the readers, 2 of 28,134 answers to such questions open
# with one of them (train_qa's development split); on its development questions the rule changed 3 of 503
# answers, each wrong either way (metrics.json, `rule`).
NOUN_PHRASE_QUESTIONS = frozenset({"what", "who", "whom", "which", "whose"})
PREPOSITIONS = frozenset(
    "above across against along among around at behind below beneath beside between beyond by despite during for "
    "from in inside into near of on onto through throughout toward towards under underneath upon with within "
    "without".split()
)
Progress = Callable[[float], object]


# -- data -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Labelled:
    text: str
    label: str
    text_b: str | None = None  # the hypothesis of a pair
    group: str | None = None  # examples of one group are held out together (a pair's premise in nli.tsv)


@dataclass(frozen=True)
class Split:
    train: list[Labelled]
    test: list[Labelled]
    swapped: list[Labelled] = dataclasses.field(default_factory=list)  # held-out pairs read B -> A (nli)

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(sorted({x.label for x in self.train}))


def _rows(name: str) -> list[dict[str, str]]:
    """The rows of assets/tasks/NAME.tsv (read once per process: the pages ask for them on every run)."""
    return list(_read_rows(name))


@functools.cache
def _read_rows(name: str) -> tuple[dict[str, str], ...]:
    with (TASKS_DIR / f"{name}.tsv").open(encoding="utf-8", newline="") as f:
        return tuple(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def load_sentences(name: str) -> Split:
    """A sentence set (sentiment, spam): every fifth row held out for testing."""
    rows = [Labelled(r["text"], r["label"]) for r in _rows(name)]
    return Split([x for i, x in enumerate(rows) if i % 5], [x for i, x in enumerate(rows) if i % 5 == 0])


def load_chinese_sentiment() -> list[Labelled]:
    """Chinese sentences with sentiment labels, for testing a head trained on English alone (never trained on)."""
    return [Labelled(r["text"], r["label"]) for r in _rows("sentiment_zh")]


def load_pairs() -> Split:
    """The entailment set, split by premise: every fifth premise (with its three hypotheses) held out.

    With each premise's entailment read the other way round (nli_swapped.tsv: the hypothesis, more
    general, as premise; the original premise as hypothesis; neutral): those of the training premises
    are trained on, so that a head learns that a pair has a direction; those of the held-out premises
    are `swapped`, the test of whether swapping A and B moves the head's answer."""
    rows = _rows("nli")
    premises = list(dict.fromkeys(r["premise"] for r in rows))
    held = {p for i, p in enumerate(premises) if i % 5 == 0}
    pairs = [Labelled(r["premise"], r["label"], r["hypothesis"], r["premise"]) for r in rows]
    swapped = [Labelled(r["premise"], r["label"], r["hypothesis"], r["hypothesis"]) for r in _rows("nli_swapped")]
    return Split(
        [x for x in pairs if x.text not in held] + [x for x in swapped if x.text_b not in held],
        [x for x in pairs if x.text in held],
        [x for x in swapped if x.text_b in held],
    )


@dataclass(frozen=True)
class Question:
    passage: str
    question: str
    answer: str  # a span of the passage

    @property
    def span(self) -> tuple[int, int]:
        start = self.passage.find(self.answer)
        return start, start + len(self.answer)


def load_questions(extra: bool = False) -> tuple[list[Question], list[Question]]:
    """(train, test), split by passage: every fifth passage of qa.tsv held out, and every passage of
    qa_heldout.tsv (written later, for testing only: never trained on). With `extra`, the train split
    also holds qa_extra.tsv (written later still, for training the fine-tuned reader only; the page's
    frozen-feature head keeps the smaller set, which it trains on live)."""
    rows = _rows("qa")
    ids = list(dict.fromkeys(r["passage_id"] for r in rows))
    held = {p for i, p in enumerate(ids) if i % 5 == 0}
    qs = [(r["passage_id"], Question(r["passage"], r["question"], r["answer"])) for r in rows]
    fresh = [Question(r["passage"], r["question"], r["answer"]) for r in _rows("qa_heldout")]
    more = [Question(r["passage"], r["question"], r["answer"]) for r in _rows("qa_extra")] if extra else []
    return [q for p, q in qs if p not in held] + more, [q for p, q in qs if p in held] + fresh


def load_more_questions() -> list[Question]:
    """qa_more.tsv: 128 questions on 32 more passages, written later than qa_extra.tsv, for training the
    fine-tuned reader only (never its development questions, so that runs before and after it compare on
    the same ones)."""
    return [Question(r["passage"], r["question"], r["answer"]) for r in _rows("qa_more")]


LECTURE_PASSAGE = "p11"  # the lecture's precipitation passage (qa.tsv), in the test split


def written_passages() -> dict[str, list[Question]]:
    """The written passages by id (qa.tsv's p01, p02, ..., then qa_heldout.tsv's h01, ...), in file order,
    each with its questions."""
    out: dict[str, list[Question]] = {}
    for r in _rows("qa") + _rows("qa_heldout"):
        out.setdefault(r["passage_id"], []).append(Question(r["passage"], r["question"], r["answer"]))
    return out


# -- frozen features --------------------------------------------------------------------------------
POOLINGS = ("cls", "mean")


@torch.inference_mode()
def layer_features(model: Encoder, texts: Sequence[str], pairs: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Every layer's sentence vector of each text (or pair), by pooling: the first token's vector
    ("cls": [CLS], or what a model without one puts first) and the mean of the other, non-special tokens
    ("mean"). {pooling: (layers + 1, n, D)}, index 0 the embeddings, one forward pass for both."""
    out: dict[str, list[np.ndarray]] = {p: [] for p in POOLINGS}
    for _, batch, special, result in model.batches(texts, pairs):
        states = torch.stack([h.float() for h in result.hidden_states])  # (layers + 1, batch, tokens, dim)
        keep = (batch["attention_mask"].bool() & ~special).to(states.device)[None, :, :, None]
        out["cls"].append(states[:, :, 0].cpu().numpy())
        out["mean"].append(((states * keep).sum(2) / keep.sum(2).clamp(min=1)).cpu().numpy())
    layers = model.config.num_hidden_layers + 1
    empty = np.zeros((layers, 0, model.config.hidden_size), np.float32)
    return {p: np.concatenate(xs, 1) if xs else empty for p, xs in out.items()}


def sentence_features(
    model: Encoder, texts: Sequence[str], pairs: Sequence[str] | None = None, pooling: str = "cls", layer: int = -1
) -> np.ndarray:
    """One layer's (default: the last) [CLS] vector of each text (or text pair), or the mean of its
    other tokens: (n, D)."""
    return layer_features(model, texts, pairs)[pooling][layer]


# -- heads on frozen features -----------------------------------------------------------------------
@dataclass
class Head:
    """A linear classifier on standardised features."""

    classes: tuple[str, ...]
    weight: np.ndarray  # (classes, D)
    bias: np.ndarray  # (classes,)
    mean: np.ndarray  # (D,)
    std: np.ndarray  # (D,)
    accuracy: float  # on the held-out test examples
    majority: float  # always answering the commonest training class, on the same test examples
    seconds: float  # training time (features excluded)
    layer: int = -1  # the layer whose vectors it reads (0: the embeddings; -1: the last)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        logits = ((x - self.mean) / self.std) @ self.weight.T + self.bias
        e = np.exp(logits - logits.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def folded(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The same logits as one linear layer on raw features: its standardisation folded into the weight and
        bias (W / std, b - W · mean / std), (classes, D) and (classes,)."""
        weight = torch.from_numpy(self.weight / self.std).float()
        return weight, torch.from_numpy(self.bias).float() - weight @ torch.from_numpy(self.mean).float()


def train_head(
    x_train: np.ndarray,
    y_train: Sequence[str],
    x_test: np.ndarray,
    y_test: Sequence[str],
    *,
    steps: int = 300,
    l2: float = 1e-2,
    on_progress: Progress | None = None,
    seed: int = 0,
) -> Head:
    """Logistic regression, full batch with Adam: a few hundred examples train in well under a second."""
    began = time.perf_counter()
    classes = tuple(sorted(set(y_train)))
    index = {c: k for k, c in enumerate(classes)}
    mean, std = x_train.mean(0), x_train.std(0) + 1e-4
    x = torch.from_numpy((x_train - mean) / std).float()
    y = torch.tensor([index[c] for c in y_train])
    torch.manual_seed(seed)
    linear = nn.Linear(x.shape[1], len(classes))
    optimizer = torch.optim.Adam(linear.parameters(), lr=1e-2)
    for step in range(steps):
        loss = nn.functional.cross_entropy(linear(x), y) + l2 * linear.weight.pow(2).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if on_progress is not None and step % 25 == 24:
            on_progress((step + 1) / steps)
    head = Head(
        classes,
        linear.weight.detach().numpy().copy(),
        linear.bias.detach().numpy().copy(),
        mean,
        std,
        accuracy=0.0,
        majority=0.0,
        seconds=time.perf_counter() - began,
    )
    if len(y_test):
        predicted = np.array(classes)[head.probabilities(x_test).argmax(1)]
        head.accuracy = float((predicted == np.array(y_test)).mean())
        common = max(classes, key=list(y_train).count)
        head.majority = float((np.array(y_test) == common).mean())
    return head


@dataclass(frozen=True)
class LayerChoice:
    """Which layer a head reads, chosen on the training examples alone (the test ones never choose)."""

    layer: int  # 0: the embeddings, L: the last layer
    development: tuple[float, ...]  # each layer's mean accuracy over the development folds


def choose_layer(
    x: np.ndarray,
    y: Sequence[str],
    groups: Sequence[str] | None = None,
    folds: int = 5,
    development: np.ndarray | None = None,
) -> LayerChoice:
    """The layer (of x: (layers, n, D), training examples only) whose vectors a linear classifier reads
    best, by `folds`-fold cross-validation; `groups` keeps examples that share a text (a premise) in one
    fold. Where the data has its own development split, `development` (n,) bool marks its rows: the
    classifier trains on the others and is scored there, once. The classifier here is scikit-learn's ridge classifier on standardised features: one
    closed-form solve per fold, so 31 layers x 5 folds take about a second where train_head's Adam would
    take half a minute; on the lesson's sets it picks the layers logistic regression picks (within a
    point of accuracy). Ties go to the later layer."""
    from sklearn.linear_model import RidgeClassifier
    from sklearn.model_selection import GroupKFold, PredefinedSplit, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    labels = np.asarray(y)
    keys = np.arange(len(labels)) if groups is None else np.unique(np.asarray(groups), return_inverse=True)[1]
    n_folds = min(folds, len(np.unique(keys)))
    split: Any = GroupKFold(n_folds) if development is None else PredefinedSplit(np.where(development, 0, -1))
    scores: list[float] = []
    for layer in x:
        if (development is None and n_folds < 2) or len(set(labels.tolist())) < 2:
            scores.append(0.0)
            continue
        classifier = make_pipeline(StandardScaler(), RidgeClassifier(alpha=1000.0))
        fold_scores = cross_val_score(classifier, layer, labels, cv=split, groups=keys if development is None else None)
        scores.append(float(np.mean(fold_scores)))
    best = max(range(len(scores)), key=lambda k: (round(scores[k], 6), k))
    return LayerChoice(best, tuple(scores))


def swap_changes(head: Head, original: np.ndarray, swapped: np.ndarray) -> int:
    """How many pairs change the head's answer when A and B are swapped: original and swapped are the
    same pairs' features, (n, D) each, read A -> B and B -> A."""
    return int((head.probabilities(original).argmax(1) != head.probabilities(swapped).argmax(1)).sum())


@dataclass(frozen=True)
class TrainedHead:
    """A head trained on frozen features of a model for a task, with what it cost and how it was chosen."""

    head: Head  # reads the layer chosen on the training examples (head.layer)
    feature_seconds: float
    train: int
    test: int
    development: tuple[float, ...]  # each layer's accuracy on the development folds (what chose head.layer)
    last_layer: float  # the same head on the last layer (the seeds' recipe), on the same test examples
    swaps_changed: int = 0  # held-out pairs whose answer changes when A and B are swapped (nli)
    swaps: int = 0  # of these many (entailments whose reverse is neutral)

    @property
    def total_seconds(self) -> float:
        """What the head cost in all: the features of every example, then the head's training."""
        return self.feature_seconds + self.head.seconds


def better_pooling(cls: float, mean: float) -> str:
    """Which sentence vector's head scores higher, from their held-out accuracies: "cls", "mean" or "tie"."""
    return "cls" if cls > mean else "mean" if mean > cls else "tie"


def task_data(task: str) -> Split:
    return load_pairs() if task == "nli" else load_sentences(task)


def train_task_heads(model: Encoder, task: str, on_progress: Progress | None = None) -> dict[str, TrainedHead]:
    """A head per pooling for a sentence task (sentiment, spam) or the entailment pairs ("nli"): features
    of every layer in one forward pass, the layer chosen by choose_layer on the training examples, the
    head trained there and scored on the test ones (and, beside it, the last layer's)."""
    data = task_data(task)
    began = time.perf_counter()

    def features(xs: Sequence[Labelled]) -> dict[str, np.ndarray]:
        return layer_features(model, [x.text for x in xs], [x.text_b or "" for x in xs] if task == "nli" else None)

    y_train, y_test = [x.label for x in data.train], [x.label for x in data.test]
    x_train = features(data.train)
    if on_progress is not None:
        on_progress(0.7)
    x_test = features(data.test)
    originals = [x for s in data.swapped for x in data.test if (x.text, x.text_b) == (s.text_b, s.text)]
    x_ab, x_ba = features(originals), features(data.swapped)
    seconds = time.perf_counter() - began
    out: dict[str, TrainedHead] = {}
    for pooling in POOLINGS:
        train, test = x_train[pooling], x_test[pooling]
        choice = choose_layer(train, y_train, [x.group or x.text for x in data.train])
        head = train_head(train[choice.layer], y_train, test[choice.layer], y_test)
        head.layer = choice.layer
        last = train_head(train[-1], y_train, test[-1], y_test)
        changed = swap_changes(head, x_ab[pooling][head.layer], x_ba[pooling][head.layer]) if originals else 0
        out[pooling] = TrainedHead(
            head, seconds, len(data.train), len(data.test), choice.development, last.accuracy, changed, len(originals)
        )
    if on_progress is not None:
        on_progress(1.0)
    return out


_HEAD_ARRAYS = ("weight", "bias", "mean", "std")
HEADS_VERSION = 1  # of train_task_heads' recipe: raise it when the recipe changes, and cached heads retrain


def cached_task_heads(
    model: Encoder, task: str, folder: Path, on_progress: Progress | None = None
) -> dict[str, TrainedHead]:
    """train_task_heads, kept on disk in `folder` across restarts (a class's server restarting does not
    encode the sets again: half a minute a task for smollm2-135m-mlm on 2 cores), keyed on the model,
    its weights and the task's files."""
    import hashlib
    import json

    files = [TASKS_DIR / f"{task}.tsv"] + ([TASKS_DIR / "nli_swapped.tsv"] if task == "nli" else [])
    data = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in model.name)
    path = folder / f"{safe}-{disk.weights_version(model)}-{task}-{data}-v{HEADS_VERSION}.npz"

    def load(found: Path) -> dict[str, TrainedHead]:
        with np.load(found) as saved:
            out = {}
            for pooling in POOLINGS:
                meta = json.loads(str(saved[f"{pooling}.meta"]))
                arrays = {k: saved[f"{pooling}.{k}"] for k in _HEAD_ARRAYS}
                head = Head(classes=tuple(meta.pop("classes")), **arrays, **meta.pop("head"))
                out[pooling] = TrainedHead(head, development=tuple(meta.pop("development")), **meta)
            return out

    if (kept := disk.read(path, load)) is not None:
        return kept
    heads = train_task_heads(model, task, on_progress)
    saved_arrays: dict[str, Any] = {}
    for pooling, trained in heads.items():
        h = trained.head
        fields = {f.name: getattr(h, f.name) for f in dataclasses.fields(h) if f.name not in _HEAD_ARRAYS}
        meta = {f.name: getattr(trained, f.name) for f in dataclasses.fields(trained) if f.name != "head"}
        meta.update(classes=list(fields.pop("classes")), head=fields, development=list(trained.development))
        saved_arrays[f"{pooling}.meta"] = np.array(json.dumps(meta))
        saved_arrays.update({f"{pooling}.{k}": getattr(h, k) for k in _HEAD_ARRAYS})
    disk.keep(path, lambda partial: np.savez(partial, **saved_arrays), ".tmp.npz")
    return heads


# -- across languages: a head trained on English, read on Chinese -------------------------------------
@dataclass(frozen=True)
class CrossLingual:
    head: Head  # the sentiment head, trained on English sentences only
    english: float  # its accuracy on the held-out English sentences
    chinese: float  # its accuracy on the Chinese sentences, none of which it was trained on
    guesses: list[tuple[Labelled, str, float]]  # each Chinese sentence, the class given and its probability

    @property
    def chinese_beats_chance(self) -> bool:
        """Whether the Chinese score is more than a coin flip reaches (one-sided binomial, 5%)."""
        n = len(self.guesses)
        return round(self.chinese * n) >= chance_cutoff(n)


@dataclass(frozen=True)
class Abridged:
    """What a task diagram draws of a text (or pair): each segment's first few tokens, "…" for the rest,
    and its last token ([SEP]); each one's segment and place (None for the "…"). Places count the sequence
    from [CLS] = 0, or, for a passage, its tokens from 1 as the lecture counts a passage's words (d1 … dN)."""

    tokens: list[str]
    segments: list[int]
    positions: list[int | None]


def abridged(tokens: Sequence[str], segment_ids: Sequence[int], passage: bool, per_segment: int = 5) -> Abridged:
    """`tokens` with their `segment_ids` (0 the first text, 1 the second) as a diagram draws them (Abridged);
    with `passage`, the second text is the passage."""
    out = Abridged([], [], [])
    ids = list(segment_ids)
    for segment in sorted(set(ids)):
        first = ids.index(segment) - 1 if passage and segment else 0
        mine: list[tuple[str, int | None]] = [
            (tok, k - first) for k, (tok, s) in enumerate(zip(tokens, ids)) if s == segment
        ]
        shown = mine if len(mine) <= per_segment + 1 else [*mine[:per_segment], ("…", None), mine[-1]]
        out.tokens.extend(tok for tok, _ in shown)
        out.positions.extend(k for _, k in shown)
        out.segments.extend([segment] * len(shown))
    return out


def chance_cutoff(n: int, p: float = 0.5, alpha: float = 0.05) -> int:
    """The fewest right answers of `n` that guessing (each right with probability `p`) reaches less than
    `alpha` of the time: the one-sided binomial test's threshold (20 of 30 for a coin at 5%)."""
    tail = 0.0
    for k in range(n, -1, -1):  # P(X >= k), adding the terms from the top
        tail += math.comb(n, k) * p**k * (1 - p) ** (n - k)
        if tail >= alpha:
            return k + 1
    return 0


def cross_lingual(model: Encoder, head: Head, pooling: str = "mean") -> CrossLingual:
    """Score `head`, a sentiment head trained on `model`'s English sentence vectors (`pooling`), on the
    Chinese sentences; its own held-out accuracy is the English score."""
    chinese = load_chinese_sentiment()
    probs = head.probabilities(sentence_features(model, [x.text for x in chinese], pooling=pooling, layer=head.layer))
    given = [head.classes[k] for k in probs.argmax(1)]
    return CrossLingual(
        head=head,
        english=head.accuracy,
        chinese=float(np.mean([g == x.label for g, x in zip(given, chinese)])),
        guesses=[(x, g, float(p.max())) for x, g, p in zip(chinese, given, probs)],
    )


# -- extractive question answering -------------------------------------------------------------------
@dataclass(frozen=True)
class Passage:
    """One (question, passage) pair as BERT reads it: the last layer's vector of every passage token."""

    tokens: list[str]  # the passage's tokens
    chars: list[tuple[int, int]]  # each token's character span in the passage
    vectors: np.ndarray  # (tokens, D)


@torch.inference_mode()
def passage_vectors(model: Encoder, questions: Sequence[str], passages: Sequence[str]) -> list[Passage]:
    """Read "[CLS] question [SEP] passage [SEP]" and keep the passage's tokens (segment B)."""
    out: list[Passage] = []
    for _, batch, _, result in model.batches(list(questions), list(passages)):
        last = result.hidden_states[-1].float().cpu().numpy()
        for i in range(len(last)):
            keep = [p for p, s in enumerate(batch.sequence_ids(i)) if s == 1]
            spans = [batch.token_to_chars(i, p) for p in keep]
            ids = batch["input_ids"][i, keep].tolist()
            out.append(Passage(model.decode_each(ids), [(c.start, c.end) for c in spans], last[i, keep]))
    return out


@dataclass
class QAHead:
    start: np.ndarray  # (D,) the learned start vector
    end: np.ndarray  # (D,) the learned end vector
    start_bias: float
    end_bias: float
    exact: float  # exact-match share on the held-out questions
    f1: float  # token-overlap F1 on them
    seconds: float

    def scores(self, passage: Passage) -> tuple[np.ndarray, np.ndarray]:
        """Each passage token's start and end score: (tokens,), (tokens,)."""
        return passage.vectors @ self.start + self.start_bias, passage.vectors @ self.end + self.end_bias


@dataclass(frozen=True)
class Answer:
    text: str  # "" when there is no answer in the passage
    start: int  # positions in `tokens` (inclusive); -1 without an answer
    end: int
    tokens: list[str]  # what was scored: the passage's tokens (with [CLS] and [SEP] for a reader)
    start_scores: np.ndarray
    end_scores: np.ndarray
    best_start: int  # the argmax of each curve on its own
    best_end: int
    reason: str = ""  # without an answer: "end_before_start", "outside_passage" (a [CLS] or [SEP] won), or,
    # for a reader, "no_answer_scores_higher"
    lecture: str = ""  # the lecture's rule on the best start and end alone: "", or a reason as above
    passed_over: str = ""  # the best span by scores alone, where the question's answer type ruled it out
    cut: bool = False  # the passage was longer than the model reads: its end was not scored
    passage: str = ""  # the passage as the model read it
    span: tuple[int, int] | None = None  # the answer's characters in `passage`
    inside: str = ""  # the best span inside the passage, answer or not ("" if the passage has no token)
    span_score: float = float("-inf")  # that span's start + end score
    null_score: float | None = None  # a reader's score for "no answer" (pick_answer); None for a head
    framed: bool = (
        False  # `tokens` begin with the reader's [CLS] (or what it reads in its place) and end with its [SEP]
    )

    @property
    def start_probabilities(self) -> np.ndarray:
        """The softmax of the start scores over every scored token, as the model is trained to read them."""
        return _softmax(self.start_scores)

    @property
    def end_probabilities(self) -> np.ndarray:
        return _softmax(self.end_scores)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def pick_answer(
    tokens: list[str],
    chars: Sequence[tuple[int, int] | None],
    start: np.ndarray,
    end: np.ndarray,
    text: str,
    framed: bool = False,
    question: str = "",
) -> Answer:
    """The best span of passage tokens (start <= end, at most MAX_ANSWER_TOKENS long), and whether to give it.

    Scores of passage tokens alone (the frozen-vector head): the lecture's rule. Take the best start and the
    best end; if the end comes first, there is no answer in this passage.

    A reader's scores (`framed`: [CLS], or what stands for it, first and the closing [SEP] last; `chars` None
    there): SQuAD 2.0's rule as BERT's paper reads it (Devlin et al. 2019, section 4.3), which is what such a
    reader is trained for. Pointing at "no answer" scores the best of the two special tokens' start scores
    plus the best of their end scores (BERT's SQuAD 2.0 readers point at [CLS] with both; train_qa teaches
    ContextLab's to start on the closing [SEP] and end on [CLS]); the best span answers where its start + end
    score is higher. The paper adds a margin tuned on development data; here it is 0, the paper's rule
    without tuning, which on train_qa's development questions was at least as good as the lecture's rule on
    every measure (its metrics.json, `rule`). `lecture` keeps what the lecture's rule would have said, so
    that a page can show where the two part.

    A reader's span for a `question` that asks for a noun phrase (asks_for_noun_phrase) does not start on a
    preposition (PREPOSITIONS); `passed_over` names the span the scores alone preferred, where that rule
    ruled it out.

    Without an answer, `inside` still names the best span."""
    best_start, best_end = int(start.argmax()), int(end.argmax())
    total = start[:, None] + end[None, :]
    i, j = np.indices(total.shape)
    outside = np.array([c is None for c in chars])
    total[(j < i) | (j - i >= MAX_ANSWER_TOKENS) | outside[:, None] | outside[None, :]] = -np.inf
    a, b = (int(k) for k in np.unravel_index(int(total.argmax()), total.shape))
    first, last = chars[a], chars[b]
    passed_over = ""
    if framed and first and last and asks_for_noun_phrase(question) and is_preposition(text, first):
        passed_over = text[first[0] : last[1]]
        total[[is_preposition(text, c) for c in chars], :] = -np.inf
        a, b = (int(k) for k in np.unravel_index(int(total.argmax()), total.shape))
        first, last = chars[a], chars[b]
    inside = "" if first is None or last is None else text[first[0] : last[1]]
    lecture = (
        "end_before_start"
        if best_end < best_start
        else "outside_passage"
        if chars[best_start] is None or chars[best_end] is None
        else ""
    )
    span_score = float(total[a, b])
    null_score = float(start[outside].max() + end[outside].max()) if framed and outside.any() else None
    given = functools.partial(
        Answer,
        tokens=tokens,
        start_scores=start,
        end_scores=end,
        best_start=best_start,
        best_end=best_end,
        passage=text,
        inside=inside,
        lecture=lecture,
        span_score=span_score,
        null_score=null_score,
        framed=framed,
        passed_over=passed_over,
    )
    none = functools.partial(given, "", -1, -1)
    if first is None or last is None:
        return none(reason=lecture or "outside_passage")
    if null_score is not None:
        if null_score >= span_score:
            return none(reason="no_answer_scores_higher")
    elif lecture:
        return none(reason=lecture)
    return given(inside, a, b, span=(first[0], last[1]))


def asks_for_noun_phrase(question: str) -> bool:
    """Whether `question` opens with a question word whose answer is a noun phrase (NOUN_PHRASE_QUESTIONS)."""
    words = question.split(maxsplit=1)
    return bool(words) and words[0].lower().strip(string.punctuation) in NOUN_PHRASE_QUESTIONS


def is_preposition(text: str, span: tuple[int, int] | None) -> bool:
    """Whether the token at characters `span` of `text` is a whole word of PREPOSITIONS ("under"; not the "in"
    of "India", wherever a tokenizer cuts it so)."""
    if span is None:
        return False
    a, b = span
    word = text[a:b].strip()
    a += len(text[a:b]) - len(text[a:b].lstrip())
    whole = (a == 0 or not text[a - 1].isalnum()) and (b >= len(text) or not text[b].isalnum())
    return whole and word.lower() in PREPOSITIONS


def answer(head: QAHead, passage: Passage, text: str) -> Answer:
    """The frozen-feature head's answer (`pick_answer` on its scores of the passage's tokens)."""
    s, e = head.scores(passage)
    return pick_answer(passage.tokens, passage.chars, s, e, text)


def read_answer(reader: Reader, question: str, passage: str) -> Answer:
    """A fine-tuned reader's answer: its own scores, [CLS] and [SEP] included."""
    return answer_of(reader.read(question, passage), question)


def answer_of(r: Reading, question: str) -> Answer:
    """The answer a reader's scores for `question` on a passage give (read_answer, or a shared pass's)."""
    got = pick_answer(r.tokens, r.chars, r.start_scores, r.end_scores, r.passage, framed=True, question=question)
    return dataclasses.replace(got, cut=r.cut)


def written_answer(question: str, passage: str) -> str | None:
    """The answer qa.tsv gives for `question` on `passage` (the lecture's precipitation questions among
    them), or None where the pair is not one of the written ones."""
    return next(
        (q.answer for qs in written_passages().values() for q in qs if (q.question, q.passage) == (question, passage)),
        None,
    )


def missed_answer(got: Answer, question: str, passage: str) -> str | None:
    """The written answer to `question` on `passage` (written_answer) where `got` is not it exactly (no
    answer at all counts as a miss); None where the pair has no written answer or `got` matches it."""
    gold = written_answer(question, passage)
    if gold is None or (got.span is not None and exact_match(got.text, gold)):
        return None
    return gold


def separator_token(tokens: Sequence[str], word_ids: Sequence[int | None]) -> str | None:
    """What a model reads between the two texts of a pair (`tokens` and their `word_ids`, (T,) each): the
    second token that belongs to no word, the first being [CLS] or what stands in for it; None if none."""
    specials = [tok for tok, w in zip(tokens, word_ids) if w is None]
    return specials[1] if len(specials) > 1 else None


def normalise_answer(text: str) -> str:
    """SQuAD's normalisation before answers are compared: lower case, no punctuation, no articles."""
    text = "".join(ch for ch in text.lower() if ch not in string.punctuation)
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def exact_match(got: str, gold: str) -> bool:
    return normalise_answer(got) == normalise_answer(gold)


def token_f1(got: str, gold: str) -> float:
    """SQuAD's F1: the overlap of the two answers' words, after normalise_answer."""
    x, y = normalise_answer(got).split(), normalise_answer(gold).split()
    common = sum(min(x.count(w), y.count(w)) for w in set(x))
    if not x or not y or not common:
        return float(x == y)
    p, r = common / len(x), common / len(y)
    return 2 * p * r / (p + r)


def _gold_tokens(passage: Passage, span: tuple[int, int]) -> tuple[int, int] | None:
    inside = [k for k, (a, b) in enumerate(passage.chars) if a < span[1] and b > span[0]]
    return (inside[0], inside[-1]) if inside else None


def train_qa(
    model: Encoder,
    train: Sequence[Question],
    test: Sequence[Question],
    *,
    steps: int = 300,
    on_progress: Progress | None = None,
    seed: int = 0,
) -> QAHead:
    """Learn the start and end vectors on frozen features (cross-entropy over passage positions)."""
    read = passage_vectors(model, [q.question for q in train], [q.passage for q in train])
    began = time.perf_counter()
    examples = [(p, g) for p, q in zip(read, train) if (g := _gold_tokens(p, q.span)) is not None]
    torch.manual_seed(seed)
    dim = read[0].vectors.shape[1]
    w = nn.Parameter(torch.zeros(2, dim))
    bias = nn.Parameter(torch.zeros(2))
    optimizer = torch.optim.Adam([w, bias], lr=1e-2)
    # Every passage in one padded tensor, so that a step is one product, not a Python loop of small ones:
    # 128 questions x 300 steps held a worker's interpreter lock for about two minutes beside a class.
    vectors = nn.utils.rnn.pad_sequence([torch.from_numpy(p.vectors) for p, _ in examples], batch_first=True)
    lengths = torch.tensor([len(p.vectors) for p, _ in examples])
    padding = torch.arange(vectors.shape[1])[None] >= lengths[:, None]  # (n, T)
    gold = torch.tensor([g for _, g in examples])  # (n, 2)
    for step in range(steps):
        logits = (vectors @ w.T + bias).masked_fill(padding[..., None], float("-inf"))  # (n, T, 2)
        # each passage's start and end: a softmax over its own positions, averaged over passages and both ends
        loss = nn.functional.cross_entropy(logits.transpose(1, 2).reshape(-1, logits.shape[1]), gold.reshape(-1))
        loss = loss + 1e-3 * w.pow(2).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if on_progress is not None and step % 25 == 24:
            on_progress((step + 1) / steps)
    head = QAHead(
        w[0].detach().numpy().copy(),
        w[1].detach().numpy().copy(),
        float(bias[0].detach()),
        float(bias[1].detach()),
        0.0,
        0.0,
        time.perf_counter() - began,
    )
    if test:
        got = [
            answer(head, p, q.passage).text
            for p, q in zip(passage_vectors(model, [q.question for q in test], [q.passage for q in test]), test)
        ]
        head.exact = float(np.mean([exact_match(g, q.answer) for g, q in zip(got, test)]))
        head.f1 = float(np.mean([token_f1(g, q.answer) for g, q in zip(got, test)]))
    return head


def train_qa_named(
    model_name: str, train: Sequence[Question], test: Sequence[Question], on_progress: Progress | None = None
) -> QAHead:
    """train_qa on the model `model_name`, loaded here: what a server's trainer process runs (serving.qa_head).
    Most of the work is the questions' features, a pass of the model over about 160 passages; in a page's thread,
    even at a lower priority, it held the worker's interpreter lock while the OS set it aside, and thirty
    learners typing into Masked LM beside it waited 1.09-1.13 s at the p95 instead of 0.63-0.66."""
    return train_qa(_loaded_encoder(model_name), train, test, on_progress=on_progress)


def _loaded_encoder(model_name: str) -> Encoder:
    """The model `model_name`, loaded in this process (a server's trainer process), as an Encoder."""
    from ..loading import load

    model = load(model_name)
    if not isinstance(model, Encoder):  # as serving.loaded says it in the worker, which checks first
        raise MissingCapability(model_name, Encoder.__name__, f"it is a {type(model).__name__}")
    return model


# -- fine-tuning the whole encoder --------------------------------------------------------------------
@dataclass(frozen=True)
class FineTuned:
    accuracy: float
    seconds: float
    epochs: int


def fine_tune(
    model: Encoder,
    data: Split,
    *,
    epochs: int = 3,
    lr: float = 5e-5,
    batch_size: int = 16,
    on_progress: Progress | None = None,
    seed: int = 0,
) -> FineTuned:
    """Train a copy of the whole encoder and a linear layer on [CLS] (the shared model is never touched); the
    layer starts from a linear probe of the copy's last [CLS] vectors where the model's kind does better so
    (Encoder.fine_tune_from_probe), else from random weights."""
    torch.manual_seed(seed)
    encoder = copy.deepcopy(model.base)
    trainable_fp32(encoder)  # a class's server multiplies the shared weights in bf16: the copy learns in fp32
    encoder.requires_grad_(True)  # a served model's weights are frozen (peft froze a decoder made a masked LM's)
    linear = nn.Linear(model.config.hidden_size, len(data.classes)).to(model.device)

    def cls(chosen: list[Labelled]) -> torch.Tensor:  # (B, D)
        pairs = [x.text_b for x in chosen] if chosen[0].text_b is not None else None
        inputs = model.tokenize([x.text for x in chosen], pairs)  # type: ignore[arg-type]
        # as the shared model reads: a decoder made a masked LM sees its whole text (a causal pass gives every
        # text the same first vector)
        return encoder(**model.model_inputs(inputs)).last_hidden_state[:, 0]

    if model.fine_tune_from_probe and data.train:
        with torch.inference_mode():
            x = torch.cat([cls(data.train[k : k + 32]).float().cpu() for k in range(0, len(data.train), 32)])
        probe = train_head(x.numpy(), [e.label for e in data.train], x.numpy()[:0], [], seed=seed)
        weight, bias = probe.folded()
        with torch.no_grad():
            linear.weight.copy_(weight.to(model.device))
            linear.bias.copy_(bias.to(model.device))
    groups = [{"params": [*encoder.parameters(), *linear.parameters()], "lr": lr}]
    return train_whole(encoder, cls, linear, groups, data, epochs, batch_size, on_progress, seed)


def fine_tune_named(model_name: str, data: Split, on_progress: Progress | None = None) -> FineTuned:
    """fine_tune on the model `model_name`, loaded here: what a server's trainer process runs (serving.fine_tuned).
    Its copy of the whole encoder, the copy's gradients and AdamW's two moments are four times the model's
    weights (2.2 GB more for SmolLM2-135M made a masked LM): in a page's thread, thirty presses at once took both
    workers of a class's server to 5.2-5.3 GB each (an AMX Xeon, 2026-12-04; docs/deploy.md)."""
    return fine_tune(_loaded_encoder(model_name), data, on_progress=on_progress)


def train_whole(
    network: nn.Module,
    features: Callable[[list[Labelled]], torch.Tensor],
    linear: nn.Linear,
    groups: list[dict[str, Any]],
    data: Split,
    epochs: int,
    batch_size: int,
    on_progress: Progress | None,
    seed: int,
) -> FineTuned:
    """Fine-tuning's loop, whatever the network: `features` of a batch of examples (B, D), read by `network`
    (a copy the caller made), into `linear`; AdamW over the parameter `groups`; then held-out accuracy."""
    if not data.train:
        raise EmptyInput("training set")
    began = time.perf_counter()
    device = next(linear.parameters()).device
    classes = data.classes
    optimizer = torch.optim.AdamW(groups)
    labels = torch.tensor([classes.index(x.label) for x in data.train])
    order = torch.Generator().manual_seed(seed)
    total = epochs * ((len(data.train) + batch_size - 1) // batch_size)
    done = 0
    network.train()
    with torch.enable_grad():
        for _ in range(epochs):
            for batch in torch.randperm(len(data.train), generator=order).split(batch_size):
                logits = linear(features([data.train[int(k)] for k in batch]))
                loss = nn.functional.cross_entropy(logits, labels[batch].to(device))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                done += 1
                if on_progress is not None:
                    on_progress(done / total)
    network.eval()
    right = 0
    with torch.inference_mode():
        for start in range(0, len(data.test), 32):
            chunk = data.test[start : start + 32]
            predicted = linear(features(chunk)).argmax(-1).cpu().tolist()
            right += sum(classes[p] == x.label for p, x in zip(predicted, chunk))
    return FineTuned(right / max(1, len(data.test)), time.perf_counter() - began, epochs)


# -- one class per token: named entities -------------------------------------------------------------
_TOKEN = re.compile(r"\w+(?:[-'’]\w+)*|[^\w\s]")


@dataclass
class Tagger(Head):
    """A BIO tagger's head, with its entity-level scores on the test sentences (CoNLL's F1: an entity counts
    where its span and type are both right): read word by word (each word's top tag), and decoded with the
    B-/I- rule (bio_decode), which is what the page shows."""

    f1_word_by_word: float = 0.0
    f1: float = 0.0  # decoded with the rule
    test_sentences: int = 0
    test_entities: int = 0


def bio_decode(probabilities: np.ndarray, classes: Sequence[str]) -> list[int]:
    """The most probable tag sequence (n words, C classes) in which I-X only continues B-X or I-X: Viterbi
    over the head's log-probabilities, every allowed transition free and every other barred.

    A head that tags each word alone may say I-GPE after O ("United I-GPE Nations I-ORG"), which no
    entity reads as; this keeps its probabilities and only forbids such sequences. Own code: twenty lines
    of NumPy where the libraries that have it (AllenNLP's viterbi_decode, pytorch-crf) come with a
    framework or a CRF this head does not have."""
    names = list(classes)
    barred = np.zeros((len(names), len(names)))  # (from, to)
    start = np.zeros(len(names))
    for j, name in enumerate(names):
        if name.startswith("I-"):
            start[j] = -np.inf
            barred[:, j] = [0.0 if before in (f"B-{name[2:]}", name) else -np.inf for before in names]
    log_p = np.log(np.clip(probabilities, 1e-30, None))
    score, back = start + log_p[0], []
    for row in log_p[1:]:
        paths = score[:, None] + barred
        back.append(paths.argmax(0))
        score = paths.max(0) + row
    best = [int(score.argmax())]
    for pointers in reversed(back):
        best.append(int(pointers[best[-1]]))
    return best[::-1]


def entity_spans(tags: Sequence[str]) -> set[tuple[int, int, str]]:
    """The entities (first word, end, type) in a BIO sequence, by conlleval's reading: B-X starts one, and so
    does an I-X that does not continue an X (the way CoNLL scores a tagger that breaks the rule)."""
    spans, begun, kind = set(), -1, ""
    for i, tag in enumerate([*tags, "O"]):
        continues = tag == f"I-{kind}" and begun >= 0
        if begun >= 0 and not continues:
            spans.add((begun, i, kind))
            begun = -1
        if tag.startswith("B-") or (tag.startswith("I-") and not continues):
            begun, kind = i, tag[2:]
    return spans


def entity_f1(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> float:
    """CoNLL's entity F1 over sentences: an entity is right where its span and type both are."""
    found = [(entity_spans(g), entity_spans(p)) for g, p in zip(gold, predicted, strict=True)]
    right = sum(len(g & p) for g, p in found)
    said, there = sum(len(p) for _, p in found), sum(len(g) for g, _ in found)
    return 2 * right / (said + there) if said + there else 0.0


def train_tagger(features: np.ndarray, data: TaskSet) -> Tagger:
    """A linear BIO tagger on frozen features (the probing lesson's word vectors and silver tags), at the
    layer that tags its development words best (choose_layer), scored per word and per entity on its test
    sentences; `data` is probing's TAGGING task set."""

    def x(split: str) -> np.ndarray:  # (layers, words, D)
        rows = np.asarray(features[data.rows[split]], dtype=np.float32)
        return np.nan_to_num(rows).transpose(1, 0, 2)

    names = np.array(data.classes)
    y = {split: list(names[data.labels[split]]) for split in ("train", "dev", "test")}
    train, dev, test = x("train"), x("dev"), x("test")
    marks = np.r_[np.zeros(train.shape[1], bool), np.ones(dev.shape[1], bool)]
    layer = choose_layer(np.concatenate([train, dev], 1), y["train"] + y["dev"], development=marks).layer
    head = train_head(train[layer], y["train"], test[layer], y["test"])
    tagger = Tagger(**{**dataclasses.asdict(head), "layer": layer})
    if len(y["test"]):  # the test words in their sentences (a sentence's words are in order in its rows)
        sentences = data.sentence["test"]
        each = [np.flatnonzero(sentences == s) for s in dict.fromkeys(sentences.tolist())]
        p, gold = tagger.probabilities(test[layer]), np.array(y["test"])
        classes = np.array(tagger.classes)
        alone = [list(classes[p[rows].argmax(1)]) for rows in each]
        decoded = [list(classes[bio_decode(p[rows], tagger.classes)]) for rows in each]
        truth = [list(gold[rows]) for rows in each]
        tagger.f1_word_by_word, tagger.f1 = entity_f1(truth, alone), entity_f1(truth, decoded)
        tagger.test_sentences, tagger.test_entities = len(each), sum(len(entity_spans(g)) for g in truth)
    return tagger


@dataclass(frozen=True)
class TaggedWord:
    word: str
    tag: str  # decoded with the B-/I- rule (bio_decode)
    p: float  # the head's probability of `tag` for this word
    alone: str  # the head's top tag for this word read alone


def tag_words(model: Contextual, head: Head, text: str) -> list[TaggedWord]:
    """Each word of `text` with the tagger's BIO tag (the most probable sequence that keeps the B-/I- rule),
    its probability, and the word's top tag alone."""
    found = [(m.group(), m.span()) for m in _TOKEN.finditer(text)]
    if not found:
        raise EmptyInput()
    (vectors,) = model.span_vectors([text], [[span for _, span in found]])
    at = head.layer
    kept = [word for (word, _), v in zip(found, vectors) if not np.isnan(v[at]).any()]  # past the limit: none
    if not kept:
        raise EmptyInput()
    p = head.probabilities(np.stack([v[at] for v in vectors if not np.isnan(v[at]).any()]))
    names = [str(c) for c in head.classes]
    path = bio_decode(p, names)
    return [TaggedWord(word, names[k], float(q[k]), names[int(q.argmax())]) for word, k, q in zip(kept, path, p)]
