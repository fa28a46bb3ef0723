"""Shipped word data: the word2vec training corpus and WordNet word classes (text -> words is model_zoo.words)."""

from __future__ import annotations

import gzip
from functools import cache
from pathlib import Path

ASSETS = Path(__file__).resolve().parents[2] / "assets"
CORPUS = ASSETS / "corpus" / "kjv_wordnet.txt.gz"
EXAMPLES = ASSETS / "corpus" / "wordnet_examples.txt"
WORD_CLASSES = ASSETS / "word_classes.tsv.gz"
BUILD_SCRIPT = "scripts/build_assets.py"


def unique(words: list[str]) -> list[str]:
    """Words in first-seen order, each once."""
    return list(dict.fromkeys(words))


@cache
def corpus() -> tuple[tuple[str, ...], ...]:
    """The training corpus: KJV Bible + WordNet glosses/examples, one tokenised sentence each."""
    with gzip.open(CORPUS, "rt", encoding="utf-8") as fh:
        return tuple(tuple(line.split()) for line in fh if line.strip())


def examples() -> list[str]:
    """300 natural sentences (WordNet's examples, punctuation kept), for averaging over text."""
    return [line for line in EXAMPLES.read_text(encoding="utf-8").splitlines() if line.strip()]


@cache
def word_classes() -> dict[str, str]:
    """word -> WordNet lexicographer class (noun.animal, verb.motion, ...) of its commonest sense."""
    with gzip.open(WORD_CLASSES, "rt", encoding="utf-8") as fh:
        next(fh)
        return dict(line.rstrip("\n").split("\t") for line in fh)
