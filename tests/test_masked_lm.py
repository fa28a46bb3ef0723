"""BERT's masked-LM lesson: the 80/10/10 recipe, the head ContextLab trained, and the page."""

from __future__ import annotations

import ast
import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
import torch

import model_zoo
from model_zoo import pieces
from model_zoo.lessons import cloze
from model_zoo.lessons.masking import bert_masking
from model_zoo.loading import trained_state
from model_zoo.registry import get_card, trained_file, trained_metrics
from tests.conftest import open_page, shown


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


def test_recipe_demo_reports_what_the_model_saw_and_guessed(tiny_bert) -> None:
    from model_zoo.lessons.masking import recipe_demo

    model = model_zoo.load(tiny_bert)
    text = "the man went to the bank to deposit his money at the river bank"
    demo = recipe_demo(model, text, seed=3)
    assert demo.tokens[0] == "[CLS]" and demo.tokens[-1] == "[SEP]" and len(demo.positions) >= 1
    plain = model.token_strings(model.tokenize(text)["input_ids"][0].tolist())
    for position, original, action, seen in zip(demo.positions, demo.originals, demo.actions, demo.shown):
        assert plain[position] == original and demo.tokens[position] == seen
        assert (action == 1) == (seen == "[MASK]") or action == 2  # a random draw may land on [MASK]
        if action == 3:
            assert shown == original
    assert demo.loss == pytest.approx(float(np.mean([-np.log(p) for p in demo.p_original])), rel=1e-5)
    assert recipe_demo(model, text, seed=3) == demo and recipe_demo(model, text, seed=4) != demo
    with pytest.raises(model_zoo.EmptyInput):
        recipe_demo(model, "  ", seed=0)


def test_pair_loss_adds_the_two_heads_losses(tiny_bert) -> None:
    """MLM + NSP on one pair: the NSP loss is -log of the probability the head gives the pair's label."""
    from model_zoo.lessons.masking import pair_loss

    model = model_zoo.load(tiny_bert)
    assert model.has_nsp
    a, b = "the man went to the bank", "he put his money in the bank"
    real, drawn = pair_loss(model, a, b, True, seed=1), pair_loss(model, a, b, False, seed=1)
    assert real.tokens.count("[SEP]") == 2 and real.picked >= 1 and real.mlm == pytest.approx(drawn.mlm)
    assert real.p_is_next == pytest.approx(model.next_sentence(a, b), abs=0.2)  # the masks change the input a little
    assert real.nsp == pytest.approx(-np.log(real.p_is_next), rel=1e-5)
    assert drawn.nsp == pytest.approx(-np.log(1 - drawn.p_is_next), rel=1e-5)
    assert real.total == pytest.approx(real.mlm + real.nsp) and drawn.total == pytest.approx(drawn.mlm + drawn.nsp)
    with pytest.raises(model_zoo.EmptyInput):
        pair_loss(model, a, " ", True, seed=0)


@pytest.fixture(scope="module")
def mlm(offline_models) -> model_zoo.MaskedLM:
    return offline_models("minilm-l6-mlm")


@pytest.fixture(scope="module")
def shipped_metrics() -> dict:
    return trained_metrics(get_card("minilm-l6-mlm"))


@pytest.mark.slow
def test_shipped_model_is_the_whole_encoder_trained_further(mlm) -> None:
    assert isinstance(mlm, model_zoo.MaskedLM) and not mlm.has_nsp
    bert = mlm.model
    assert bert.cls.predictions.decoder.weight is bert.bert.embeddings.word_embeddings.weight
    from safetensors.torch import load

    shipped = load(pieces.read_bytes(trained_file(get_card("minilm-l6-mlm"))))  # shipped in 16 MiB pieces
    assert set(shipped) == set(trained_state(bert))
    for key, value in shipped.items():
        assert torch.equal(bert.state_dict()[key], value.float()), key
    encoder = model_zoo.load("minilm-l6").model  # the package's sentence encoder stays as released
    assert torch.equal(encoder.embeddings.word_embeddings.weight, bert.bert.embeddings.word_embeddings.weight)
    for layer in (0, 5):  # every layer was trained, not only a head on top
        ours, released = bert.bert.encoder.layer[layer], encoder.encoder.layer[layer]
        assert not torch.allclose(ours.output.dense.weight, released.output.dense.weight, atol=1e-3)


