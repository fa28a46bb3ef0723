"""Contextual models: BERT-family encoders, masked LMs and causal LMs, run under inference mode.

Shapes in every comment of model_zoo: L layers, S = L + 1 states (the embedding layer first),
T tokens, D width, H heads, B texts in a batch, V the vocabulary.
"""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from .errors import EmptyInput, MissingCapability, NoMaskToken, QuestionTooLong, WordNotInText
from .onednn import runs_bf16, use_onednn
from .words import BYTE_GAP, find_word, valid_text

BATCH_SIZE = 32
# The most tokens any model here reads at once, whatever its context allows (SmolLM2: 8,192): a
# page shows at most this much, and one pasted essay must not hold the shared server for long.
MAX_TOKENS = 512
# The most characters handed to a tokenizer: far more than MAX_TOKENS tokens of text, and short
# enough that no tokenizer spends long on one 100,000-character "word".
MAX_CHARS = 32 * MAX_TOKENS
Guess = tuple[str, float]  # a token as text, and the probability the model gives it


@dataclass(frozen=True)
class Encoding:
    """What one forward pass over one text (or text pair) gives a learner to look at."""

    text: str
    tokens: list[str]  # (T,) as the tokenizer spells them, specials included
    token_ids: np.ndarray  # (T,) int64
    word_ids: list[int | None]  # (T,) word index per token, None for [CLS]/[SEP]/...; a pair's
    # second text continues the numbering of the first
    words: list[str]  # word strings by word index (both texts of a pair)
    segment_ids: np.ndarray  # (T,) 0 for the first text, 1 for the second
    hidden_states: np.ndarray  # (S, T, D) float32; [0] is the embedding layer
    attentions: np.ndarray | None  # (L, H, T, T) float32, rows sum to 1; None if not asked
    truncated: bool  # the text was longer than the model reads and was cut

    @property
    def num_layers(self) -> int:
        return int(self.hidden_states.shape[0]) - 1


@runtime_checkable
class Contextual(Protocol):
    """What every contextual model gives the pages, whatever reads its text (WordPiece, BPE,
    characters): one vector per token at every layer. Encoders, masked LMs and causal LMs meet
    it here; what a kind adds (fill_mask, next_words, ...) is declared on its card as capabilities."""

    name: str
    kind: str
    max_length: int  # tokens the model reads; longer text is cut and Encoding.truncated says so

    def encode(
        self, text: str, text_pair: str | None = None, *, attentions: bool = True, max_length: int | None = None
    ) -> Encoding: ...

    def encode_many(self, texts: Sequence[str]) -> list[Encoding]: ...  # encode(text, attentions=False) each

    def word_vectors(self, texts: list[str], word: str) -> np.ndarray: ...  # (B, S, D)

    def count_tokens(self, text: str, text_pair: str | None = None) -> int: ...

    def span_vectors(self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]) -> list[np.ndarray]: ...

    # (len(spans[i]), S, D) per text: the mean of the tokens that overlap each character span


