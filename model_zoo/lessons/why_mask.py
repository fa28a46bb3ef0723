"""Why BERT masks at all (seed 002's "A B C D" figure, seed 004's "each word would see itself").

A deep bidirectional model asked to predict every word of the sentence it reads can copy: position i
reaches input i through attention and the residual path, so the loss falls to almost nothing while the
model learns nothing about language, and on a sentence with a [MASK] it has no idea what to say. Hiding
the word (BERT's masked LM) leaves no copy to read, so the model has to use the context.

`race` trains two tiny bidirectional Transformers from the same initial weights on the same
sentences, one with each objective, in a few seconds on a CPU, and measures both the same way at every
checkpoint: accuracy at [MASK]ed positions of held-out sentences (the task BERT is used for), against
always answering the commonest word. `attention_rollout` shows the same path in a real model: how much
each position of the top layer draws on each input position (Abnar & Zuidema, 2020).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .masking import bert_masking

PAD, MASK, UNK = 0, 1, 2
SPECIALS = ("[PAD]", "[MASK]", "[UNK]")
OBJECTIVES = ("copy", "masked")  # predict every word of the unmasked sentence / BERT's masked LM


@dataclass(frozen=True)
class Race:
    steps: list[int]  # the checkpoints
    loss: dict[str, list[float]]  # objective -> its training loss (mean since the last checkpoint)
    masked_accuracy: dict[str, list[float]]  # objective -> accuracy at [MASK]ed held-out positions
    commonest: float  # always answering the commonest training word, at the same positions
    commonest_word: str
    vocab: int
    train_sentences: int
    test_positions: int
    seconds: float

    def final(self, objective: str) -> tuple[float, float]:
        """An objective's training loss and its accuracy at [MASK]ed held-out positions, at the last checkpoint."""
        return self.loss[objective][-1], self.masked_accuracy[objective][-1]

    @property
    def copier_copies(self) -> bool:
        """The model that could copy finds fewer hidden words at the end than the masked one: it learnt to copy."""
        return self.final("copy")[1] < self.final("masked")[1]


