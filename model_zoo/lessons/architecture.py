"""Model sizes computed from configs (no weights needed), and BERT's input embeddings, term by term."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..contextual import Encoder


@dataclass(frozen=True)
class Size:
    name: str
    layers: int
    hidden: int
    heads: int
    feed_forward: int
    vocab: int
    parameters: int  # counted from a model built on the meta device
    context: int = 0  # positions it reads (0: not given)

    @property
    def short(self) -> str:
        """The parameter count to three significant figures: 124M, 1.56B, 175B."""
        value, unit = (self.parameters / 1e9, "B") if self.parameters >= 1e9 else (self.parameters / 1e6, "M")
        return f"{float(f'{value:.3g}'):g}{unit}"


def _counted(config: Any, layers: int) -> int:
    """The parameters of the bare model of `config` cut to its first `layers` layers, built on the meta device."""
    import copy

    from transformers import AutoModel

    cut = copy.deepcopy(config)
    cut.num_hidden_layers = layers
    if isinstance(getattr(cut, "layer_types", None), list):  # per-layer kinds (sliding or full attention)
        cut.layer_types = cut.layer_types[:layers]
    with torch.device("meta"):
        return sum(p.numel() for p in AutoModel.from_config(cut).parameters())


def size_from_config(name: str, config: Any) -> Size:
    """Count the bare model described by `config` without allocating weights.

    A model is its embeddings, a stack of identical layers and what follows them, so it is built on the meta
    device with one layer and with two, and the difference is every further layer's count. Building all of
    the GPT lesson's 228 layers (GPT-1, GPT-2 small to XL, GPT-3) took 1.2 s even on the meta device against 0.15 s
    so, as each layer's weights still go through torch's Python initialisers; transformers' switch for those
    (`no_init_weights`) swaps torch's functions for the whole process, which a server's other threads would meet.
    tests/test_bert_inputs.py checks the count against whole models."""
    layers = config.num_hidden_layers
    parameters = _counted(config, min(layers, 1))
    if layers > 1:
        parameters += (layers - 1) * (_counted(config, 2) - parameters)
    feed_forward = getattr(config, "intermediate_size", None) or getattr(config, "n_inner", None)
    return Size(
        name=name,
        layers=layers,
        hidden=config.hidden_size,
        heads=config.num_attention_heads,
        feed_forward=feed_forward or 4 * config.hidden_size,  # GPT-1 and GPT-2: 4 x hidden
        vocab=config.vocab_size,
        parameters=parameters,
        context=getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", 0) or 0,
    )


def gpt_sizes(own: dict[str, Any] | None = None) -> list[Size]:
    """GPT-1, GPT-2 (small to XL) and GPT-3 175B from their published shapes, then `own` (name ->
    config of a loaded model, such as SmolLM2-135M): decoders only, counted on the meta device."""
    from transformers import GPT2Config, OpenAIGPTConfig

    sizes = [size_from_config("GPT-1 (2018)", OpenAIGPTConfig())]  # 12 layers, 768, 512 positions
    for name, layers, hidden, heads in (
        ("GPT-2 small", 12, 768, 12),
        ("GPT-2 medium", 24, 1024, 16),
        ("GPT-2 large", 36, 1280, 20),
        ("GPT-2 XL (2019)", 48, 1600, 25),
    ):
        sizes.append(size_from_config(name, GPT2Config(n_layer=layers, n_embd=hidden, n_head=heads)))
    gpt3 = GPT2Config(n_layer=96, n_embd=12288, n_head=96, n_positions=2048)  # Brown et al. 2020, Table 2.1
    sizes.append(size_from_config("GPT-3 175B (2020)", gpt3))
    sizes += [size_from_config(name, config) for name, config in (own or {}).items()]
    return sizes


def size_from_json(name: str, path: Path) -> Size:
    from transformers import BertConfig

    return size_from_config(name, BertConfig(**json.loads(path.read_text())))


def lesson_sizes() -> list[Size]:
    """BERT-base, BERT-large, the original Transformer encoder and MiniLM-L6, from their configs.

    A classic in the Hugging Face cache is read from its own config; else from assets/configs.
    """
    from transformers import AutoConfig

    from ..registry import ASSETS, cached_file, get_card, package_file

    sizes = []
    for name in ("bert-base-uncased", "bert-large-uncased"):
        card = get_card(name)
        cached = cached_file(card.hub_repo or "", "config.json")
        if cached is not None:
            sizes.append(size_from_config(name, AutoConfig.from_pretrained(str(cached.parent))))
        else:
            sizes.append(size_from_json(name, ASSETS / "configs" / f"{name}.json"))
    sizes.append(size_from_json("Transformer (2017) encoder", ASSETS / "configs" / "transformer-base-encoder.json"))
    minilm = package_file(get_card("minilm-l6"))
    if minilm is not None:
        sizes.append(size_from_config("minilm-l6", AutoConfig.from_pretrained(str(minilm))))
    return sizes


@dataclass(frozen=True)
class InputEmbeddings:
    """BERT's input: three learned vectors per token, summed, then LayerNorm (and dropout)."""

    token: np.ndarray  # (tokens, dim): the WordPiece's own vector
    segment: np.ndarray  # (tokens, dim): sentence A or B
    position: np.ndarray  # (tokens, dim): where in the sequence
    summed: np.ndarray  # (tokens, dim): token + segment + position
    normalised: np.ndarray  # (tokens, dim): LayerNorm(summed), what layer 1 reads


