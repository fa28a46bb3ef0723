"""ELMo's biLM (Peters et al., 2018) in plain torch, reading and writing AllenNLP's options.json + weights.hdf5.

The published model as AllenNLP runs it (`_ElmoBiLm`, `_ElmoCharacterEncoder`, `ElmoLstm`,
`LstmCellWithProjection`): a word is read as its UTF-8 bytes by a character CNN, highway layers and
a projection (the token layer); then forward and backward LSTMs, each with a projected, clipped
state and a residual connection from the second layer on, read the sentence between <S> and </S>.
The weights are bilm-tf's TensorFlow layout; an optional softmax (bilm-tf's `softmax/W`, `softmax/b`)
with vocab.txt makes both LSTMs language models again (AllenNLP released the biLMs without it).

Unlike AllenNLP's default (a stateful LSTM), every call starts from a zero state: a text always gets
the same vectors, whatever was asked before, and one model serves many threads.

Shapes: B sentences, T positions (<S> and </S> included unless said), K = 50 characters per word,
E char embedding, F CNN filters in all, P projection, C LSTM cell, V vocabulary, N targets.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from . import pieces
from .contextual import BATCH_SIZE, MAX_CHARS, Encoding, Guess, span_means
from .device import select_device
from .errors import BadCheckpoint, EmptyInput, MissingCapability, WordNotInText
from .words import _WORD, BOS, EOS, UNK, find_word, valid_text

MAX_CHARACTERS = 50  # character ids per word, markers included (AllenNLP's max_word_length)
BOS_CHAR, EOS_CHAR, BOW_CHAR, EOW_CHAR, PAD_CHAR = 256, 257, 258, 259, 260  # ids 0-255 are UTF-8 bytes
CHAR_ROWS = 261  # rows of the hdf5 `char_embed`: ids 0-260; AllenNLP adds a zero row for the mask
MAX_WORDS = 256  # words read at once: a page shows at most this many, and the LSTMs run word by word
OPTIONS, WEIGHTS, VOCAB = "options.json", "weights.hdf5", "vocab.txt"
SOFTMAX_W, SOFTMAX_B = "softmax/W", "softmax/b"  # bilm-tf's names (its dump_weights leaves them out)

# A word of model_zoo.words (letters or digits, joined by an inner ' or -; one Chinese character),
# or any other non-space character on its own: punctuation split off as in the 1B Word Benchmark
# that ELMo was trained on, so that "bank." is the word "bank" and a full stop.
_TOKEN = re.compile(rf"{_WORD.pattern}|\S")


def tokenize(text: str) -> list[str]:
    """The words ELMo reads in `text`, case kept: words, and punctuation marks on their own."""
    return _TOKEN.findall(text)


def _word_spans(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


# -- characters ------------------------------------------------------------------------------
def _marker_chars(char: int) -> list[int]:
    ids = [PAD_CHAR] * MAX_CHARACTERS
    ids[:3] = [BOW_CHAR, char, EOW_CHAR]
    return ids


def char_ids(word: str) -> list[int]:
    """AllenNLP's ELMoCharacterMapper: begin-of-word, the UTF-8 bytes (at most 48), end-of-word,
    padding to 50; <S> and </S> as one character each (256, 257); every id + 1, so 0 is the mask."""
    if word == BOS:
        ids = _marker_chars(BOS_CHAR)
    elif word == EOS:
        ids = _marker_chars(EOS_CHAR)
    else:
        encoded = word.encode("utf-8", "ignore")[: MAX_CHARACTERS - 2]
        ids = [BOW_CHAR, *encoded, EOW_CHAR] + [PAD_CHAR] * (MAX_CHARACTERS - 2 - len(encoded))
    return [c + 1 for c in ids]


def char_id_tensor(sentences: Sequence[Sequence[str]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Character ids of each sentence between <S> and </S>, right-padded with all-zero words:
    ((B, T, K) int64 with T = longest + 2, lengths (B,) int64 with the markers counted)."""
    lengths = torch.tensor([len(s) + 2 for s in sentences], dtype=torch.long)
    ids = torch.zeros(len(sentences), int(lengths.max()), MAX_CHARACTERS, dtype=torch.long)
    for row, sentence in enumerate(sentences):
        ids[row, : len(sentence) + 2] = torch.tensor([char_ids(w) for w in (BOS, *sentence, EOS)])
    return ids, lengths


