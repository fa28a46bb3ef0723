"""Inside the model on the offline pack's real weights (slow tier): the logit lens's last row is the model's own
answer, the shipped tuned lenses read every layer but the last closer to that answer than the logit lens on
held-out text, and the page shows both with the lens's measured quality."""

from __future__ import annotations

import json

import pytest

import model_zoo
from model_zoo.lessons import inside
from model_zoo.lessons.lexicon import ASSETS
from model_zoo.registry import weights_fingerprint
from tests.conftest import all_text, open_page

pytestmark = pytest.mark.slow
PARIS = "Paris is the capital of [MASK]."


@pytest.mark.parametrize("name", ["smollm2-135m-mlm", "smollm2-135m"])
def test_the_logit_lens_last_row_is_the_model_s_own_answer(name: str) -> None:
    model = model_zoo.load(name)
    lens = inside.logit_lens(model, PARIS)
    if isinstance(model, model_zoo.MaskedLM):
        own = model.fill_mask(PARIS, top_k=5)[0]
    else:
        own = model.next_words("Paris is the capital of", top_k=5)
    # the page's own answers merge a word with and without its leading space (their probabilities summed)
    assert [w.strip() for w, _ in lens.rows[-1].top[:3]] == [w.strip() for w, _ in own[:3]]
    assert lens.rows[-1].top[0][1] == pytest.approx(own[0][1], abs=0.01)
    assert lens.rows[-1].answer_rank == 1 and lens.answer == lens.rows[-1].top[0][0]
    if isinstance(model, model_zoo.MaskedLM):
        assert lens.answer.strip() == "France"  # the lesson's example, read from both sides


@pytest.mark.parametrize("name", ["smollm2-135m-mlm", "smollm2-135m"])
def test_the_shipped_tuned_lens_beats_the_logit_lens_at_every_layer_but_the_last(name: str) -> None:
    metrics = json.loads((ASSETS / "models" / f"{name}-lens" / "metrics.json").read_text())
    assert metrics["weights"] == weights_fingerprint(name)  # fitted on the weights this machine serves
    raw, tuned = metrics["test_kl_bits"]["logit_lens"], metrics["test_kl_bits"]["tuned_lens"]
    assert len(raw) == len(tuned) == metrics["layers"] + 1
    assert all(t < r for t, r in zip(tuned[:-1], raw[:-1])) and tuned[-1] == raw[-1] == 0
    assert metrics["texts"]["test"] >= 100 and metrics["positions"]["test"] >= 1000


def test_the_page_shows_both_lenses_and_the_lens_s_quality() -> None:
    at = open_page("pages/inside.py")
    assert not at.exception
    charts = {c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")}
    assert {"grid_Logit lens", "grid_Tuned lens", "kl_curve"} <= charts
    text = all_text(at)
    assert "smollm2-135m-mlm's answer is “France”" in text
    assert (
        "the tuned lens reads closer to the model's final distribution than the logit lens at 30 of 30 layers" in text
    )


def test_a_bert_shows_its_tuned_lens_and_why_its_early_layers_read_poorly() -> None:
    at = open_page("pages/inside.py", model="minilm-l6-mlm", text="The man went to the [MASK] to deposit his money.")
    assert not at.exception
    charts = {c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")}
    assert {"grid_Logit lens", "grid_Tuned lens", "kl_curve"} <= charts
    text = all_text(at)
    assert "Why the raw logit lens reads a BERT's early layers poorly" in text
    assert "at 6 of 6 layers" in text and "of 6 readings through the logit lens, at" in text
    decoder = all_text(open_page("pages/inside.py", model="smollm2-135m"))
    assert "a BERT's early layers" not in decoder  # a decoder's layers are not normalised each on their own
