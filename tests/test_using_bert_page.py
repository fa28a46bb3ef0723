"""The Using BERT lesson with the offline pack's minilm-l6 (real weights: slow tier)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import all_text, open_page

pytestmark = pytest.mark.slow


def bars(at, key: str) -> dict[str, float]:  # noqa: ANN001
    found = next(c for c in at.get("plotly_chart") if c.proto.id.endswith(f"-{key}"))
    data = json.loads(found.proto.spec)["data"][0]
    return dict(zip(data["y"], data["x"]))


def test_sentence_heads_beat_the_majority_and_classify_the_learners_sentence() -> None:
    at = open_page("pages/using_bert.py")
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["Sentence vector"]) == ["[CLS]", "mean of the tokens"]
    assert (table["Held-out accuracy"] > table["Majority class"] + 0.2).all()  # sentiment: 0.81 and 0.94 vs 0.5
    at.text_input(key="sentence_sentiment").input("The food was awful and the waiter was rude.").run()
    assert bars(at, "sentence_bars")["negative"] > 0.5
    assert "The head says negative" in all_text(at)


def test_spam_in_the_url_and_its_own_sentence() -> None:
    at = open_page("pages/using_bert.py", task="spam")
    assert not at.exception
    assert bars(at, "sentence_bars")["spam"] > 0.5  # the example: a prize for a card number


def test_the_order_of_a_pair_matters() -> None:
    at = open_page("pages/using_bert.py")
    before = bars(at, "pair_bars")
    at.button(key="swap").click().run()
    assert not at.exception
    assert at.text_input(key="premise").value == "Someone is outside with an animal."
    assert bars(at, "pair_bars") != before  # segment A and B reach the model


def test_fine_tuning_a_copy_is_compared_with_the_frozen_head() -> None:
    at = open_page("pages/using_bert.py")
    at.button(key="finetune").click().run(timeout=300)
    assert not at.exception
    table = at.dataframe[-1].value
    assert list(table["How"]) == ["Frozen vectors + a linear layer on [CLS]", "The whole model fine-tuned (3 epochs)"]
    assert 0.5 <= table["Held-out accuracy"].iloc[1] <= 1.0


def test_empty_sentence_gets_a_sentence() -> None:
    at = open_page("pages/using_bert.py")
    at.text_input(key="sentence_sentiment").input("  ").run()
    assert not at.exception and "empty" in at.info[0].value


def test_the_page_speaks_chinese() -> None:
    at = open_page("pages/using_bert.py", lang="zh")
    assert not at.exception and "BERT 先在普通文本上训练一次" in all_text(at)


def test_the_tagger_trains_on_the_probing_data_and_tags_the_sentence() -> None:
    at = open_page("pages/using_bert.py")
    at.button(key="train_tagger").click().run(timeout=300)
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "**Barack** `B-PERSON`" in text and "**Paris** `B-GPE`" in text
    assert "a weak tagger" in all_text(at)
