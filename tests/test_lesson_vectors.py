"""serving.lesson_vectors: what the One-hot, Embeddings, ELMo and Playground pages show, computed from the
learner's text and from the tiny zoo's models (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import model_zoo
import serving
from serving import lesson_vectors as lv

RIVER, MONEY = "We sat on the bank of the river.", "I went to the bank to deposit his money."


def test_vocabulary_is_the_distinct_lower_cased_words_in_first_seen_order() -> None:
    assert lv.vocabulary_of("The bank, the BANK and the river’s bank!") == ["the", "bank", "and", "river's"]
    assert lv.vocabulary_of("  ,.!  ") == []


def test_words_typed_keep_their_case_and_leave_out_the_mask() -> None:
    assert lv.words_typed("The [MASK] sat on Bank's edge") == ["The", "sat", "on", "Bank's", "edge"]


def test_shared_words_are_those_of_the_first_text_the_second_holds_in_any_case() -> None:
    assert lv.shared_words("We sat on the Bank of the river.", "the bank by the RIVER") == ["the", "Bank", "river"]
    assert lv.shared_words("Let's stick to the plan.", "A dog barked.") == []


def test_word_classes_and_their_one_hot_table() -> None:
    assert lv.classes_of(["dog", "run", "qqqzzz"], "—") == ["noun.animal", "verb.motion", "—"]
    table = lv.word_class_table(["dog", "cat", "run", "qqqzzz"], "none")
    assert table.classes == ["noun.animal", "noun.animal", "verb.motion", "none"]
    assert table.names == ["noun.animal", "verb.motion", "none"]
    assert table.matrix.tolist() == [[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]  # dog and cat share a column
    assert table.read_as == []


def test_an_inflected_word_takes_its_dictionary_forms_class() -> None:
    """ "sat" is WordNet's Saturday (noun.time) as a word of its own, but read as "sit" (tagged 185 times in
    WordNet's texts against 0); "was" is not a WordNet word at all. Each takes its dictionary form's class, by
    WordNet's lists of irregular forms or its regular endings ("walked": the verb, not walk's noun.act)."""
    words = ["sat", "was", "rivers", "walked", "feet", "dog", "the"]
    assert lv.classes_of(words, "—") == [
        "verb.contact", "verb.stative", "noun.object", "verb.motion", "noun.body", "noun.animal", "—",
    ]  # fmt: skip
    table = lv.word_class_table(words, "—")
    assert table.read_as == [("sat", "sit"), ("was", "be"), ("rivers", "river"), ("walked", "walk"), ("feet", "foot")]


def test_one_hot_words_are_all_equally_far_apart() -> None:
    assert lv.one_hot(["cat"], ["dog", "cat", "car"]).tolist() == [[0, 1, 0]]
    np.testing.assert_allclose(lv.one_hot_cosines(["dog", "cat", "car"]), np.eye(3))
    assert float(lv.one_hot_cosines(["dog", "cat"], ["dog", "cat", "car"])[0, 1]) == 0.0  # the quiz's answer: 0
    assert lv.one_hot(["w0"], [f"w{i}" for i in range(30_000)]).shape == (1, 30_000)
    assert lv.bytes_per_vector(30_000) == 120_000  # 120 KB a word at 30,000 words (float32)


def test_known_words_split_a_text_by_what_the_static_model_has(tiny_zoo: Path) -> None:
    read = lv.known_words("glove-6b-50d", "King qqqzzz king river queen", 10)
    assert (read.shown, read.missing, read.total, read.known) == (["king", "river", "queen"], ["qqqzzz"], 4, 3)
    capped = lv.known_words("glove-6b-50d", "King qqqzzz king river queen", 2)
    assert (capped.shown, capped.known, capped.total) == (["king", "river"], 3, 4)  # the cap says 3 known of 4


def test_static_cosines_are_the_model_s_similarities_of_the_words_it_knows(tiny_zoo: Path) -> None:
    glove = serving.loaded("glove-6b-50d", model_zoo.StaticModel)
    read = lv.static_cosines("glove-6b-50d", ("king", "qqqzzz", "queen", "river"))
    assert (read.known, read.missing) == (["king", "queen", "river"], ["qqqzzz"])
    assert read.cosines.shape == (3, 3)
    np.testing.assert_allclose(np.diag(read.cosines), 1.0, atol=1e-6)
    assert read.cosines[0, 1] == pytest.approx(glove.similarity("king", "queen"), abs=1e-5)
    assert read.cosines[1, 2] == pytest.approx(glove.similarity("queen", "river"), abs=1e-5)


def test_a_static_model_gives_every_use_of_a_word_one_vector(tiny_zoo: Path) -> None:
    same = lv.repeated_word("glove-6b-50d", "bank", 5)
    assert same.vectors.shape == (5, 8)
    assert (same.vectors == same.vectors[0]).all()
    assert [f"{s:.3f}" for s in same.cosines] == ["1.000"] * 5  # the table the Embeddings page shows
    with pytest.raises(model_zoo.WordNotInVocabulary):
        lv.repeated_word("glove-6b-50d", "qqqzzz", 2)


def test_token_cosines_compare_every_token_at_the_layer_asked(tiny_zoo: Path) -> None:
    text = "The man went to the bank."
    encoding = serving.hidden_states("minilm-l6", text)
    for layer in (0, encoding.num_layers):
        sims = lv.token_cosines("minilm-l6", text, layer)
        states = encoding.hidden_states[layer]
        unit = states / np.linalg.norm(states, axis=-1, keepdims=True)
        assert sims.shape == (len(encoding.tokens), len(encoding.tokens))
        np.testing.assert_allclose(sims, unit @ unit.T, atol=1e-5)
        np.testing.assert_allclose(np.diag(sims), 1.0, atol=1e-5)


def test_mixed_word_is_elmo_s_scalar_mix_of_the_word_s_layers(tiny_zoo: Path) -> None:
    text = "Let's stick to the plan."
    layers = serving.hidden_states("elmo-mini", text).hidden_states[:, 1]  # (3, 12): the second token's layers
    equal = lv.mixed_word("elmo-mini", text, 1, (0.0, 0.0, 0.0), 1.0, 4)
    np.testing.assert_allclose(equal.mix.weights, [1 / 3] * 3)
    np.testing.assert_allclose(equal.mix.vector, layers.mean(0), atol=1e-5)
    assert (equal.shown, equal.dim, equal.rows.shape) == (4, 12, (4, 4))  # 3 layers and the mix, 4 dims drawn
    np.testing.assert_allclose(equal.rows[:3], layers[:, :4], atol=1e-6)
    top = lv.mixed_word("elmo-mini", text, 1, (-4.0, -4.0, 4.0), 2.0, 64)
    assert top.mix.weights[2] > 0.99 and top.shown == 12
    assert f"{top.mix.gamma:.1f}" == "2.0"
    np.testing.assert_allclose(top.mix.vector, 2.0 * (top.mix.weights[:, None] * layers).sum(0), atol=1e-5)


def test_context_cosines_move_above_elmo_s_token_layer(tiny_zoo: Path) -> None:
    moved = lv.context_cosines("elmo-mini", RIVER, MONEY, "bank")
    pair = serving.word_vectors("elmo-mini", (RIVER, MONEY), "bank")  # (2, 3, 12)
    unit = pair / np.linalg.norm(pair, axis=-1, keepdims=True)
    np.testing.assert_allclose(moved.layers, (unit[0] * unit[1]).sum(-1), atol=1e-5)
    assert moved.layers[0] == pytest.approx(1.0, abs=1e-5)  # the character layer knows no context
    assert moved.lowest_lstm == pytest.approx(float(moved.layers[1:].min()))
    assert moved.top == pytest.approx(float(moved.layers[-1]), abs=1e-5)
    assert moved.top < lv.ONE_VECTOR  # the check-yourself answer: "different"
    same = lv.context_cosines("elmo-mini", RIVER, RIVER, "bank")
    assert same.top > lv.ONE_VECTOR  # one text twice: one vector
    with pytest.raises(model_zoo.WordNotInText):
        lv.context_cosines("elmo-mini", RIVER, "A dog barked.", "bank")


def test_the_build_script_named_is_the_one_in_the_tree() -> None:
    from tests.conftest import ROOT

    assert (ROOT / lv.BUILD_SCRIPT).is_file()