@pytest.mark.slow
def test_shipped_model_fills_everyday_blanks(mlm, shipped_metrics) -> None:
    """The repository's cloze set through the page's own fill_mask: the issue's bar, and the figures shipped."""
    items = cloze.items()
    guesses = [[tok for tok, _ in mlm.fill_mask(i.text, top_k=5)[0]] for i in items]
    got = cloze.score(items, guesses)
    # Measured when shipped: top-1 35% (40 of 114), top-5 82%; the issue asks 35% and 60%. One sentence
    # is 0.9 points, and fp16 weights may move one or two of them.
    assert got["cloze_top1"] >= 0.33 and got["cloze_top5"] >= 0.75
    assert got["cloze_top1"] == pytest.approx(shipped_metrics["cloze_top1"], abs=0.03)  # fp16 vs training's fp32
    assert got["cloze_top5"] == pytest.approx(shipped_metrics["cloze_top5"], abs=0.03)
    # Always answering the corpus's most frequent tokens scores nothing here.
    frequent = [["the", ",", ".", "of", "and"]] * len(items)
    assert cloze.score(items, frequent)["cloze_top5"] < 0.05


@pytest.mark.slow
def test_shipped_model_answers_the_seed_examples(mlm) -> None:
    bank = [tok for tok, _ in mlm.fill_mask("The man went to the [MASK] to deposit his money.", top_k=5)[0]]
    assert "bank" in bank
    capital = [tok for tok, _ in mlm.fill_mask("Paris is the capital of [MASK].", top_k=3)[0]]
    assert "france" in capital
    assert capital[:2] == ["paris", "france"]  # the copy the page's label owns up to


def test_metrics_file_says_how_the_model_was_trained(shipped_metrics) -> None:
    m = shipped_metrics
    assert m["script"] == "python -m model_zoo.train_mlm"
    assert set(m["corpus_sources"]) == {"wikipedia", "chatterbot", "fortunes", "wordnet"}
    assert m["tokens_seen"] > 1_000_000 and m["curve"][-1]["tokens"] == m["tokens_seen"]
    assert m["held_top1"] > 2 * m["unigram_top1"] and m["held_top5"] > m["unigram_top5"] + 0.2


# -- the page ------------------------------------------------------------------------------------
def mask_charts(at) -> list:  # noqa: ANN001
    """The score bars, one per [MASK] (keys mask0, mask1, ...)."""
    return [c for c in at.get("plotly_chart") if c.proto.id.rsplit("-", 1)[-1].startswith("mask")]


def page(**query: str):
    return open_page("pages/masked_lm.py", **query)


def mask_bars(at, text: str) -> list[tuple[str, float]]:  # noqa: ANN001
    """The first [MASK]'s guesses as the page draws them, for `text` typed into the box."""
    at.text_input(key="text").set_value(text).run()
    assert not at.exception
    spec = json.loads(mask_charts(at)[0].proto.spec)
    bar = spec["data"][0]
    return list(zip(bar["y"][::-1], bar["x"][::-1]))  # drawn highest on top: last in the spec


@pytest.fixture(scope="module")
def mntp(offline_models) -> model_zoo.MaskedLM:
    return offline_models("smollm2-135m-mlm")


@pytest.fixture(scope="module")
def mntp_metrics() -> dict:
    return trained_metrics(get_card("smollm2-135m-mlm"))


