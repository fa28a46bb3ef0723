"""Where each token looks: a head's query and key vectors, and what every head attends to.

`query_key` recomputes one head's attention from the model's own weights (q = W_q h,
k = W_k h, softmax(q·k / sqrt(d))) so a learner can see the mechanism, and checks it
against the attention the model reports. `head_summary` measures, for every layer and
head, the patterns of Clark et al. (2019), "What does BERT look at?": attention to [CLS],
to [SEP], to the token itself, to the previous and next token, and its entropy.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..contextual import BATCH_SIZE, Encoder
from ..errors import MissingCapability

# Clark et al.'s measures; "first" is [CLS] in BERT and the first token in a GPT.
METRICS = ("first", "sep", "self", "prev", "next", "entropy")


@dataclass(frozen=True)
class QueryKey:
    """One head of one layer, computed from the weights: (tokens,) rows are queries, columns keys."""

    tokens: list[str]  # (tokens,)
    layer: int
    head: int
    queries: np.ndarray  # (tokens, head_dim) q of each token, after rotary positions where the model uses them
    keys: np.ndarray  # (tokens, head_dim) k of each token, for this head (shared by a group in GQA)
    scores: np.ndarray  # (tokens, tokens) q·k × scaling; -inf where a causal model may not look
    weights: np.ndarray  # (tokens, tokens) softmax of each row of scores
    model_weights: np.ndarray  # (tokens, tokens) the attention the model itself reported for this head
    scaling: float  # 1 / sqrt(head_dim)
    causal: bool

    @property
    def max_difference(self) -> float:
        """Largest gap between our softmax(q·k) and the model's attention (float rounding only)."""
        return float(np.abs(self.weights - self.model_weights).max())

    def row(self, query: int) -> QueryRow:
        """What token `query` sees: the keys it may look at (a causal model: itself and those before)."""
        visible = np.isfinite(self.scores[query])  # (tokens,)
        return QueryRow(
            keys=np.flatnonzero(visible).tolist(),
            scores=self.scores[query][visible].tolist(),
            weights=self.weights[query][visible].tolist(),
            vectors=np.vstack([self.queries[query], self.keys[visible]]),
        )


@dataclass(frozen=True)
class QueryRow:
    """One query token's row of a QueryKey, over the V keys it may look at."""

    keys: list[int]  # (V,) the visible keys' token indices, in order
    scores: list[float]  # (V,) q·k × scaling
    weights: list[float]  # (V,) the softmax of the scores
    vectors: np.ndarray  # (1 + V, head_dim) the query's q, then each visible key's k


@dataclass(frozen=True)
class HeadSummary:
    """Clark et al.'s measures for every head, averaged over query tokens (and sentences)."""

    metrics: dict[str, np.ndarray]  # METRICS name -> (layers, heads); attention shares in [0, 1], entropy in nats
    uniform_entropy: float  # entropy of attending evenly to every visible token, for scale
    sentences: int
    tokens: int  # query tokens averaged over, in all sentences

    @property
    def shape(self) -> tuple[int, int]:
        layers, heads = self.metrics["self"].shape
        return int(layers), int(heads)

    def ceiling(self, metric: str) -> float:
        """The top of a measure's colour scale: 1 for a share, and for entropy the larger of the uniform
        entropy and the highest head's (so that a scale reads the same from one text to the next)."""
        if metric != "entropy":
            return 1
        return max(self.uniform_entropy, float(self.metrics[metric].max()))

    def rows(self) -> list[dict[str, float | int]]:
        """One row per head (layer, head, then each measure): a table for CSV export."""
        layers, heads = self.shape
        return [
            {"layer": layer, "head": head, **{m: float(self.metrics[m][layer, head]) for m in METRICS}}
            for layer in range(layers)
            for head in range(heads)
        ]

    def to_csv(self) -> str:
        """`rows` as CSV text, a header line first."""
        import csv
        import io

        table = self.rows()
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
        return buffer.getvalue()


