"""BERT's pre-training corruption (pick 15% of the tokens; of those 80% [MASK], 10% random, 10% kept), and a demo of it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from ..contextual import MaskedLM


@dataclass(frozen=True)
class Masked:
    input_ids: torch.Tensor  # (batch, tokens) after corruption
    picked: torch.Tensor  # (batch, tokens) bool: positions the model must predict
    labels: torch.Tensor  # (batch, tokens) original ids at picked positions, -100 elsewhere
    action: torch.Tensor  # (batch, tokens) 0 untouched, 1 -> [MASK], 2 -> random token, 3 kept as is


def bert_masking(
    input_ids: torch.Tensor,
    special: torch.Tensor,
    mask_id: int,
    vocab_size: int,
    generator: torch.Generator,
    rate: float = 0.15,
) -> Masked:
    """Corrupt `input_ids` (batch, tokens) as BERT's pre-training did; `special` marks [CLS]/[SEP]/[PAD]."""
    shape = input_ids.shape
    picked = (torch.rand(shape, generator=generator) < rate) & ~special
    roll = torch.rand(shape, generator=generator)
    to_mask = picked & (roll < 0.8)
    to_random = picked & (roll >= 0.8) & (roll < 0.9)
    corrupted = input_ids.clone()
    corrupted[to_mask] = mask_id
    corrupted[to_random] = torch.randint(vocab_size, shape, generator=generator)[to_random]
    action = torch.zeros(shape, dtype=torch.long)
    action[picked] = 3
    action[to_mask] = 1
    action[to_random] = 2
    labels = torch.where(picked, input_ids, torch.full_like(input_ids, -100))
    return Masked(corrupted, picked, labels, action)


@dataclass(frozen=True)
class RecipeDemo:
    """BERT's corruption of one sentence, and what the model answers at each picked position.

    P is the number of picked positions; T the sentence's tokens, [CLS] and [SEP] included.
    """

    tokens: list[str]  # (T,) the corrupted input, as the model reads it
    positions: list[int]  # (P,) picked positions
    originals: list[str]  # (P,) the token that was there
    actions: list[int]  # (P,) 1 -> [MASK], 2 -> random token, 3 kept as is
    shown: list[str]  # (P,) what the model saw there
    guesses: list[str]  # (P,) the model's most likely token
    p_original: list[float]  # (P,) the probability it gives the original token

    @property
    def loss(self) -> float:
        """BERT's MLM loss on this sentence: the mean of -log p(original) over the picked positions."""
        return float(-torch.tensor(self.p_original).clamp_min(1e-12).log().mean())

    @property
    def perplexity(self) -> float:
        """exp(loss): as unsure as choosing uniformly among this many tokens at each picked position."""
        return math.exp(self.loss)


def recipe_demo(model: MaskedLM, text: str, seed: int) -> RecipeDemo:
    """Corrupt `text` as BERT's pre-training would (draw `seed`) and read the model's guesses.

    A short sentence may draw no token at 15%: the next draws are tried, up to 50.
    """
    model.check_text(text)
    batch = model.tokenize(text, return_special_tokens_mask=True)
    special = batch.pop("special_tokens_mask").bool()
    ids = batch["input_ids"]
    corrupted = _pick_some(ids, special, model, seed)
    positions = corrupted.picked[0].nonzero().flatten()  # (P,)
    batch["input_ids"] = corrupted.input_ids
    probs = model.logits_at(batch, positions).softmax(-1)  # (P, vocab)
    originals = ids[0, positions]
    return RecipeDemo(
        tokens=model.token_strings(corrupted.input_ids[0].tolist()),
        positions=positions.tolist(),
        originals=model.token_strings(originals.tolist()),
        actions=corrupted.action[0, positions].tolist(),
        shown=model.token_strings(corrupted.input_ids[0, positions].tolist()),
        guesses=model.token_strings(probs.argmax(-1).tolist()),  # spelled as the originals are
        p_original=probs[torch.arange(len(positions)), originals].tolist(),
    )


@dataclass(frozen=True)
class PairLoss:
    """BERT's pre-training loss on one sentence pair: the masked words and, with an NSP head, the pair's label."""

    text_b: str
    is_next: bool  # the label: B really follows A (IsNext) or was drawn at random (NotNext)
    tokens: list[str]  # the corrupted pair, as the model reads it
    picked: int  # how many tokens the MLM loss is taken over
    mlm: float  # mean of -log p(original) over the picked tokens
    p_is_next: float | None  # the NSP head's probability of IsNext; None without a head
    nsp: float | None  # -log p(the label); None without a head

    @property
    def total(self) -> float | None:
        """What BERT minimised: the sum of the two losses."""
        return None if self.nsp is None else self.mlm + self.nsp


def _pick_some(ids: torch.Tensor, special: torch.Tensor, model: MaskedLM, seed: int) -> Masked:
    """bert_masking of `ids` (draw `seed`), redrawn (up to 50 times) until at least one token is picked."""
    mask_id, vocab = model.tokenizer.mask_token_id, model.config.vocab_size
    for attempt in range(50):
        corrupted = bert_masking(ids, special, mask_id, vocab, torch.Generator().manual_seed(seed * 1000 + attempt))
        if corrupted.picked.any():
            break
    return corrupted


@torch.inference_mode()
def pair_loss(model: MaskedLM, a: str, b: str, is_next: bool, seed: int) -> PairLoss:
    """The pair "[CLS] a [SEP] b [SEP]" corrupted as BERT's pre-training would (draw `seed`); the MLM loss
    at the picked tokens and, where the model has an NSP head, the NSP loss for the label `is_next`."""
    model.check_text(a)
    model.check_text(b)
    batch = model.tokenize(a, b, return_special_tokens_mask=True)
    special = batch.pop("special_tokens_mask").bool()
    ids = batch["input_ids"]
    corrupted = _pick_some(ids, special, model, seed)
    positions = corrupted.picked[0].nonzero().flatten()
    batch["input_ids"] = corrupted.input_ids
    probs = model.logits_at(batch, positions).softmax(-1)
    mlm = float(-probs[torch.arange(len(positions)), ids[0, positions]].clamp_min(1e-12).log().mean())
    p_is_next = nsp = None
    if model.has_nsp:
        pooled = model.fast_base(**{k: v.to(model.device) for k, v in batch.items()}).pooler_output
        p_is_next = float(model.model.cls.seq_relationship(pooled).float().softmax(-1)[0, 0])  # [IsNext, NotNext]
        nsp = float(-torch.tensor(p_is_next if is_next else 1 - p_is_next).clamp_min(1e-12).log())
    return PairLoss(
        text_b=b,
        is_next=is_next,
        tokens=model.token_strings(corrupted.input_ids[0].tolist()),
        picked=len(positions),
        mlm=mlm,
        p_is_next=p_is_next,
        nsp=nsp,
    )