@pytest.mark.slow
def test_the_offline_masked_lm_fills_fresh_everyday_blanks(mntp, mntp_metrics) -> None:
    """Issue 31's bar on the fresh set (180 sentences, one answer each, written before any model was
    scored) and on the test half of cloze_en.tsv, through the page's own fill_masks: top-1 at least 40%,
    top-5 at least 65%; and the figures shipped in metrics.json (fp16 adapters vs training's fp32)."""
    for split, items in (("fresh", cloze.fresh()), ("test", cloze.items("test"))):
        got = cloze.evaluate(mntp, items)
        assert got["cloze_top1"] >= 0.40 and got["cloze_top5"] >= 0.65, split
        for figure in ("cloze_top1", "cloze_top5", "cloze_copies"):
            assert got[figure] == pytest.approx(mntp_metrics[split][figure], abs=0.03), (split, figure)
    # Copying: at most 5% of first answers a word of the sentence, on both (2.8% and 0% when shipped)
    for items in (cloze.fresh(), cloze.items("test")):
        assert cloze.evaluate(mntp, items)["cloze_copies"] <= 0.05
    baseline = cloze.evaluate(model_zoo.load("minilm-l6-mlm"), cloze.fresh())
    assert baseline["cloze_top1"] < 0.2  # what the page ran before: 10% top-1, 28% top-5, 14% copies


# The lessons' blanks the offline masked LM still misses (measured when shipped):
MISSED = {
    "The river [MASK] was muddy after the rain.": "was: the word after the blank",
    "巴黎是法国的首[MASK]。": "人: its adapters were trained on English only (the page names bert-base-chinese)",
}


@pytest.mark.slow
@pytest.mark.parametrize(
    "item",
    [
        pytest.param(i, marks=pytest.mark.xfail(strict=True, reason=MISSED[i.text])) if i.text in MISSED else i
        for i in cloze.lessons()
    ],
    ids=lambda i: i.text,
)
def test_the_offline_masked_lm_answers_the_lessons_own_blanks(mntp, item: cloze.ClozeItem) -> None:
    """The blanks the lessons' text is about: the answer a reader accepts comes first. A strict xfail
    for each known miss: it fails the day the model gets it right, so the list stays true."""
    guesses = cloze.first_guesses(mntp, [item])[0]
    assert guesses[0].lower() in item.answers, guesses


@pytest.mark.slow
def test_masked_lm_page_default(mntp_metrics) -> None:
    at = page()
    assert not at.exception
    label = shown(at.info[0].value)  # what the model is, how it was made, with its measured quality
    assert "SmolLM2-135M made a masked LM by ContextLab" in label and "python -m model_zoo.train_mntp" in label
    m = mntp_metrics
    for figure in ("cloze_top1", "cloze_top5", "cloze_copies"):
        assert f"{m['fresh'][figure]:.0%}" in label, figure
    assert f"{m['tokens_seen'] / 1e6:.2f}M tokens" in label
    # the anti-copy stages, read off the metrics: their steps, weights, and dev copies before and after
    stages = m["anti_copy_stages"]
    anti = shown(next(c.value for c in at.caption if "against copying" in c.value))
    assert f"Its last {sum(s['steps'] for s in stages)} steps" in anti and "weight 1 → 3 → 6 in 3 stages" in anti
    assert f"to {m['fresh_dev']['cloze_copies']:.1%}" in anti
    paris = [w for w, _ in mask_bars(at, "Paris is the capital of [MASK].")]
    assert paris[0] == "France"
    sources = shown(next(c.value for c in at.caption if "Where the examples come from" in c.value))
    assert "not one of the lesson's sources" in sources and "The Illustrated BERT" in sources
    assert len(mask_charts(at)) == 1  # the one [MASK]
    assert len(at.table[0].value) >= 1  # the recipe picked at least one token
    recipe = at.table[0].value.to_string() + at.code[0].value
    assert "Ġ" not in recipe and "␣" in recipe  # a space the model sees is shown as ␣, as on the other pages
    assert at.metric[0].label.startswith("Masked-LM loss")
    assert any("no next-sentence head" in shown(i.value) for i in at.info)
    # Two tasks at once: offline, the MLM loss of your pair and of a negative sample; no NSP, and why.
    both = at.dataframe[-1].value
    assert list(both["Label"]) == ["IsNext (your pair)", "NotNext (drawn at random)"]
    assert list(both["Sentence B"])[0] == "He bought a gallon of milk."
    assert all(float(x.split()[0]) > 0 for x in both["MLM loss"]) and list(both["NSP loss"]) == ["—", "—"]
    assert any("only the MLM loss is live" in shown(c.value) for c in at.caption)


