"""Layer-wise probing (model_zoo.lessons.probing) on synthetic features and tiny random models (fast tier)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import model_zoo
from model_zoo.lessons import probing
from model_zoo.lessons.probing import ProbeSettings, Sentence, TaskSet
from tests.test_elmo import write_elmo

FAST = ProbeSettings(epochs=25, patience=4, lr=1e-2)


def planted(layer: int, layers: int = 5, dim: int = 16, classes: int = 3, n: int = 900, seed: int = 0):
    """Features whose label is readable from `layer` only (a class-dependent direction there, noise
    elsewhere), and a TaskSet over them with random word types for the control task."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, n)
    x = rng.normal(size=(n, layers, dim)).astype(np.float32)
    centres = rng.normal(size=(classes, dim)) * 1.5
    x[:, layer] += centres[labels]
    parts = np.split(np.arange(n), [n * 2 // 3, n * 5 // 6])
    control = rng.integers(0, classes, n)
    data = TaskSet(
        task="pos",
        classes=tuple(f"c{k}" for k in range(classes)),
        rows=dict(zip(probing.SPLITS, parts)),
        labels={s: labels[r] for s, r in zip(probing.SPLITS, parts)},
        control={s: control[r] for s, r in zip(probing.SPLITS, parts)},
        sentence={s: r for s, r in zip(probing.SPLITS, parts)},
        types={s: np.array([f"w{i}" for i in r]) for s, r in zip(probing.SPLITS, parts)},
    )
    return x, data


@pytest.mark.parametrize("layer", [1, 3])
def test_the_weights_put_their_mass_where_the_label_is(layer: int) -> None:
    x, data = planted(layer)
    result = probing.probe_task(x, data, "synthetic", FAST)
    assert int(np.argmax(result.mix_weights)) == layer and result.mix_weights[layer] > 0.5
    assert sum(result.mix_weights) == pytest.approx(1.0)
    assert result.mix_score > 0.9
    assert int(np.argmax(result.by_layer)) == layer
    others = [a for j, a in enumerate(result.by_layer) if j != layer]
    assert result.by_layer[layer] > 0.9 and max(others) < 0.55  # 3 classes: chance is a third
    assert result.center_of_gravity == pytest.approx(layer, abs=0.6)
    assert result.expected_layer == pytest.approx(layer, abs=0.6)  # the cumulative probes jump at `layer`
    assert max(result.control_by_layer) < 0.5 and result.selectivity[layer] > 0.4
    assert len(result.cumulative) == 5 and result.cumulative[-1] > 0.9


def test_expected_layer_and_centre_of_gravity_follow_tenney() -> None:
    assert probing.center_of_gravity([0.0, 0.0, 1.0]) == 2.0
    assert probing.center_of_gravity([0.5, 0.0, 0.5]) == 1.0
    # Delta = [0.1, 0.3, 0.0] at layers 1, 2, 3: E = (1*0.1 + 2*0.3) / 0.4
    assert probing.expected_layer([0.5, 0.6, 0.9, 0.9]) == pytest.approx(1.75)
    assert np.isnan(probing.expected_layer([0.5, 0.5, 0.4]))


def test_entity_f1_scores_whole_spans_and_types() -> None:
    gold = ["B-PERSON", "I-PERSON", "O", "B-GPE", "O"]
    sentence = [0, 0, 0, 0, 0]
    assert probing.entity_f1(gold, gold, sentence) == 1.0
    half = ["B-PERSON", "O", "O", "B-GPE", "O"]  # the person cut short: one of two entities right
    assert probing.entity_f1(gold, half, sentence) == pytest.approx(0.5)
    assert probing.entity_f1(gold, ["B-ORG", "I-ORG", "O", "B-GPE", "O"], sentence) == pytest.approx(0.5)
    assert probing.entity_spans(["I-GPE", "I-GPE"], [0, 0]) == {(0, 2, "GPE")}  # an I- without B- starts one
    assert probing.entity_spans(["B-GPE", "I-GPE"], [0, 1]) == {(0, 1, "GPE"), (1, 2, "GPE")}  # not across


def sentences() -> list[Sentence]:
    def make(id_: str, split: str, words: str, pos: str, sense: dict[int, str] | None = None) -> Sentence:
        w = tuple(words.split())
        return Sentence(
            id=id_,
            split=split,
            source="senses" if sense else "wikipedia",
            words=w,
            labels={
                "pos": tuple(pos.split()),
                "ner": ("O",) * len(w),
                "dep": ("dep",) * len(w),
                "agreement": (None,) * len(w),
                "sense": tuple((sense or {}).get(k) for k in range(len(w))),
            },
        )

    return [
        make("a", "train", "the dogs ran home", "DET NOUN VERB ADV"),
        make("b", "train", "a cat sat", "DET NOUN VERB"),
        make("c", "dev", "the cat ran down", "DET NOUN VERB ADP"),
        make("d", "test", "the dogs sat quietly", "DET NOUN VERB ADV"),
        make("e", "train", "the bank of the river", "DET NOUN ADP DET NOUN", {1: "bank%river"}),
        make("f", "test", "the bank lent money", "DET NOUN VERB NOUN", {1: "bank%money"}),
        make("g", "test", "a river bank", "DET NOUN NOUN", {2: "bank%river"}),
    ]


def test_targets_and_task_sets_follow_the_splits() -> None:
    data = sentences()
    targets = probing.select_targets(data, caps={"train": 100, "dev": 100, "test": 100})
    # every word of the wikipedia sentences (dense), and only the labelled word of the sense sentences
    assert len(targets) == 4 + 3 + 4 + 4 + 3 and targets.dense.sum() == 15
    pos = probing.task_set(data, targets, "pos")
    assert pos.classes == ("ADV", "DET", "NOUN", "VERB")  # ADP is never seen in training: left out
    assert [len(pos.rows[s]) for s in probing.SPLITS] == [7, 3, 4]
    sense = probing.task_set(data, targets, "sense")
    assert sense.classes == ("bank%river",) and len(sense.rows["test"]) == 1  # bank%money is unseen
    # control labels: one per word type, the same in every split
    every = {}
    for split in probing.SPLITS:
        for row, label in zip(sense.rows[split], sense.control[split]):
            every.setdefault(data[targets.sentence[row]].words[targets.word[row]].lower(), set()).add(int(label))
    assert all(len(labels) == 1 for labels in every.values())
    assert pos.majority() == pytest.approx(1 / 4)  # DET, NOUN, VERB tie in training: DET; test has 1 of 4


def test_text_and_spans_join_words_with_spaces() -> None:
    text, spans = probing.text_and_spans(["U.S.", "did", "n't", "go"])
    assert text == "U.S. did n't go" and [text[a:b] for a, b in spans] == ["U.S.", "did", "n't", "go"]


def test_span_vectors_are_the_mean_of_the_words_pieces(tiny_bert: Path, tiny_gpt2: Path, tmp_path: Path) -> None:
    """A WordPiece model, a causal LM and ELMo read the probing words through one contract."""
    bert = model_zoo.load(tiny_bert)
    text, spans = probing.text_and_spans(["the", "embeddings", "went", "."])
    (out,) = bert.span_vectors([text], [spans])
    assert out.shape == (4, 3, bert.config.hidden_size)
    encoding = bert.encode(text, attentions=False)
    pieces = [k for k, w in enumerate(encoding.word_ids) if w == 1]
    np.testing.assert_allclose(out[1], encoding.hidden_states[:, pieces].mean(1), atol=1e-5)
    np.testing.assert_allclose(out[1], bert.word_vectors([text], "embeddings")[0], atol=1e-5)
    gpt2 = model_zoo.load(tiny_gpt2)  # byte-level BPE; this tiny vocabulary has a token for the space alone
    (causal,) = gpt2.span_vectors([text], [spans])
    encoding = gpt2.encode(text, attentions=False)
    pieces = [k for k, w in enumerate(encoding.word_ids) if w == 1 and encoding.tokens[k] != "Ġ"]  # no letter of it
    np.testing.assert_allclose(causal[1], encoding.hidden_states[:, pieces].mean(1), atol=1e-5)
    elmo = model_zoo.load(write_elmo(tmp_path / "elmo"))
    (words,) = elmo.span_vectors([text], [spans])
    np.testing.assert_allclose(words, elmo.encode(text).hidden_states.transpose(1, 0, 2), atol=1e-5)


def test_features_are_cached_and_cut_words_are_nan(tiny_bert: Path, tmp_path: Path) -> None:
    import torch

    data = sentences()
    targets = probing.select_targets(data)
    bert = model_zoo.load(tiny_bert)
    progress: list[float] = []
    features = probing.cached_features(bert, data, targets, tmp_path, progress.append)
    assert features.shape[:2] == (len(targets), 3) and progress[-1] == 1.0
    assert not np.isnan(features).any()
    again = probing.cached_features(bert, data, targets, tmp_path, progress.append)
    assert len(progress) == 1 and np.array_equal(features, again)  # read from disk, not recomputed
    retrained = model_zoo.load(tiny_bert)  # the same name, trained again: its own features, not the kept ones
    with torch.no_grad():
        retrained.base.embeddings.word_embeddings.weight.mul_(2)
    other = probing.cached_features(retrained, data, targets, tmp_path, progress.append)
    assert len(progress) > 1 and not np.allclose(features, other) and len(list(tmp_path.glob("*.npy"))) == 2
    long = [Sentence("x", "train", "wikipedia", tuple(["word"] * 600), {t: (None,) * 600 for t in probing.TASKS})]
    cut = probing.word_features(bert, long, probing.Targets(np.array([0, 0]), np.array([0, 599]), np.ones(2, bool)))
    assert not np.isnan(cut[0]).any() and np.isnan(cut[1]).all()  # past 512 tokens: no vector


def test_results_round_trip(tmp_path: Path) -> None:
    x, data = planted(2, layers=3, n=300)
    result = probing.probe_task(x, data, "synthetic", FAST)
    saved = probing.ModelResults("synthetic", "v1", {"pos": result}, {"last": 0.5}, 1.0, 300)
    probing.save_results(saved, tmp_path)
    loaded = probing.load_results("synthetic", tmp_path)
    assert loaded is not None and loaded.tasks["pos"].mix_weights == result.mix_weights
    assert probing.load_results("nothing", tmp_path) is None


def test_results_of_other_weights_are_not_served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """elmo-mini trained again under its name: the probing results of its old weights are not shown."""
    from model_zoo import registry

    x, data = planted(2, layers=3, n=300)
    result = probing.probe_task(x, data, "elmo-mini", FAST)
    probing.save_results(probing.ModelResults("elmo-mini", "v1", {"pos": result}, {}, 1.0, 300, "old"), tmp_path)
    monkeypatch.setattr(registry, "weights_fingerprint", lambda name: "old")
    assert probing.load_results("elmo-mini", tmp_path) is not None
    monkeypatch.setattr(registry, "weights_fingerprint", lambda name: "trained again")
    assert probing.load_results("elmo-mini", tmp_path) is None


def test_feature_table_choices_follow_bert() -> None:
    choices = probing.feature_choices(13)  # BERT-base: embeddings + 12 layers
    assert choices["embeddings"] == ([0], False) and choices["last"] == ([12], False)
    assert choices["second_to_last"] == ([11], False)
    assert choices["sum_last_four"] == ([9, 10, 11, 12], False) and choices["concat_last_four"][1]
    assert choices["sum_all"][0] == list(range(1, 13))


def test_a_model_too_big_to_probe_here_is_refused_with_a_reason(
    tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Thirty students may pick any model: one whose probed vectors would fill the server's disk
    (SmolLM2's 31 layers x 576) gets a sentence, not a 1 GB file."""
    data = sentences()
    targets = probing.select_targets(data)
    monkeypatch.setattr(probing, "MAX_FEATURE_BYTES", 1000)
    with pytest.raises(model_zoo.MissingCapability, match="would take"):
        probing.word_features(model_zoo.load(tiny_bert), data, targets)
