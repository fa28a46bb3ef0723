"""The road's stops before BERT: the Transformer (any distance in one step) and transfer learning (ULMFiT)."""

from __future__ import annotations

import numpy as np
import pytest

import model_zoo
from tests.conftest import all_text, chart, light_lines, open_page, title_of


# -- the Transformer ----------------------------------------------------------------------------------
def test_farthest_link_weighs_attention_by_distance() -> None:
    from model_zoo.lessons.attention import farthest_link

    word_ids = [None, 0, 1, 2, 3, 4, 5, None]  # [CLS] the keys on the table are [SEP]
    attn = np.zeros((2, 3, 8, 8))
    attn[0, 1, 6, 5] = 0.9  # "are" -> "table", next door, very strong
    attn[1, 2, 6, 2] = 0.4  # "are" -> "keys", four tokens back: 0.4 x 4 beats 0.9 x 1
    attn[1, 0, 6, 0] = 0.99  # [CLS] never counts
    assert farthest_link(attn, 6, word_ids) == (1, 2, 2, pytest.approx(0.4))
    attn[1, 2, 6, 2] = 0.1  # 0.1 x 4 < 0.9 x 1: the near link
    assert farthest_link(attn, 6, word_ids) == (0, 1, 5, pytest.approx(0.9))
    assert farthest_link(attn[:, :, :2, :2], 1, [None, 0]) is None  # one word: no link


@pytest.mark.slow
def test_transformer_page_shows_the_long_link_of_the_real_model() -> None:
    at = open_page("pages/transformer.py")
    assert not at.exception
    drawn = chart(at, "tf_reach")
    assert "Attention from “are”" in title_of(drawn)
    assert len(drawn["data"][0]["y"]) == 6  # minilm-l6's six layers
    text = all_text(at)
    assert "of the attention of “are” to “keys”, 13 tokens away" in text  # what the model does, read live
    assert "for all tokens at once" in text
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Steps one after another: Transformer encoder"] == "6"
    assert metrics["Steps one after another: 2-layer LSTM"] == str(19 + 2 - 1)  # [CLS] + 17 + [SEP], layers pipelined


@pytest.mark.slow
@pytest.mark.parametrize("text", ["", "<b>bank</b> **x**", "字" * 3000])
def test_transformer_page_odd_sentences(text: str) -> None:
    at = open_page("pages/transformer.py")
    at.text_input(key="tf_text").set_value(text).run()
    assert not at.exception
    if not text:
        assert at.info and not at.get("plotly_chart")  # one sentence, no chart
    else:
        assert chart(at, "tf_reach")
        cut = "Only the first 48 tokens are drawn." in all_text(at)
        assert cut == (len(text) > 100)  # the long sentence is cut, and says so


# -- transfer learning ---------------------------------------------------------------------------------
def test_transfer_curve_fine_tunes_copies_on_draws_with_both_classes(tiny_bert) -> None:
    from model_zoo.lessons import transfer

    model = model_zoo.load(tiny_bert)
    before = {k: v.clone() for k, v in model.base.state_dict().items()}
    twin = transfer.untrained_twin(model, seed=1)
    assert not np.allclose(
        twin.base.embeddings.word_embeddings.weight.detach(), model.base.embeddings.word_embeddings.weight.detach()
    )
    labels = ["positive"] * 50 + ["negative"] * 2
    for n in (2, 3, 10):
        picked = transfer.draw(labels, n, np.random.default_rng(n))
        assert len(picked) == n == len(set(picked)) and {labels[i] for i in picked} == {"positive", "negative"}
    curve = transfer.transfer_curve(model, sizes=(4, 8), epochs=1)
    assert curve.sizes == (4, 8) and curve.test_size == 60 and curve.chance == pytest.approx(0.5, abs=0.1)
    assert set(curve.accuracy) == {"pretrained", "random", "onehot"}
    assert all(len(v) == 2 and all(0 <= a <= 1 for a in v) for v in curve.accuracy.values())
    after = model.base.state_dict()
    assert all(np.array_equal(before[k].numpy(), after[k].numpy()) for k in before)  # the shared model is untouched


def test_word_counts_are_one_hot_counts_over_the_training_vocabulary() -> None:
    from model_zoo.lessons.transfer import word_counts

    counts = word_counts(["good film", "bad film"], ["good good film", "unseen words"])
    assert counts.tolist() == [[0, 1, 2], [0, 0, 0]]  # vocabulary bad, film, good


@pytest.mark.slow
def test_transfer_page_trains_on_a_click(monkeypatch: pytest.MonkeyPatch) -> None:
    from model_zoo.lessons import transfer

    monkeypatch.setattr(transfer, "SIZES", (8, 32))  # the same race, shorter (unless another test ran it first:
    # the server keeps one race per model)
    monkeypatch.setattr(transfer, "EPOCHS", 2)
    import serving

    trained: list[str] = []
    race = serving.transfer_curve
    monkeypatch.setattr(serving, "transfer_curve", lambda *a, **k: trained.append("run") or race(*a, **k))
    at = open_page("pages/transfer.py")
    assert not at.exception and trained == []  # nothing trains until asked: the shipped run is drawn at once
    shipped = light_lines(at, "transfer_chart")
    assert len(shipped["elmo-mini, pre-trained, then fine-tuned"]) == 4 and "shipped with the app" in all_text(at)
    at.button(key="transfer_train").click().run()
    assert not at.exception
    at.radio(key="predict_transfer_first").set_value("tie").run()  # the first point is drawn once guessed
    lines = light_lines(at, "transfer_chart")
    assert set(lines) >= {"elmo-mini, pre-trained, then fine-tuned", "the same network from random weights, fine-tuned"}
    assert all(len(v) == 2 for v in lines.values())  # two sizes; the chance line from the first to the last
    assert "labelled sentences the pre-trained model scores" in all_text(at)
