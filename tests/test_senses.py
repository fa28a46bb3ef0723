"""Word senses: the shipped sense-labelled set, the measures as the papers define them, the page."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import model_zoo
from components.light_charts import REFERENCE
from model_zoo.lessons.senses import (
    SenseSet,
    cached_sense_vectors,
    chance_accuracy,
    encode_senses,
    layer_measures,
    load_senses,
    nn_sense_accuracy,
    self_similarity,
    static_sense_vectors,
    vote,
)
from tests.conftest import all_text, light_chart_elements, open_page, shown, title_of


# -- the data ---------------------------------------------------------------------------------------
def test_shipped_set_has_enough_words_senses_and_sentences() -> None:
    sets = load_senses()
    assert len(sets) >= 12 and {"bank", "stick"} <= set(sets)
    for word, s in sets.items():
        counts = {k: s.senses.count(k) for k in s.sense_keys}
        assert 2 <= len(counts) <= 4, word
        assert min(counts.values()) >= 25, (word, counts)
        assert all(k.startswith(f"{word}%") and s.glosses[k] for k in counts)
        for sentence in s.sentences:
            assert len(re.findall(rf"(?<![\w-]){word}(?![\w-])", sentence, flags=re.I)) == 1, sentence
        assert len(set(s.sentences)) == len(s.sentences)


# -- the measures, by hand --------------------------------------------------------------------------
def test_nearest_neighbour_accuracy_by_hand() -> None:
    # Two tight pairs far apart, labelled so that one point's nearest neighbour has the other sense.
    v = np.array([[1.0, 0.0], [0.99, 0.1], [0.0, 1.0], [0.1, 0.99]])
    assert nn_sense_accuracy(v, ["a", "a", "b", "b"]) == 1.0
    assert nn_sense_accuracy(v, ["a", "b", "b", "b"]) == pytest.approx(0.5)  # points 0 and 1 miss
    same = np.ones((4, 3))  # a static model: every use the same vector, every neighbour tied
    assert nn_sense_accuracy(same, ["a", "a", "b", "b"]) == pytest.approx(chance_accuracy(["a", "a", "b", "b"]))
    assert chance_accuracy(["a", "a", "b", "b"]) == pytest.approx((2 * 1 + 2 * 1) / (4 * 3))


def test_self_similarity_by_hand() -> None:
    v = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    pairs = [0.0, np.sqrt(0.5), np.sqrt(0.5)]  # cos(v0,v1), cos(v0,v2), cos(v1,v2)
    assert self_similarity(v) == pytest.approx(np.mean(pairs))
    assert self_similarity(np.ones((5, 4))) == pytest.approx(1.0)


def test_vote_is_the_majority_of_the_nearest() -> None:
    v = np.array([[1.0, 0.0]] * 3 + [[0.0, 1.0]] * 3)
    assert vote(v, ("a",) * 3 + ("b",) * 3, np.array([0.9, 0.1]), k=3) == ("a", 1.0)


# -- real models ------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("word", ["bank", "stick", "mouse"])
def test_minilm_separates_senses_glove_cannot(offline_models, word: str) -> None:
    s = load_senses()[word]
    minilm = layer_measures(encode_senses(offline_models("minilm-l6"), s), s.senses)
    glove = layer_measures(static_sense_vectors(offline_models("glove-6b-50d").vector(word), s), s.senses)
    assert glove.accuracy[0] == pytest.approx(glove.chance)  # one vector: chance, exactly
    assert minilm.accuracy.max() > glove.chance + 0.3
    assert minilm.accuracy[1:].max() > minilm.accuracy[0]  # context, not the word's own embedding
    assert (minilm.baseline > 0).all()  # anisotropy: random words are not orthogonal


def test_encodings_are_kept_on_disk_and_reloaded(tiny_bert, tmp_path) -> None:
    model = model_zoo.load(tiny_bert)
    s = SenseSet(
        "bank",
        ("the man went to the bank", "we sat on the river bank", "his money is at the bank", "the fish at the bank"),
        ("m", "r", "m", "r"),
        {"m": "money", "r": "river"},
    )
    first = cached_sense_vectors(model, s, tmp_path)
    assert len(list(tmp_path.glob("*.npz"))) == 1
    again = cached_sense_vectors(model, s, tmp_path)
    np.testing.assert_array_equal(first.vectors, again.vectors)
    assert first.vectors.shape == (4, 3, 32)  # sentences, embeddings + 2 layers, width
    with pytest.raises(model_zoo.WordNotInText):
        encode_senses(model, SenseSet("bank", ("the man went to the river",), ("r",), {"r": "river"}))
    # the same model trained again (same name, new weights) is encoded again, never served the old vectors
    import torch

    with torch.no_grad():
        next(model.model.parameters()).add_(0.5)
    model.__dict__.pop("_weights_version", None)  # a new server process loads the new weights
    retrained = cached_sense_vectors(model, s, tmp_path)
    assert len(list(tmp_path.glob("*.npz"))) == 2
    assert not np.allclose(retrained.vectors, first.vectors)


def test_umap_projection_is_deterministic_for_a_seed() -> None:
    from model_zoo.lessons.projection import umap_2d

    x = np.random.default_rng(0).normal(size=(40, 8))
    np.testing.assert_allclose(umap_2d(x, seed=3), umap_2d(x, seed=3))


# -- the page ---------------------------------------------------------------------------------------
def light_charts(at) -> list[dict]:
    """The page's maps and line charts (components/light_charts.py), as the browser gets them."""
    return [json.loads(c.proto.bytes) for c in light_chart_elements(at)]