@torch.inference_mode()
def input_embeddings(model: Encoder, token_ids: np.ndarray, segment_ids: np.ndarray) -> InputEmbeddings:
    """The embedding layer of a BERT-family model, computed term by term from its own weights."""
    emb = model.base.embeddings
    ids = torch.as_tensor(token_ids, device=model.device)
    token = emb.word_embeddings(ids)
    segment = emb.token_type_embeddings(torch.as_tensor(segment_ids, device=model.device))
    position = emb.position_embeddings(torch.arange(len(ids), device=model.device))
    summed = token + segment + position
    return InputEmbeddings(
        *(x.float().cpu().numpy() for x in (token, segment, position, summed, emb.LayerNorm(summed)))
    )


@dataclass(frozen=True)
class Reordering:
    """One way of feeding a sentence in another order, and how much the top layer's vectors moved."""

    key: str  # "cls_kept" | "cls_renumbered" | "words_kept" | "words_renumbered"
    tokens: list[str]  # the tokens in the order fed
    positions: list[int]  # the position number each one was given
    cosine: float  # cosine of the moved token(s) with their vectors in the usual order (mean over words)


@torch.inference_mode()
def reorderings(model: Encoder, token_ids: np.ndarray) -> list[Reordering]:
    """[CLS] moved to the end and the words reversed, each time keeping every token's position number
    or numbering them afresh, fed to `model`'s bare encoder; the top layer compared with the usual order.

    Self-attention reads a set: tokens that keep their (token, position) pairs give the same vectors
    wherever they sit in the sequence. Only the position embeddings tell the model the order.
    `token_ids` is [CLS] w1 .. wn [SEP], as the tokenizer gives it (cut to the model's length).
    """
    ids = [int(i) for i in token_ids]
    n = len(ids)
    words = list(range(1, n - 1))  # the word pieces between [CLS] and [SEP]

    cls_last = [*range(1, n), 0]
    reversed_words = [0, *words[::-1], n - 1]
    cases = [
        (key, order, positions, rows)
        for key, order, positions, rows in (
            ("cls_kept", cls_last, cls_last, [0]),
            ("cls_renumbered", cls_last, list(range(n)), [0]),
            ("words_kept", reversed_words, reversed_words, words),
            ("words_renumbered", reversed_words, list(range(n)), words),
        )
        if rows  # an empty sentence: no words to reverse
    ]
    # the usual order and every case in one pass: the same n tokens each, so a batch without padding
    orders = [list(range(n)), *(order for _, order, _, _ in cases)]
    positions = [list(range(n)), *(p for _, _, p, _ in cases)]
    out = model.base(
        input_ids=torch.tensor([[ids[i] for i in order] for order in orders], device=model.device),
        position_ids=torch.tensor(positions, device=model.device),
        token_type_ids=torch.zeros((len(orders), n), dtype=torch.long, device=model.device),
        attention_mask=torch.ones((len(orders), n), dtype=torch.long, device=model.device),
    )
    states = out.last_hidden_state.float()
    back = torch.empty_like(states)
    for b, order in enumerate(orders):
        back[b, torch.tensor(order, device=model.device)] = states[b]  # row i: token i of the usual order
    usual = back[0]
    result = []
    for b, (key, order, place, rows) in enumerate(cases, start=1):
        moved = back[b]
        cosine = float(torch.nn.functional.cosine_similarity(moved[rows], usual[rows], dim=-1).mean())
        result.append(Reordering(key, model.token_strings([ids[i] for i in order]), place, cosine))
    return result
