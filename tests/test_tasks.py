"""Using BERT for tasks (model_zoo.tasks) on a tiny random BERT and synthetic features (fast tier)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import model_zoo
from model_zoo import tasks
from model_zoo.tasks import Labelled, Passage, QAHead, Question, Split


@pytest.fixture(scope="module")
def bert(tiny_bert: Path) -> model_zoo.Encoder:
    return model_zoo.load(tiny_bert)


def test_a_head_learns_separable_features_and_beats_the_majority() -> None:
    rng = np.random.default_rng(0)
    y = np.where(rng.random(200) < 0.3, "pos", "neg")
    x = rng.normal(size=(200, 8)) + np.where(y == "pos", 2.0, -2.0)[:, None] * np.eye(8)[0]
    progress: list[float] = []
    head = tasks.train_head(x[:150], list(y[:150]), x[150:], list(y[150:]), on_progress=progress.append)
    assert head.classes == ("neg", "pos") and head.accuracy > 0.95 > head.majority
    assert progress[-1] == 1.0
    p = head.probabilities(x[150:])
    np.testing.assert_allclose(p.sum(1), 1.0, rtol=1e-6)


def test_cls_and_mean_pooling_differ_and_pairs_reach_the_model(bert) -> None:  # noqa: ANN001
    cls = tasks.sentence_features(bert, ["the man went to the bank", "a river"])
    mean = tasks.sentence_features(bert, ["the man went to the bank", "a river"], pooling="mean")
    assert cls.shape == mean.shape == (2, bert.config.hidden_size) and not np.allclose(cls, mean)
    ab = tasks.sentence_features(bert, ["the man went"], ["to the bank"])
    ba = tasks.sentence_features(bert, ["to the bank"], ["the man went"])
    assert not np.allclose(ab, ba)  # the order of a pair matters: segment ids reach the model


def head_on(vectors: np.ndarray, start: int, end: int) -> tuple[QAHead, Passage]:
    dim = vectors.shape[1]
    s, e = np.zeros(dim), np.zeros(dim)
    s[0], e[1] = 1.0, 1.0
    passage = Passage(
        [f"t{i}" for i in range(len(vectors))], [(3 * i, 3 * i + 2) for i in range(len(vectors))], vectors
    )
    vectors[start, 0] = vectors[end, 1] = 5.0
    return QAHead(s, e, 0.0, 0.0, 0.0, 0.0, 0.0), passage


def test_the_answer_span_starts_before_it_ends_and_an_end_first_means_no_answer() -> None:
    text = " ".join(f"t{i}" for i in range(6))
    head, passage = head_on(np.zeros((6, 4)), start=1, end=3)
    got = tasks.answer(head, passage, text)
    assert (got.start, got.end, got.text) == (1, 3, "t1 t2 t3")
    head, passage = head_on(np.zeros((6, 4)), start=4, end=2)
    got = tasks.answer(head, passage, text)
    assert got.text == "" and got.best_end < got.best_start  # SQuAD 2.0's case, as the lecture puts it


def test_qa_head_trains_on_frozen_features_and_answers_inside_the_passage(bert) -> None:  # noqa: ANN001
    train = [Question("the bank is by the river and the boat is red", "what is red", "the boat")] * 4
    head = tasks.train_qa(bert, train, train, steps=60)
    (passage,) = tasks.passage_vectors(bert, ["what is red"], [train[0].passage])
    got = tasks.answer(head, passage, train[0].passage)
    assert got.text == "" or got.text in train[0].passage
    assert 0 <= head.exact <= 1 and 0 <= head.f1 <= 1 and head.seconds > 0


def test_fine_tuning_trains_a_copy_and_leaves_the_shared_model_alone(bert) -> None:  # noqa: ANN001
    before = {k: v.clone() for k, v in bert.model.state_dict().items()}
    data = Split(
        [Labelled("good film", "pos"), Labelled("bad film", "neg")] * 8,
        [Labelled("good film", "pos"), Labelled("bad film", "neg")],
    )
    progress: list[float] = []
    result = tasks.fine_tune(bert, data, epochs=2, batch_size=4, on_progress=progress.append)
    assert 0 <= result.accuracy <= 1 and progress[-1] == 1.0
    assert all(torch.equal(before[k], v) for k, v in bert.model.state_dict().items())
    assert not bert.model.training


def test_a_tagger_on_probing_features_tags_every_word_of_a_new_sentence(bert) -> None:  # noqa: ANN001
    from model_zoo import probing
    from tests.test_probing import sentences

    data = sentences()
    targets = probing.select_targets(data)
    features = probing.word_features(bert, data, targets)
    tagging = probing.task_set(data, targets, probing.TAGGING)
    head = tasks.train_tagger(features, tagging)
    assert head.classes == ("O",) and head.accuracy == 1.0  # the tiny set tags everything O
    tagged = tasks.tag_words(bert, head, "the dogs ran, home!")
    assert [w for w, _, _ in tagged] == ["the", "dogs", "ran", ",", "home", "!"]
    assert all(tag == "O" and 0 < p <= 1 for _, tag, p in tagged)
    with pytest.raises(model_zoo.EmptyInput):
        tasks.tag_words(bert, head, "   ")


def test_cross_lingual_head_is_trained_on_english_and_scored_on_chinese(tiny_bert) -> None:
    model = model_zoo.load(tiny_bert)
    english = tasks.load_sentences("sentiment")
    x_train, x_test = (
        tasks.sentence_features(model, [x.text for x in d], pooling="mean") for d in (english.train, english.test)
    )
    head = tasks.train_head(x_train, [x.label for x in english.train], x_test, [x.label for x in english.test])
    cross = tasks.cross_lingual(model, head)
    assert cross.head.classes == ("negative", "positive")
    assert (
        cross.english == head.accuracy
        and len(cross.guesses) == 30
        and {g for _, g, _ in cross.guesses} <= {"negative", "positive"}
    )
    right = sum(g == x.label for x, g, _ in cross.guesses)
    assert cross.chinese == pytest.approx(right / 30) and 0.0 <= cross.english <= 1.0
    assert all(0.5 <= p <= 1.0 for _, _, p in cross.guesses)  # the probability of the class given
