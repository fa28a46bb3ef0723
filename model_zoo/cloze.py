"""The everyday cloze set (assets/eval/cloze_en.tsv) and how a masked LM is scored on it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from .lexicon import ASSETS

CLOZE = ASSETS / "eval" / "cloze_en.tsv"


@dataclass(frozen=True)
class ClozeItem:
    text: str  # one sentence with exactly one [MASK]
    answers: frozenset[str]  # every answer a reader would accept, lower case


@cache
def items() -> tuple[ClozeItem, ...]:
    """The set, in file order: written for ContextLab, kept out of every training corpus."""
    out = []
    for line in CLOZE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            text, answers = line.split("\t")
            out.append(ClozeItem(text, frozenset(a.strip() for a in answers.split(","))))
    return tuple(out)


def score(cloze_items: Sequence[ClozeItem], predictions: Sequence[Sequence[str]]) -> dict[str, float]:
    """Top-1 and top-5 accuracy: the share of items whose first (any of the first five) guesses is accepted."""
    top1 = sum(bool(p) and p[0].lower() in i.answers for i, p in zip(cloze_items, predictions, strict=True))
    top5 = sum(any(w.lower() in i.answers for w in p[:5]) for i, p in zip(cloze_items, predictions, strict=True))
    n = len(cloze_items)
    return {"cloze_top1": top1 / n, "cloze_top5": top5 / n, "cloze_items": n}