def shown_metrics(causal: bool) -> tuple[str, ...]:
    """The METRICS a model shows: a causal model has no [SEP] and cannot look at the next token."""
    return tuple(m for m in METRICS if not (causal and m in ("sep", "next")))


def sentence_summary(
    attentions: np.ndarray, special: np.ndarray, causal: bool = False
) -> tuple[dict[str, np.ndarray], float]:
    """Clark et al.'s measures of one sentence: name -> (layers, heads), and the uniform entropy.

    attentions: (layers, heads, tokens, tokens), each row a distribution over keys.
    special: (tokens,) bool, True at [CLS]/[SEP]/... ; the first token counts as "first"
    and the other special tokens as [SEP]. causal: row i sees only tokens 0..i (a GPT).
    """
    n = attentions.shape[-1]
    rows = attentions.astype(np.float64)
    sep = special.copy()
    sep[0] = False
    eye = np.arange(n)
    visible = eye + 1 if causal else np.full(n, n)  # how many keys each query may look at
    out = {
        "first": rows[..., :, 0].mean(-1),
        "sep": rows[..., :, sep].sum(-1).mean(-1),
        "self": rows[..., eye, eye].mean(-1),
        "prev": rows[..., eye[1:], eye[1:] - 1].mean(-1) if n > 1 else np.zeros(rows.shape[:2]),
        "next": rows[..., eye[:-1], eye[:-1] + 1].mean(-1) if n > 1 else np.zeros(rows.shape[:2]),
        "entropy": -(rows * np.log(np.where(rows > 0, rows, 1.0))).sum(-1).mean(-1),
    }
    return out, float(np.log(visible).mean())


def head_summary(
    encoder: Encoder,
    texts: Sequence[str | tuple[str, str]],
    on_progress: Callable[[float], object] | None = None,
) -> HeadSummary:
    """Clark et al.'s measures averaged over `texts` (each weighted by its number of tokens).

    A text may be a sentence pair (a, b), read as [CLS] a [SEP] b [SEP]. Single texts run
    in batches (padded on the right; each is measured on its own tokens only).
    `on_progress` hears the share done after each batch.
    """
    singles = [text for text in texts if isinstance(text, str)]
    pairs = [text for text in texts if isinstance(text, tuple)]
    runs = [encoder.batches(singles, attentions=True)]  # singles in batches, each pair alone
    runs += [encoder.batches([a], [b], attentions=True) for a, b in pairs]
    batches = -(-len(singles) // BATCH_SIZE) + len(pairs)
    causal = encoder.kind == "causal_lm"
    totals: dict[str, np.ndarray] = {}
    tokens = 0
    uniform = 0.0
    for done, (_, batch, special, out) in enumerate(itertools.chain(*runs), 1):
        attentions = torch.stack(out.attentions, 1)  # (batch, layers, heads, tokens, tokens)
        for i, n in enumerate(batch["attention_mask"].sum(1).tolist()):
            measures, flat = sentence_summary(
                attentions[i, :, :, :n, :n].float().cpu().numpy(), special[i, :n].numpy(), causal=causal
            )
            for name, value in measures.items():
                totals[name] = totals.get(name, 0) + value * n
            tokens += n
            uniform += flat * n
        if on_progress is not None:
            on_progress(done / batches)
    return HeadSummary(
        metrics={name: value / tokens for name, value in totals.items()},
        uniform_entropy=uniform / tokens,
        sentences=len(texts),
        tokens=tokens,
    )


@torch.inference_mode()
def query_key(
    encoder: Encoder, text: str, layer: int, head: int, text_pair: str | None = None, max_length: int | None = None
) -> QueryKey:
    """Recompute head `head` of layer `layer` from W_q and W_k, and compare it with the model's own.

    Supported: BERT-family self-attention (query/key), GPT-2 (c_attn) and Llama (q_proj/k_proj
    with rotary positions, grouped key heads). Others raise MissingCapability.
    `text_pair` is read as BERT reads a pair; `max_length` reads only the first tokens (a
    view of every token pair stays readable).
    """
    encoder.check_text(text)
    if text_pair is not None:
        encoder.check_text(text_pair)
    base = encoder.base
    batch = encoder.tokenize(text, text_pair, max_length=min(max_length or encoder.max_length, encoder.max_length))
    inputs = {k: v.to(encoder.device) for k, v in batch.items()}
    out = base(**inputs, output_hidden_states=True, output_attentions=True)
    layers = len(out.attentions)
    heads = out.attentions[0].shape[1]
    if not (0 <= layer < layers and 0 <= head < heads):
        raise ValueError(f"layer {layer}, head {head}: the model has {layers} layers of {heads} heads")
    h = out.hidden_states[layer]  # (1, tokens, dim): the input to `layer`
    q, k, module, causal = _project(base, layer, h, inputs)  # (1, heads, tokens, d), (1, kv_heads, tokens, d)
    kv_head = head // (q.shape[1] // k.shape[1])
    qh, kh = q[0, head].float(), k[0, kv_head].float()  # (tokens, d)
    scaling = float(module.scaling)
    scores = qh @ kh.T * scaling  # (tokens, tokens)
    if causal:
        n = scores.shape[0]
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool, device=scores.device).triu(1), float("-inf"))
    weights = scores.softmax(-1)
    return QueryKey(
        tokens=encoder.token_strings(batch["input_ids"][0].tolist()),
        layer=layer,
        head=head,
        queries=qh.cpu().numpy(),
        keys=kh.cpu().numpy(),
        scores=scores.cpu().numpy(),
        weights=weights.cpu().numpy(),
        model_weights=out.attentions[layer][0, head].float().cpu().numpy(),
        scaling=scaling,
        causal=causal,
    )