# -- options ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ElmoOptions:
    """options.json of a biLM, as bilm-tf writes it and AllenNLP reads it."""

    filters: tuple[tuple[int, int], ...]  # (width, how many) per convolution
    n_highway: int
    projection_dim: int  # P: the token layer and each LSTM's output
    cell_dim: int  # C: the LSTM memory cell ("dim")
    n_layers: int = 2
    char_dim: int = 16  # E
    activation: str = "relu"  # after the CNN's max-pooling: relu or tanh
    cell_clip: float | None = 3.0
    proj_clip: float | None = 3.0
    use_skip_connections: bool = True
    n_characters: int = 262  # AllenNLP ignores it (the table is char_embed plus the mask row)

    @property
    def n_filters(self) -> int:
        return sum(n for _, n in self.filters)

    @classmethod
    def from_json(cls, options: dict[str, Any], where: object = OPTIONS) -> ElmoOptions:
        """Options from options.json's dict; a key missing or a value ContextLab cannot run is a BadCheckpoint."""
        try:
            lstm, cnn = options["lstm"], options["char_cnn"]
            made = cls(
                filters=tuple((int(w), int(n)) for w, n in cnn["filters"]),
                n_highway=int(cnn["n_highway"]),
                projection_dim=int(lstm["projection_dim"]),
                cell_dim=int(lstm["dim"]),
                n_layers=int(lstm["n_layers"]),
                char_dim=int(cnn["embedding"]["dim"]),
                activation=str(cnn["activation"]),
                cell_clip=_clip(lstm.get("cell_clip")),
                proj_clip=_clip(lstm.get("proj_clip")),
                use_skip_connections=bool(lstm.get("use_skip_connections", False)),
                n_characters=int(cnn.get("n_characters", 262)),
            )
            per_word = int(cnn.get("max_characters_per_token", MAX_CHARACTERS))
        except KeyError as err:
            raise BadCheckpoint(where, f"options.json has no {err.args[0]!r}") from err
        except (TypeError, ValueError) as err:
            raise BadCheckpoint(where, f"options.json is not a biLM's options ({err})") from err
        if made.activation not in _ACTIVATIONS:
            raise BadCheckpoint(where, f"unknown char_cnn activation {made.activation!r} (relu or tanh)")
        if per_word != MAX_CHARACTERS:
            raise BadCheckpoint(where, f"max_characters_per_token is {per_word}; ELMo's character ids are 50")
        if made.n_layers < 1 or not made.filters:
            raise BadCheckpoint(where, "a biLM needs at least one LSTM layer and one CNN filter")
        return made

    def to_json(self) -> dict[str, Any]:
        return {
            "lstm": {
                "use_skip_connections": self.use_skip_connections,
                "projection_dim": self.projection_dim,
                "cell_clip": self.cell_clip,
                "proj_clip": self.proj_clip,
                "dim": self.cell_dim,
                "n_layers": self.n_layers,
            },
            "char_cnn": {
                "activation": self.activation,
                "filters": [list(f) for f in self.filters],
                "n_highway": self.n_highway,
                "embedding": {"dim": self.char_dim},
                "n_characters": self.n_characters,
                "max_characters_per_token": MAX_CHARACTERS,
            },
        }


def _clip(value: Any) -> float | None:
    return None if value is None or float(value) == 0 else float(value)  # AllenNLP: a falsy clip is none


_ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"relu": F.relu, "tanh": torch.tanh}


# -- the network -----------------------------------------------------------------------------
class CharEncoder(torch.nn.Module):
    """The token layer: char embedding, CNN, max-pool, activation, highway layers, projection."""

    def __init__(self, options: ElmoOptions) -> None:
        super().__init__()
        f = options.n_filters
        self.activation = options.activation
        self.char_embed = torch.nn.Parameter(torch.zeros(CHAR_ROWS, options.char_dim))  # ids 1..261
        self.convs = torch.nn.ModuleList(torch.nn.Conv1d(options.char_dim, n, w) for w, n in options.filters)
        self.highways = torch.nn.ModuleList(torch.nn.Linear(f, 2 * f) for _ in range(options.n_highway))
        self.projection = torch.nn.Linear(f, options.projection_dim)
        self.widest = max(w for w, _ in options.filters)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:  # (N, K) -> (N, P)
        # Each distinct word once ("the" is a tenth of English text); the same arithmetic per word.
        words, where = torch.unique(ids, dim=0, return_inverse=True)  # (U, K), (N,)
        # Windows wholly inside the padding all give the same value, so one of them is enough for the
        # max: cut the columns after the longest word plus the widest filter (same result, less work).
        used = (words != PAD_CHAR + 1).sum(1).masked_fill((words == 0).all(1), 0)  # (U,) markers included
        width = min(MAX_CHARACTERS, max(int(used.max()), 1) + self.widest)
        table = torch.cat([self.char_embed.new_zeros(1, self.char_embed.shape[1]), self.char_embed])  # (262, E)
        x = F.embedding(words[:, :width], table).transpose(1, 2)  # (U, E, width)
        act = _ACTIVATIONS[self.activation]
        h = torch.cat([act(conv(x).amax(-1)) for conv in self.convs], -1)  # (U, F)
        for layer in self.highways:  # AllenNLP's Highway: y = g * x + (1 - g) * relu(A x)
            nonlinear, gate = layer(h).chunk(2, -1)  # (U, F) each
            gate = torch.sigmoid(gate)
            h = gate * h + (1 - gate) * F.relu(nonlinear)
        return self.projection(h)[where]  # (N, P)


