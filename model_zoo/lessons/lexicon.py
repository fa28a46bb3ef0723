"""Shipped word data: the word2vec training corpus and WordNet word classes (text -> words is model_zoo.words)."""

from __future__ import annotations

import gzip
from functools import cache
from pathlib import Path

ASSETS = Path(__file__).resolve().parents[2] / "assets"
CORPUS = ASSETS / "corpus" / "kjv_wordnet.txt.gz"
EXAMPLES = ASSETS / "corpus" / "wordnet_examples.txt"
WORD_CLASSES = ASSETS / "word_classes.tsv.gz"
INFLECTED = ASSETS / "inflected_forms.tsv.gz"
VERB_CLASSES = ASSETS / "verb_classes.tsv.gz"
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


@cache
def inflected_forms() -> dict[str, tuple[str, str]]:
    """WordNet's irregular forms that read as their dictionary form: form -> (that form, its class)."""
    with gzip.open(INFLECTED, "rt", encoding="utf-8") as fh:
        next(fh)
        return {form: (base, cls) for form, base, cls in (line.rstrip("\n").split("\t") for line in fh)}


@cache
def verb_classes() -> dict[str, str]:
    """verb -> the class of its most frequent verb sense (a regular "-ed"/"-ing" form reads as the verb)."""
    with gzip.open(VERB_CLASSES, "rt", encoding="utf-8") as fh:
        next(fh)
        return dict(line.rstrip("\n").split("\t") for line in fh)


# WordNet's own regular endings (morphy's detachment rules): "rivers" -> "river", "walked" -> "walk" (a verb),
# "hoping" -> "hope", "boxes" -> "box"; the first that gives a dictionary word is taken. True: a verb's ending
ENDINGS = (
    ("ches", "ch", False), ("shes", "sh", False), ("sses", "ss", False), ("xes", "x", False),
    ("zes", "z", False), ("ies", "y", False), ("men", "man", False), ("es", "e", False), ("es", "", False),
    ("s", "", False), ("ed", "e", True), ("ed", "", True), ("ing", "e", True), ("ing", "", True),
    ("est", "e", False), ("est", "", False), ("er", "e", False), ("er", "", False),
)  # fmt: skip


def dictionary_form(word: str) -> tuple[str, str] | None:
    """The dictionary form `word` reads as, and its class: itself where WordNet lists it (and no irregular
    reading is likelier: "sat" reads as "sit", tagged 185 times in WordNet's texts, not as Saturday, 0), an
    irregular form's base ("was": "be"), a regular ending taken off ("rivers": "river"; "walked": the verb
    "walk", verb.motion); None for a word WordNet has no class for ("the", "of", a word of another language)."""
    classes = word_classes()
    if word in inflected_forms():
        return inflected_forms()[word]
    if word in classes:
        return word, classes[word]
    for ending, put, verb in ENDINGS:
        base = word[: -len(ending)] + put
        if not word.endswith(ending) or len(base) < 2:
            continue
        found = verb_classes().get(base) if verb else classes.get(base)
        if found is not None:
            return base, found
    return None


def word_class(word: str) -> str | None:
    """`word`'s WordNet class (noun.animal, verb.motion, ...) read as its dictionary form; None where it has none."""
    found = dictionary_form(word)
    return None if found is None else found[1]
