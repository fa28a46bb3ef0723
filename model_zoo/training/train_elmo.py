"""Train elmo-mini, a small biLM of ELMo's architecture: `python -m model_zoo.train_elmo --corpus DIR --out DIR`.

The model is ELMo's (model_zoo.elmo): character CNN, highway, projection, two-layer forward and
backward LSTMs with projection and residual connection, and one softmax over a word vocabulary
shared by both directions, as in bilm-tf. The forward LM predicts each word (and </S>) from the
words before it, the backward LM each word (and <S>) from the words after it; the loss is the mean
of the two. It differs from bilm-tf:
- a full softmax over the vocabulary (words seen `min_count` times in train.txt, case kept), not a
  sampled one: exact next-word probabilities, and two thirds of a step's time on CPU;
- each sentence is read on its own from a zero state between <S> and </S> (bilm-tf: 20-word windows
  of running text, state carried over), which is how model_zoo.elmo reads text afterwards;
- the LSTMs are torch.nn.LSTM(proj_size=P): one fused call per layer instead of a Python loop over
  words. They compute what AllenNLP's cell computes without its clipping; the exported options say
  clip values the model provably never reaches (`clip_values`), so the exported biLM, read through
  AllenNLP's cell, gives what the trained one gave;
- Adam with warm-up and linear decay (bilm-tf: Adagrad at 0.2).

OUT/checkpoint.pt holds the weights, optimiser, data position and random state (saved every few
minutes, on SIGTERM or Ctrl-C and when --minutes runs out; `--resume` goes on from it);
OUT/train.log the log; OUT/learning_curve.json held-out forward/backward perplexity against tokens
seen, with the unigram model's on the same tokens. When the schedule ends or --minutes runs out (not
on a signal: that only saves), OUT/elmo-mini/ gets the exported model (options.json, weights.hdf5,
vocab.txt: what assets/models/elmo-mini/ ships) and its metrics.json; `--export` writes it from the
checkpoint at any time.
The corpus comes from `python scripts/build_mlm_corpus.py` (one sentence a line, documents apart).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shlex
import signal
import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from .. import pieces
from ..elmo import (
    BOS,
    EOS,
    MAX_CHARACTERS,
    MAX_WORDS,
    UNK,
    WEIGHTS,
    BiLm,
    CharEncoder,
    ElmoModel,
    ElmoOptions,
    bidirectional,
    char_ids,
    lm_nll,
    lm_rows,
    save_elmo,
    tokenize,
)
from ..lessons.lexicon import ASSETS
from .train_mlm import DEFAULT_CORPUS, read_documents, schedule

SCRIPT = "python -m model_zoo.train_elmo"
MODEL = "elmo-mini"
CHECKPOINT, LOG, CURVE = "checkpoint.pt", "train.log", "learning_curve.json"
SNAPSHOTS = "senses"  # OUT/senses/step-XXXXXXX.npz: the sense set's vectors and measures at one point of the run
SPECIALS = (BOS, EOS, UNK)  # vocabulary ids 0, 1, 2
EXTRA_LABEL = "everyday text written by SmolLM2-135M-Instruct (scripts/write_everyday.py)"  # --extra's source
warnings.filterwarnings("ignore", message="LSTM with projections is not supported with oneDNN")  # it says so each run
SOFTMAX_ROWS = 256  # targets per softmax chunk in training: (256, V) logits stay under glibc's mmap threshold


FIT_PROBE = 30  # steps measured before --fit sets the schedule's end
FIT_SHARE = 0.85  # of --minutes: the rest is left for evaluations, the checkpoint and the export


@dataclass(frozen=True)
class Config:
    # The biLM. ELMo's small one has filters up to 7:1024 and C 1024; on two CPU cores this shape with
    # a 20k-word softmax trains at about 1,700 targets a second (the softmax takes two thirds of a step),
    # so total_tokens (about 2.6 epochs) take about 90 minutes. A 6:512 filter costs a fifth more.
    char_dim: int = 16
    filters: str = "1:32,2:32,3:64,4:128,5:256"  # width:count per convolution
    n_highway: int = 1
    projection_dim: int = 128
    cell_dim: int = 512
    n_layers: int = 2
    # data
    min_count: int = 9  # a train word seen fewer times is <UNK> as a target (its characters are still read)
    max_words: int = 64  # a longer sentence is read in pieces of this many words
    batch_tokens: int = 2048  # positions per batch, padding and markers included
    # optimisation
    lr: float = 2e-3
    warmup_tokens: int = 200_000
    total_tokens: int = 9_000_000  # forward targets (words + </S>); the schedule decays to zero here
    dropout: float = 0.1
    clip_norm: float = 1.0
    seed: int = 0
    # a run that continues a shipped model on more text (its vocabulary kept)
    init: str = ""  # an exported elmo-mini folder (options.json, weights.hdf5, vocab.txt) to start from
    extra: str = ""  # a text file (one sentence a line, documents apart by a blank line) added to train.txt
    # evaluation
    eval_every: int = 300  # steps
    held_sentences: int = 600  # the fixed held-out subset of the learning curve (all of held.txt at the end)
    # senses forming (issue 38): the Word senses set's vectors at this many points of the run besides the start
    sense_snapshots: int = 0  # 0: none; N: at tokens total * (k / N) ** 2, k = 0..N (dense early, where most moves)

    def options(self) -> ElmoOptions:
        filters = tuple((int(w), int(n)) for w, n in (f.split(":") for f in self.filters.split(",")))
        return ElmoOptions(
            filters=filters,
            n_highway=self.n_highway,
            projection_dim=self.projection_dim,
            cell_dim=self.cell_dim,
            n_layers=self.n_layers,
            char_dim=self.char_dim,
            activation="relu",
            cell_clip=None,
            proj_clip=None,
        )


# -- the model while it trains ---------------------------------------------------------------
class _Lstm(torch.nn.LSTM):
    """One direction of one layer: (B, T, P) -> (B, T, P) from a zero state."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return super().forward(x)[0]