class Encoder:
    """A transformer whose hidden states and attentions we read (BertModel, LlamaModel, ...).

    The model is shared by every session and thread: it is never mutated, and what to
    return (hidden states, attentions) is asked for per call.
    """

    kind = "encoder"
    # Whether fine-tuning (tasks.fine_tune) starts its new layer from a linear probe of the copy's own [CLS]
    # vectors rather than from random weights (Kumar et al. 2022, "Fine-Tuning can Distort Pretrained
    # Features", LP-FT). Chosen per kind of model on development sentences alone (48 of the sentiment set's 240
    # training sentences held out, trained on the other 192): minilm-l6, from random 0.79, from the probe 0.65;
    # smollm2-135m-mlm, whose first vector is not a [CLS] trained to sum up the text and whose states' scale
    # a random layer at BERT's rate does not overcome in 36 steps, from random 0.56 (chance), from the probe 0.90.
    fine_tune_from_probe = False

    def __init__(self, name: str, model: Any, tokenizer: Any, device: torch.device) -> None:
        self.name = name
        self.model = model.eval().to(device)
        self.tokenizer = tokenizer
        # Fast tokenizers hold truncation/padding as mutable state: concurrent calls from
        # several sessions fail ("Already borrowed") unless they take turns. The forward
        # passes themselves still run in parallel.
        self._tokenizer_lock = threading.Lock()
        self._decoded: dict[int, str] = {}  # decode_each's texts
        self.device = device
        self.max_length = _max_length(model, tokenizer)
        # Attention weights need the eager implementation; everything else runs on a twin that
        # shares every weight and uses PyTorch's fused attention, which is faster. On CPU its
        # linear layers use oneDNN's product (onednn.py).
        self.fast_model = _fused_twin(self.model)
        if self.fast_model is not self.model:
            use_onednn(self.fast_model)

    @cached_property
    def runs_bf16(self) -> bool:
        """Whether its linear layers multiply in bf16 (a class's server: onednn.use_bf16); never changes."""
        return runs_bf16(self.model)

    @property
    def base(self) -> Any:
        """The bare transformer under any task heads (eager attention: it can return attention weights)."""
        return getattr(self.model, "base_model", self.model)

    @property
    def fast_base(self) -> Any:
        """The same transformer, same weights, with fused attention: for calls that need no attention weights."""
        return getattr(self.fast_model, "base_model", self.fast_model)

    @property
    def config(self) -> Any:
        return self.model.config

    # -- tokenising ------------------------------------------------------------------
    def tokenize(self, text: str | list[str], text_pair: str | list[str] | None = None, **options: Any) -> Any:
        """Tensors for the model: truncated to what it reads, padded for a batch.

        Padding goes on the right, whatever the tokenizer's own default: every position then
        keeps the position id it has alone (left padding would shift a causal model's), and
        a sequence's own tokens are its first `attention_mask.sum()`.
        """
        settings = {
            "return_tensors": "pt",
            "truncation": True,
            "max_length": self.max_length,
            "padding": True,
            "padding_side": "right",
        }
        settings.update(options)
        if not settings["truncation"]:
            del settings["max_length"]
        text, text_pair = _readable(text), _readable(text_pair)
        with self._tokenizer_lock:
            return self.tokenizer(text, text_pair, **settings)

    def shown_tokens(self, ids: list[int]) -> list[str]:
        """token_strings for a learner's eyes. A byte-level tokenizer (GPT-2's alphabet: SmolLM2) spells a
        character beyond ASCII as the characters of its bytes ("ä¸Ń" for 中, "ðŁ" for part of 😀): such a token
        reads as its character ("中", a leading space kept as "Ġ") or, where it holds only part of one, as its
        bytes (‹f0 9f›, as shown_each). Every other token, and every token of another tokenizer, as the
        vocabulary spells it ("Ġbank", "##ing", "银")."""
        spelled = self.token_strings(ids)
        if not self._byte_level or all(_plain(token) for token in spelled):
            return spelled
        # shown_each: a whole character decoded, a piece as its bytes (whose gaps _marked leaves alone)
        return [
            token if _plain(token) else _marked(text) for token, text in zip(spelled, self.shown_each(ids), strict=True)
        ]

    @cached_property
    def _byte_level(self) -> bool:
        """Whether the tokenizer spells tokens in GPT-2's byte-level alphabet (its decoder reads bytes)."""
        backend = getattr(self.tokenizer, "backend_tokenizer", None)
        return type(getattr(backend, "decoder", None)).__name__ == "ByteLevel"

    def decode_each(self, ids: list[int]) -> list[str]:
        """Each id as text on its own (" bank", "##ing"), kept once read: the vocabulary bounds them, and a
        class's lenses read thousands a pass (a tokenizer's decode each time: 13 µs an id)."""
        missing = [i for i in set(ids) if i not in self._decoded]
        if missing:
            with self._tokenizer_lock:
                self._decoded.update((i, self.tokenizer.decode([i])) for i in missing)
        return [self._decoded[i] for i in ids]

    def shown_each(self, ids: list[int]) -> list[str]:
        """decode_each for a learner's eyes: a piece that is part of a character (a byte-level token alone, which
        decodes to "\ufffd") spelled as its bytes, ‹e2 80›, or as its vocabulary has it (<0xE2>), not as "�"."""
        texts = self.decode_each(ids)
        if not any("\ufffd" in text for text in texts):
            return texts
        cut = [i for i, text in zip(ids, texts, strict=True) if "\ufffd" in text]
        spelled = dict(zip(cut, self.token_strings(cut), strict=True))
        return [_byte_spelling(spelled[i]) if "\ufffd" in text else text for i, text in zip(ids, texts, strict=True)]

    def decode_rows(self, rows: list[list[int]]) -> list[str]:
        """Each row of ids as one text (" side", "walk": " sidewalk")."""
        with self._tokenizer_lock:
            return [self.tokenizer.decode(row) for row in rows]

    def token_strings(self, ids: list[int]) -> list[str]:
        """Ids as the vocabulary spells them (em, ##bed, Ġthe)."""
        with self._tokenizer_lock:
            return self.tokenizer.convert_ids_to_tokens(ids)

    def check_text(self, text: str) -> None:
        """An empty text is the learner's own mistake, said in one sentence (EmptyInput)."""
        if not text or not text.strip():
            raise EmptyInput()

    def model_inputs(self, batch: Any) -> dict[str, torch.Tensor]:
        """A tokenizer's batch as the model's keyword arguments, on its device: what every pass of the model
        (or of a copy of it, as fine-tuning trains) reads, so that a decoder made a masked LM
        (bidirectional.ReadsBothWays) is never run causally."""
        return {k: v.to(self.device) for k, v in batch.items()}

    @torch.inference_mode()
    def _forward(self, batch: Any, attentions: bool) -> Any:
        inputs = self.model_inputs(batch)
        if attentions:
            return self.base(**inputs, output_hidden_states=True, output_attentions=True)
        return self.fast_base(**inputs, output_hidden_states=True)

    # -- public API ------------------------------------------------------------------
    def encode(
        self, text: str, text_pair: str | None = None, *, attentions: bool = True, max_length: int | None = None
    ) -> Encoding:
        """Tokenise `text` (and `text_pair`) and return every layer's states and attentions.

        `attentions=False` skips them: at 512 tokens they are layers x heads x 1 MB.
        `max_length` reads fewer tokens than the model could (for views that draw every token).
        """
        self.check_text(text)
        if text_pair is not None:
            self.check_text(text_pair)
        batch = self.tokenize(text, text_pair, max_length=min(max_length or self.max_length, self.max_length))
        return self._encoding(batch, self._forward(batch, attentions=attentions), 0, text, text_pair)

    def read_tokens(self, text: str, text_pair: str | None = None) -> tuple[list[str], list[int]]:
        """The tokens encode(text, text_pair) reads, and their segments (0, or 1 for a pair's second text),
        without running the model: what a diagram of them needs."""
        return self._read(text, text_pair)[1:]

    def _read(self, text: str, text_pair: str | None) -> tuple[Any, list[str], list[int]]:
        """The checked texts tokenized (the batch), its tokens and their segments: read_tokens, read_texts."""
        self.check_text(text)
        if text_pair is not None:
            self.check_text(text_pair)
        batch = self.tokenize(text, text_pair)
        ids = batch["input_ids"][0]
        segments = batch.get("token_type_ids")
        return (
            batch,
            self.shown_tokens(ids.tolist()),
            (segments[0].tolist() if segments is not None else [0] * len(ids)),
        )

    def read_texts(self, text: str, text_pair: str | None = None) -> tuple[list[str], list[int]]:
        """read_tokens, each token with the text it is part of (0 the first, 1 the second; a special token goes
        with the text before it): what a diagram colours, also for a model without segment embeddings (a decoder
        made a masked LM reads "<|endoftext|> question <|endoftext|> passage" with no segment ids at all)."""
        batch, tokens, segments = self._read(text, text_pair)
        if text_pair is None or any(segments):
            return tokens, segments
        try:
            sequence = batch.sequence_ids(0)
        except ValueError:  # a slow (Python) tokenizer does not say which text a token came from
            return tokens, segments
        texts, last = [], 0
        for which in sequence:
            last = last if which is None else which
            texts.append(last)
        return tokens, texts

    def encode_many(self, texts: Sequence[str], pairs: Sequence[str | None] | None = None) -> list[Encoding]:
        """Many texts (each with its pair's second text, or None) in padded passes, without attention
        weights: each Encoding is what encode(text, pair, attentions=False) gives alone, to float rounding.
        What a class types at once (serving's MicroBatcher) costs a few passes, not one per learner."""
        seconds = list(pairs) if pairs is not None else [None] * len(texts)
        found: list[Encoding | None] = [None] * len(texts)
        for paired in (False, True):  # a tokenizer's batch is all single texts or all pairs
            where = [i for i, pair in enumerate(seconds) if (pair is not None) == paired]
            firsts = [texts[i] for i in where]
            for start, batch, _, out in self.batches(firsts, [str(seconds[i]) for i in where] if paired else None):
                for row in range(len(batch["input_ids"])):
                    i = where[start + row]
                    found[i] = self._encoding(batch, out, row, texts[i], seconds[i])
        return [e for e in found if e is not None]

    def _encoding(self, batch: Any, out: Any, row: int, text: str, text_pair: str | None) -> Encoding:
        """Row `row` of a forward pass over a (right-padded) batch, cut to that text's own tokens."""
        n = int(batch["attention_mask"][row].sum())
        ids = batch["input_ids"][row][:n]
        segments = batch.get("token_type_ids")
        words = _words(batch, row, text, sequence=0)
        word_ids = batch.word_ids(row)[:n]
        if text_pair is not None:
            second = _words(batch, row, text_pair, sequence=1)
            sequence = batch.sequence_ids(row)
            word_ids = [w + len(words) if w is not None and s == 1 else w for w, s in zip(word_ids, sequence)]
            words = words + second
        return Encoding(
            text=text if text_pair is None else f"{text} ||| {text_pair}",
            tokens=self.shown_tokens(ids.tolist()),
            token_ids=ids.numpy(),
            word_ids=word_ids,
            words=words,
            segment_ids=(segments[row][:n] if segments is not None else torch.zeros_like(ids)).numpy(),
            hidden_states=_stack(out.hidden_states, row)[:, :n],
            attentions=_stack(out.attentions, row)[:, :, :n, :n] if out.attentions is not None else None,
            truncated=bool(batch.encodings[row].overflowing),
        )

    def count_tokens(self, text: str, text_pair: str | None = None) -> int:
        """Tokens of `text` (and `text_pair`), special tokens included, before any cut."""
        return int(self.tokenize(text, text_pair, truncation=False, padding=False)["input_ids"].shape[1])

    @property
    def has_segments(self) -> bool:
        """Whether the model adds segment embeddings (BERT's A and B) to a pair's tokens."""
        return int(getattr(self.config, "type_vocab_size", 0) or 0) >= 2

    def pieces(self, word: str) -> list[str]:
        """The pieces the tokenizer cuts `word` into (embeddings -> em ##bed ##ding ##s)."""
        with self._tokenizer_lock:
            return list(self.tokenizer.tokenize(word))

    def word_vectors(self, texts: list[str], word: str) -> np.ndarray:
        """The vector of `word` in each text at every layer: (n_texts, layers + 1, dim).

        A word split into several pieces (em ##bed ##ding ##s) is the mean of its pieces;
        special tokens never count. The first occurrence (case-insensitive) is used.
        """
        if not word.strip():
            raise EmptyInput("word")
        rows: list[np.ndarray] = []
        for start, batch, _, out in self.batches(texts):
            states = torch.stack(out.hidden_states, 1)  # (batch, layers + 1, tokens, dim)
            for i in range(len(batch["input_ids"])):
                rows.append(word_vector(states[i], batch, i, texts[start + i], word, start + i).float().cpu().numpy())
        return np.stack(rows)

    def span_vectors(self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]) -> list[np.ndarray]:
        """For each text, the states of each character span [a, b) at every layer: (spans, layers + 1, dim)
        float32, the mean of the tokens that overlap the span (special tokens never do); NaN where none
        does (the text was cut before it). How probing reads words it did not tokenise itself."""
        out: list[np.ndarray] = []
        for start, batch, _, result in self.batches(texts):
            states = torch.stack(result.hidden_states, 1).float().cpu().numpy()  # (batch, S, T, D)
            for i in range(len(states)):
                chars = [
                    (c.start, c.end) if s == 0 and (c := batch.token_to_chars(i, p)) is not None else None
                    for p, s in enumerate(batch.sequence_ids(i))
                ]
                out.append(span_means(states[i], chars, spans[start + i]))
        return out

    def batches(
        self, texts: Sequence[str], text_pairs: Sequence[str] | None = None, *, attentions: bool = False
    ) -> Iterator[tuple[int, Any, torch.Tensor, Any]]:
        """Run `texts` (with `text_pairs`) through the model BATCH_SIZE at a time.

        Yields (index of the batch's first text, the tokenised batch, its special-tokens
        mask (batch, tokens) bool, the model's output with every layer's hidden states, and
        attentions if asked). Padding is on the right: text i's tokens are its first
        `batch["attention_mask"][i].sum()`.
        """
        for start in range(0, len(texts), BATCH_SIZE):
            chunk = list(texts[start : start + BATCH_SIZE])
            pairs = None if text_pairs is None else list(text_pairs[start : start + BATCH_SIZE])
            for text in chunk + (pairs or []):
                self.check_text(text)
            batch = self.tokenize(chunk, pairs, return_special_tokens_mask=True)
            special = batch.pop("special_tokens_mask").bool()
            yield start, batch, special, self._forward(batch, attentions=attentions)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())