def chart_titles(at) -> list[str]:
    plotly = [title_of(json.loads(c.proto.spec)) for c in at.get("plotly_chart")]
    return [c["title"] for c in light_charts(at)] + plotly


def chart(at, title: str) -> dict:
    return next(c for c in light_charts(at) if c["title"] == title)


@pytest.mark.slow
def test_page_default_glove_is_one_point_minilm_separates() -> None:
    at = open_page("pages/senses.py")
    assert not at.exception
    titles = chart_titles(at)
    assert "glove-6b-50d · one vector per word" in titles and "minilm-l6 · layer 3 of 6" in titles
    # the maps in the road's order, as a phone stacks them too (a row of two per pair, not two columns of all)
    assert [title.split(" · ")[0] for title in titles[:3]] == ["glove-6b-50d", "elmo-mini", "minilm-l6"]
    assert "Nearest-neighbour sense accuracy" in titles
    text = all_text(at)
    assert "all the points lie on top of each other" in text
    if not model_zoo.availability(model_zoo.get_card("bert-base-chinese")).ready:  # another test may fake one
        assert "No model that reads Chinese is on this machine" in text
    glove, minilm = chart(at, "glove-6b-50d · one vector per word"), chart(at, "minilm-l6 · layer 3 of 6")
    assert len({(p["x"], p["y"]) for p in glove["points"]}) == 1  # every use on one spot
    assert len({(p["x"], p["y"]) for p in minilm["points"]}) == len(minilm["points"]) >= 70
    first = minilm["points"][0]
    start, end = first["span"]
    assert first["sentence"][start:end].lower() == "bank"  # the word the card puts in bold
    assert first["note"] in load_senses()["bank"].glosses.values()  # and the sense's gloss
    assert minilm["senses"][0].startswith("1. ") and minilm["colors"][0] != minilm["colors"][1]
    accuracy = chart(at, "Nearest-neighbour sense accuracy")
    lines = {line["name"]: line for line in accuracy["series"]}
    assert lines["chance"]["dashed"] and len(lines["minilm-l6"]["values"]) == 7
    assert lines["chance"]["color"] == REFERENCE and lines["glove-6b-50d"]["color"] != REFERENCE
    assert lines["minilm-l6"]["values"][3] > lines["glove-6b-50d"]["values"][3]
    assert accuracy["y_range"] == [0.0, 1.02] and chart(at, "Self-similarity of the word")["y_range"] is None


@pytest.mark.slow
def test_page_layer_and_word_change_the_maps() -> None:
    at = open_page("pages/senses.py", word="stick", layer="6")
    assert not at.exception
    assert "minilm-l6 · layer 6 of 6" in chart_titles(at)
    assert "3 WordNet senses" in all_text(at)