def _project(base: Any, layer: int, h: torch.Tensor, inputs: dict) -> tuple[torch.Tensor, torch.Tensor, Any, bool]:
    """Queries and keys of every head of `layer` from its input `h`, as the layer computes them."""
    if hasattr(base, "encoder") and hasattr(base.encoder, "layer"):  # BERT and its family
        module = base.encoder.layer[layer].attention.self
        shape = (*h.shape[:-1], -1, module.attention_head_size)
        q = module.query(h).view(shape).transpose(1, 2)
        k = module.key(h).view(shape).transpose(1, 2)
        return q, k, module, bool(getattr(module, "is_causal", False))
    if hasattr(base, "h"):  # GPT-2
        block = base.h[layer]
        module = block.attn
        q, k, _ = module.c_attn(block.ln_1(h)).split(module.split_size, dim=2)
        shape = (*h.shape[:-1], -1, module.head_dim)
        return q.view(shape).transpose(1, 2), k.view(shape).transpose(1, 2), module, True
    if hasattr(base, "layers") and hasattr(base, "rotary_emb"):  # Llama (SmolLM2)
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        block = base.layers[layer]
        module = block.self_attn
        x = block.input_layernorm(h)
        shape = (*h.shape[:-1], -1, module.head_dim)
        q = module.q_proj(x).view(shape).transpose(1, 2)
        k = module.k_proj(x).view(shape).transpose(1, 2)
        positions = torch.arange(h.shape[1], device=h.device)[None]
        cos, sin = base.rotary_emb(x, positions)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        return q, k, module, True
    raise MissingCapability(type(base).__name__, "query-key view", "its attention layout is not one ContextLab reads")


def farthest_link(attn: np.ndarray, i: int, word_ids: list[int | None]) -> tuple[int, int, int, float] | None:
    """(layer, head, token, weight) of the link from token i that carries the most attention farthest (the
    largest weight x distance) in attentions (layers, heads, tokens, tokens). Only tokens of words count
    (word_ids as an Encoding gives them: None for [CLS], [SEP] and the like). None when there is no other word."""
    words = [j for j, word in enumerate(word_ids[: attn.shape[-1]]) if j != i and word is not None]
    if not words:
        return None
    rows = attn[:, :, i, words]  # (layers, heads, words)
    reach = rows * np.abs(np.array(words) - i)
    layer, head, k = np.unravel_index(int(reach.argmax()), reach.shape)
    return int(layer), int(head), words[k], float(rows[layer, head, k])