class LstmCellWithProjection(torch.nn.Module):
    """AllenNLP's cell: gates (i, f, g, o) from x and the projected state h, memory clipped, then
    h = clip(W_P (o * tanh(c))). Runs left to right from a zero state."""

    def __init__(self, input_size: int, options: ElmoOptions) -> None:
        super().__init__()
        p, c = options.projection_dim, options.cell_dim
        self.cell_size = c
        self.cell_clip, self.proj_clip = options.cell_clip, options.proj_clip
        self.input_linearity = torch.nn.Linear(input_size, 4 * c, bias=False)
        self.state_linearity = torch.nn.Linear(p, 4 * c, bias=True)
        self.state_projection = torch.nn.Linear(c, p, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, D) -> (B, T, P)
        batch, steps, _ = x.shape
        c = self.cell_size
        projected = self.input_linearity(x)  # (B, T, 4C): every step's input at once
        memory = x.new_zeros(batch, c)  # (B, C)
        state = x.new_zeros(batch, self.state_projection.out_features)  # (B, P)
        outputs = []
        for t in range(steps):
            gates = projected[:, t] + self.state_linearity(state)  # (B, 4C)
            i, f, g, o = gates.split(c, -1)
            memory = torch.sigmoid(i) * torch.tanh(g) + torch.sigmoid(f) * memory
            if self.cell_clip:
                memory = memory.clamp(-self.cell_clip, self.cell_clip)
            state = self.state_projection(torch.sigmoid(o) * torch.tanh(memory))  # (B, P)
            if self.proj_clip:
                state = state.clamp(-self.proj_clip, self.proj_clip)
            outputs.append(state)
        return torch.stack(outputs, 1)