@pytest.mark.slow
def test_masked_lm_page_sums_both_losses_with_an_original_bert(tiny_bert, fake_hub) -> None:
    """With a BERT that has both heads (a tiny one laid out as prefetched bert-base-uncased) the table gives
    the NSP loss of each pair and the sum; drawing again changes the random sentence."""
    fake_hub(get_card("bert-base-uncased").hub_repo or "", tiny_bert)
    at = open_page("pages/masked_lm.py", model="bert-base-uncased")
    assert not at.exception
    both = at.dataframe[-1].value
    for mlm_loss, nsp, total in zip(both["MLM loss"], both["NSP loss"], both["Loss = MLM + NSP"]):
        assert float(total) == pytest.approx(float(mlm_loss.split()[0]) + float(nsp), abs=0.011)
    first = list(both["Sentence B"])[1]
    at.button(key="both_redraw").click().run()
    assert not at.exception
    assert list(at.dataframe[-1].value["Sentence B"])[1] != first  # another negative sample


def test_lesson_check_finds_the_lessons_word_among_the_guesses() -> None:
    hit = cloze.check(frozenset({"france"}), [(" France", 0.6), ("Paris", 0.2)])
    assert hit.shows and hit.first == "France" and (hit.rank, hit.p) == (1, 0.6)
    late = cloze.check(frozenset({"out"}), [(".", 0.19), (",", 0.17), ("out", 0.01)])
    assert not late.shows and late.first == "." and (late.rank, late.p) == (3, 0.01)
    assert cloze.check(frozenset({"east"}), [("sky", 0.5)]).rank is None
    assert cloze.lesson_answers(" Paris is the capital of [MASK].") == {"france"}
    assert cloze.lesson_answers("My own sentence with a [MASK].") is None


@pytest.mark.slow
def test_masked_lm_page_says_where_the_model_misses_the_lessons_answer(mntp) -> None:
    """Each of the lessons' own blanks is checked live against the answer the lesson names: a miss gets
    one line under the bars naming the model that shows the point (a Chinese BERT for Chinese)."""
    at = page()
    for item in cloze.lessons():
        guesses = [w for w, _ in mntp.fill_mask(item.text, 15)[0]]
        mask_bars(at, item.text)
        line = next((shown(c.value) for c in at.caption if "the lesson's point" in c.value), None)
        if guesses[0].lower() in item.answers:
            assert line is None, item.text
            continue
        assert line is not None and f"its first guess is “{guesses[0]}”" in line, item.text
        classic = "bert-base-chinese" if "首" in item.text else "bert-base-uncased"
        assert f"python -m model_zoo prefetch {classic}" in line


@pytest.mark.slow
def test_masked_lm_page_examples_and_mask_button() -> None:
    at = page()
    at.button(key="ex3").click().run()
    assert not at.exception and len(mask_charts(at)) == 2
    at.selectbox(key="mask_pick").set_value("deposit")
    [b for b in at.button if b.label == "Mask it"][0].click().run()
    assert "[MASK]" in at.text_input(key="text").value and "deposit" not in at.text_input(key="text").value
    assert len(mask_charts(at)) == 3


@pytest.mark.slow
@pytest.mark.parametrize(
    ("text", "message"),
    [("The man went to the bank.", "There is no [MASK]"), ("  ", "empty"), ("[MASK] " * 11, "up to 10")],
)
def test_masked_lm_page_bad_input(text: str, message: str) -> None:
    at = page()
    at.text_input(key="text").set_value(text).run()
    assert not at.exception
    assert any(message in shown(i.value) for i in at.info)


