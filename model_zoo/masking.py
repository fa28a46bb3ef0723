"""BERT's pre-training corruption: pick 15% of the tokens; of those 80% [MASK], 10% random, 10% kept."""

from __future__ import annotations

from dataclasses import dataclass

import torch


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