def strongest_head_reach(attn: np.ndarray, i: int) -> np.ndarray:
    """(L, T): how much attention token i pays each token in each layer, read from the layer's strongest
    head for that token (the maximum over heads) of attentions (L, H, T, T)."""
    return np.asarray(attn)[:, :, i, :].max(axis=1)


def attention_to_later_tokens(attn: np.ndarray) -> float:
    """The largest weight any head gives a token after the one attending, in attentions (..., T, T): 0
    under a causal mask (up to rounding), which is what a decoder's lesson checks."""
    attn = np.asarray(attn)
    later = np.triu(np.ones(attn.shape[-2:], dtype=bool), k=1)
    return float(np.abs(attn[..., later]).max()) if later.any() else 0.0


def uniform_first_token_share(tokens: int) -> float:
    """The share of attention the first token would get on average if every query spread its weight
    evenly over the tokens it may see (a causal model: query q sees q + 1 tokens), queries 2..T."""
    return float(np.mean([1 / (q + 1) for q in range(1, tokens)])) if tokens > 1 else 1.0


def mean_attention_from(attn: np.ndarray, i: int, layer: int = -1) -> np.ndarray:
    """(T,): the attention token i pays each token in `layer` (default the last) of attentions (L, H, T, T),
    averaged over the layer's heads."""
    return np.asarray(attn)[layer, :, i, :].mean(0)


def layer_mean(attn: np.ndarray, layer: int = 0) -> np.ndarray:
    """(T, T): where layer `layer` of attentions (L, H, T, T) looks, averaged over its heads."""
    return np.asarray(attn)[layer].mean(0)


def looks_only_left(attn: np.ndarray) -> bool:
    """True when no head of attentions (..., T, T) gives a later token more than rounding (a causal mask)."""
    return attention_to_later_tokens(attn) < 1e-6


def heads_grid(attn: np.ndarray | None) -> tuple[int, int]:
    """(layers, heads) of attentions (L, H, T, T); (0, 0) when there are none."""
    if attn is None:
        return 0, 0
    layers, heads = np.shape(attn)[:2]
    return int(layers), int(heads)


def default_query(word_ids: list[int | None], causal: bool) -> int:
    """The query token a view starts on: a left-to-right model's last token (it sees the whole sentence),
    else the first token of a word (in BERT every token sees it all; [CLS] is not a word)."""
    if causal:
        return len(word_ids) - 1
    return next((i for i, w in enumerate(word_ids) if w is not None), 0)


def spelled(token: str) -> str:
    """A token as its word is written: without a byte-level BPE (Ġ) or SentencePiece (▁) space mark."""
    return token.strip("Ġ▁ ")


def most_attended(attn: np.ndarray, tokens: list[str], word: str) -> tuple[str, float] | None:
    """(token, share): the token that `word` (its first token, spelled without a BPE or SentencePiece
    space mark, lower case) pays most attention to in the last layer of attentions (L, H, T, T), heads
    averaged. None when no token is that word."""
    at = next((k for k, tok in enumerate(tokens) if spelled(tok).lower() == word), None)
    if at is None:
        return None
    shares = mean_attention_from(attn, at)  # (T,)
    best = int(shares.argmax())
    return spelled(tokens[best]), float(shares[best])


def strongest_link(attn: np.ndarray, i: int, j: int) -> tuple[int, int, float]:
    """(layer, head, weight): the layer whose strongest head gives the most attention from token i to
    token j in attentions (L, H, T, T), that head, and its weight."""
    pair = np.asarray(attn)[:, :, i, j]  # (L, H)
    per_layer = pair.max(axis=1)  # (L,)
    layer = int(per_layer.argmax())
    return layer, int(pair[layer].argmax()), float(per_layer[layer])