@pytest.mark.slow
def test_page_own_sentence_gets_a_vote_per_layer() -> None:
    at = open_page("pages/senses.py", mine="We pulled the canoe up onto the muddy bank of the stream.")
    assert not at.exception
    votes = at.dataframe[0].value
    rows = {row.iloc[0]: row for _, row in votes.iterrows()}
    assert set(rows) == {"elmo-mini", "minilm-l6"}  # each contextual model votes, GloVe cannot
    assert rows["minilm-l6"].iloc[-1] == "1"  # 1 = sloping land
    # elmo-mini's three layers (0-2) vote; the columns of MiniLM's deeper layers say it has none there
    assert all(v.isdigit() for v in rows["elmo-mini"].iloc[1:4])
    assert list(rows["elmo-mini"].iloc[4:]) == ["—"] * 4
    own = chart(at, "minilm-l6 · layer 3 of 6")["own"]
    assert own["sentence"].startswith("We pulled the canoe") and own["note"].startswith("nearest 5 uses vote: 1.")
    assert chart(at, "glove-6b-50d · one vector per word")["own"] is None  # a static model places no sentence


@pytest.mark.slow
@pytest.mark.parametrize(
    "mine, expected",
    [
        ("All the banks were closed on Monday.", "does not use “bank” itself, but banks"),
        ("Nothing to see here.", "does not contain “bank”"),
    ],
)
def test_page_sentence_without_the_word_gets_a_message(mine: str, expected: str) -> None:
    at = open_page("pages/senses.py", mine=mine)
    assert not at.exception
    assert expected in all_text(at)


@pytest.mark.slow
def test_page_very_long_own_sentence_is_cut_with_a_note() -> None:
    at = open_page("pages/senses.py", mine="The bank was closed " + "é 🏦 " * 450)  # > 512 tokens in 2000 characters
    assert not at.exception
    assert "longer than minilm-l6 reads" in all_text(at)
    assert "minilm-l6" in list(at.dataframe[0].value.iloc[:, 0])  # still placed and voted on


@pytest.mark.slow
def test_page_html_in_own_sentence_travels_as_text() -> None:
    """The map's script sets text with textContent (the browser test checks it draws as text)."""
    mine = "<img src=x onerror=alert(1)> by the bank"
    at = open_page("pages/senses.py", mine=mine)
    assert not at.exception
    own = chart(at, "minilm-l6 · layer 3 of 6")["own"]
    assert own["sentence"] == mine and mine[own["span"][0] : own["span"][1]] == "bank"


@pytest.mark.slow
def test_page_unavailable_models_say_so() -> None:
    at = open_page("pages/senses.py", models=["bert-base-uncased", "elmo-small"])
    assert not at.exception
    warnings = " ".join(shown(w.value) for w in at.warning)
    assert "bert-base-uncased" in warnings and "elmo-small" in warnings


@pytest.mark.slow
def test_page_chinese_corner_with_a_chinese_model(tiny_bert, fake_hub) -> None:
    """Once a Chinese BERT is in the cache (here a tiny one laid out as if downloaded), 长 is compared,
    and 苹果 (two characters, read as both) at a click."""
    fake_hub(model_zoo.get_card("bert-base-chinese").hub_repo or "", tiny_bert)
    at = open_page("pages/senses.py")
    assert not at.exception
    assert "Cosine similarity of 长 in six sentences (bert-base-chinese, last layer)" in chart_titles(at)
    assert "No model that reads Chinese" not in all_text(at)
    at.segmented_control(key="zh_word").set_value("苹果").run()
    assert not at.exception
    assert "Cosine similarity of 苹果 in six sentences (bert-base-chinese, last layer)" in chart_titles(at)


@pytest.mark.slow
def test_page_in_chinese() -> None:
    at = open_page("pages/senses.py", lang="zh")
    assert not at.exception
    assert at.title[0].value == "一词多义"


