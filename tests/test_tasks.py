"""Using BERT for tasks (model_zoo.lessons.tasks) on a tiny random BERT and synthetic features (fast tier)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import model_zoo
from model_zoo.lessons import tasks
from model_zoo.lessons.tasks import Labelled, Passage, QAHead, Question, Split
from tests.conftest import keeps_bio_rule


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


def test_the_qa_head_a_server_trains_in_its_trainer_process_is_the_one_trained_in_the_page(tiny_bert) -> None:  # noqa: ANN001
    """serving.qa_head trains in the worker's trainer process (its features' pass would hold the page's lock):
    the model loaded there by name, its head and held-out scores are the ones train_qa gives in the page's own
    process, and the progress reaches the presser."""
    from serving.runtime import Trainer

    train = [Question("the bank is by the river and the boat is red", "what is red", "the boat")] * 4
    test = [Question("the cat sat on the mat by the door", "where did the cat sit", "on the mat")]
    here = tasks.train_qa(model_zoo.load(str(tiny_bert)), train, test)
    seen: list[float] = []
    there = Trainer(idle_s=5).run(tasks.train_qa_named, str(tiny_bert), train, test, on_report=seen.append)
    np.testing.assert_allclose(there.start, here.start, atol=1e-6)
    np.testing.assert_allclose(there.end, here.end, atol=1e-6)
    assert (there.exact, there.f1) == (here.exact, here.f1)
    assert seen and seen[-1] == 1.0


def test_qa_head_learns_each_passage_s_own_span_whatever_its_length(monkeypatch) -> None:  # noqa: ANN001
    """Passages of 5 to 12 tokens trained together (padded into one tensor): the head learns the feature that
    marks each answer's start and end, and finds every answer, none in another passage's padding."""
    rng = np.random.default_rng(0)
    questions, read = [], {}
    for n in range(5, 13):
        start = int(rng.integers(0, n - 2))
        end = start + int(rng.integers(0, 2))
        text = " ".join(f"t{i}" for i in range(n))
        vectors = rng.normal(0, 0.3, (n, 4)).astype(np.float32)
        vectors[start, 0] += 2.0
        vectors[end, 1] += 2.0
        q = Question(text, f"q{n}", " ".join(f"t{i}" for i in range(start, end + 1)))
        questions.append(q)
        read[q.question] = Passage(text.split(), [(3 * i, 3 * i + 2) for i in range(n)], vectors)
    monkeypatch.setattr(tasks, "passage_vectors", lambda model, qs, ps: [read[q] for q in qs])
    head = tasks.train_qa(None, questions, questions, steps=200)  # type: ignore[arg-type]
    assert head.exact == 1.0 and head.f1 == 1.0


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
    from model_zoo.lessons import probing
    from tests.test_probing import sentences

    data = sentences()
    targets = probing.select_targets(data)
    features = probing.word_features(bert, data, targets)
    tagging = probing.task_set(data, targets, probing.TAGGING)
    head = tasks.train_tagger(features, tagging)
    assert head.classes == ("O",) and head.accuracy == 1.0  # the tiny set tags everything O
    assert head.test_entities == 0 and head.f1 == head.f1_word_by_word == 0.0 and head.test_sentences > 0
    tagged = tasks.tag_words(bert, head, "the dogs ran, home!")
    assert [w.word for w in tagged] == ["the", "dogs", "ran", ",", "home", "!"]
    assert all(w.tag == w.alone == "O" and 0 < w.p <= 1 for w in tagged)
    with pytest.raises(model_zoo.EmptyInput):
        tasks.tag_words(bert, head, "   ")


BIO = ("B-GPE", "B-ORG", "I-GPE", "I-ORG", "O")


def test_bio_decoding_turns_a_broken_reading_into_the_best_sequence_thatkeeps_bio_rule() -> None:
    # "the United Nations": word by word the head says O, I-GPE, I-ORG, which no entity reads as
    p = np.array(
        [
            [0.05, 0.05, 0.02, 0.02, 0.86],
            [0.20, 0.25, 0.30, 0.05, 0.20],
            [0.05, 0.05, 0.20, 0.50, 0.20],
        ]
    )
    alone = [BIO[k] for k in p.argmax(1)]
    assert alone == ["O", "I-GPE", "I-ORG"] and not keeps_bio_rule(alone)
    decoded = [BIO[k] for k in tasks.bio_decode(p, BIO)]
    assert decoded == ["O", "B-ORG", "I-ORG"]  # 0.25 * 0.50 beats B-GPE I-GPE's 0.20 * 0.20


def test_bio_decoding_is_the_most_probable_valid_sequence_of_every_small_case() -> None:
    import itertools

    rng = np.random.default_rng(1)
    for _ in range(40):
        n = int(rng.integers(1, 5))
        p = rng.dirichlet(np.ones(len(BIO)) * 0.5, size=n)
        valid = [s for s in itertools.product(range(len(BIO)), repeat=n) if keeps_bio_rule([BIO[k] for k in s])]
        best = max(valid, key=lambda s: np.log(p[np.arange(n), list(s)]).sum())
        assert tuple(tasks.bio_decode(p, BIO)) == best


def test_entities_and_their_f1_read_as_conll_reads_them() -> None:
    # an I- tag that continues nothing starts an entity, as conlleval counts a rule-breaking tagger
    assert tasks.entity_spans(["B-PER", "I-PER", "O", "I-LOC", "I-ORG", "B-ORG", "I-ORG"]) == {
        (0, 2, "PER"),
        (3, 4, "LOC"),
        (4, 5, "ORG"),
        (5, 7, "ORG"),
    }
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["O", "B-ORG"]]
    said = [["B-PER", "O", "O", "B-LOC"], ["O", "B-ORG"]]  # Angela alone is a wrong span: 2 of 3 right
    assert tasks.entity_f1(gold, said) == pytest.approx(2 / 3)
    assert tasks.entity_f1(gold, gold) == 1.0 and tasks.entity_f1([["O"]], [["O"]]) == 0.0


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


def test_the_layer_a_head_reads_is_chosen_on_development_folds_of_the_training_examples() -> None:
    rng = np.random.default_rng(0)
    y = np.array(["a", "b"] * 40)
    x = rng.normal(size=(4, 80, 6))  # (layers, examples, dim): only layer 2 tells the classes apart
    x[2, :, 0] += np.where(y == "a", 3.0, -3.0)
    choice = tasks.choose_layer(x, list(y))
    assert choice.layer == 2 and len(choice.development) == 4
    assert choice.development[2] > 0.9 > max(choice.development[k] for k in (0, 1, 3))
    # grouped folds: examples of a group (a premise's pairs) never sit on both sides of a fold
    groups = [f"g{k // 4}" for k in range(80)]
    assert tasks.choose_layer(x, list(y), groups).layer == 2


def test_a_swap_counts_the_pairs_whose_answer_changes() -> None:
    head = tasks.Head(("x", "y"), np.array([[1.0], [-1.0]]), np.zeros(2), np.zeros(1), np.ones(1), 0, 0, 0)
    original, swapped = np.array([[1.0], [1.0], [-1.0]]), np.array([[-1.0], [1.0], [1.0]])
    assert tasks.swap_changes(head, original, swapped) == 2


def test_task_heads_read_a_chosen_layer_are_scored_on_held_out_data_and_kept_on_disk(bert, tmp_path) -> None:  # noqa: ANN001
    progress: list[float] = []
    heads = tasks.cached_task_heads(bert, "nli", tmp_path, progress.append)
    assert set(heads) == {"cls", "mean"} and progress[-1] == 1.0
    layers = bert.config.num_hidden_layers + 1
    for trained in heads.values():
        assert 0 <= trained.head.layer < layers and len(trained.development) == layers
        assert trained.development[trained.head.layer] == max(trained.development)
        assert trained.test == 60 and trained.train == 240 + 79 and trained.swaps == 20
        assert 0 <= trained.swaps_changed <= trained.swaps and 0 <= trained.last_layer <= 1
    (saved,) = tmp_path.iterdir()
    again = tasks.cached_task_heads(bert, "nli", tmp_path, progress.append)  # read back, not trained
    assert progress.count(1.0) == 1 and list(tmp_path.iterdir()) == [saved]
    for pooling, trained in heads.items():
        assert again[pooling].head.layer == trained.head.layer and again[pooling].development == trained.development
        np.testing.assert_array_equal(again[pooling].head.weight, trained.head.weight)
        x = tasks.sentence_features(bert, ["a dog runs"], ["an animal moves"], pooling, trained.head.layer)
        np.testing.assert_allclose(again[pooling].head.probabilities(x), trained.head.probabilities(x))


def test_bert_has_segments_and_every_layer_gives_both_sentence_vectors(bert) -> None:  # noqa: ANN001
    assert bert.has_segments
    features = tasks.layer_features(bert, ["the man went", "a river"])
    assert features["cls"].shape == features["mean"].shape == (bert.config.num_hidden_layers + 1, 2, 32)


@pytest.mark.parametrize("bf16", ["0", "1"])
def test_fine_tuning_the_served_masked_lm_trains_its_copy_and_leaves_the_causal_lm_it_reads(
    tiny_mntp, monkeypatch, bf16: str
) -> None:  # noqa: ANN001
    """The page's masked LM reads its causal LM's weights, frozen (peft froze them, and a class's server holds
    them in bf16 where the CPU multiplies bf16): fine-tuning "the whole encoder" trains every linear layer of a
    copy all the same, in fp32, and the masked LM and the causal LM stay as they were."""
    from model_zoo import onednn
    from model_zoo.bidirectional import BidirectionalLM, served_causal, served_mntp
    from model_zoo.onednn import runs_bf16

    monkeypatch.setenv(onednn.BF16_VAR, bf16)
    model, tokenizer = served_mntp(*tiny_mntp)
    lm = BidirectionalLM("tiny-mntp", model, tokenizer, torch.device("cpu"))
    causal = served_causal(tiny_mntp[0], bf16 == "1")
    before = {k: v.clone() for k, v in lm.base.state_dict().items()}
    causal_before = {k: v.clone() for k, v in causal.state_dict().items()}
    copies: list[torch.nn.Module] = []
    train_whole = tasks.train_whole
    monkeypatch.setattr(
        tasks, "train_whole", lambda network, *rest: copies.append(network) or train_whole(network, *rest)
    )
    data = Split([Labelled("good film", "pos"), Labelled("bad film", "neg")] * 8, [Labelled("good film", "pos")])
    tasks.fine_tune(lm, data, epochs=1, batch_size=4, lr=1e-2)
    (copy,) = copies
    assert not runs_bf16(copy) and runs_bf16(lm.model) == (bf16 == "1")
    trained = {k: v for k, v in copy.state_dict().items() if "proj." in k and k.endswith(".weight")}
    assert len(trained) == sum(isinstance(m, torch.nn.Linear) for m in copy.modules())
    assert all(v.dtype == torch.float32 for v in trained.values())
    assert all(not torch.equal(v, before[k].float()) for k, v in trained.items()), "a linear layer did not learn"
    assert all(torch.equal(before[k], v) for k, v in lm.base.state_dict().items())
    assert all(torch.equal(causal_before[k], v) for k, v in causal.state_dict().items())


def test_fine_tuning_a_decoder_made_a_masked_lm_reads_both_ways_and_starts_from_a_probe(tiny_mntp, monkeypatch) -> None:  # noqa: ANN001
    """The copy fine-tuned reads each text as the shared model does: a causal pass gave every text the same
    first vector, and the page's fine-tuned smollm2-135m-mlm scored chance (0.50). Its new layer starts from a
    probe of those vectors (Encoder.fine_tune_from_probe): on the training texts it already tells them apart."""
    from model_zoo.bidirectional import BidirectionalLM, load_mntp

    model, tokenizer = load_mntp(*tiny_mntp)
    lm = BidirectionalLM("tiny-mntp", model, tokenizer, torch.device("cpu"))
    assert lm.fine_tune_from_probe
    firsts: list[torch.Tensor] = []
    starts: list[float] = []
    train_whole = tasks.train_whole

    def watched(network, features, linear, *rest):  # noqa: ANN001, ANN202
        with torch.inference_mode():
            firsts.append(features(data.train[:2]))
            logits = linear(features(data.train))
        labels = torch.tensor([data.classes.index(x.label) for x in data.train])
        starts.append(float((logits.argmax(-1) == labels).float().mean()))
        return train_whole(network, features, linear, *rest)

    monkeypatch.setattr(tasks, "train_whole", watched)
    data = Split(
        [Labelled("a good film , we loved it", "pos"), Labelled("bad", "neg"), Labelled("so good", "pos")] * 4,
        [Labelled("good film", "pos")],
    )
    tasks.fine_tune(lm, data, epochs=1, batch_size=4)
    (first,) = firsts
    assert not torch.allclose(first[0], first[1])  # two texts, two first vectors: the whole text was read
    assert starts == [1.0]  # the probe's layer separates the training texts before any step
    bert_like = tasks.Encoder.fine_tune_from_probe
    assert bert_like is False  # BERT's [CLS] keeps the usual random start