class TinyEncoder(nn.Module):
    """Word and position embeddings, a small bidirectional Transformer encoder and a softmax over words."""

    def __init__(self, vocab: int, dim: int = 64, layers: int = 2, heads: int = 4, max_len: int = 32) -> None:
        super().__init__()
        self.words = nn.Embedding(vocab, dim, padding_idx=PAD)
        self.positions = nn.Embedding(max_len, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.out = nn.Linear(dim, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        where = torch.arange(ids.shape[1], device=ids.device)
        hidden = self.encoder(self.words(ids) + self.positions(where), src_key_padding_mask=ids == PAD)
        return self.out(hidden)


def encode(sentences: Sequence[Sequence[str]], size: int, max_len: int) -> tuple[torch.Tensor, list[str]]:
    """(sentences, max_len) ids over the `size` commonest words (the rest [UNK]), right-padded, and the
    vocabulary (the three specials first)."""
    counts = Counter(w for s in sentences for w in s)
    words = [*SPECIALS, *(w for w, _ in counts.most_common(size - len(SPECIALS)))]
    index = {w: i for i, w in enumerate(words)}
    ids = torch.full((len(sentences), max_len), PAD, dtype=torch.long)
    for row, s in enumerate(sentences):
        kept = [index.get(w, UNK) for w in s[:max_len]]
        ids[row, : len(kept)] = torch.tensor(kept)
    return ids, words


def _test_masks(ids: torch.Tensor, seed: int) -> torch.Tensor:
    """A fixed 15% of the held-out words (at least one per sentence) to hide when measuring; words
    outside the vocabulary ([UNK]) are not measured."""
    generator = torch.Generator().manual_seed(seed + 1)
    real = ids > UNK
    hidden = (torch.rand(ids.shape, generator=generator) < 0.15) & real
    first = torch.randint(0, 1 << 30, (ids.shape[0],), generator=generator) % real.sum(1).clamp_min(1)
    hidden[torch.arange(ids.shape[0]), first] = True
    return hidden & real


@torch.inference_mode()
def masked_accuracy(model: nn.Module, ids: torch.Tensor, hidden: torch.Tensor) -> float:
    """Accuracy at the `hidden` positions of `ids` once they read [MASK]."""
    model.eval()
    logits = model(ids.masked_fill(hidden, MASK))[hidden]
    model.train()
    logits[:, : len(SPECIALS)] = float("-inf")  # an answer is a word
    return float((logits.argmax(-1) == ids[hidden]).float().mean())


def race(
    sentences: Sequence[Sequence[str]],
    steps: int = 300,
    batch: int = 64,
    vocab: int = 2000,
    max_len: int = 24,
    every: int = 20,
    seed: int = 0,
    on_progress: Callable[[float], object] | None = None,
) -> Race:
    """Train one TinyEncoder per objective, from the same initial weights, on the same batches of
    `sentences` (lists of words; every tenth is held out), and measure both at every `every` steps."""
    began = time.perf_counter()
    order = list(range(len(sentences)))
    random.Random(seed).shuffle(order)
    test_rows = set(order[: max(1, len(order) // 10)])
    ids, words = encode(sentences, vocab, max_len)
    train_ids = ids[[i for i in order if i not in test_rows]]
    test_ids = ids[sorted(test_rows)]
    hidden = _test_masks(test_ids, seed)
    counts = Counter(train_ids[train_ids > UNK].tolist())
    commonest = counts.most_common(1)[0][0] if counts else UNK
    torch.manual_seed(seed)
    first = TinyEncoder(len(words), max_len=max_len)
    models = {"copy": first, "masked": TinyEncoder(len(words), max_len=max_len)}
    models["masked"].load_state_dict(first.state_dict())
    optimizers = {k: torch.optim.Adam(m.parameters(), lr=3e-3) for k, m in models.items()}
    generator = torch.Generator().manual_seed(seed)
    loss: dict[str, list[float]] = {k: [] for k in OBJECTIVES}
    accuracy: dict[str, list[float]] = {k: [masked_accuracy(m, test_ids, hidden)] for k, m in models.items()}
    checkpoints = [0]
    running: dict[str, list[float]] = {k: [] for k in OBJECTIVES}
    for step in range(1, steps + 1):
        rows = torch.randint(len(train_ids), (batch,), generator=generator)
        x = train_ids[rows]
        real = x != PAD
        masked = bert_masking(x, ~real, MASK, len(words), generator)
        for name, model in models.items():
            if name == "copy":  # every word, read as it is: the model may look at the word it predicts
                logits, target = model(x)[real], x[real]
            else:  # BERT: 15% picked, mostly hidden; only those are predicted
                logits, target = model(masked.input_ids)[masked.picked], x[masked.picked]
            value = nn.functional.cross_entropy(logits, target, ignore_index=UNK)  # rare words are not asked
            optimizers[name].zero_grad()
            value.backward()
            optimizers[name].step()
            running[name].append(value.item())
        if step % every == 0 or step == steps:
            checkpoints.append(step)
            for name, model in models.items():
                loss[name].append(float(np.mean(running[name])))
                running[name] = []
                accuracy[name].append(masked_accuracy(model, test_ids, hidden))
            if on_progress is not None:
                on_progress(step / steps)
    answers = test_ids[hidden]
    return Race(
        steps=checkpoints,
        loss={k: [float("nan"), *v] for k, v in loss.items()},  # no loss before the first step
        masked_accuracy=accuracy,
        commonest=float((answers == commonest).float().mean()),
        commonest_word=words[commonest],
        vocab=len(words),
        train_sentences=len(train_ids),
        test_positions=int(hidden.sum()),
        seconds=time.perf_counter() - began,
    )


def attention_rollout(attentions: Sequence[np.ndarray] | np.ndarray) -> np.ndarray:
    """Abnar & Zuidema's (2020) rollout: each layer's attention averaged over heads, with the residual
    path added (0.5 A + 0.5 I, rows renormalised), multiplied up from the bottom layer. Row i of the
    result: how much the top layer's position i draws on each input position. `attentions`: (layers,
    heads, T, T)."""
    stack = np.asarray(attentions, dtype=np.float64)
    n = stack.shape[-1]
    rolled = np.eye(n)
    for layer in stack:
        a = 0.5 * layer.mean(axis=0) + 0.5 * np.eye(n)
        a /= a.sum(axis=-1, keepdims=True)
        rolled = a @ rolled
    return rolled


def own_input_share(rolled: np.ndarray) -> float:
    """How much, on average, the top layer's position i draws on input position i itself in a rollout (T, T):
    near 1 in a network that could copy its input through, near 1/T where every input counts alike."""
    return float(np.diag(np.asarray(rolled)).mean())


@dataclass(frozen=True)
class Rollout:
    """A sentence's attention rollout and what the lesson reads off it; T is its tokens."""

    rolled: list[list[float]]  # (T, T) row i: how much the top layer's position i draws on each input
    own: float  # own_input_share: the mean of the diagonal
    even: float  # 1 / T: every input position counted alike
    layers: int  # how many layers were multiplied up

    @property
    def brightest(self) -> tuple[int, float]:
        """The input position the rows draw on most, on average, and that mean share: the matrix's brightest
        column (rollout's rows come out much alike, so it reads as stripes rather than a diagonal)."""
        means = np.asarray(self.rolled).mean(0)
        return int(means.argmax()), float(means.max())


def rollout_summary(attentions: Sequence[np.ndarray] | np.ndarray) -> Rollout:
    """`attention_rollout` of `attentions` (layers, heads, T, T) as plain lists, with its own-input share."""
    rolled = attention_rollout(attentions)
    return Rollout(rolled.tolist(), own_input_share(rolled), 1 / rolled.shape[0], len(attentions))


def seeded_race(sentences: Sequence[Sequence[str]], seed: int, on_progress: Callable[[float], object] | None) -> Race:
    """race with its lesson's settings and `seed` (what the Masked LM page runs, in the trainer process)."""
    return race(sentences, seed=seed, on_progress=on_progress)
