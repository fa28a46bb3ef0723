"""The BERT inputs lesson: tokens, segments, positions and the embedding sum, from real weights."""

from __future__ import annotations

import numpy as np
import pytest

import model_zoo
from model_zoo.lessons.architecture import input_embeddings, size_from_config, size_from_json
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


def test_reordering_changes_vectors_only_through_position_numbers(tiny_bert) -> None:
    """Self-attention reads a set: a tiny BERT gives [CLS] and the words the same top-layer vectors in
    any order while each token keeps its position number, and other vectors once they are renumbered."""
    from model_zoo.lessons.architecture import reorderings

    model = model_zoo.load(tiny_bert)
    moves = {m.key: m for m in reorderings(model, model.encode("the bank of the river", attentions=False).token_ids)}
    assert moves["cls_kept"].tokens[-1] == "[CLS]" and moves["cls_kept"].positions[-1] == 0
    assert moves["cls_renumbered"].positions == list(range(len(moves["cls_renumbered"].tokens)))
    assert moves["cls_kept"].cosine == pytest.approx(1.0, abs=1e-4)
    assert moves["words_kept"].cosine == pytest.approx(1.0, abs=1e-4)
    assert moves["cls_renumbered"].cosine < 0.999 and moves["words_renumbered"].cosine < 0.999


@pytest.mark.parametrize("kind", ["openai-gpt", "gpt2", "llama", "bert", "qwen2"])
def test_a_size_counts_every_layer_of_the_whole_model(kind: str) -> None:
    """The count built from one and two layers equals the whole model's, for each kind of stack the lessons size."""
    import torch
    from transformers import AutoConfig, AutoModel

    config = AutoConfig.for_model(
        kind, num_hidden_layers=5, hidden_size=64, num_attention_heads=4, intermediate_size=96, vocab_size=300
    )
    with torch.device("meta"):
        whole = sum(p.numel() for p in AutoModel.from_config(config).parameters())
    size = size_from_config(kind, config)
    assert size.layers == 5 and size.parameters == whole
    one = AutoConfig.for_model(kind, num_hidden_layers=1, hidden_size=64, num_attention_heads=4)
    assert size_from_config(kind, one).layers == 1


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
    # [CLS] last or words reversed: the same vectors while each keeps its position number, others when renumbered
    at.radio(key="predict_inputs_order").set_value("neither").run()  # the table comes once the learner guessed
    order = at.dataframe[1].value
    cosine = dict(zip(order["Fed as"], order["Cosine with the usual order (top layer)"]))
    assert cosine["[CLS] moved to the end, keeping position 0"] == pytest.approx(1.0, abs=1e-3)
    assert cosine["Words reversed, each keeping its position"] == pytest.approx(1.0, abs=1e-3)
    assert (
        cosine["Words reversed, numbered afresh"] < cosine["[CLS] moved to the end, numbered as the last token"] < 0.99
    )
    assert order["Tokens · position numbers"][0].endswith("[SEP]·10 [CLS]·0")  # my dog loves word em ##bed ##ding ##s .
    sizes = at.dataframe[2].value
    assert list(sizes["Model"]) == [
        "bert-base-uncased",
        "bert-large-uncased",
        "Transformer (2017) encoder",
        "minilm-l6",
    ]
    assert list(sizes["Parameters"])[:2] == ["109.5M", "335.1M"]
    assert list(sizes.columns)[:2] == ["Model", "Parameters"]  # the table's point where a phone shows it
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
        ("", "He plays fetch.", lambda at: shown(at.info[0].value).startswith("The first sentence (A) is empty")),
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
