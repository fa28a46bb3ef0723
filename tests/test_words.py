"""One rule for "a word" (model_zoo.words), the same on every page and in every model reader."""

from __future__ import annotations

import numpy as np
import pytest

import model_zoo
from model_zoo.words import find_word, forms_of, has_han, split_words, words_in

SENTENCE = "Banks, a bank-holiday, the riverbank and the Bank's rates: then the bank."


def test_a_word_is_whole_and_may_be_joined_by_hyphens_and_apostrophes() -> None:
    assert words_in(SENTENCE) == ["Banks", "a", "bank-holiday", "the", "riverbank", "and", "the", "Bank's", "rates"] + [
        "then",
        "the",
        "bank",
    ]
    assert split_words("Don’t_stop") == ["don't", "stop"]
    assert words_in("这条河的长度") == list("这条河的长度")
    assert find_word("孩子今年长高了", "长") is not None  # one character a word
    found = find_word("我去银行取钱", "银行")  # a word of two characters: both, in a row
    assert found is not None and found.span() == (2, 4) and find_word("银色的行李", "银行") is None
    assert has_han("巴黎是法国的首[MASK]。") and has_han("𠀀") and not has_han("Paris, l'été [MASK].")


def test_find_word_skips_other_forms_and_keeps_a_possessive() -> None:
    found = find_word(SENTENCE, "bank")
    assert found is not None and found.group() == "Bank" and SENTENCE[found.end() :].startswith("'s rates")
    assert find_word("Banks and a bank-holiday.", "bank") is None
    assert find_word("anything", " ") is None
    assert forms_of("Banks and a bank-holiday by the riverbank.", "bank") == ["Banks", "bank-holiday", "riverbank"]


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_gpt2"])
def test_models_read_the_use_a_page_finds(fixture: str, request) -> None:
    """The vector of "bank" is read where find_word puts it, whatever the tokenizer does with hyphens."""
    model = model_zoo.load(request.getfixturevalue(fixture))
    with pytest.raises(model_zoo.WordNotInText):
        model.word_vectors(["we sat on the bank-holiday"], "bank")
    text = "we sat on the bank-holiday at the bank"
    got = model.word_vectors([text], "bank")[0]  # (S, D)
    encoding = model.encode(text, attentions=False)
    last = max(i for i, token in enumerate(encoding.tokens) if token.lstrip("Ġ") == "bank")
    assert [token.lstrip("Ġ") for token in encoding.tokens].count("bank") == 2  # both uses are tokens
    np.testing.assert_allclose(got, encoding.hidden_states[:, last], atol=1e-5)  # the second, whole use