class TrainingBiLm(torch.nn.Module):
    """elmo-mini while it trains: model_zoo.elmo's token layer and shared softmax, torch.nn.LSTM with
    proj_size in place of AllenNLP's cell (no clipping), dropout on each LSTM's input and the softmax's."""

    def __init__(self, options: ElmoOptions, vocab_size: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.options = options
        self.dropout = dropout
        p, c = options.projection_dim, options.cell_dim
        self.chars = CharEncoder(options)
        self.forward_layers = torch.nn.ModuleList(
            _Lstm(p, c, batch_first=True, proj_size=p) for _ in range(options.n_layers)
        )
        self.backward_layers = torch.nn.ModuleList(
            _Lstm(p, c, batch_first=True, proj_size=p) for _ in range(options.n_layers)
        )
        self.softmax_w = torch.nn.Parameter(torch.randn(vocab_size, p) / math.sqrt(p))  # (V, P)
        self.softmax_b = torch.nn.Parameter(torch.zeros(vocab_size))  # (V,)
        with torch.no_grad():  # bilm-tf's starting points: chars uniform, highway mostly carries x
            self.chars.char_embed.uniform_(-1.0, 1.0)
            f = options.n_filters
            for layer in self.chars.highways:
                assert isinstance(layer, torch.nn.Linear)
                layer.bias[f:].fill_(2.0)
            for lstm in [*self.forward_layers, *self.backward_layers]:
                lstm.bias_ih_l0[c : 2 * c].fill_(1.0)  # forget gate open at first (TensorFlow's forget_bias)

    def tops(self, ids: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The top layer of each direction: ids (B, T, K), lengths (B,) -> (B, T, P), (B, T, P)."""
        batch, steps, k = ids.shape
        token = self.chars(ids.reshape(-1, k)).view(batch, steps, -1)  # (B, T, P)
        fwd, bwd = bidirectional(
            token,
            lengths,
            self.forward_layers,
            self.backward_layers,
            self.options.use_skip_connections,
            self.dropout,
            self.training,
        )
        top_f, top_b = fwd[-1], bwd[-1]
        if self.dropout and self.training:
            top_f, top_b = F.dropout(top_f, self.dropout, True), F.dropout(top_b, self.dropout, True)
        return top_f, top_b

    def nll(self, ids: torch.Tensor, words: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-target NLL of the forward and the backward LM, (N,) each (model_zoo.elmo.lm_nll)."""
        top_f, top_b = self.tops(ids, lengths)
        return lm_nll(top_f, top_b, words, lengths, self.softmax_w, self.softmax_b)

    def backward(
        self, ids: torch.Tensor, words: torch.Tensor, lengths: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Back-propagate the training loss, the mean of the two LMs' mean NLL; return each target's NLL
        (N,), (N,), detached.

        The softmax runs SOFTMAX_ROWS targets at a time, each chunk's gradient taken at once: the
        (N, V) logits are never whole. On CPU a tensor that large is fresh memory at every step
        (glibc maps it anew), and this alone makes a step about a third faster.
        """
        top_f, top_b = self.tops(ids, lengths)
        rows_f, next_words, rows_b, previous_words = lm_rows(top_f, top_b, words, lengths)
        rows = torch.cat([rows_f, rows_b])  # (2N, P)
        targets = torch.cat([next_words, previous_words])  # (2N,)
        leaf = rows.detach().requires_grad_()
        nll = []
        for start in range(0, len(rows), SOFTMAX_ROWS):
            part = slice(start, start + SOFTMAX_ROWS)
            logits = F.linear(leaf[part], self.softmax_w, self.softmax_b)  # (rows, V)
            each = F.cross_entropy(logits, targets[part], reduction="none")
            (each.sum() / len(rows)).backward()  # (sum_f / N + sum_b / N) / 2, one chunk at a time
            nll.append(each.detach())
        rows.backward(leaf.grad)
        both = torch.cat(nll)
        return both[: len(rows_f)], both[len(rows_f) :]

    def clip_values(self) -> tuple[float, float]:
        """(cell_clip, proj_clip) that AllenNLP's cell never reaches with these weights.

        The memory grows by at most 1 a step (|c_t| <= |c_(t-1)| + 1), and model_zoo.elmo reads at
        most MAX_WORDS + 2 positions; the projected state is W_P times a vector in [-1, 1]^C, so no
        output exceeds W_P's largest row sum of absolute values.
        """
        cell_clip = 1000.0
        assert MAX_WORDS + 2 < cell_clip
        rows = [lstm.weight_hr_l0.detach().abs().sum(1).max() for lstm in [*self.forward_layers, *self.backward_layers]]
        return cell_clip, float(math.ceil(float(max(rows)) + 1))

    def load_bilm(self, bilm: BiLm) -> None:
        """Take the weights of an exported biLM (to_bilm's inverse: its one LSTM bias goes to bias_ih)."""
        state = {k: v.detach().clone() for k, v in bilm.state_dict().items() if k.startswith("chars.")}
        for stack in ("forward_layers", "backward_layers"):
            for i in range(self.options.n_layers):
                name = f"{stack}.{i}."
                state[name + "weight_ih_l0"] = bilm.state_dict()[name + "input_linearity.weight"]
                state[name + "weight_hh_l0"] = bilm.state_dict()[name + "state_linearity.weight"]
                state[name + "bias_ih_l0"] = bilm.state_dict()[name + "state_linearity.bias"]
                state[name + "bias_hh_l0"] = torch.zeros_like(bilm.state_dict()[name + "state_linearity.bias"])
                state[name + "weight_hr_l0"] = bilm.state_dict()[name + "state_projection.weight"]
        if bilm.softmax_w is None or bilm.softmax_b is None:
            raise ValueError("a biLM without its softmax cannot be trained on as a language model")
        state["softmax_w"], state["softmax_b"] = bilm.softmax_w.detach().clone(), bilm.softmax_b.detach().clone()
        self.load_state_dict(state, strict=True)

    def to_bilm(self) -> BiLm:
        """The same network as model_zoo.elmo.BiLm (AllenNLP's cells, clip values from clip_values)."""
        cell_clip, proj_clip = self.clip_values()
        bilm = BiLm(replace(self.options, cell_clip=cell_clip, proj_clip=proj_clip), self.softmax_w.shape[0])
        state = {k: v.detach().clone() for k, v in self.chars.state_dict(prefix="chars.").items()}
        for stack in ("forward_layers", "backward_layers"):
            for i, lstm in enumerate(getattr(self, stack)):
                name = f"{stack}.{i}."
                # nn.LSTM's gates are AllenNLP's order (i, f, g, o); its two biases are one.
                state[name + "input_linearity.weight"] = lstm.weight_ih_l0.detach().clone()
                state[name + "state_linearity.weight"] = lstm.weight_hh_l0.detach().clone()
                state[name + "state_linearity.bias"] = (lstm.bias_ih_l0 + lstm.bias_hh_l0).detach().clone()
                state[name + "state_projection.weight"] = lstm.weight_hr_l0.detach().clone()
        state["softmax_w"], state["softmax_b"] = self.softmax_w.detach().clone(), self.softmax_b.detach().clone()
        bilm.load_state_dict({k: v.cpu() for k, v in state.items()}, strict=True)
        return bilm.eval()


# -- data ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Corpus:
    """Sentences as ids of word types (every spelling seen), and what a type is to the model."""

    types: list[str]  # every word type of the corpus, vocabulary first
    vocab_size: int  # types[:vocab_size] is the softmax's vocabulary (<S>, </S>, <UNK> first)
    train: list[np.ndarray]  # sentence pieces of train.txt as type ids (int32), at most max_words each
    held: list[np.ndarray]  # held.txt's sentences (whole, up to MAX_WORDS)
    counts: np.ndarray  # (V,) how often each vocabulary id is a forward target in train (</S> once a sentence)
    train_words: int
    train_sentences: int

    def vocab(self) -> list[str]:
        return self.types[: self.vocab_size]


def _sentences(path: Path) -> list[list[str]]:
    return [words for doc in read_documents(path) for s in doc if (words := tokenize(s))]


def build_corpus(folder: Path, config: Config, vocab: list[str] | None = None) -> Corpus:
    """Tokenised train.txt (and config.extra) and held.txt, the vocabulary (min_count in train, case
    kept, or `vocab` as given: a continued model keeps its own) and the unigram counts."""
    for name in ("train.txt", "held.txt"):
        if not (folder / name).exists():
            raise SystemExit(f"{folder / name} is missing: run `python scripts/build_mlm_corpus.py` first")
    train, held = _sentences(folder / "train.txt"), _sentences(folder / "held.txt")
    if config.extra:
        train += _sentences(Path(config.extra))
    counts = Counter(w for s in train for w in s)  # no word is "<S>": tokenize splits off "<"
    if vocab is None:
        vocab = list(SPECIALS) + sorted(
            (w for w, n in counts.items() if n >= config.min_count), key=lambda w: (-counts[w], w)
        )
    known = set(vocab)
    held_types = {w for s in held for w in s}
    types = vocab + sorted((set(counts) | held_types) - known)
    index = {w: i for i, w in enumerate(types)}
    v = len(vocab)
    target_counts = np.zeros(v, dtype=np.int64)
    for w, n in counts.items():
        target_counts[index[w] if index[w] < v else 2] += n
    target_counts[1] = len(train)  # </S> ends every sentence

    def ids(s: list[str]) -> np.ndarray:
        return np.array([index[w] for w in s], dtype=np.int32)

    pieces = [ids(s[i : i + config.max_words]) for s in train for i in range(0, len(s), config.max_words)]
    return Corpus(
        types=types,
        vocab_size=v,
        train=pieces,
        held=[ids(s[:MAX_WORDS]) for s in held],
        counts=target_counts,
        train_words=sum(len(s) for s in train),
        train_sentences=len(train),
    )


def token_batches(lengths: Sequence[int], batch_tokens: int, seed: int, epoch: int) -> list[list[int]]:
    """An epoch of batches of sentence indices, in a fixed order for (seed, epoch), each at most
    `batch_tokens` positions once padded (markers included). As train_mlm.batches, runs of similar
    length are batched together, so that little is padding."""
    rng = random.Random(seed * 1000 + epoch)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    group = 200 * max(1, batch_tokens // 16)
    out: list[list[int]] = []
    for start in range(0, len(order), group):
        current: list[int] = []
        longest = 0
        for i in sorted(order[start : start + group], key=lengths.__getitem__):
            width = max(longest, lengths[i] + 2)
            if current and width * (len(current) + 1) > batch_tokens:
                out.append(current)
                current, width = [], lengths[i] + 2
            current.append(i)
            longest = width
        if current:
            out.append(current)
    rng.shuffle(out)
    return out


class Tensors:
    """Batches as tensors: character ids of every type (made once), vocabulary ids of targets."""

    def __init__(self, corpus: Corpus) -> None:
        self.vocab_size = corpus.vocab_size
        table = [char_ids(w) for w in corpus.types] + [char_ids(BOS), char_ids(EOS), [0] * MAX_CHARACTERS]
        self.chars = torch.tensor(table, dtype=torch.int16)  # (types + 3, K)
        self.bos, self.eos, self.pad = len(corpus.types), len(corpus.types) + 1, len(corpus.types) + 2

    def batch(self, sentences: Sequence[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(char ids (B, T, K) int64, vocabulary ids (B, T) int64, lengths (B,)) with <S> and </S> added."""
        lengths = torch.tensor([len(s) + 2 for s in sentences])
        rows = torch.full((len(sentences), int(lengths.max())), self.pad, dtype=torch.long)
        for r, s in enumerate(sentences):
            rows[r, : len(s) + 2] = torch.from_numpy(np.concatenate([[self.bos], s, [self.eos]]).astype(np.int64))
        words = rows.masked_fill(rows >= self.vocab_size, 2)  # <UNK>
        words[rows == self.bos], words[rows == self.eos], words[rows == self.pad] = 0, 1, 0
        return self.chars[rows].long(), words, lengths


def unigram_perplexity(corpus: Corpus, sentences: Sequence[np.ndarray]) -> float:
    """The unigram model of train.txt's targets on the same targets as the biLM's forward LM (every
    word and </S>). An out-of-vocabulary word is <UNK> for both: the unigram gives <UNK> the summed
    frequency of all such words in train, the biLM whatever probability it learnt for <UNK>. (The
    backward LM's targets, <S> for </S>, give the same value.)"""
    log_p = np.log(np.maximum(corpus.counts, 1) / corpus.counts.sum())  # <S> is never a forward target
    ids = np.concatenate([np.where(s < corpus.vocab_size, s, 2) for s in sentences] + [np.ones(len(sentences), int)])
    return float(np.exp(-log_p[ids].mean()))


# -- the run ---------------------------------------------------------------------------------
class Trainer:
    """One resumable run in `out`."""

    def __init__(self, corpus_dir: Path, out: Path, config: Config, device: str, *, resume: bool = False) -> None:
        self.out = out
        out.mkdir(parents=True, exist_ok=True)
        self.device = torch.device(device)
        checkpoint = out / CHECKPOINT
        if checkpoint.exists() and not resume:
            raise SystemExit(f"{checkpoint} exists: pass --resume to go on with it, or choose another --out")
        state = torch.load(checkpoint, weights_only=False) if checkpoint.exists() else None
        self.config = Config(**state["config"]) if state else config
        self.corpus_dir = corpus_dir
        self.corpus = self._data(corpus_dir)
        self.tensors = Tensors(self.corpus)
        held = random.Random(0).sample(self.corpus.held, min(len(self.corpus.held), self.config.held_sentences))
        self.held_subset = sorted(held, key=len)
        torch.manual_seed(self.config.seed)
        self.model = TrainingBiLm(self.config.options(), self.corpus.vocab_size, self.config.dropout)
        with torch.no_grad():  # step 0 is already the unigram model: training spends its time on context
            self.model.softmax_b.copy_(torch.from_numpy(np.log((self.corpus.counts + 0.5) / self.corpus.counts.sum())))
        if self.config.init and not state:  # a continued run: the shipped model's weights, its vocabulary
            self.model.load_bilm(_reload(Path(self.config.init)))
        self.model.to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.config.lr)
        self.step, self.tokens, self.seconds, self.epoch, self.position = 0, 0, 0.0, 0, 0
        self.curve: list[dict[str, Any]] = []
        self.commands: list[str] = []
        self._order_of: tuple[int, list[list[int]]] = (-1, [])
        if state:
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
            torch.set_rng_state(state["torch_rng"])
            self.step, self.tokens, self.seconds = state["step"], state["tokens"], state["seconds"]
            self.epoch, self.position = state["epoch"], state["position"]
            self.curve, self.commands = state["curve"], state["commands"]
            self.log(f"resumed at step {self.step}, {self.tokens:,} tokens, {self.seconds / 60:.1f} min")

    def _data(self, corpus_dir: Path) -> Corpus:
        """The tokenised corpus, cached in OUT/data.pt for the settings that shape it."""
        cached = self.out / "data.pt"
        key = {
            "corpus": str(corpus_dir.resolve()),
            "min_count": self.config.min_count,
            "max_words": self.config.max_words,
            "init": self.config.init,
            "extra": self.config.extra,
        }
        if cached.exists():
            data = torch.load(cached, weights_only=False)
            if data.pop("key", None) == key:
                return Corpus(**data)
        vocab = None
        if self.config.init:
            from ..elmo import VOCAB

            vocab = (Path(self.config.init) / VOCAB).read_text(encoding="utf-8").split("\n")
            vocab = [w for w in vocab if w]
        corpus = build_corpus(corpus_dir, self.config, vocab)
        torch.save({"key": key, **asdict(corpus)}, cached)
        return corpus

    def log(self, message: str, bar: Any = None) -> None:
        line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}"
        with open(self.out / LOG, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
        if bar is not None:
            bar.write(line)
        else:
            print(line, flush=True)

    def _order(self, epoch: int) -> list[list[int]]:
        if self._order_of[0] != epoch:
            lengths = [len(s) for s in self.corpus.train]
            self._order_of = (epoch, token_batches(lengths, self.config.batch_tokens, self.config.seed, epoch))
        return self._order_of[1]

    def save(self) -> None:
        state = {
            "config": asdict(self.config),
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "torch_rng": torch.get_rng_state(),  # dropout's draws
            "step": self.step,
            "tokens": self.tokens,
            "seconds": self.seconds,
            "epoch": self.epoch,
            "position": self.position,
            "curve": self.curve,
            "commands": self.commands,
        }
        tmp = self.out / (CHECKPOINT + ".tmp")
        torch.save(state, tmp)
        tmp.replace(self.out / CHECKPOINT)

    @torch.inference_mode()
    def held_out(self, sentences: Sequence[np.ndarray]) -> dict[str, float]:
        """Forward and backward perplexity of the model as it is on `sentences` (dropout off)."""
        was_training = self.model.training
        self.model.eval()
        forward = backward = 0.0
        n = 0
        for start in range(0, len(sentences), 64):
            ids, words, lengths = self.tensors.batch(sentences[start : start + 64])
            nll_f, nll_b = self.model.nll(ids.to(self.device), words.to(self.device), lengths.to(self.device))
            forward, backward, n = forward + float(nll_f.sum()), backward + float(nll_b.sum()), n + len(nll_f)
        self.model.train(was_training)
        return {"forward_perplexity": math.exp(forward / n), "backward_perplexity": math.exp(backward / n)}

    def evaluate(self, loss: float | None) -> dict[str, Any]:
        point = {
            "step": self.step,
            "tokens": self.tokens,
            "seconds": round(self.seconds),
            "train_loss": None if loss is None else round(loss, 4),
            **{k: round(v, 2) for k, v in self.held_out(self.held_subset).items()},
            "unigram_perplexity": round(unigram_perplexity(self.corpus, self.held_subset), 2),
        }
        self.curve.append(point)
        (self.out / CURVE).write_text(json.dumps(self.curve, indent=1) + "\n", encoding="utf-8")
        return point

    def snapshot_due(self) -> bool:
        """Whether the run has reached its next sense snapshot (`sense_snapshots`: at tokens total * (k/N)^2)."""
        n = self.config.sense_snapshots
        if not n:
            return False
        done = len(list((self.out / SNAPSHOTS).glob("step-*.npz")))
        return done <= n and self.tokens >= self.config.total_tokens * (done / n) ** 2

    def sense_snapshot(self) -> Path:
        """The Word senses set read by the model as it is now: every word's vectors at every layer (float16),
        and the per-layer nearest-use sense accuracy and self-similarity averaged over the words, beside
        the step, the tokens seen and the last held-out perplexities. What the lesson's slider reads."""
        from ..elmo import ElmoModel
        from ..lessons.sense_data import data_version, load_senses
        from ..lessons.senses import encode_senses, layer_measures

        encoder = ElmoModel("snapshot", self.model.to_bilm(), self.corpus.vocab(), "cpu")
        arrays: dict[str, np.ndarray] = {}
        accuracy, similarity = [], []
        for word, sense_set in load_senses().items():
            encoded = encode_senses(encoder, sense_set)
            arrays[f"vectors_{word}"] = encoded.vectors.astype(np.float16)
            measures = layer_measures(encoded, sense_set.senses)
            accuracy.append(measures.accuracy)
            similarity.append(measures.self_similarity)
        folder = self.out / SNAPSHOTS
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"step-{self.step:07d}.npz"
        last = self.curve[-1] if self.curve else {}
        contents: dict[str, Any] = {
            "data_version": data_version(),  # the sense set read (a pack refuses snapshots of another)
            "step": self.step,
            "tokens": self.tokens,
            "accuracy": np.mean(accuracy, 0),
            "self_similarity": np.mean(similarity, 0),
            "forward_perplexity": last.get("forward_perplexity", np.nan),
            **arrays,
        }
        np.savez_compressed(path, **contents)
        self.log(
            f"sense snapshot at step {self.step} ({self.tokens:,} tokens): accuracy by layer "
            f"{np.round(np.mean(accuracy, 0), 3).tolist()}"
        )
        return path

    def train(
        self,
        minutes: float,
        checkpoint_minutes: float = 5.0,
        progress: bool = True,
        until_step: int = 0,
        fit: bool = False,
    ) -> str:
        """Train until the schedule ends ("done"), `minutes` pass ("budget"), SIGTERM or Ctrl-C arrives
        ("signal") or step `until_step` (if set: "step"); save the checkpoint, and say which. With `fit`,
        the schedule's end (total_tokens) is cut, after FIT_PROBE steps, to what the speed measured on them
        allows in the minutes left, so that a run on a lent machine decays its learning rate to zero in
        its budget instead of stopping half-way down the schedule."""
        import fcntl

        stop = {"now": False}
        previous = {}
        with open(self.out / "train.lock", "w") as lock:
            try:  # two runs writing one checkpoint would leave neither
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise SystemExit(f"another train_elmo is training in {self.out}") from None
            if threading.current_thread() is threading.main_thread():
                for sig in (signal.SIGTERM, signal.SIGINT):
                    previous[sig] = signal.signal(sig, lambda *_: stop.update(now=True))
            try:
                return self._train(stop, minutes, checkpoint_minutes, progress, until_step, fit)
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    def _train(
        self,
        stop: dict[str, bool],
        minutes: float,
        checkpoint_minutes: float,
        progress: bool,
        until_step: int,
        fit: bool = False,
    ) -> str:
        from tqdm import tqdm

        c = self.config
        if not self.curve:
            self.log(json.dumps(self.evaluate(None)))
        if self.snapshot_due():  # the first: random weights
            self.sense_snapshot()
        self.model.train()
        started = last_save = time.perf_counter()
        losses: list[float] = []
        window: list[tuple[int, float]] = []
        bar = tqdm(
            total=c.total_tokens,
            initial=self.tokens,
            disable=not progress,
            unit="tok",
            unit_scale=True,
            dynamic_ncols=True,
        )
        why = "done"
        probe_until = self.step + FIT_PROBE if fit else -1
        while self.tokens < c.total_tokens:
            if stop["now"]:
                why = "signal"
                break
            if until_step and self.step >= until_step:
                why = "step"
                break
            if time.perf_counter() - started > minutes * 60:
                why = "budget"
                break
            order = self._order(self.epoch)
            if self.position >= len(order):
                self.epoch, self.position = self.epoch + 1, 0
                continue
            t0 = time.perf_counter()
            ids, words, lengths = self.tensors.batch([self.corpus.train[i] for i in order[self.position]])
            for group in self.optimizer.param_groups:
                group["lr"] = c.lr * schedule(self.tokens, c.total_tokens, c.warmup_tokens)
            self.optimizer.zero_grad(set_to_none=True)
            nll_f, nll_b = self.model.backward(ids.to(self.device), words.to(self.device), lengths.to(self.device))
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), c.clip_norm)
            self.optimizer.step()
            losses.append(float(nll_f.mean() + nll_b.mean()) / 2)
            self.step += 1
            self.position += 1
            self.tokens += len(nll_f)
            spent = time.perf_counter() - t0
            self.seconds += spent
            window = [*window[-49:], (len(nll_f), spent)]
            rate = sum(n for n, _ in window) / sum(s for _, s in window)
            bar.update(len(nll_f))
            bar.set_postfix(loss=f"{sum(losses[-50:]) / len(losses[-50:]):.3f}", tok_s=f"{rate:.0f}", epoch=self.epoch)
            if self.step == probe_until:
                left = minutes * 60 * FIT_SHARE - (time.perf_counter() - started)
                total = min(c.total_tokens, self.tokens + int(rate * max(left, 0.0)))
                self.config = c = replace(c, total_tokens=total)
                bar.total = total
                self.log(f"--fit: {rate:.0f} targets a second here, so the schedule now ends at {total:,} targets")
            if self.snapshot_due():
                self.sense_snapshot()
            if self.step % c.eval_every == 0:
                point = self.evaluate(sum(losses) / len(losses))
                losses = []
                self.log(json.dumps(point) + f" ({rate:.0f} tokens/s)", bar)
            if time.perf_counter() - last_save > checkpoint_minutes * 60:
                self.save()
                last_save = time.perf_counter()
        bar.close()
        if losses and why != "signal":  # a signal asks for a quick exit: the checkpoint only
            self.log(json.dumps(self.evaluate(sum(losses) / len(losses))))
        if why == "done" and c.sense_snapshots and not (self.out / SNAPSHOTS / f"step-{self.step:07d}.npz").exists():
            self.sense_snapshot()  # the trained model itself: the slider's last step is the exported model
        self.save()
        self.log(f"saved {self.out / CHECKPOINT} at step {self.step}, {self.tokens:,} tokens ({why})")
        return why

    def export(self, folder: Path | None = None) -> dict[str, Any]:
        """OUT/elmo-mini/: options.json, weights.hdf5 (softmax in fp16), vocab.txt, and metrics.json with
        the full held-out perplexity, measured on the exported files read back by model_zoo.elmo."""
        folder = folder or self.out / MODEL
        self.model.eval()
        bilm = self.model.to_bilm()
        save_elmo(bilm, folder, self.corpus.vocab())
        model = ElmoModel(MODEL, _reload(folder), self.corpus.vocab(), "cpu")
        held_text = [" ".join(self.corpus.types[i] for i in s) for s in self.corpus.held]
        measured = model.perplexity(held_text)
        corpus_info = json.loads((ASSETS / "corpus" / "mlm_corpus.json").read_text())
        held_words = sum(len(s) for s in self.corpus.held)
        unknown = sum(int((s >= self.corpus.vocab_size).sum()) for s in self.corpus.held)
        metrics = {
            "script": SCRIPT,
            "commands": self.commands,
            "corpus": f"python scripts/build_mlm_corpus.py (assets/corpus/mlm_corpus.json): {self.corpus_dir}",
            "corpus_sources": sorted(corpus_info["sources"]),
            "corpus_train_words": self.corpus.train_words,
            "corpus_train_sentences": self.corpus.train_sentences,
            "tokenizer": "model_zoo.elmo.tokenize: words of model_zoo.words, punctuation marks apart, case kept",
            "tokens_seen": self.tokens,
            "tokens_seen_means": "forward-LM targets (words + one </S> a sentence); the backward LM saw as many",
            "epochs": round(self.tokens / (self.corpus.train_words + self.corpus.train_sentences), 2),
            "steps": self.step,
            "schedule_finished": self.tokens >= self.config.total_tokens,
            "train_seconds": round(self.seconds),
            "train_minutes": round(self.seconds / 60, 1),
            "device": str(self.device) if self.device.type != "cuda" else torch.cuda.get_device_name(self.device),
            "threads": torch.get_num_threads(),
            "parameters": sum(p.numel() for p in bilm.parameters()),
            "options": bilm.options.to_json(),
            "config": asdict(self.config),
            "vocab_size": self.corpus.vocab_size,
            "min_count": self.config.min_count,
            "held_sentences": len(self.corpus.held),
            "held_words": held_words,
            "held_targets": measured.targets,
            "oov_rate": round(unknown / held_words, 4),
            "held_forward_perplexity": round(measured.forward, 2),
            "held_backward_perplexity": round(measured.backward, 2),
            "unigram_perplexity": round(unigram_perplexity(self.corpus, self.corpus.held), 2),
            "unknown_words": "scored as <UNK> by both the biLM and the unigram model (the unigram's <UNK> "
            "has the summed train frequency of every out-of-vocabulary word)",
            "curve": [
                {
                    k: p[k]
                    for k in ("tokens", "seconds", "forward_perplexity", "backward_perplexity", "unigram_perplexity")
                }
                for p in self.curve
            ],
        }
        if self.config.init:  # a continued model: its totals, and the run it continued, on the same curve
            before: dict[str, Any] = json.loads((Path(self.config.init) / "metrics.json").read_text(encoding="utf-8"))
            keep = ("commands", "tokens_seen", "train_seconds", "held_forward_perplexity", "held_backward_perplexity")
            metrics["continued_from"] = {k: before[k] for k in keep if k in before}
            metrics["tokens_seen"] = before["tokens_seen"] + self.tokens
            metrics["train_seconds"] = before["train_seconds"] + round(self.seconds)
            metrics["train_minutes"] = round((before["train_seconds"] + self.seconds) / 60, 1)
            shift = {"tokens": before["tokens_seen"], "seconds": before["train_seconds"]}
            ours: list[dict[str, Any]] = list(metrics["curve"])  # type: ignore[call-overload]
            later = [{**p, **{k: p[k] + shift[k] for k in shift}} for p in ours[1:]]
            metrics["curve"] = [*before.get("curve", []), *later]
        if self.config.extra:
            metrics["corpus_sources"] = [*sorted(corpus_info["sources"]), EXTRA_LABEL]
            metrics["extra_text"] = self.config.extra
        (folder / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n", encoding="utf-8")
        pieces.split(folder / WEIGHTS)  # shipped as it is: files of at most 16 MiB
        self.log(
            f"exported {folder}: held-out perplexity {measured.forward:.1f} forward, {measured.backward:.1f} backward"
        )
        return metrics


def _reload(folder: Path) -> BiLm:
    from ..elmo import OPTIONS, VOCAB, read_bilm

    return read_bilm(folder / OPTIONS, folder / WEIGHTS, folder / VOCAB)[0]


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="built by scripts/build_mlm_corpus.py")
    parser.add_argument(
        "--out", type=Path, required=True, help="checkpoint, log, learning curve and the exported model"
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--minutes", type=float, default=120.0, help="stop, save and export after this long")
    parser.add_argument("--resume", action="store_true", help="go on from OUT/checkpoint.pt")
    parser.add_argument("--checkpoint-minutes", type=float, default=5.0)
    parser.add_argument("--threads", type=int, default=0, help="torch threads on CPU (0: torch's default)")
    parser.add_argument(
        "--export", action="store_true", help="export OUT/elmo-mini/ from the checkpoint now, then stop"
    )
    parser.add_argument("--max-steps", type=int, default=0, help="stop after this step (a smoke run)")
    parser.add_argument(
        "--fit", action="store_true", help="end the schedule where the speed of the first steps says --minutes allow"
    )
    for name, value in asdict(Config()).items():
        parser.add_argument("--" + name.replace("_", "-"), type=type(value), default=value)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    config = Config(**{f: getattr(args, f) for f in asdict(Config())})
    trainer = Trainer(args.corpus, args.out, config, args.device, resume=args.resume or args.export)
    given = {f for f, default in asdict(Config()).items() if getattr(args, f) != default}
    for field in sorted(given):  # a run's settings are its checkpoint's: say so rather than drop a flag quietly
        if getattr(trainer.config, field) != getattr(config, field):
            trainer.log(
                f"warning: --{field.replace('_', '-')} {getattr(config, field)} ignored: this run was started "
                f"with {getattr(trainer.config, field)} (its checkpoint's settings hold; use a new --out to change it)"
            )
    if args.export:
        trainer.export()
        return
    trainer.commands.append(shlex.join([*SCRIPT.split(), *argv]))
    corpus = trainer.corpus
    trainer.log(
        f"{SCRIPT}: {corpus.train_words:,} train words in {corpus.train_sentences:,} sentences, vocabulary "
        f"{corpus.vocab_size:,}, {sum(p.numel() for p in trainer.model.parameters()):,} parameters, "
        f"{torch.get_num_threads()} threads on {args.device}"
    )
    if trainer.train(args.minutes, args.checkpoint_minutes, until_step=args.max_steps, fit=args.fit) != "signal":
        trainer.export()  # at the schedule's end, or the budget's: each leaves a model to use


if __name__ == "__main__":
    main()
