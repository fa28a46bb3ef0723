"""BERT's masked-LM lesson: the 80/10/10 recipe, the head ContextLab trained, and the page."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import model_zoo
from model_zoo.masking import bert_masking
from model_zoo.registry import get_card, head_file, head_metrics
from tests.test_app import open_page


def test_bert_masking_follows_the_recipe() -> None:
    ids = torch.randint(5, 1000, (200, 100))
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True  # [CLS], [SEP]
    out = bert_masking(ids, special, mask_id=4, vocab_size=1000, generator=torch.Generator().manual_seed(0))
    picked = out.picked
    assert not picked[special].any()
    assert abs(picked.float().mean().item() / (98 / 100) - 0.15) < 0.01
    share = torch.bincount(out.action[picked], minlength=4)[1:].float() / picked.sum()
    np.testing.assert_allclose(share.numpy(), [0.8, 0.1, 0.1], atol=0.02)
    assert (out.input_ids[out.action == 1] == 4).all()
    assert (out.input_ids[out.action == 3] == ids[out.action == 3]).all()
    assert (out.labels[~picked] == -100).all() and (out.labels[picked] == ids[picked]).all()
    again = bert_masking(ids, special, 4, 1000, torch.Generator().manual_seed(0))
    assert torch.equal(again.input_ids, out.input_ids)


def test_logits_at_positions_equal_the_full_head(tiny_bert) -> None:
    model = model_zoo.load(tiny_bert)
    batch = model.tokenize("the man went to the bank")
    positions = torch.tensor([2, 5])
    with torch.inference_mode():
        full = model.model(**batch).prediction_logits[0, positions]
    np.testing.assert_allclose(model.logits_at(batch, positions).numpy(), full.numpy(), atol=1e-5)


@pytest.fixture(scope="module")
def mlm(offline_models) -> model_zoo.MaskedLM:
    return offline_models("minilm-l6-mlm")


def test_trained_head_is_tied_to_the_frozen_encoder(mlm) -> None:
    assert isinstance(mlm, model_zoo.MaskedLM) and not mlm.has_nsp
    bert = mlm.model
    assert bert.cls.predictions.decoder.weight is bert.bert.embeddings.word_embeddings.weight
    from safetensors.torch import load_file

    shipped = load_file(str(head_file(get_card("minilm-l6-mlm"))))
    for key, value in shipped.items():
        assert torch.equal(bert.state_dict()[key], value), key
    encoder = model_zoo.load("minilm-l6").model  # the package's encoder, untouched
    assert torch.equal(encoder.encoder.layer[5].output.dense.weight, bert.bert.encoder.layer[5].output.dense.weight)


def test_trained_head_beats_the_unigram_baseline(mlm) -> None:
    from model_zoo.train_mlm_head import evaluate, sentences_split

    metrics = head_metrics(get_card("minilm-l6-mlm"))
    assert metrics["top1"] > metrics["unigram_top1"] and metrics["top5"] > metrics["unigram_top5"]
    # Re-measured here on held-out sentences the head never trained on, not just read from the file.
    _, held = sentences_split(int(metrics["seed"]), int(metrics["held_out_sentences"]))
    unigram = mlm.tokenizer(" ".join(["the", "and", "of", "to", "a"]), add_special_tokens=False)["input_ids"]
    again = evaluate(mlm.model, mlm.tokenizer, held[:400], unigram, seed=7)
    assert again["top1"] > 2 * again["unigram_top1"] and again["top5"] > again["unigram_top5"] + 0.1


def test_trained_head_fills_the_lesson_example(mlm) -> None:
    guesses = [tok for tok, _ in mlm.fill_mask("The man went to the [MASK] to deposit his money.", top_k=10)[0]]
    assert len(guesses) == 10 and guesses[0].isalpha()


def test_metrics_file_names_its_script() -> None:
    metrics = json.loads((head_file(get_card("minilm-l6-mlm")).parent / "metrics.json").read_text())
    assert metrics["script"] == "python -m model_zoo.train_mlm_head"


# -- the page ------------------------------------------------------------------------------------
def page(**query: str):
    return open_page("pages/masked_lm.py", **query)


def test_masked_lm_page_default() -> None:
    at = page()
    assert not at.exception
    assert "trained by ContextLab" in at.info[0].value  # labelled, with its measured quality
    assert len(at.get("plotly_chart")) == 1
    assert len(at.table[0].value) >= 1  # the recipe picked at least one token
    assert at.metric[0].label.startswith("Masked-LM loss")
    assert any("no next-sentence head" in i.value for i in at.info)


def test_masked_lm_page_examples_and_mask_button() -> None:
    at = page()
    at.button(key="ex3").click().run()
    assert not at.exception and len(at.get("plotly_chart")) == 2  # two [MASK]s
    at.selectbox(key="mask_pick").set_value("deposit")
    [b for b in at.button if b.label == "Mask it"][0].click().run()
    assert "[MASK]" in at.text_area(key="text").value and "deposit" not in at.text_area(key="text").value
    assert len(at.get("plotly_chart")) == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [("The man went to the bank.", "There is no [MASK]"), ("  ", "empty"), ("[MASK] " * 11, "up to 10")],
)
def test_masked_lm_page_bad_input(text: str, message: str) -> None:
    at = page()
    at.text_area(key="text").set_value(text).run()
    assert not at.exception
    assert any(message in i.value for i in at.info)


def test_masked_lm_page_odd_text() -> None:
    at = page(text="🙂 银行 <script>alert(1)</script> [MASK] " + "word " * 600)
    assert not at.exception
    assert any("only the first 512 tokens" in w.value for w in at.warning)


def test_masked_lm_page_unreachable_bert_falls_back() -> None:
    at = page(model="bert-base-uncased")
    assert not at.exception
    assert "minilm-l6-mlm" in at.warning[0].value