# -- precomputed figures ------------------------------------------------------------------------------
@pytest.mark.slow
def test_precomputed_figures_are_what_the_model_gives(offline_models) -> None:
    """The shipped figures for minilm-l6 equal a fresh computation on the shipped data."""
    from model_zoo.lessons.projection import pca_2d
    from model_zoo.lessons.sense_data import load_precomputed

    pre = load_precomputed("minilm-l6")
    assert pre is not None and set(pre) == set(load_senses())
    s = load_senses()["bank"]
    fresh = encode_senses(offline_models("minilm-l6"), s)
    measures = layer_measures(fresh, s.senses)
    np.testing.assert_allclose(pre["bank"].accuracy, measures.accuracy, atol=0.02)
    np.testing.assert_allclose(pre["bank"].self_similarity, measures.self_similarity, atol=1e-3)
    np.testing.assert_allclose(pre["bank"].pca[:, 4], pca_2d(fresh.vectors[:, 4]), atol=1e-2)
    assert pre["bank"].umap.shape == pre["bank"].pca.shape == (len(s.sentences), 7, 2)


def test_precomputed_figures_from_other_data_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    from model_zoo.lessons import sense_data

    sense_data._load_precomputed.cache_clear()
    assert sense_data.load_precomputed("minilm-l6") is not None  # the shipped figures, for the pack's weights
    monkeypatch.setattr(sense_data, "data_version", lambda: "another-set")
    try:
        assert sense_data.load_precomputed("minilm-l6") is None
    finally:
        monkeypatch.undo()
        sense_data._load_precomputed.cache_clear()


def test_precomputed_figures_from_other_weights_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model trained again under its name (elmo-mini, smollm2-135m-mlm) never gets the old one's figures."""
    from model_zoo import registry
    from model_zoo.lessons import sense_data

    assert sense_data.load_precomputed("elmo-mini") is not None
    monkeypatch.setattr(registry, "weights_fingerprint", lambda name: "weights-trained-again")
    assert sense_data.load_precomputed("elmo-mini") is None