class MaskedLM(Encoder):
    """An encoder with BERT's pre-training heads: masked-word prediction and, where trained, NSP."""

    kind = "masked_lm"

    @property
    def mask_token(self) -> str:
        return str(self.tokenizer.mask_token)

    def _mlm_head(self) -> Any | None:
        """BERT's MLM head alone (dense + GELU + LayerNorm + tied decoder), if the model has one."""
        return getattr(getattr(self.model, "cls", None), "predictions", None)

    @torch.inference_mode()
    def logits_at(self, batch: Any, positions: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits at `positions` of the first sequence of `batch`: (positions, vocab).

        BERT's MLM head runs only there, not over the whole sequence.
        """
        inputs = {k: v.to(self.device) for k, v in batch.items()}
        head = self._mlm_head()
        where = positions.to(self.device)
        if head is None:
            return self.fast_model(**inputs).logits[0, where].float()
        if self._trunk is None:
            states = self.fast_base(**inputs).last_hidden_state[0, where]
        else:  # every layer but the last over all tokens; the last one only where the head reads
            below = self._trunk(**inputs).last_hidden_state[:1]
            mask = inputs.get("attention_mask")
            states = _layer_at(self.fast_base.encoder.layer[-1], below, where, None if mask is None else mask[:1])[0]
        return self._head_logits(head, states)

    def _head_logits(self, head: Any, states: torch.Tensor) -> torch.Tensor:
        """BERT's MLM head on last-layer states (positions, dim): transform, then the decoder (positions, vocab)."""
        weight_t, bias = self._decoder
        return torch.addmm(bias, head.transform(states), weight_t).float()

    @cached_property
    def _trunk(self) -> Any | None:
        """The fused-attention transformer without its last layer and pooler, same weights
        (None where the last layer is not BERT's plain post-norm layer).

        The MLM head reads the last layer only at the [MASK]s. Its keys and values need every
        token of the layer below, but its queries and feed-forward need only those positions:
        `_layer_at` runs them there, which spares most of one layer's work.
        """
        base = self.fast_base
        layers = getattr(getattr(base, "encoder", None), "layer", None)
        if (
            layers is None
            or len(layers) < 2
            or not hasattr(base, "pooler")
            or getattr(self.config, "is_decoder", False)
            or getattr(self.config, "position_embedding_type", "absolute") != "absolute"
            or not all(hasattr(layers[-1], part) for part in ("attention", "intermediate", "output"))
            or not hasattr(layers[-1].attention, "self")
        ):
            return None
        trunk = sharing_weights(base)
        trunk.encoder.layer = torch.nn.ModuleList(list(trunk.encoder.layer)[:-1])
        trunk.pooler = None
        return trunk

    @cached_property
    def _decoder(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The MLM decoder's weight, transposed and contiguous (vocab x dim -> dim x vocab), and bias.

        A copy, made once: the model itself is never changed. For a few positions the product
        is a matrix-vector one, bound by reading the V x D matrix, and this layout reads it
        faster on CPU than nn.Linear's (`make bench` times fill_mask).
        """
        head = self._mlm_head()
        assert head is not None
        decoder = head.decoder
        bias = decoder.bias if decoder.bias is not None else torch.zeros(decoder.out_features, device=self.device)
        return decoder.weight.detach().t().contiguous(), bias.detach()

    def mask_logits(self, text: str) -> tuple[Any, torch.Tensor, torch.Tensor]:
        """Logits over the vocabulary at each [MASK]: (batch, positions, logits (masks, vocab))."""
        self.check_text(text)
        batch = self.tokenize(text)
        positions = (batch["input_ids"][0] == self.tokenizer.mask_token_id).nonzero().flatten()
        if len(positions) == 0:
            raise NoMaskToken(self.mask_token)
        return batch, positions, self.logits_at(batch, positions)

    def fill_mask(self, text: str, top_k: int = 5) -> list[list[Guess]]:
        """For each [MASK] in order, the `top_k` (token, probability) predictions."""
        _, _, logits = self.mask_logits(text)
        return self._guesses(logits, top_k)

    def _guesses(self, logits: torch.Tensor, top_k: int) -> list[list[Guess]]:
        probs = logits.softmax(-1)
        top = probs.topk(min(top_k, probs.shape[-1]), dim=-1)
        return [
            list(zip(self.decode_each(indices.tolist()), values.tolist()))
            for values, indices in zip(top.values.cpu(), top.indices.cpu())
        ]

    def check_masked(self, text: str) -> None:
        """Raise what fill_mask would (EmptyInput, NoMaskToken) without running the model."""
        self.check_text(text)
        ids = self.tokenize(text, padding=False, return_tensors=None)["input_ids"]
        if self.tokenizer.mask_token_id not in ids:
            raise NoMaskToken(self.mask_token)

    @torch.inference_mode()
    def fill_masks(self, texts: list[str], top_k: int = 5) -> list[list[list[Guess]]]:
        """fill_mask for several texts in one forward pass: what a server does with the sentences
        that learners send at the same moment. Raises what fill_mask would for any text."""
        for text in texts:
            self.check_text(text)
        batch = self.tokenize(texts)
        rows, positions = (batch["input_ids"] == self.tokenizer.mask_token_id).nonzero(as_tuple=True)
        counts = torch.bincount(rows, minlength=len(texts)).tolist()
        if 0 in counts:  # checked on the batch's own tokens: no second tokenisation per text
            raise NoMaskToken(self.mask_token)
        guesses = self._guesses(self.logits_of(batch, rows, positions), top_k)
        out, start = [], 0
        for n in counts:
            out.append(guesses[start : start + n])
            start += n
        return out

    @torch.inference_mode()
    def logits_of(self, batch: Any, rows: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits for the tokens at (rows, positions) of a whole batch: (N, vocab)."""
        inputs = {k: v.to(self.device) for k, v in batch.items()}
        rows_d, positions_d = rows.to(self.device), positions.to(self.device)
        head = self._mlm_head()
        if head is None:
            return self.fast_model(**inputs).logits[rows_d, positions_d].float()
        return self._head_logits(head, self.fast_base(**inputs).last_hidden_state[rows_d, positions_d])

    @property
    def has_nsp(self) -> bool:
        return getattr(getattr(self.model, "cls", None), "seq_relationship", None) is not None

    @torch.inference_mode()
    def next_sentence(self, a: str, b: str) -> float:
        """Probability that `b` follows `a` (BERT's IsNext class)."""
        if not self.has_nsp:
            raise MissingCapability(self.name, "next-sentence prediction", "this checkpoint has no NSP head")
        self.check_text(a)
        self.check_text(b)
        batch = self.tokenize(a, b)
        pooled = self.fast_base(**{k: v.to(self.device) for k, v in batch.items()}).pooler_output
        logits = self.model.cls.seq_relationship(pooled)  # (1, 2): [IsNext, NotNext]
        return float(logits.softmax(-1)[0, 0])


class CausalLM(Encoder):
    """A left-to-right language model (GPT-2, SmolLM2): each token sees only what came before."""

    kind = "causal_lm"

    def next_words(self, text: str, top_k: int = 10) -> list[Guess]:
        """The `top_k` most likely next tokens after `text`, with probabilities (an ELMo's forward LM
        answers in the same shape: capabilities.WritesNext)."""
        return self.next_words_many([text], top_k)[0]

    def head_logits(self, states: torch.Tensor) -> torch.Tensor:
        """The output head (the unembedding) on last-layer states (..., D): float logits (..., V)."""
        return self.fast_model.get_output_embeddings()(states).float()

    @cached_property
    def word_starts(self) -> torch.Tensor:
        """(V,) bool over the output head's rows: the tokens that begin a new word, a space then a letter or
        digit (Ġbank, ▁bank). Only these fill a blank after the words before it: SmolLM2's likeliest tokens
        after "An" go on that word ("archy": Anarchy), and 150 of its 496 top guesses on 62 blanks were such
        pieces or punctuation. A vocabulary that marks no spaces: every token with a letter or digit."""
        size = int(self.fast_model.get_output_embeddings().weight.shape[0])
        ids = list(range(min(size, len(self.tokenizer))))
        # the space as the vocabulary marks it (a decoded "▁bank" loses it), the letter as text (Ġâ€ĵ is " –")
        spaced = [(s or "")[:1] in ("Ġ", "▁") for s in self.token_strings(ids)]
        texts = [text.strip() for text in self.decode_each(ids)]
        starts = [space and text[:1].isalnum() for space, text in zip(spaced, texts, strict=True)]
        if not any(starts):
            starts = [any(c.isalnum() for c in text) for text in texts]
        return torch.tensor(starts + [False] * (size - len(starts)), device=self.device)

    def last_ids(self, text: str, room: int = 0) -> torch.Tensor:
        """The token ids of `text` the model reads before its next word: the end of it, where it is longer than
        the model reads (less `room` tokens, for words to follow)."""
        ids = self.tokenize(text[-MAX_CHARS:], truncation=False, padding=False)["input_ids"][0]
        return ids[-(self.max_length - room) :]

    @torch.inference_mode()
    def next_words_many(self, texts: Sequence[str], top_k: int = 10) -> list[list[Guess]]:
        """next_words for several texts in right-padded passes of BATCH_SIZE (a causal model's tokens never
        see the padding after them, and keep their positions), the vocabulary's logits taken at each text's
        last token only: what a class's blanks ask for at once costs a few passes, not one each."""
        for text in texts:
            self.check_text(text)
        found: list[list[Guess]] = []
        for start in range(0, len(texts), BATCH_SIZE):
            rows = [self.last_ids(text) for text in texts[start : start + BATCH_SIZE]]
            ids, mask = right_padded(rows)
            states = self.fast_base(input_ids=ids.to(self.device), attention_mask=mask.to(self.device))
            last = states.last_hidden_state[torch.arange(len(rows)), torch.tensor([len(r) - 1 for r in rows])]
            logits = self.head_logits(last)  # (B, V): the head at the last tokens only
            top = logits.softmax(-1).topk(top_k)
            for indices, values in zip(top.indices.cpu().tolist(), top.values.cpu().tolist(), strict=True):
                found.append(list(zip(self.shown_each(indices), values)))  # a piece of a character as its bytes
        return found


@dataclass(frozen=True)
class Reading:
    """A reader's scores for one (question, passage): every token it may point at, with the [CLS] token
    first and the closing [SEP] last, as a SQuAD 2.0 model also points there for "no answer"."""

    passage: str
    tokens: list[str]  # "[CLS]", the passage's tokens, "[SEP]"
    chars: list[tuple[int, int] | None]  # each passage token's character span; None for the two specials
    start_scores: np.ndarray  # (tokens,)
    end_scores: np.ndarray  # (tokens,)
    cut: bool  # the passage was longer than the model reads: its end is not in `tokens`


class Reader(Encoder):
    """An encoder fine-tuned for extractive question answering (BertForQuestionAnswering): a linear
    layer gives each token of "[CLS] question [SEP] passage [SEP]" a start score and an end score."""

    kind = "qa"

    def check_question(self, question: str, passage: str) -> None:
        """The learner's own mistake (an empty text, a question that leaves the passage no room), said
        before the pair joins a batch that others share."""
        self.check_text(question)
        self.check_text(passage)
        asked = self.count_tokens(question)
        if asked + 8 > self.max_length:  # the passage needs a few tokens' room (and its special tokens)
            raise QuestionTooLong(self.name, asked, self.max_length)

    def read(self, question: str, passage: str) -> Reading:
        return self.read_many([(question, passage)])[0]

    @torch.inference_mode()
    def read_many(self, asked: Sequence[tuple[str, str]]) -> list[Reading]:
        """read() for several (question, passage) pairs in padded passes of BATCH_SIZE: each Reading is
        what it reads alone, to float rounding. A class's passages (serving's MicroBatcher) cost a few
        passes, where one per learner read the model's weights from memory thirty times."""
        for question, passage in asked:
            self.check_question(question, passage)
        found: list[Reading] = []
        for start in range(0, len(asked), BATCH_SIZE):
            chunk = asked[start : start + BATCH_SIZE]
            batch = self.tokenize([q for q, _ in chunk], [p for _, p in chunk], truncation="only_second")
            last = self.fast_base(**self.model_inputs(batch)).last_hidden_state
            logits = self.model.qa_outputs(last).float().cpu().numpy()  # (B, T, 2)
            found += [self._reading(batch, row, logits[row], passage) for row, (_, passage) in enumerate(chunk)]
        return found

    def _reading(self, batch: Any, row: int, logits: np.ndarray, passage: str) -> Reading:
        """Row `row` of a read batch: the passage's tokens between the two specials, with their scores."""
        inside = [k for k, s in enumerate(batch.sequence_ids(row)) if s == 1]
        if not inside:
            raise EmptyInput()
        keep = [0, *inside, inside[-1] + 1]
        ids = batch["input_ids"][row, keep].tolist()
        spans = [batch.token_to_chars(row, k) for k in inside]
        chars: list[tuple[int, int] | None] = [None, *[(c.start, c.end) for c in spans], None]
        read = _readable(passage)
        cut = bool(spans) and spans[-1].end < len(read.rstrip())
        return Reading(read, self.decode_each(ids), chars, logits[keep, 0], logits[keep, 1], cut)


# -- helpers -------------------------------------------------------------------------
def _layer_at(layer: Any, hidden: torch.Tensor, where: torch.Tensor, attention_mask: Any) -> torch.Tensor:
    """BERT layer `layer`'s output at positions `where` only: (batch, positions, dim).

    Keys and values come from every token of `hidden` (batch, tokens, dim), the layer's input;
    queries, the attention output and the feed-forward run only at `where`. The same sums as
    the whole layer, in the same order, for fewer rows.
    """
    attention = layer.attention.self
    batch, tokens, _ = hidden.shape
    size = attention.attention_head_size

    def heads(x: torch.Tensor) -> torch.Tensor:  # (batch, n, dim) -> (batch, heads, n, size)
        return x.view(batch, x.shape[1], -1, size).transpose(1, 2)

    here = hidden[:, where]
    keep = None if attention_mask is None else attention_mask[:, None, None, :tokens].bool()
    context = torch.nn.functional.scaled_dot_product_attention(
        heads(attention.query(here)),
        heads(attention.key(hidden)),
        heads(attention.value(hidden)),
        attn_mask=keep,
        scale=getattr(attention, "scaling", size**-0.5),
    )
    mixed = layer.attention.output(context.transpose(1, 2).reshape(batch, len(where), -1), here)
    return layer.output(layer.intermediate(mixed), mixed)


def sharing_weights(module: Any) -> Any:
    """A deep copy of `module` whose memo maps each parameter and buffer to itself: new modules
    and config to change freely, the same weight tensors (no extra memory)."""
    shared = {id(t): t for t in (*module.parameters(), *module.buffers())}
    return copy.deepcopy(module, memo=shared)


def _fused_twin(model: Any) -> Any:
    """`model` with PyTorch's fused attention (SDPA), sharing every parameter and buffer.

    A copy sharing every weight (`sharing_weights`); the eager original stays as it is for
    attention weights. Where SDPA is not supported, `model` itself is returned.
    """
    config = getattr(model, "config", None)
    if config is None or getattr(config, "_attn_implementation", None) != "eager":
        return model
    twin = sharing_weights(model)
    try:
        twin.set_attn_implementation("sdpa")
    except (ValueError, ImportError, NotImplementedError):
        return model
    return twin if twin.config._attn_implementation == "sdpa" else model


def span_means(
    states: np.ndarray, token_chars: Sequence[tuple[int, int] | None], spans: Sequence[tuple[int, int]]
) -> np.ndarray:
    """states (S, T, D) and each token's character span (None: a special token) -> (len(spans), S, D):
    the mean over the tokens that overlap each span [a, b), NaN where no token does."""
    out = np.full((len(spans), states.shape[0], states.shape[2]), np.nan, dtype=np.float32)
    for k, (a, b) in enumerate(spans):
        at = [t for t, c in enumerate(token_chars) if c is not None and c[0] < b and c[1] > a]
        if at:
            out[k] = states[:, at].mean(1)
    return out


def _stack(layers: tuple[torch.Tensor, ...], index: int) -> np.ndarray:
    return torch.stack([layer[index] for layer in layers]).float().cpu().numpy()


def right_padded(rows: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Token id rows of different lengths as one batch, zeros after each row, and its attention mask."""
    ids = torch.zeros((len(rows), max(len(r) for r in rows)), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, row in enumerate(rows):
        ids[i, : len(row)], mask[i, : len(row)] = row, 1
    return ids, mask


def _max_length(model: Any, tokenizer: Any) -> int:
    """Tokens the model reads at once: its own limit, and never more than MAX_TOKENS."""
    limits = [getattr(model.config, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)]
    usable = [int(x) for x in limits if isinstance(x, int) and 0 < x < 1_000_000]
    return min([*usable, MAX_TOKENS])


def _readable(text: Any) -> Any:
    """Text (a string, a list of strings, or None) made valid for a tokenizer and cut at MAX_CHARS."""
    if isinstance(text, str):
        return valid_text(text[:MAX_CHARS])
    if isinstance(text, list):
        return [_readable(t) for t in text]
    return text


def _words(batch: Any, index: int, text: str, sequence: int = 0) -> list[str]:
    """Word strings of text `sequence` (0, or 1 for a pair's second) of batch item `index`."""
    word_ids = [w for w, s in zip(batch.word_ids(index), batch.sequence_ids(index)) if w is not None and s == sequence]
    if not word_ids:
        return []
    words = []
    for w in range(max(word_ids) + 1):
        span = batch.word_to_chars(index, w, sequence_index=sequence)
        words.append(text[span.start : span.end] if span is not None else "")
    return words


def word_vector(states: torch.Tensor, batch: Any, index: int, text: str, word: str, number: int) -> torch.Tensor:
    """The mean of `word`'s pieces in text `index` of `batch`: states (layers, tokens, dim) -> (layers, dim).

    `number` is the text's place among all the caller's texts, for the error message.
    """
    pieces = _word_pieces(batch, index, text, word)
    if not pieces:
        raise WordNotInText(word, text, number)
    return states[:, pieces].mean(1)


def _word_pieces(batch: Any, index: int, text: str, word: str) -> list[int]:
    """Token positions of the first use of `word` in text `index` of `batch` (model_zoo.words' rule:
    the same use a page finds and puts in bold), by the tokens' character offsets."""
    found = find_word(text, word)
    if found is None:
        return []
    start, end = found.span()
    positions = []
    for position, sequence in enumerate(batch.sequence_ids(index)):
        span = batch.token_to_chars(index, position) if sequence == 0 else None
        if span is not None and span.start < end and span.end > start:
            positions.append(position)
    return positions


def _byte_table() -> dict[str, int]:
    """GPT-2's byte-level alphabet (the byte each of its 256 characters stands for), as its tokenizers spell
    tokens (Radford et al. 2019; SmolLM2 and GPT-2 alike)."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    moved = [b for b in range(256) if b not in kept]
    return {chr(b): b for b in kept} | {chr(256 + n): b for n, b in enumerate(moved)}


_BYTES = _byte_table()
_BYTE_TOKEN = re.compile(r"<0x[0-9A-Fa-f]{2}>")  # a sentencepiece byte, spelled as its vocabulary has it


def _plain(token: str) -> bool:
    """A token whose characters all stand for ASCII bytes in the byte-level alphabet ("Ġbank", "<|endoftext|>"):
    it reads as spelled."""
    return all(_BYTES.get(ch, 0) < 0x80 for ch in token)


def _marked(text: str) -> str:
    """Decoded text with the byte-level marks a page reads for a space and a new line (Ġ, Ċ)."""
    return text.replace(" ", "Ġ").replace("\n", "Ċ")


def _byte_spelling(piece: str) -> str:
    """A token that is part of a character, as its bytes (‹e2 80›) where it is spelled in the byte-level
    alphabet; otherwise as the vocabulary spells it (a sentencepiece byte: <0xE2>)."""
    if piece and not _BYTE_TOKEN.fullmatch(piece) and all(ch in _BYTES for ch in piece):
        return "‹" + BYTE_GAP.join(f"{_BYTES[ch]:02x}" for ch in piece) + "›"
    return piece
