"""The offline pack with its real weights: facts a linguist would check."""

from __future__ import annotations

import numpy as np
import pytest

import model_zoo

pytestmark = pytest.mark.slow  # every test here reads the real offline pack


@pytest.fixture(scope="module")
def glove(offline_models) -> model_zoo.StaticModel:
    return offline_models("glove-6b-50d")


def test_glove_is_the_real_table(glove) -> None:
    assert len(glove) == 400_000 and glove.dim == 50


def test_glove_neighbours_of_bank_include_banks(glove) -> None:
    words = [w for w, _ in glove.most_similar("bank", 10)]
    assert "banks" in words and "bank" not in words


def test_glove_king_minus_man_plus_woman_is_queen(glove) -> None:
    top3 = [w for w, _ in glove.analogy("man", "king", "woman", top_k=3)]
    assert "queen" in top3
    assert not {"man", "king", "woman"} & set(top3)


def test_glove_is_case_folded_and_names_missing_words(glove) -> None:
    np.testing.assert_array_equal(glove.vector("Bank"), glove.vector("bank"))
    with pytest.raises(model_zoo.WordNotInVocabulary) as err:
        glove.vector("bankk")
    assert "bank" in err.value.suggestions


def test_minilm_separates_river_bank_from_money_bank(offline_models) -> None:
    minilm = offline_models("minilm-l6")
    assert isinstance(minilm, model_zoo.Encoder) and not isinstance(minilm, model_zoo.MaskedLM)
    sentences = [
        "The victim was found lying dead on the river bank.",
        "They stood on the river bank to fish.",
        "It is safest to deposit your money in the bank.",
    ]
    vectors = minilm.word_vectors(sentences, "bank")
    assert vectors.shape == (3, 7, 384)
    last = vectors[:, -1] / np.linalg.norm(vectors[:, -1], axis=-1, keepdims=True)
    river_river = last[0] @ last[1]
    assert river_river > last[0] @ last[2] and river_river > last[1] @ last[2]


def test_minilm_encoding_is_bert_shaped(offline_models) -> None:
    enc = offline_models("minilm-l6").encode("Let's stick to embeddings.")
    assert enc.tokens[0] == "[CLS]" and "##ding" in enc.tokens
    assert enc.attentions.shape[:2] == (6, 12)
    np.testing.assert_allclose(enc.attentions.sum(-1), 1.0, atol=1e-4)


def test_smollm2s_tokens_read_as_characters_or_bytes_never_as_their_byte_alphabet(offline_models) -> None:
    """SmolLM2's vocabulary spells 中 as "ä¸Ń" and a piece of 😀 as "ðŁ": a page shows 中 whole, a piece as its
    bytes (‹f0 9f›), and an English word as the vocabulary spells it (Ġbank, which the pages read as ␣bank)."""
    from model_zoo.words import BYTE_PIECE

    tokens = offline_models("smollm2-135m-mlm").encode("😀 中 bank", attentions=False).tokens
    assert "Ġbank" in tokens and any(t.endswith("中") for t in tokens)
    assert any(BYTE_PIECE.fullmatch(t) for t in tokens)
    assert not any(ch in "".join(tokens) for ch in "äðŁĺĢ")


def test_smollm2_prefers_bank_to_river_after_a_cheque(offline_models) -> None:
    lm = offline_models("smollm2-135m")
    preds = [tok.strip() for tok, _ in lm.next_words("I deposited the cheque at the", top_k=200)]
    assert "bank" in preds
    assert "river" not in preds or preds.index("bank") < preds.index("river")


@pytest.mark.parametrize("name", ["minilm-l6", "minilm-l6-mlm", "smollm2-135m", "smollm2-135m-mlm", "smollm2-135m-qa"])
def test_model_card_size_matches_the_loaded_model(offline_models, name: str) -> None:
    """The models panel's size column is the checkpoint's, not a typo."""
    import re

    model = offline_models(name)
    size = model_zoo.get_card(name).size
    params, layers, heads, dim = re.fullmatch(r"([\d.]+)M · L(\d+) · H(\d+) · d(\d+)", size).groups()
    config = model.config
    assert (config.num_hidden_layers, config.num_attention_heads, config.hidden_size) == (
        int(layers),
        int(heads),
        int(dim),
    )
    assert model.num_parameters() / 1e6 == pytest.approx(float(params), rel=0.03)
