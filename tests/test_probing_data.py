"""The shipped probing sentences (assets/probing/probing.jsonl.gz): format, splits and labels (fast)."""

from __future__ import annotations

import csv
import gzip
import json
import re
from collections import Counter

import pytest

from model_zoo.lessons import probing
from tests.conftest import ROOT

UPOS = set("ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split())


@pytest.fixture(scope="module")
def records() -> list[dict]:
    with gzip.open(probing.DATA, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_records_have_the_documented_fields(records: list[dict]) -> None:
    for r in records:
        assert set(r) == {"id", "split", "source", "seen_in_training", "words", "labels", "agreement_distance"}
        assert set(r["labels"]) == set(probing.TASKS) and isinstance(r["seen_in_training"], bool)
        assert re.fullmatch(r"wiki-\d{5}" if r["source"] == "wikipedia" else r"sense-\d{4}", r["id"]), r["id"]
        if r["source"] == "wikipedia":
            assert 8 <= len(r["words"]) <= 40, r["id"]


def test_enough_sentences_in_three_splits_with_unique_ids(records: list[dict]) -> None:
    splits = Counter(r["split"] for r in records)
    assert len(records) >= 2000 and set(splits) == {"train", "dev", "test"}
    assert splits["train"] > splits["dev"] and splits["train"] > splits["test"]
    assert len({r["id"] for r in records}) == len(records)
    by_words: dict[tuple, str] = {}
    for r in records:  # the same sentence never in two splits
        assert by_words.setdefault(tuple(r["words"]), r["split"]) == r["split"]


def test_every_label_list_matches_the_words(records: list[dict]) -> None:
    for r in records:
        assert r["words"] and all(w and not w.isspace() for w in r["words"])
        for task in probing.TASKS:
            assert len(r["labels"][task]) == len(r["words"]), (r["id"], task)
        assert set(r["labels"]["pos"]) <= UPOS
        tags = r["labels"]["ner"]
        assert all(re.fullmatch(r"O|[BI]-[A-Z_]+", tag) for tag in tags)
        for before, tag in zip(["O", *tags], tags):  # valid BIO: an I- continues an entity of its type
            assert not tag.startswith("I-") or before[2:] == tag[2:], r["id"]
        assert set(r["labels"]["agreement"]) <= {None, "Sing", "Plur"}
        distance = r["agreement_distance"]  # given exactly where a verb is labelled
        assert len(distance) == len(r["words"])
        for y, d in zip(r["labels"]["agreement"], distance):
            assert (y is None) == (d is None) and (d is None or isinstance(d, int) and 1 <= d < len(r["words"]))


def test_each_task_has_examples_in_every_split(records: list[dict]) -> None:
    sentences = probing.load_sentences()
    for task in probing.TASKS:
        for split in probing.SPLITS:
            labelled = [
                j
                for s in sentences
                if s.split == split
                for j in range(len(s.words))
                if probing.label_of(s, task, j) is not None
            ]
            assert len(labelled) >= 100, (task, split)
    agreement = Counter(r["split"] for r in records for y in r["labels"]["agreement"] if y)
    assert agreement["train"] >= 600 and agreement["dev"] >= 100 and agreement["test"] >= 100
    assert sum(agreement.values()) >= 1000
    assert {y for r in records for y in r["labels"]["agreement"]} == {None, "Sing", "Plur"}


def test_wikipedia_test_split_is_mostly_unseen_by_the_language_models(records: list[dict]) -> None:
    test = [r for r in records if r["source"] == "wikipedia" and r["split"] == "test"]
    assert sum(not r["seen_in_training"] for r in test) >= 0.9 * len(test)


def test_sense_labels_come_from_the_word_senses_set(records: list[dict]) -> None:
    with (ROOT / "assets" / "senses" / "senses.tsv").open(encoding="utf-8") as f:
        keys = {row["sense_key"] for row in csv.DictReader(f, delimiter="\t")}
    for r in records:
        labelled = [(w, y) for w, y in zip(r["words"], r["labels"]["sense"]) if y]
        assert len(labelled) == (r["source"] == "senses"), r["id"]  # one target word in a senses record
        for word, key in labelled:
            assert key in keys and key.split("%")[0] == word.lower()