def reverse_padded(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Each sentence's first `lengths[b]` positions in reverse order, the padding left where it is:
    (B, T, D) -> (B, T, D). Its own inverse."""
    t = torch.arange(x.shape[1], device=x.device)[None]  # (1, T)
    n = lengths.to(x.device)[:, None]  # (B, 1)
    index = torch.where(t < n, n - 1 - t, t)  # (B, T)
    return x.gather(1, index[..., None].expand_as(x))


def bidirectional(
    x: torch.Tensor,
    lengths: torch.Tensor,
    forward_layers: Iterable[torch.nn.Module],
    backward_layers: Iterable[torch.nn.Module],
    skip: bool,
    dropout: float = 0.0,
    training: bool = False,
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """ElmoLstm over token vectors x (B, T, P): each direction's layer outputs, each (B, T, P) in the
    sentence's order; from the second layer on a layer's input is added to its output (`skip`).

    A layer maps (B, T, D) -> (B, T, D') reading left to right from a zero state; the backward LSTM
    reads each sentence reversed within its length, so padding on the right never reaches a word.
    `dropout` (training only) drops each layer's input, as bilm-tf's DropoutWrapper does.
    """
    directions: list[list[torch.Tensor]] = []
    for layers, backward in ((forward_layers, False), (backward_layers, True)):
        h = reverse_padded(x, lengths) if backward else x  # (B, T, P)
        outputs = []
        for i, layer in enumerate(layers):
            h = F.dropout(h, dropout, training) if dropout else h
            out = layer(h)  # (B, T, P)
            h = out + h if skip and i > 0 else out
            outputs.append(reverse_padded(h, lengths) if backward else h)
        directions.append(outputs)
    return directions[0], directions[1]


@dataclass(frozen=True)
class BiLmOutput:
    """One pass of the biLM over a batch; positions include <S> and </S>."""

    token: torch.Tensor  # (B, T, P) the char-CNN projection
    forward: list[torch.Tensor]  # n_layers x (B, T, P), residual included
    backward: list[torch.Tensor]  # n_layers x (B, T, P)

    def layers(self) -> torch.Tensor:
        """AllenNLP's activations: [token, token], then [forward, backward] per LSTM layer: (S, B, T, 2P)."""
        first = torch.cat([self.token, self.token], -1)
        return torch.stack([first] + [torch.cat(pair, -1) for pair in zip(self.forward, self.backward)])


class BiLm(torch.nn.Module):
    """The biLM of `options`: CharEncoder, ElmoLstm with AllenNLP's cells, and a softmax over a
    vocabulary of `vocab_size` words shared by both directions (none when 0)."""

    def __init__(self, options: ElmoOptions, vocab_size: int = 0) -> None:
        super().__init__()
        self.options = options
        p = options.projection_dim
        self.chars = CharEncoder(options)
        self.forward_layers = torch.nn.ModuleList(LstmCellWithProjection(p, options) for _ in range(options.n_layers))
        self.backward_layers = torch.nn.ModuleList(LstmCellWithProjection(p, options) for _ in range(options.n_layers))
        self.softmax_w = torch.nn.Parameter(torch.zeros(vocab_size, p)) if vocab_size else None  # (V, P)
        self.softmax_b = torch.nn.Parameter(torch.zeros(vocab_size)) if vocab_size else None  # (V,)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> BiLmOutput:  # ids (B, T, K), lengths (B,)
        batch, steps, k = ids.shape
        token = self.chars(ids.reshape(-1, k)).view(batch, steps, -1)  # (B, T, P)
        fwd, bwd = bidirectional(
            token, lengths, self.forward_layers, self.backward_layers, self.options.use_skip_connections
        )
        return BiLmOutput(token, fwd, bwd)


def fresh_bilm(options: ElmoOptions, seed: int = 0) -> BiLm:
    """A biLM of `options` with the random weights elmo-mini's pre-training started from
    (model_zoo.training.train_elmo.TrainingBiLm): characters uniform in [-1, 1], highway gates carrying
    their input (bias 2), LSTM weights uniform in +-1/sqrt(cell) as torch.nn.LSTM draws them, the forget
    gate open (bias 1); no softmax."""
    torch.manual_seed(seed)
    bilm = BiLm(options)
    c, bound, f = options.cell_dim, 1 / math.sqrt(options.cell_dim), options.n_filters
    with torch.no_grad():
        bilm.chars.char_embed.uniform_(-1.0, 1.0)
        for highway in bilm.chars.highways:
            assert isinstance(highway, torch.nn.Linear)
            highway.bias[f:].fill_(2.0)
        for cell in [*bilm.forward_layers, *bilm.backward_layers]:
            assert isinstance(cell, LstmCellWithProjection)
            for weight in (cell.input_linearity.weight, cell.state_linearity.weight, cell.state_projection.weight):
                weight.uniform_(-bound, bound)
            cell.state_linearity.bias.zero_()
            cell.state_linearity.bias[c : 2 * c].fill_(1.0)  # gates (i, f, g, o): the forget gate
    return bilm


def lm_rows(
    forward_top: torch.Tensor, backward_top: torch.Tensor, word_ids: torch.Tensor, lengths: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """What each LM predicts from what: the forward LM's states (N, P) at every position but the last,
    each predicting the next word (N,) (every word and </S>); the backward LM's states (N, P) at every
    position but the first, each predicting the word before (N,) (<S> and every word).

    forward_top, backward_top (B, T, P): the top LSTM layer; word_ids (B, T) vocabulary ids with the markers.
    """
    steps = torch.arange(word_ids.shape[1] - 1, device=word_ids.device)[None]  # (1, T - 1)
    valid = steps < (lengths.to(word_ids.device) - 1)[:, None]  # (B, T - 1)
    return forward_top[:, :-1][valid], word_ids[:, 1:][valid], backward_top[:, 1:][valid], word_ids[:, :-1][valid]


def lm_nll(
    forward_top: torch.Tensor,
    backward_top: torch.Tensor,
    word_ids: torch.Tensor,
    lengths: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Negative log-likelihood of each target (lm_rows) under the shared softmax, weight (V, P) and
    bias (V,): (N,) for the forward LM, (N,) for the backward LM."""
    rows_f, next_words, rows_b, previous_words = lm_rows(forward_top, backward_top, word_ids, lengths)
    return (
        F.cross_entropy(F.linear(rows_f, weight, bias).float(), next_words, reduction="none"),
        F.cross_entropy(F.linear(rows_b, weight, bias).float(), previous_words, reduction="none"),
    )


def word_id_tensor(sentences: Sequence[Sequence[str]], index: dict[str, int]) -> torch.Tensor:
    """Vocabulary ids of each sentence between <S> and </S>, <UNK> for a word not in `index`,
    right-padded with 0: (B, T) int64."""
    unk = index[UNK]
    ids = torch.zeros(len(sentences), max(len(s) for s in sentences) + 2, dtype=torch.long)
    for row, sentence in enumerate(sentences):
        ids[row, : len(sentence) + 2] = torch.tensor([index.get(w, unk) for w in (BOS, *sentence, EOS)])
    return ids


# -- the model the pages use -----------------------------------------------------------------
@dataclass(frozen=True)
class Perplexity:
    """How well the biLM's two language models predict some sentences."""

    forward: float  # exp(mean NLL) of every word and </S>, each from the words before it
    backward: float  # exp(mean NLL) of <S> and every word, each from the words after it
    targets: int  # N: predictions per direction (words + one marker per sentence)
    unknown: int  # of those, words not in the vocabulary (scored as <UNK>)


@dataclass(frozen=True)
class _Words:
    words: list[str]
    spans: list[tuple[int, int]] = field(default_factory=list)
    truncated: bool = False


class ElmoModel:
    """An ELMo biLM behind the contextual-model contract (model_zoo.contextual.Contextual).

    Three states per word: the token layer (the char-CNN vector, written twice as AllenNLP does),
    then each LSTM layer's forward and backward outputs side by side. With a softmax and its
    vocabulary, next_words and previous_words read the two language models.
    The model is shared by every session and thread: calls never change it.
    """

    kind = "elmo"
    max_length = MAX_WORDS

    def __init__(
        self, name: str, bilm: BiLm, vocab: Sequence[str] | None = None, device: str | torch.device | None = None
    ) -> None:
        self.name = name
        self.device = device if isinstance(device, torch.device) else select_device(device)
        self.bilm = bilm.eval().to(self.device)
        self.options = bilm.options
        self.vocab = list(vocab or [])
        self._index = {w: i for i, w in enumerate(self.vocab)}
        if bilm.softmax_w is not None and len(self.vocab) != bilm.softmax_w.shape[0]:
            raise ValueError(f"{name}: {len(self.vocab)} vocabulary words for a softmax of {bilm.softmax_w.shape[0]}")

    @property
    def has_softmax(self) -> bool:
        return self.bilm.softmax_w is not None

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @property
    def dim(self) -> int:
        return 2 * self.options.projection_dim

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.bilm.parameters())

    # -- reading text ---------------------------------------------------------------------
    def _read(self, text: str, limit: int | None = None, *, from_end: bool = False) -> _Words:
        if not text or not text.strip():
            raise EmptyInput()
        clean = valid_text(text[-MAX_CHARS:] if from_end else text[:MAX_CHARS])
        spans = _word_spans(clean)
        limit = min(limit or self.max_length, self.max_length)
        kept = spans[-limit:] if from_end else spans[:limit]
        return _Words(
            [w for w, _, _ in kept], [(a, b) for _, a, b in kept], len(text) > MAX_CHARS or len(spans) > limit
        )

    def tokenize(self, text: str) -> list[str]:
        """The words the model reads in `text` (at most max_length)."""
        return self._read(text).words

    def count_tokens(self, text: str, text_pair: str | None = None) -> int:
        """Words in `text` (and `text_pair`) before any cut; ELMo's <S> and </S> are not shown, not counted."""
        count = len(tokenize(valid_text(text[:MAX_CHARS])))
        return count + (0 if text_pair is None else len(tokenize(valid_text(text_pair[:MAX_CHARS]))))

    @torch.inference_mode()
    def _run(self, sentences: Sequence[Sequence[str]]) -> BiLmOutput:
        ids, lengths = char_id_tensor(sentences)
        return self.bilm(ids.to(self.device), lengths.to(self.device))

    def _states(self, sentences: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Every layer's states of each sentence, markers dropped: (S, T_i, 2P) float32 each."""
        out: list[np.ndarray] = []
        for start in range(0, len(sentences), BATCH_SIZE):
            chunk = sentences[start : start + BATCH_SIZE]
            layers = self._run(chunk).layers().float().cpu().numpy()  # (S, B, T + 2, 2P)
            out += [layers[:, i, 1 : len(s) + 1].copy() for i, s in enumerate(chunk)]  # not views of the batch
        return out

    # -- the contract ---------------------------------------------------------------------
    def encode(
        self, text: str, text_pair: str | None = None, *, attentions: bool = True, max_length: int | None = None
    ) -> Encoding:
        """The words of `text` (at most `max_length`) and their three states: hidden_states (3, T, 2P).

        ELMo has no attention (`attentions` is ignored; Encoding.attentions is None) and reads one text.
        """
        if text_pair is not None:
            raise MissingCapability(self.name, "a text pair", "ELMo reads one text at a time: encode each on its own")
        return self.encode_many([text], max_length=max_length)[0]

    def encode_many(self, texts: Sequence[str], *, max_length: int | None = None) -> list[Encoding]:
        """encode for several texts, BATCH_SIZE at a time (each gets what it would get alone)."""
        read = [self._read(t, max_length) for t in texts]
        states = self._states([r.words for r in read])
        return [self._encoding(t, r, s) for t, r, s in zip(texts, read, states)]

    def _encoding(self, text: str, read: _Words, states: np.ndarray) -> Encoding:
        n = len(read.words)
        ids = [self._index.get(w, self._index.get(UNK, 0)) for w in read.words] if self.vocab else [0] * n
        return Encoding(
            text=text,
            tokens=read.words,
            token_ids=np.array(ids, dtype=np.int64),  # vocabulary ids where there is a softmax, else 0
            word_ids=list(range(n)),
            words=read.words,
            segment_ids=np.zeros(n, dtype=np.int64),
            hidden_states=states,
            attentions=None,
            truncated=read.truncated,
        )

    def word_vectors(self, texts: list[str], word: str) -> np.ndarray:
        """The states of `word` in each text at every layer: (B, 3, 2P). The first use (model_zoo.words'
        rule: any case, a whole word); a word ELMo reads as several (rare) is their mean."""
        if not word.strip():
            raise EmptyInput("word")
        read = [self._read(t) for t in texts]
        positions = []
        for number, (text, r) in enumerate(zip(texts, read)):
            found = find_word(valid_text(text[:MAX_CHARS]), word)
            start, end = found.span() if found else (0, 0)
            at = [i for i, (a, b) in enumerate(r.spans) if a < end and b > start]
            if not at:
                raise WordNotInText(word, text, number)
            positions.append(at)
        states = self._states([r.words for r in read])
        return np.stack([s[:, at].mean(1) for s, at in zip(states, positions)])

    def span_vectors(self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]) -> list[np.ndarray]:
        """For each text, the states of each character span [a, b): (spans, 3, 2P), the mean of the words
        that overlap it; NaN where none does (the text was cut before it)."""
        read = [self._read(t) for t in texts]
        states = self._states([r.words for r in read])
        return [span_means(s, r.spans, want) for r, s, want in zip(read, states, spans)]

    # -- the language models --------------------------------------------------------------
    def _require_softmax(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.bilm.softmax_w is None or self.bilm.softmax_b is None:
            raise MissingCapability(
                self.name, "next-word prediction", "this biLM has no softmax (AllenNLP released ELMo without it)"
            )
        return self.bilm.softmax_w, self.bilm.softmax_b

    @torch.inference_mode()
    def _guesses(self, top: torch.Tensor, k: int) -> list[Guess]:  # top (P,)
        weight, bias = self._require_softmax()
        probs = F.linear(top, weight, bias).float().softmax(-1)  # (V,)
        best = probs.topk(min(k, probs.shape[0]))
        return [(self.vocab[i], float(p)) for i, p in zip(best.indices.tolist(), best.values.tolist())]

    def next_words(self, text: str, top_k: int = 10) -> list[Guess]:
        """The forward LM's `top_k` likeliest words after `text` (its last max_length words), with probabilities.
        </S> (the sentence ends) and <UNK> (a word outside the vocabulary) are words here too."""
        self._require_softmax()
        words = self._read(text, from_end=True).words
        out = self._run([words])
        return self._guesses(out.forward[-1][0, len(words)], top_k)  # the last word's state predicts the next

    def previous_words(self, text: str, top_k: int = 10) -> list[Guess]:
        """The backward LM's `top_k` likeliest words before `text` (its first max_length words); <S> means
        that `text` starts a sentence."""
        self._require_softmax()
        out = self._run([self._read(text).words])
        return self._guesses(out.backward[-1][0, 1], top_k)  # the first word's state predicts the one before

    @torch.inference_mode()
    def perplexity(self, sentences: Sequence[str]) -> Perplexity:
        """Both LMs' perplexity on `sentences` (one sentence each, read from a zero state between <S> and
        </S>; empty ones skipped). A word outside the vocabulary counts as <UNK>."""
        weight, bias = self._require_softmax()
        read = [self._read(s).words for s in sentences if s.strip()]
        if not read:
            raise EmptyInput("list of sentences")
        forward = backward = 0.0
        targets = unknown = 0
        for start in range(0, len(read), BATCH_SIZE):
            chunk = read[start : start + BATCH_SIZE]
            ids, lengths = char_id_tensor(chunk)
            out = self.bilm(ids.to(self.device), lengths.to(self.device))
            words = word_id_tensor(chunk, self._index).to(self.device)
            nll_f, nll_b = lm_nll(out.forward[-1], out.backward[-1], words, lengths, weight, bias)
            forward, backward = forward + float(nll_f.sum()), backward + float(nll_b.sum())
            targets += len(nll_f)
            unknown += sum(w not in self._index for s in chunk for w in s)
        return Perplexity(math.exp(forward / targets), math.exp(backward / targets), targets, unknown)


# -- AllenNLP's files ------------------------------------------------------------------------
def _lstm_name(direction: int, layer: int, what: str) -> str:
    return f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell/{what}"


def expected_datasets(options: ElmoOptions, vocab_size: int = 0) -> dict[str, tuple[int, ...]]:
    """Every dataset weights.hdf5 must hold for `options` (and a softmax of `vocab_size`), with its shape."""
    e, f, p, c = options.char_dim, options.n_filters, options.projection_dim, options.cell_dim
    shapes: dict[str, tuple[int, ...]] = {"char_embed": (CHAR_ROWS, e)}
    for i, (width, n) in enumerate(options.filters):
        shapes[f"CNN/W_cnn_{i}"] = (1, width, e, n)
        shapes[f"CNN/b_cnn_{i}"] = (n,)
    for k in range(options.n_highway):
        shapes |= {f"CNN_high_{k}/W_transform": (f, f), f"CNN_high_{k}/b_transform": (f,)}
        shapes |= {f"CNN_high_{k}/W_carry": (f, f), f"CNN_high_{k}/b_carry": (f,)}
    shapes |= {"CNN_proj/W_proj": (f, p), "CNN_proj/b_proj": (p,)}
    for direction in range(2):
        for layer in range(options.n_layers):
            shapes[_lstm_name(direction, layer, "W_0")] = (p + p, 4 * c)  # [input; projected state] x gates
            shapes[_lstm_name(direction, layer, "B")] = (4 * c,)
            shapes[_lstm_name(direction, layer, "W_P_0")] = (c, p)
    if vocab_size:
        shapes |= {SOFTMAX_W: (vocab_size, p), SOFTMAX_B: (vocab_size,)}
    return shapes


def _swap_gates(x: np.ndarray, c: int) -> np.ndarray:
    """TensorFlow's gate blocks (i, j, f, o) <-> AllenNLP's (i, f, j, o) along axis 0: its own inverse."""
    return np.concatenate([x[:c], x[2 * c : 3 * c], x[c : 2 * c], x[3 * c :]])


def _state_from_hdf5(arrays: dict[str, np.ndarray], options: ElmoOptions) -> dict[str, np.ndarray]:
    """BiLm's state dict from the hdf5 datasets, converted exactly as AllenNLP's loaders do."""
    c = options.cell_dim
    state = {"chars.char_embed": arrays["char_embed"]}
    for i in range(len(options.filters)):
        state[f"chars.convs.{i}.weight"] = arrays[f"CNN/W_cnn_{i}"][0].transpose(2, 1, 0)  # (n, E, width)
        state[f"chars.convs.{i}.bias"] = arrays[f"CNN/b_cnn_{i}"]
    for k in range(options.n_highway):
        high = f"CNN_high_{k}/"
        # AllenNLP's gate g multiplies x; bilm-tf's carry gate multiplies the transform: g = 1 - carry.
        state[f"chars.highways.{k}.weight"] = np.concatenate(
            [arrays[high + "W_transform"].T, -arrays[high + "W_carry"].T]
        )
        state[f"chars.highways.{k}.bias"] = np.concatenate([arrays[high + "b_transform"], -arrays[high + "b_carry"]])
    state["chars.projection.weight"] = arrays["CNN_proj/W_proj"].T
    state["chars.projection.bias"] = arrays["CNN_proj/b_proj"]
    for direction, stack in enumerate(("forward_layers", "backward_layers")):
        for layer in range(options.n_layers):
            weights = _swap_gates(arrays[_lstm_name(direction, layer, "W_0")].T, c)  # (4C, P + P)
            bias = arrays[_lstm_name(direction, layer, "B")].astype(np.float32)  # copy
            bias[2 * c : 3 * c] += 1  # TensorFlow's LSTMCell adds forget_bias=1.0 at run time
            state[f"{stack}.{layer}.input_linearity.weight"] = weights[:, : options.projection_dim]
            state[f"{stack}.{layer}.state_linearity.weight"] = weights[:, options.projection_dim :]
            state[f"{stack}.{layer}.state_linearity.bias"] = _swap_gates(bias, c)
            state[f"{stack}.{layer}.state_projection.weight"] = arrays[_lstm_name(direction, layer, "W_P_0")].T
    if SOFTMAX_W in arrays:
        state["softmax_w"], state["softmax_b"] = arrays[SOFTMAX_W], arrays[SOFTMAX_B]
    return state


def _hdf5_from_state(state: dict[str, np.ndarray], options: ElmoOptions) -> dict[str, np.ndarray]:
    """The inverse of _state_from_hdf5: bilm-tf's datasets from a BiLm's state dict."""
    c = options.cell_dim
    arrays = {"char_embed": state["chars.char_embed"]}
    for i in range(len(options.filters)):
        arrays[f"CNN/W_cnn_{i}"] = state[f"chars.convs.{i}.weight"].transpose(2, 1, 0)[None]
        arrays[f"CNN/b_cnn_{i}"] = state[f"chars.convs.{i}.bias"]
    for k in range(options.n_highway):
        weight, bias = state[f"chars.highways.{k}.weight"], state[f"chars.highways.{k}.bias"]
        n = weight.shape[1]
        arrays[f"CNN_high_{k}/W_transform"], arrays[f"CNN_high_{k}/W_carry"] = weight[:n].T, -weight[n:].T
        arrays[f"CNN_high_{k}/b_transform"], arrays[f"CNN_high_{k}/b_carry"] = bias[:n], -bias[n:]
    arrays["CNN_proj/W_proj"] = state["chars.projection.weight"].T
    arrays["CNN_proj/b_proj"] = state["chars.projection.bias"]
    for direction, stack in enumerate(("forward_layers", "backward_layers")):
        for layer in range(options.n_layers):
            name = f"{stack}.{layer}."
            weights = np.concatenate(
                [state[name + "input_linearity.weight"], state[name + "state_linearity.weight"]], 1
            )  # (4C, P + P)
            arrays[_lstm_name(direction, layer, "W_0")] = _swap_gates(weights, c).T
            bias = _swap_gates(state[name + "state_linearity.bias"], c).astype(np.float32)
            bias[2 * c : 3 * c] -= 1
            arrays[_lstm_name(direction, layer, "B")] = bias
            arrays[_lstm_name(direction, layer, "W_P_0")] = state[name + "state_projection.weight"].T
    if "softmax_w" in state:
        arrays[SOFTMAX_W], arrays[SOFTMAX_B] = state["softmax_w"], state["softmax_b"]
    return arrays


def _datasets(fin: Any) -> list[str]:
    import h5py

    names: list[str] = []
    fin.visititems(lambda name, item: names.append(name) if isinstance(item, h5py.Dataset) else None)
    return names


def read_bilm(options_path: Path, weights_path: Path, vocab_path: Path | None = None) -> tuple[BiLm, list[str]]:
    """The BiLm of options.json + weights.hdf5 (and vocab.txt where weights.hdf5 holds a softmax).

    Every parameter comes from the file; a dataset missing, one not expected, or one of another shape
    is a BadCheckpoint naming it.
    """
    import h5py

    try:
        options = ElmoOptions.from_json(json.loads(Path(options_path).read_text(encoding="utf-8")), options_path)
    except (OSError, json.JSONDecodeError) as err:
        raise BadCheckpoint(options_path, f"options.json cannot be read ({err})") from err
    try:  # a shipped file over 16 MiB is in pieces: read whole from memory
        fin = h5py.File(pieces.readable(Path(weights_path)), "r")
    except OSError as err:
        raise BadCheckpoint(weights_path, f"not an HDF5 file ({err})") from err
    with fin:
        present = _datasets(fin)
        vocab_size = int(fin[SOFTMAX_W].shape[0]) if SOFTMAX_W in present else 0
        expected = expected_datasets(options, vocab_size)
        missing = [n for n in expected if n not in present]
        extra = sorted(n for n in present if n not in expected)
        if missing or extra:
            problems = []
            if missing:
                problems.append(f"missing dataset{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
            if extra:
                problems.append(f"unexpected dataset{'s' if len(extra) > 1 else ''} {', '.join(extra)}")
            raise BadCheckpoint(weights_path, "; ".join(problems) + f" (for the biLM that {OPTIONS} describes)")
        wrong = [f"{n} is {fin[n].shape}, expected {s}" for n, s in expected.items() if fin[n].shape != s]
        if wrong:
            raise BadCheckpoint(weights_path, "; ".join(wrong))
        arrays = {n: np.asarray(fin[n][...], dtype=np.float32) for n in expected}
    vocab: list[str] = []
    if vocab_size:
        if vocab_path is None or not Path(vocab_path).exists():
            raise BadCheckpoint(weights_path, f"it holds a softmax but there is no {VOCAB} beside it")
        vocab = Path(vocab_path).read_text(encoding="utf-8").splitlines()  # words hold no whitespace
        if len(vocab) != vocab_size or not {BOS, EOS, UNK} <= set(vocab):
            raise BadCheckpoint(
                vocab_path, f"{len(vocab)} words for a softmax of {vocab_size}; it needs {BOS}, {EOS} and {UNK} too"
            )
    bilm = BiLm(options, vocab_size)
    state = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in _state_from_hdf5(arrays, options).items()}
    bilm.load_state_dict(state, strict=True)  # every parameter, each from its dataset
    return bilm, vocab


def load_elmo(
    folder_or_files: str | os.PathLike[str] | tuple[str | os.PathLike[str], str | os.PathLike[str]],
    *,
    name: str | None = None,
    device: str | torch.device | None = None,
) -> ElmoModel:
    """An ElmoModel from a folder holding options.json + weights.hdf5 (+ vocab.txt for a softmax), AllenNLP's
    released layout, or from an (options, weights) pair of paths (vocab.txt looked for beside the weights)."""
    if isinstance(folder_or_files, tuple):
        options_path, weights_path = (Path(p) for p in folder_or_files)
        folder = weights_path.parent
    else:
        folder = Path(folder_or_files)
        options_path, weights_path = folder / OPTIONS, folder / WEIGHTS
    for path in (options_path, weights_path):
        if not pieces.exists(path):
            raise BadCheckpoint(folder, f"{path.name} is missing (an ELMo biLM is {OPTIONS} + {WEIGHTS})")
    bilm, vocab = read_bilm(options_path, weights_path, folder / VOCAB)
    return ElmoModel(name or folder.name, bilm, vocab, device)


def save_elmo(
    model: ElmoModel | BiLm,
    folder: str | os.PathLike[str],
    vocab: Sequence[str] | None = None,
    *,
    softmax_dtype: Any = np.float16,
) -> Path:
    """Write `model` as options.json + weights.hdf5 in AllenNLP's layout (load_elmo reads it back), and a
    softmax as `softmax/W`, `softmax/b` (in `softmax_dtype`: fp16 halves the largest matrix) with vocab.txt.
    `vocab` is needed for a bare BiLm with a softmax."""
    import h5py

    bilm = model.bilm if isinstance(model, ElmoModel) else model
    words = list(model.vocab if isinstance(model, ElmoModel) else vocab or [])
    softmax = bilm.softmax_w
    if softmax is not None and len(words) != softmax.shape[0]:
        raise ValueError(f"a softmax of {softmax.shape[0]} words needs a vocabulary of as many")
    if any(not w or w != w.strip() or "\n" in w for w in words):
        raise ValueError("vocabulary words must be non-empty and hold no whitespace")
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().float().cpu().numpy() for k, v in bilm.state_dict().items()}
    arrays = _hdf5_from_state(state, bilm.options)
    with h5py.File(out / WEIGHTS, "w") as fout:
        for name, array in arrays.items():
            dtype = softmax_dtype if name in (SOFTMAX_W, SOFTMAX_B) else np.float32
            fout.create_dataset(name, data=np.asarray(array, dtype=dtype))
    options = bilm.options.to_json() | ({"n_tokens_vocab": len(words)} if softmax is not None else {})
    (out / OPTIONS).write_text(json.dumps(options, indent=1) + "\n", encoding="utf-8")
    if softmax is not None:
        (out / VOCAB).write_text("".join(w + "\n" for w in words), encoding="utf-8")
    return out
