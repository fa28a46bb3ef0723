"""The shipped task sets (assets/tasks): sizes, balance, splits and spans (fast)."""

from __future__ import annotations

import re
from collections import Counter

from model_zoo.lessons import tasks


def test_sentence_sets_are_balanced_and_split() -> None:
    for name, labels in (("sentiment", {"positive", "negative"}), ("spam", {"spam", "ham"})):
        data = tasks.load_sentences(name)
        everything = data.train + data.test
        counts = Counter(x.label for x in everything)
        assert set(counts) == labels and len(everything) >= 150 and max(counts.values()) == min(counts.values())
        assert len({x.text for x in everything}) == len(everything)
        assert not {x.text for x in data.train} & {x.text for x in data.test}
        assert set(Counter(x.label for x in data.test)) == labels


def test_pairs_have_one_of_each_label_per_premise_and_no_premise_in_two_splits() -> None:
    data = tasks.load_pairs()
    entailments = {(x.text, x.text_b) for x in data.train + data.test if x.label == "entailment"}
    reversed_ = [x for x in data.train if (x.text_b, x.text) in entailments]  # an entailment read B -> A
    for split in (data.train, data.test):
        by_premise: dict[str, list[str]] = {}
        for x in split:
            assert x.text_b
            if x not in reversed_:
                by_premise.setdefault(x.text, []).append(x.label)
        assert all(sorted(v) == ["contradiction", "entailment", "neutral"] for v in by_premise.values())
    held = {x.text for x in data.test}
    assert not {x.text for x in data.train} & held
    assert not {x.text_b for x in data.train} & held  # a held-out premise is not trained on the other way round


def test_swapped_pairs_are_entailments_read_backwards_and_held_out_with_their_premise() -> None:
    data = tasks.load_pairs()
    entailments = {(x.text, x.text_b) for x in data.train + data.test if x.label == "entailment"}
    swapped_train = [x for x in data.train if (x.text_b, x.text) in entailments]
    assert len(swapped_train) >= 70 and all(x.label == "neutral" for x in swapped_train)
    assert len(data.swapped) >= 15 and all((x.text_b, x.text) in entailments for x in data.swapped)
    assert {x.text_b for x in data.swapped} <= {x.text for x in data.test}


def test_every_answer_is_a_span_of_its_passage() -> None:
    train, test = tasks.load_questions()
    more, same_test = tasks.load_questions(extra=True)
    assert len(train) >= 40 and len(test) >= 90  # one held-out answer is about a point, not three
    assert same_test == test and len(more) == len(train) + 160  # qa_extra.tsv: training questions only
    assert not {q.passage for q in more} & {q.passage for q in test}
    fresh = {q.passage for q in tasks.written_passages()["h01"]}
    assert fresh <= {q.passage for q in test}  # qa_heldout.tsv: written for testing, never trained on
    lecture = {q.passage for q in tasks.written_passages()[tasks.LECTURE_PASSAGE]}
    assert lecture <= {q.passage for q in test}  # the lecture's passage stays out of every training set
    later = tasks.load_more_questions()  # qa_more.tsv: training questions only, on passages of their own
    assert len(later) == 128 and not {q.passage for q in later} & {q.passage for q in more + test}
    for q in more + test + later:
        start, end = q.span
        assert start >= 0 and q.passage[start:end] == q.answer
    for q in test + later:  # found once: the span scored or trained is the answer, not a namesake
        assert q.passage.count(q.answer) == 1, q


def test_chinese_sentiment_set_is_balanced_chinese_and_never_trained_on() -> None:
    from model_zoo.words import words_in

    chinese = tasks.load_chinese_sentiment()
    assert Counter(x.label for x in chinese) == {"positive": 15, "negative": 15}
    assert all(len(words_in(x.text)) >= 8 and x.text.isascii() is False for x in chinese)
    assert not any(c.isascii() and c.isalpha() for x in chinese for c in x.text)  # no English word in it
    english = tasks.load_sentences("sentiment")
    assert not {x.text for x in chinese} & {x.text for x in english.train + english.test}


def test_questions_of_cause_ask_for_a_phrase_of_a_cloze_passage_without_its_preposition() -> None:
    import gzip
    import json

    from model_zoo.training.train_qa import CAUSE, DATA

    with gzip.open(DATA, "rt", encoding="utf-8") as f:
        cloze = {r["id"]: r for r in map(json.loads, f)}
    with gzip.open(CAUSE, "rt", encoding="utf-8") as f:
        causes = [json.loads(line) for line in f]
    lecture = {q.passage for q in tasks.written_passages()[tasks.LECTURE_PASSAGE]}
    assert sum(len(r["questions"]) for r in causes) >= 500
    for r in causes:
        source = cloze[r["id"]]  # the same passage, in the same split (held-out articles stay test)
        assert (r["passage"], r["split"]) == (source["passage"], source["split"]) and r["passage"] not in lecture
        for q in r["questions"]:
            answer, start = q["answer"], q["start"]
            assert r["passage"][start : start + len(answer)] == answer
            assert q["question"].split()[0] in ("What", "Who") and answer.lower() not in q["question"].lower()
            before = re.findall(r"\w+", r["passage"][:start])[-1].lower()  # what introduces the cause ...
            assert before in ("by", "to", "of") and answer.split()[0].lower() not in ("by", "to", "of")  # ... stays out
