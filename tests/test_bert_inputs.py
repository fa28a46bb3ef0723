"""The BERT inputs lesson: tokens, segments, positions and the embedding sum, from real weights."""

from __future__ import annotations

import numpy as np
import pytest

import model_zoo
from model_zoo.architecture import input_embeddings, size_from_config, size_from_json
from model_zoo.registry import ASSETS
from tests.conftest import open_page, shown


@pytest.mark.slow
def test_embedding_sum_is_what_the_first_layer_reads(offline_models) -> None:
    minilm = offline_models("minilm-l6")
    enc = minilm.encode("My dog loves word embeddings.", "He plays fetch.")
    parts = input_embeddings(minilm, enc.token_ids, enc.segment_ids)
    np.testing.assert_allclose(parts.summed, parts.token + parts.segment + parts.position, atol=1e-6)
    np.testing.assert_allclose(parts.normalised, enc.hidden_states[0], atol=1e-5)  # layer 0 of the model itself
    dog = enc.tokens.index("dog")
    again = minilm.encode("dog")
    np.testing.assert_allclose(parts.token[dog], input_embeddings(minilm, again.token_ids, again.segment_ids).token[1])


@pytest.mark.slow
def test_sizes_are_computed_from_configs(offline_models) -> None:
    base = size_from_json("bert-base-uncased", ASSETS / "configs" / "bert-base-uncased.json")
    large = size_from_json("bert-large-uncased", ASSETS / "configs" / "bert-large-uncased.json")
    assert (base.layers, base.hidden, base.heads) == (12, 768, 12) and round(base.parameters / 1e6) == 109
    assert (large.layers, large.hidden, large.heads) == (24, 1024, 16) and round(large.parameters / 1e6) == 335
    minilm = offline_models("minilm-l6")
    assert size_from_config("minilm-l6", minilm.config).parameters == minilm.num_parameters()


def page(**query: str):
    return open_page("pages/bert_inputs.py", **query)


@pytest.mark.slow
def test_bert_inputs_default_pair() -> None:
    at = page()
    assert not at.exception
    assert at.header[0].value == "20 tokens"
    table = at.dataframe[0].value
    rows = dict(zip(table["Token"], table["From word"]))
    assert rows["##bed"] == "embeddings" and rows["he"] == "He"  # B's words are B's
    assert list(table["Segment id"]).count(1) == 9  # he plays fetch by the river bank . [SEP]
    assert "embeddings" in shown(at.caption[0].value)
    sizes = at.dataframe[1].value
    assert list(sizes["Model"]) == [
        "bert-base-uncased",
        "bert-large-uncased",
        "Transformer (2017) encoder",
        "minilm-l6",
    ]
    assert list(sizes["Parameters"])[:2] == ["109.5M", "335.1M"]
    # The Illustrated BERT's feed-forward sizes (768 / 1024) are the widths: the page says so, from the configs.
    correction = shown(next(c.value for c in at.caption if "feed-forward networks 768 and 1024" in c.value))
    assert "are 3,072 and 4,096 wide" in correction
    assert list(sizes["Feed-forward"])[:2] == [3072, 4096] and list(sizes["Hidden size"])[:2] == [768, 1024]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("a", "b", "check"),
    [
        ("银行在河边", "", lambda at: at.header[0].value == "7 tokens"),  # one token per character
        ("I ❤️ 🦜 embeddings", "", lambda at: any("[UNK]" in shown(c.value) for c in at.caption)),
        ("", "", lambda at: "empty" in shown(at.info[0].value)),
        (
            "<script>alert(1)</script>",
            "",
            lambda at: "&lt;" in (body := at.get("html")[0].proto.body) and "<script" not in body,
        ),
    ],
)
def test_bert_inputs_odd_text(a: str, b: str, check) -> None:
    at = page(a=a, b=b)
    assert not at.exception
    assert check(at)


@pytest.mark.slow
def test_bert_inputs_unreachable_chinese_bert() -> None:
    at = page(model="bert-base-chinese")
    assert not at.exception
    assert "bert-base-chinese" in shown(at.warning[0].value) and "minilm" in shown(at.warning[0].value)
    assert model_zoo.get_card("bert-base-chinese").fallback == "minilm-l6-mlm"