@pytest.mark.slow
def test_masked_lm_page_odd_text() -> None:
    at = page(text="🙂 银行 <script>alert(1)</script> [MASK] " + "word " * 600)
    assert not at.exception
    assert any("only the first 512 tokens" in shown(w.value) for w in at.warning)


@pytest.mark.slow
def test_masked_lm_page_unreachable_bert_falls_back() -> None:
    at = page(model="bert-base-uncased")
    assert not at.exception
    assert "minilm-l6-mlm" in shown(at.warning[0].value)  # a BERT in every way, for the pages that read its tables


@pytest.mark.slow
def test_why_mask_trains_both_tiny_models_and_shows_the_rollout() -> None:
    at = page()
    rollout = next(c for c in at.get("plotly_chart") if c.proto.id.endswith("-rollout"))
    z = json.loads(rollout.proto.spec)["data"][0]["z"]
    assert len(z) == len(z[0]) and all(abs(sum(row) - 1) < 1e-6 for row in z)  # a rollout of the recipe's sentence
    said = shown(" ".join(c.value for c in at.caption))
    column = max(range(len(z)), key=lambda j: sum(row[j] for row in z))  # the brightest column, named on the page
    share = sum(row[column] for row in z) / len(z)
    assert "draws" in said and f"(input {column}): {share:.0%} of a row's rollout on average" in said
    at.button(key="why_train").click().run(timeout=300)
    assert not at.exception
    charts = {c.proto.id.rsplit("-", 1)[-1]: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    copy, masked = (trace["y"] for trace in charts["why_accuracy"]["data"][:2])
    assert masked[-1] > copy[-1] + 0.05  # the masked model finds hidden words; the copier does not
    loss = charts["why_loss"]["data"]
    assert loss[0]["y"][-1] < 0.2 < loss[1]["y"][-1]  # ... though the copier's loss is all but zero
    found = shown(" ".join(m.value for m in at.markdown))
    assert f"finds {masked[-1]:.1%} of the hidden words" in found and f"finds it {copy[-1]:.1%} of the time" in found


ROOT = Path(__file__).resolve().parents[1]
SEEDS = Path(__file__).resolve().parents[2] / "shared" / "seeds"


def page_examples() -> tuple[tuple[str, str], ...]:
    """The Masked LM page's EXAMPLES: (sentence, source key), read from the page's source."""
    tree = ast.parse((Path(__file__).resolve().parents[1] / "pages" / "masked_lm.py").read_text())
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "EXAMPLES")
    return ast.literal_eval(node.value)


def test_every_masked_lm_example_names_a_source_that_is_true() -> None:
    """Each example's source label exists in both languages, and says truly whether the seeds hold it."""
    if not SEEDS.is_dir():
        pytest.skip("../shared/seeds is not beside this checkout")
    seeds = {p.name[:3]: p.read_text(encoding="utf-8").replace("’", "'") for p in SEEDS.glob("*.txt")}
    en, zh = (tomllib.loads((ROOT / "assets" / "i18n" / f"{lang}.toml").read_text())["mlm"] for lang in ("en", "zh"))
    for sentence, source in page_examples():
        assert f"src_{source}" in en and f"src_{source}" in zh
        # A seed "holds" an example when it has the words up to the last blank (earlier blanks any word):
        # "Let's stick to" is the Illustrated BERT's phrase, the bank sentences are the lecture's.
        head = sentence[: sentence.rindex("[MASK]")].strip()
        pattern = re.escape(head).replace(re.escape("[MASK]"), r"\S+").replace(r"\ ", r"\s+")
        found = {name for name, text in seeds.items() if re.search(pattern, text)}
        expected = {"illustrated": {"000", "004"}, "lecture": {"003"}}.get(source, set())
        assert found == expected, (sentence, found)
