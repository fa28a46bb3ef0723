"""Everyday cloze sentences (assets/eval/) and how a masked LM is scored on them.

Two files, two uses:
- `cloze_en.tsv` (114 items, every answer a reader would accept) is cut in two by a hash of each
  sentence: the **dev** half is what training runs and model choices may read; the **test** half no
  training decision reads.
- `cloze_fresh.tsv` (180 items, one accepted answer each) was written and committed before any model
  was scored on it (issue 31): test only. `cloze_fresh_dev.tsv` (200 more, written the same way)
  is its development counterpart.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from ..words import find_word, has_han, words_in
from .lexicon import ASSETS, unique

CLOZE = ASSETS / "eval" / "cloze_en.tsv"
FRESH = ASSETS / "eval" / "cloze_fresh.tsv"
FRESH_DEV = ASSETS / "eval" / "cloze_fresh_dev.tsv"
MASK = "[MASK]"  # the blank as the lessons and a learner write it
Split = Literal["all", "dev", "test"]


@dataclass(frozen=True)
class ClozeItem:
    text: str  # one sentence with exactly one [MASK]
    answers: frozenset[str]  # every answer a reader would accept, lower case

    @property
    def split(self) -> Literal["dev", "test"]:
        """Half the items by a hash of the sentence: stable whatever the file's order."""
        return "dev" if int(hashlib.sha1(self.text.encode()).hexdigest(), 16) % 2 == 0 else "test"


@cache
def items(split: Split = "all", path: Path = CLOZE) -> tuple[ClozeItem, ...]:
    """The set (written for ContextLab, kept out of every training corpus), in file order."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            text, answers = line.split("\t")
            out.append(ClozeItem(text, frozenset(a.strip() for a in answers.split(","))))
    return tuple(i for i in out if split == "all" or i.split == split)


def fresh() -> tuple[ClozeItem, ...]:
    """The fresh test set: one accepted answer each."""
    return items("all", FRESH)


def fresh_dev() -> tuple[ClozeItem, ...]:
    """A development set written the same way as the fresh one (200 items, one answer each), after the
    first model was chosen: what an anti-copy run may read for its choices."""
    return items("all", FRESH_DEV)


def copies(item: ClozeItem, guess: str) -> bool:
    """Whether `guess` is a word of the item's own sentence (the blank aside): the copying a masked LM
    tuned for sentence similarity falls into ("Paris is the capital of [MASK]." -> paris)."""
    words = {w.lower() for w in re.findall(r"[\w']+", item.text.replace("[MASK]", " "))}
    return guess.lower() in words and guess.lower() not in item.answers


def score(cloze_items: Sequence[ClozeItem], predictions: Sequence[Sequence[str]]) -> dict[str, float]:
    """Top-1 and top-5 accuracy (the share of items whose first, or any of the first five, guesses is
    accepted) and the copy rate (the share whose first guess is a word of the sentence itself)."""
    pairs = list(zip(cloze_items, predictions, strict=True))
    top1 = sum(bool(p) and p[0].lower() in i.answers for i, p in pairs)
    top5 = sum(any(w.lower() in i.answers for w in p[:5]) for i, p in pairs)
    copied = sum(bool(p) and copies(i, p[0]) for i, p in pairs)
    n = len(cloze_items)
    return {"cloze_top1": top1 / n, "cloze_top5": top5 / n, "cloze_copies": copied / n, "cloze_items": n}


LESSONS = ASSETS / "eval" / "cloze_lessons.tsv"


def lessons() -> tuple[ClozeItem, ...]:
    """The lessons' own blanks (the seeds' sentences and the example buttons), with the answers the
    lesson's text names: a check of their own, never used to choose a model."""
    return items("all", LESSONS)


def first_guesses(model: Any, cloze_items: Sequence[ClozeItem], top_k: int = 5) -> list[list[str]]:
    """Each item's `top_k` guesses at its [MASK] from a masked LM (model_zoo.MaskedLM), as the pages
    get them: `fill_masks`, several sentences a forward pass."""
    out: list[list[str]] = []
    texts = [i.text for i in cloze_items]
    for start in range(0, len(texts), 32):
        for guesses in model.fill_masks(texts[start : start + 32], top_k):
            out.append([w.strip() for w, _ in guesses[0]])
    return out


def evaluate(model: Any, cloze_items: Sequence[ClozeItem]) -> dict[str, float]:
    """`score` of a masked LM's own guesses on `cloze_items`."""
    return score(cloze_items, first_guesses(model, cloze_items))


@dataclass(frozen=True)
class LessonCheck:
    """How a model's guesses meet the word a lesson names for a blank (or for the next word)."""

    answers: frozenset[str]  # the words the lesson's text names or a reader accepts, lower case
    first: str  # the model's first guess
    rank: int | None  # 1-based place of the first accepted answer among the guesses; None: not there
    p: float | None  # its probability
    considered: int  # how many guesses were looked at

    @property
    def shows(self) -> bool:
        """The model puts an answer the lesson names first: it shows the lesson's point."""
        return self.rank == 1


def check(answers: frozenset[str], guesses: Sequence[tuple[str, float]]) -> LessonCheck:
    """`guesses` (word, probability), best first, against the lesson's `answers`."""
    words = [w.strip().lower() for w, _ in guesses]
    rank = next((i for i, w in enumerate(words) if w in answers), None)
    return LessonCheck(
        answers,
        guesses[0][0].strip() if guesses else "",
        None if rank is None else rank + 1,
        None if rank is None else guesses[rank][1],
        len(guesses),
    )


def lesson_answers(text: str) -> frozenset[str] | None:
    """The answers the lesson names for `text` when it is one of the lessons' own one-blank sentences."""
    return next((i.answers for i in lessons() if i.text == text.strip()), None)


def classic_bert(text: str) -> str:
    """The original BERT that shows a lesson's point on `text`: the Chinese one for Chinese text."""
    return "bert-base-chinese" if has_han(text) else "bert-base-uncased"


def top_word(guesses: Sequence[tuple[str, float]]) -> str:
    """The first of `guesses` (word, probability), best first, as an answer is compared: unspaced, lower case."""
    return guesses[0][0].strip().lower()


def without_masks(text: str) -> str:
    """`text` with each [MASK] blanked out, same length: the words a learner could still hide."""
    return text.replace(MASK, " " * len(MASK))


def maskable_words(text: str) -> list[str]:
    """The words of `text` outside its [MASK]s, each once, in first-seen order."""
    return unique(words_in(without_masks(text)))


def mask_first(text: str, word: str) -> str:
    """`text` with the first use of `word` outside its [MASK]s hidden by a [MASK]; unchanged if none."""
    found = find_word(without_masks(text), word)
    return text if found is None else text[: found.start()] + MASK + text[found.end() :]


# The next words the lessons name: "After 'hang' a good model expects 'out' rather than 'camera'"
# (The Illustrated BERT, on ELMo's language model); and after "Let's stick to" (its example of "stick"),
# the words a reader accepts to begin what one sticks to: the seed's own "improvisation", and the words
# that open a noun phrase.
NEXT_WORDS_NAMED = {
    "After work we like to hang": frozenset({"out"}),
    "Let's stick to": frozenset(
        "improvisation the it this that these those our my your his her their what a one them plan basics".split()
    ),
}