@pytest.mark.slow
def test_default_view_needs_no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first picture comes from the precomputed figures: neither default model is loaded for it.

    (The Chinese corner may load a Chinese BERT that another test left in the cache.)
    """
    import serving

    loaded: list[str] = []
    real = serving.load_model

    def watched(name: str):
        loaded.append(name)
        return real(name)

    monkeypatch.setattr(serving, "load_model", watched)
    at = open_page("pages/senses.py", layer="6", method="UMAP")
    assert not at.exception
    titles = chart_titles(at)
    assert "minilm-l6 · layer 6 of 6" in titles and "glove-6b-50d · one vector per word" in titles
    assert not {"minilm-l6", "glove-6b-50d"} & set(loaded)
    at.text_input(key="mine").set_value("The boat drifted toward the bank.").run()
    assert "minilm-l6" in loaded  # your own sentence needs the model itself


def test_votes_by_layer_reads_each_layer_on_its_own() -> None:
    from model_zoo.lessons.senses import votes_by_layer

    # Three uses of each sense; at layer 0 the learner's use sits among the river uses, at layer 1
    # among the money uses.
    river, money = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    uses = np.stack([np.stack([river, river])] * 3 + [np.stack([money, money])] * 3)  # (6, S=2, D=2)
    senses = ("river",) * 3 + ("money",) * 3
    assert votes_by_layer(uses, senses, np.stack([river, money]), k=3) == ["river", "money"]


@pytest.mark.slow
def test_the_lectures_blood_bank_is_placed_and_voted_on() -> None:
    at = open_page("pages/senses.py")
    at.button(key="blood_bank").click().run()
    assert not at.exception
    assert at.text_input(key="mine").value == "The hospital has its own blood bank."
    assert "Dictionaries disagree" in " ".join(c.value for c in at.caption)
    votes = at.dataframe[0].value
    assert {row.iloc[0] for _, row in votes.iterrows()} == {"elmo-mini", "minilm-l6"}  # each model votes
    own = chart(at, "minilm-l6 · layer 3 of 6")["own"]
    assert own["sentence"] == "The hospital has its own blood bank." and own["note"].startswith("nearest 5 uses vote")


@pytest.mark.slow
def test_own_sentence_rerun_on_the_default_view_reads_each_model_once_and_fits_nothing(monkeypatch) -> None:
    """What one learner's own sentence costs the server on the default view (PCA): one pass of each
    contextual model over that sentence, and no projection fitted (the map's axes are fitted once per
    server; the sentence is placed on them). Counted, not timed: a class of thirty typing at once
    waited 50 s a rerun when every rerun fitted a PCA of its own (thirty SVDs fighting for BLAS)."""
    from model_zoo.contextual import Encoder
    from model_zoo.elmo import ElmoModel
    from model_zoo.lessons import projection

    at = open_page("pages/senses.py", mine="We pulled the canoe up onto the muddy bank of the stream.")
    assert not at.exception
    calls: list[str] = []

    def counted(name: str, original):  # noqa: ANN001, ANN202
        def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            calls.append(name)
            return original(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(projection, "fit_pca_2d", counted("fit pca", projection.fit_pca_2d))
    monkeypatch.setattr(projection, "umap_2d", counted("umap", projection.umap_2d))
    monkeypatch.setattr(Encoder, "word_vectors", counted("encoder", Encoder.word_vectors))
    monkeypatch.setattr(ElmoModel, "word_vectors", counted("elmo", ElmoModel.word_vectors))
    at.text_input(key="mine").input("The fisherman sat on the bank of the quiet river all day.").run()
    assert not at.exception
    assert sorted(calls) == ["elmo", "encoder"]
    own = chart(at, "minilm-l6 · layer 3 of 6")["own"]
    assert own["sentence"].startswith("The fisherman") and own["note"].startswith("nearest 5 uses vote: 1.")


@pytest.mark.slow
def test_the_shipped_pca_maps_are_the_axes_the_learners_sentence_is_placed_on(offline_models) -> None:
    """The star is placed with axes fitted on the encoded uses; the points come from the precomputed
    file: both must be the same projection, or the star lands in the wrong place."""
    from model_zoo.lessons.projection import fit_pca_2d
    from model_zoo.lessons.sense_data import load_precomputed

    precomputed = load_precomputed("minilm-l6")
    assert precomputed is not None
    pre = precomputed["bank"]
    uses = cached_sense_vectors(offline_models("minilm-l6"), load_senses()["bank"], model_zoo.cache_root() / "senses")
    for layer in (0, 3, 6):
        placed = fit_pca_2d(uses.vectors[:, layer]).place(uses.vectors[:, layer])
        assert np.allclose(placed, pre.pca[:, layer], atol=1e-3)


def test_weights_version_holds_while_other_sessions_add_to_the_shared_model() -> None:
    """A fresh server: Using BERT hashed a model's weights while another page's thread cached a head on the
    same shared model object, and the page showed an error box ("dictionary changed size during
    iteration"). The hash reads a copy of the model's attributes."""
    import torch

    from model_zoo.disk import weights_version

    class SharedModel:
        pass

    shared = SharedModel()

    class Layer(torch.nn.Linear):
        def state_dict(self, *args, **kwargs):  # another thread caches something on the model meanwhile
            shared.__dict__[f"cached_{len(vars(shared))}"] = object()
            return super().state_dict(*args, **kwargs)

    torch.manual_seed(0)
    shared.model = Layer(4, 3)
    version = weights_version(shared)
    assert len(version) == 10
    assert weights_version(shared) == version  # computed once per model object
    other = SharedModel()
    other.model = torch.nn.Linear(4, 3)
    assert weights_version(other) != version


@pytest.mark.slow
def test_one_layer_slider_says_where_a_shallower_model_is_drawn() -> None:
    """minilm-l6 (6 layers) beside elmo-mini (2): the slider's layer 3 draws elmo-mini at its layer 1, the same
    relative depth, and the line under the slider says so (the maps' titles alone, "layer 1 of 2" beside "layer 3
    of 6", read as a slider that does not work). With models of one depth there is nothing to say."""
    at = open_page("pages/senses.py", models="minilm-l6,elmo-mini", layer="3")
    assert not at.exception
    said = [shown(c.value) for c in at.caption if "relative depth" in shown(c.value)]
    assert said == ["Layer 3 of 6; elmo-mini at layer 1 of 2: the same relative depth."]
    assert chart(at, "elmo-mini · layer 1 of 2") and chart(at, "minilm-l6 · layer 3 of 6")
    at = open_page("pages/senses.py", models="glove-6b-50d,minilm-l6", layer="3")
    assert not any("relative depth" in shown(c.value) for c in at.caption)
