"""Inside one forward pass (model_zoo.lessons.inside) on tiny random models of every family the lesson
opens: a BERT with its MLM head, GPT-2, a Llama, and a Llama made a masked LM (fast tier)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch

import model_zoo
from model_zoo.bidirectional import BidirectionalLM, load_mntp
from model_zoo.lessons import inside
from model_zoo.lessons.inside import Knock

MASKED_TEXT = "the man went to the [MASK] to get money"
CAUSAL_TEXT = "We sat on the river bank and"


@pytest.fixture(scope="module")
def mntp(tiny_mntp: tuple[Path, Path]) -> BidirectionalLM:
    model, tokenizer = load_mntp(*tiny_mntp)
    return BidirectionalLM("tiny-mntp", model, tokenizer, torch.device("cpu"))


FAMILIES = [("bert", MASKED_TEXT), ("gpt2", CAUSAL_TEXT), ("llama", CAUSAL_TEXT), ("mntp", MASKED_TEXT)]


def own_logits(model: model_zoo.Encoder, text: str) -> torch.Tensor:
    """The model's own logits for its answer, as the pages get them (fill_mask's, next_words')."""
    if isinstance(model, model_zoo.MaskedLM):
        _, _, logits = model.mask_logits(text)
        return logits[0]
    with torch.inference_mode():
        return model.model(**model.model_inputs(model.tokenize(text))).logits[0, -1].float()


@pytest.mark.parametrize(("family", "text"), FAMILIES)
def test_the_lens_last_row_is_the_model_s_own_prediction(
    family: str, text: str, request: pytest.FixtureRequest
) -> None:
    model = request.getfixturevalue(family)
    lens = inside.logit_lens(model, text, k=5)
    parts = inside.anatomy(model)
    assert len(lens.rows) == len(parts.layers) + 1  # the embeddings, then every block
    own = own_logits(model, text).softmax(-1)
    top = own.topk(5)
    last = lens.rows[-1]
    assert [w for w, _ in last.top] == model.shown_each(top.indices.tolist())
    np.testing.assert_allclose([p for _, p in last.top], top.values.tolist(), atol=1e-4)
    assert last.answer_rank == 1 and lens.answer == last.top[0][0]
    assert all(r.answer_rank >= 1 and 0 <= r.answer_probability <= 1 for r in lens.rows)


@pytest.mark.parametrize(("family", "text"), FAMILIES)
def test_the_lenses_read_the_output_head_with_onednn_s_product_where_the_cpu_has_it(
    family: str, text: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A class's lenses are most of the lesson's work: their head products go through the fused twin's
    oneDNN layers (the same weights), not the eager model's MKL ones, and read the same."""
    from model_zoo import onednn

    model = request.getfixturevalue(family)
    vocabulary = int(inside.anatomy(model).unembedding.shape[0])
    widths: list[int] = []
    product = onednn._product

    def counted(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        widths.append(int(weight.shape[0]))
        return product(x, weight, bias)

    monkeypatch.setattr(onednn, "_product", counted)
    lens = inside.logit_lens(model, text)
    assert (vocabulary in widths) == (onednn.available() and onednn.takes(vocabulary))
    top = own_logits(model, text).softmax(-1).topk(5)
    np.testing.assert_allclose([p for _, p in lens.rows[-1].top], top.values.tolist(), atol=1e-5)


@pytest.mark.parametrize(("family", "text"), FAMILIES)
def test_knocking_out_nothing_changes_nothing_and_a_layer_s_heads_change_the_answer_s_probability(
    family: str, text: str, request: pytest.FixtureRequest
) -> None:
    model = request.getfixturevalue(family)
    lens = inside.logit_lens(model, text)
    effects, answer, logp = inside.head_effects(model, text)
    assert answer == lens.answer and logp == pytest.approx(np.log(lens.rows[-1].answer_probability), abs=1e-4)
    parts = inside.anatomy(model)
    assert effects.shape == (len(parts.layers), parts.heads)
    for layer in range(len(parts.layers)):
        whole = inside.knock_out(model, text, Knock("heads", layer))
        assert whole.before == pytest.approx(lens.rows[-1].answer_probability, abs=1e-5)
        assert whole.after != pytest.approx(whole.before, abs=1e-7)  # random weights: every layer matters
    # the hooks are gone afterwards: the model answers as before
    assert inside.logit_lens(model, text).rows[-1].top == lens.rows[-1].top
    # knocking out no head at all (every layer's hook in place, its mask empty) changes nothing
    reading, none = inside.read(model, text), torch.zeros(1, parts.heads, dtype=torch.bool)
    hooks = [(parts.heads_out[i], inside._heads_hook(parts, none, "zero"), "pre") for i in range(len(parts.layers))]
    with inside._hooks(hooks):
        kept = inside._last_stream(model, reading, parts)
    assert torch.equal(kept, inside._last_stream(model, reading, parts))


@pytest.mark.parametrize(("family", "text"), FAMILIES)
def test_knocking_out_a_head_changes_exactly_that_head_s_contribution(
    family: str, text: str, request: pytest.FixtureRequest
) -> None:
    """What reaches the heads' output layer differs from the intact pass in head h's slice alone, and each
    head's effect in the batched map is what knocking it out alone gives."""
    model = request.getfixturevalue(family)
    parts, reading = inside.anatomy(model), inside.read(model, text)
    layer, head = len(parts.layers) - 1, 1
    seen: list[torch.Tensor] = []

    def grab(module, args, kwargs):  # noqa: ANN001, ANN202
        seen.append(args[0].detach().clone())

    for hooks in ([], inside._knock_hooks(parts, Knock("head", layer, head))):
        with inside._hooks([*hooks, (parts.heads_out[layer], grab, "pre")]):
            model.model(**reading.inputs)
    intact, knocked = (x.view(*x.shape[:2], parts.heads, -1) for x in seen)
    changed = (intact != knocked).any(dim=(0, 1, 3))
    assert changed.tolist() == [h == head for h in range(parts.heads)]
    assert torch.all(knocked[:, :, head] == 0)
    effects, _, logp = inside.head_effects(model, text)
    for layer_, head_ in ((0, 0), (layer, head)):
        alone = inside.knock_out(model, text, Knock("head", layer_, head_))
        assert effects[layer_, head_] == pytest.approx(np.log(alone.after) - logp, abs=1e-4)


@pytest.mark.parametrize(("family", "text"), FAMILIES)
def test_a_skipped_layer_or_mlp_and_mean_ablation_give_a_new_prediction(
    family: str, text: str, request: pytest.FixtureRequest
) -> None:
    model = request.getfixturevalue(family)
    for knock in (Knock("layer", 0), Knock("mlp", 0), Knock("heads", 0, mode="mean"), Knock("head", 0, 0, "mean")):
        got = inside.knock_out(model, text, knock)
        # a random BERT's heads give nearly the same output at every token, so their mean changes little
        assert got.after != (got.before if knock.mode == "mean" else pytest.approx(got.before, abs=1e-7))
        assert got.loss_after == pytest.approx(-np.log(got.after), rel=1e-4)
        assert len(got.top) == 5 and sum(p for _, p in got.top) <= 1 + 1e-5
        assert inside.knock_out(model, text, knock, intact=inside.intact_answer(model, text)) == got  # as served


def test_skipping_the_only_changes_there_are_is_the_embeddings_reading(gpt2: model_zoo.CausalLM) -> None:
    """Every block skipped: the head reads the embeddings, the lens's first row."""
    parts = inside.anatomy(gpt2)
    lens = inside.logit_lens(gpt2, CAUSAL_TEXT)
    hooks = [h for layer in range(len(parts.layers)) for h in inside._knock_hooks(parts, Knock("layer", layer))]
    reading = inside.read(gpt2, CAUSAL_TEXT)
    with inside._hooks(hooks):
        stream = inside._last_stream(gpt2, reading, parts)
    probs = inside._logits(gpt2, parts, stream).softmax(-1)
    assert gpt2.shown_each(probs.topk(5).indices.tolist()) == [w for w, _ in lens.rows[0].top]


def test_bad_requests_get_one_sentence(bert: model_zoo.MaskedLM, gpt2: model_zoo.CausalLM) -> None:
    with pytest.raises(model_zoo.NoMaskToken):
        inside.logit_lens(bert, "no blank here")
    with pytest.raises(model_zoo.EmptyInput):
        inside.logit_lens(gpt2, "   ")
    with pytest.raises(ValueError, match="layer 9"):
        inside.knock_out(gpt2, CAUSAL_TEXT, Knock("mlp", 9))
    with pytest.raises(ValueError, match="head 7"):
        inside.knock_out(gpt2, CAUSAL_TEXT, Knock("head", 0, 7))


def test_a_knock_out_leaves_other_sessions_passes_through_the_shared_model_alone(gpt2: model_zoo.CausalLM) -> None:
    """Hooks act on their own thread's passes: a learner's knock-out never reaches another's reading."""
    import threading

    parts, reading = inside.anatomy(gpt2), inside.read(gpt2, CAUSAL_TEXT)
    intact = inside._last_stream(gpt2, reading, parts)
    seen: list[torch.Tensor] = []
    with inside._hooks(inside._knock_hooks(parts, Knock("heads", 0))):
        knocked = inside._last_stream(gpt2, reading, parts)
        other = threading.Thread(target=lambda: seen.append(inside._last_stream(gpt2, reading, parts)))
        other.start()
        other.join(30)
    # the other thread reads the intact model: equal up to float rounding (a thread of its own may take another
    # kernel path; after the fast tier before it, they differed by 7e-9), far from what the knock-out moves
    assert (knocked - intact).abs().max() > 1e-3
    torch.testing.assert_close(seen[0], intact, rtol=0, atol=1e-5)


@pytest.mark.parametrize(("family", "text"), FAMILIES)
def test_a_token_s_path_through_a_block_adds_up(family: str, text: str, request: pytest.FixtureRequest) -> None:
    """In a decoder the stream out is the stream in plus what attention and the MLP add; a BERT normalises
    after each (post-norm); the neurons shown are the most active, each with the words it promotes."""
    model = request.getfixturevalue(family)
    parts, reading = inside.anatomy(model), inside.read(model, text)
    layer, token = len(parts.layers) - 1, 2
    path = inside.block_path(model, text, layer, token, k=3, words=4)
    streams = inside.residual_streams(model, reading, parts)
    np.testing.assert_allclose(path.stream_in, streams[layer, token].numpy(), atol=1e-5)
    np.testing.assert_allclose(path.stream_out, streams[layer + 1, token].numpy(), atol=1e-5)
    added = path.stream_in + path.attention + path.mlp
    assert path.post_norm == (family == "bert")
    if not path.post_norm:
        np.testing.assert_allclose(added, path.stream_out, atol=1e-5)
    assert path.expansion > path.width == model.config.hidden_size
    assert len(path.neurons) == 3 and all(len(n.promotes) == 4 for n in path.neurons)
    assert [n.activation for n in path.neurons] == sorted((n.activation for n in path.neurons), reverse=True)
    down = parts.mlp_down[layer]
    vectors = down.weight.T if isinstance(down, torch.nn.Linear) else down.weight  # (F, D): Conv1D keeps it so
    for n in path.neurons:  # its own output vector through the head (read for all three in one product)
        own = (parts.unembedding @ vectors[n.index].to(parts.unembedding.dtype)).topk(4).indices.tolist()
        assert n.promotes == model.shown_each(own)
    assert -1 <= path.cosine(path.attention, path.stream_in) <= 1
    with pytest.raises(ValueError, match="token 99"):
        inside.block_path(model, text, 0, 99)


def test_the_served_masked_lm_s_token_path_is_the_merged_one_s(
    mntp: BidirectionalLM, tiny_mntp: tuple[Path, Path]
) -> None:
    """A class's server keeps the masked LM's adapters beside the causal LM's weights (served_mntp), not merged
    into a copy: a token's path shows the same neurons, each promoting the same words, as the merged model's."""
    from model_zoo.bidirectional import LowRankAdded, served_mntp

    served = BidirectionalLM("tiny-mntp-served", *served_mntp(*tiny_mntp), torch.device("cpu"))
    assert isinstance(inside.anatomy(served).mlp_down[0], LowRankAdded)
    for layer in range(len(inside.anatomy(served).layers)):
        got, want = (inside.block_path(m, MASKED_TEXT, layer, 4, k=4, words=3) for m in (served, mntp))
        assert [n.index for n in got.neurons] == [n.index for n in want.neurons]
        np.testing.assert_allclose([n.activation for n in got.neurons], [n.activation for n in want.neurons], atol=1e-5)
        assert [n.promotes for n in got.neurons] == [n.promotes for n in want.neurons]
        np.testing.assert_allclose(got.stream_out, want.stream_out, atol=1e-5)


SENTENCES = [
    "We sat on the river bank and watched the water.",
    "I deposited the cheque at the bank.",
    "the man went to the bank to get money",
    "we sat on the bank of the river",
    "the boat is on the water",
    "his money is at the bank",
] * 3


@pytest.mark.parametrize("family", ["gpt2", "mntp"])
def test_a_tuned_lens_reads_every_layer_closer_to_the_answer_and_its_last_row_is_the_model_s(
    family: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from model_zoo.training import train_lens

    model = request.getfixturevalue(family)
    parts = inside.anatomy(model)
    dev = ["the man sat on the bank", "we watched the boat on the river"]
    zero = inside.TunedLens(len(parts.layers), model.config.hidden_size)
    before = train_lens.layer_kl(model, parts, zero, train_lens._masked(model, dev, 0.15, random.Random(1)))
    lens, curve = train_lens.train(model, SENTENCES, dev, steps=40, batch=4, lr=3e-2, eval_every=10)
    assert [c["step"] for c in curve] == [0, 10, 20, 30, 40]
    assert (
        min(c["dev_kl_nats"] for c in curve) < curve[0]["dev_kl_nats"] == pytest.approx(float(before.mean()), abs=1e-4)
    )
    text = MASKED_TEXT if family == "mntp" else CAUSAL_TEXT
    tuned, raw = inside.tuned_lens(model, lens, text), inside.logit_lens(model, text)
    assert tuned.rows[-1] == raw.rows[-1]  # the last layer is read as the model reads it
    files = train_lens.save(lens, tmp_path / "lens")
    again = inside.load_lens(tmp_path / "lens", len(parts.layers), model.config.hidden_size)
    assert files and [r.top[0][0] for r in inside.tuned_lens(model, again, text).rows] == [
        r.top[0][0] for r in tuned.rows
    ]  # fp16 on disk, the same readings


def test_a_tuned_lens_maps_a_class_s_streams_layer_by_layer_as_it_maps_one() -> None:
    """each_layer (one batched product for every text and layer) is forward's map, layer by layer; the last
    layer is left as it is, whatever its parameters hold."""
    torch.manual_seed(0)
    lens = inside.TunedLens(3, 8)
    with torch.no_grad():
        lens.a.normal_(std=0.3)
        lens.b.normal_()
    one, class_ = torch.randn(4, 8), torch.randn(4, 5, 8)  # (L + 1, D) and (L + 1, N, D)
    torch.testing.assert_close(lens.each_layer(one), torch.stack([lens(i, one[i]) for i in range(4)]))
    torch.testing.assert_close(lens.each_layer(class_), torch.stack([lens(i, class_[i]) for i in range(4)]))
    torch.testing.assert_close(lens.each_layer(class_)[-1], class_[-1], rtol=0, atol=0)
    assert not torch.equal(lens.each_layer(class_)[0], class_[0])


def test_decode_each_gives_the_tokenizer_s_text_for_each_id_every_time(bert: model_zoo.MaskedLM) -> None:
    ids = [5, 7, 5, 3, 9, 7]
    expected = [bert.tokenizer.decode([i]) for i in ids]
    assert bert.decode_each(ids) == expected and bert.decode_each(ids[::-1]) == expected[::-1]  # kept, the same


def test_a_piece_of_a_character_is_shown_as_its_bytes(gpt2: model_zoo.CausalLM) -> None:
    """A byte-level token that is part of a character (alone it decodes to "\ufffd") reads as its bytes in the
    lesson's words (the lens, the neurons' promoted words): together they spell the character. Whole words
    read as they decode."""
    ids = gpt2.tokenizer("语", add_special_tokens=False)["input_ids"]
    assert len(ids) > 1 and all("\ufffd" in text for text in gpt2.decode_each(ids))
    shown = gpt2.shown_each(ids)
    assert all(text.startswith("‹") and text.endswith("›") for text in shown)
    assert bytes.fromhex(" ".join(text.strip("‹›").replace("\u202f", " ") for text in shown)) == "语".encode()
    from model_zoo.contextual import _byte_spelling

    assert _byte_spelling("<0xE2>") == "<0xE2>"  # a sentencepiece byte keeps its vocabulary's spelling
    word = gpt2.tokenizer(" river", add_special_tokens=False)["input_ids"]
    assert gpt2.shown_each(word) == gpt2.decode_each(word) == [" river"]


def test_texts_split_by_hash_the_same_way_every_time() -> None:
    from model_zoo.training.train_lens import split_of

    texts = [f"sentence number {i} of the corpus" for i in range(400)]
    splits = [split_of(t) for t in texts]
    assert splits == [split_of(t) for t in texts]
    assert splits.count("dev") > 5 and splits.count("test") > 5 and splits.count("train") > 300


def test_a_causal_lm_reads_the_words_before_the_blank(gpt2: model_zoo.Encoder) -> None:
    """One sentence serves both kinds: a left-to-right model predicts what comes after the words before [MASK]."""
    blank = inside.logit_lens(gpt2, "We sat on the river [MASK] and watched.")
    left = inside.logit_lens(gpt2, "We sat on the river")
    assert blank == left
    with pytest.raises(model_zoo.EmptyInput):
        inside.logit_lens(gpt2, "[MASK] was muddy.")


@pytest.mark.parametrize(("family", "text"), FAMILIES)
def test_answer_attention_is_each_head_s_row_at_the_answer(
    family: str, text: str, request: pytest.FixtureRequest
) -> None:
    model = request.getfixturevalue(family)
    weights = inside.answer_attention(model, text)
    reading = inside.read(model, text)
    parts = inside.anatomy(model)
    assert weights.shape == (len(parts.layers), parts.heads, len(reading.tokens))
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-4)  # each head's row is a distribution
    if isinstance(model, model_zoo.CausalLM):
        assert weights[..., reading.at + 1 :].sum() == 0  # nothing after the position it reads from


def test_head_effects_reports_progress_to_the_end(gpt2: model_zoo.Encoder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inside, "HEAD_ROWS", 3)  # several passes
    shares: list[float] = []
    effects, _, _ = inside.head_effects(gpt2, CAUSAL_TEXT, on_progress=shares.append)
    assert len(shares) == -(-effects.size // 3) and shares == sorted(shares) and shares[-1] == 1.0


def lens_of(ranks: list[int]) -> inside.Lens:
    rows = [inside.LayerGuess(i, [("w", 0.5)], r, 0.5) for i, r in enumerate(ranks)]
    return inside.Lens(["a"], 0, "w", rows, 1)


def test_the_answer_settles_where_it_stays_first_to_the_end() -> None:
    assert inside.settles_at(lens_of([5, 1, 3, 1, 1])) == 3  # first at layer 1 too, but not for good
    assert inside.settles_at(lens_of([1, 1, 1])) == 0
    assert inside.settles_at(lens_of([9, 9, 1])) == 2
    assert [inside.depth_third(layer, 30) for layer in (0, 1, 10, 11, 20, 21, 29, 30)] == [
        "first", "first", "first", "middle", "middle", "last", "last", "only_last"
    ]  # fmt: skip


def test_weight_and_effect_counts_heads_that_can_go_and_ranks_them() -> None:
    effects = np.log(np.array([[1.0, 0.5], [1.05, 0.2]]))  # P(answer) kept, halved, +5%, a fifth
    attention = np.zeros((2, 2, 3))
    attention[..., 0] = 0.5  # the first token (the sink) is left out of the weights
    attention[0, 0, 1:] = [0.1, 0.4]
    attention[0, 1, 1:] = [0.3, 0.2]
    attention[1, 0, 1:] = [0.0, 0.2]
    attention[1, 1, 1:] = [0.5, 0.0]
    both = inside.weight_and_effect(effects, attention)
    np.testing.assert_allclose(both.weight, [[0.4, 0.3], [0.2, 0.5]])
    assert both.small == 2 and both.heads == 4
    assert both.spearman == pytest.approx(0.4)  # ranks of weight (3, 2, 1, 4) against effect (1, 3, 2, 4)
    flat = inside.weight_and_effect(np.zeros((2, 2)), attention)
    assert flat.small == 4 and flat.spearman != flat.spearman  # nothing to rank: nan, said so on the page


@pytest.mark.parametrize(("family", "text"), FAMILIES)
def test_a_class_s_sentences_share_one_pass_and_each_reads_as_alone(
    family: str, text: str, request: pytest.FixtureRequest
) -> None:
    model = request.getfixturevalue(family)
    texts = [text, "we watched the boat", f"{text} on the river again today", "the man sat down"]
    if isinstance(model, model_zoo.MaskedLM):
        texts = [t if model.mask_token in t else f"{t} {model.mask_token}" for t in texts]
    lens = inside.TunedLens(len(inside.anatomy(model).layers), model.config.hidden_size)
    with torch.no_grad():
        lens.b.normal_()  # a lens that moves every layer but the last
    for one, found in zip(texts, inside.answer_passes(model, texts), strict=True):
        states = found.streams
        alone, together = inside.logit_lens(model, one), inside.lens_of(model, one, states)
        at = inside.read(model, one).at
        for layer in (0, len(inside.anatomy(model).layers) - 1):
            single, shared = inside.block_path(model, one, layer, at), inside.path_from_pass(model, one, layer, found)
            for name in ("stream_in", "attention", "mlp", "stream_out"):
                np.testing.assert_allclose(getattr(shared, name), getattr(single, name), atol=1e-4)
            assert [n.index for n in shared.neurons] == [n.index for n in single.neurons]
        assert [r.top[0][0] for r in together.rows] == [r.top[0][0] for r in alone.rows]
        for a, b in zip(alone.rows, together.rows, strict=True):
            assert b.answer_probability == pytest.approx(a.answer_probability, abs=1e-4)
        tuned = inside.lens_of(model, one, states, lens)
        assert tuned == inside.tuned_lens(model, lens, one) or all(
            x.top[0][0] == y.top[0][0] for x, y in zip(tuned.rows, inside.tuned_lens(model, lens, one).rows)
        )
    passes = inside.answer_passes(model, texts)
    old_rows = inside.LENS_ROWS
    try:  # the class's lenses read through the head together, a few lenses a product or all in one
        for rows in (old_rows, 2 * len(inside.anatomy(model).layers) + 5):
            inside.LENS_ROWS = rows
            together = inside.lenses_many(model, texts, passes, lens)
            assert all(tuned is None for _, tuned in inside.lenses_many(model, texts, passes))  # no tuned lens shipped
            for one, found, (logit, tuned) in zip(texts, passes, together, strict=True):
                for shared, alone in ((logit, inside.lens_of(model, one, found.streams)),
                                      (tuned, inside.lens_of(model, one, found.streams, lens))):  # fmt: skip
                    assert shared is not None and (shared.answer, shared.at) == (alone.answer, alone.at)
                    assert [r.top[0][0] for r in shared.rows] == [r.top[0][0] for r in alone.rows]
                    assert [r.answer_rank for r in shared.rows] == [r.answer_rank for r in alone.rows]
                    for a, b in zip(alone.rows, shared.rows, strict=True):
                        assert b.answer_probability == pytest.approx(a.answer_probability, abs=1e-5)
    finally:
        inside.LENS_ROWS = old_rows


def test_where_the_answer_is_read_is_told_from_positions_not_from_the_tokens_text() -> None:
    """The page's sentence on where the answer is read follows the positions (Lens.at, Lens.answered): a word
    such as "masks" before the blank is not the [MASK]."""
    from components.inside_view import read_at_key

    assert read_at_key(inside.Lens(["the", "masks", "[MASK]", "."], 1, "w", [], 2)) == "inside.read_at_before"
    assert read_at_key(inside.Lens(["[CLS]", "masks", "[MASK]"], 2, "w", [], 2)) == "inside.read_at"
    assert read_at_key(inside.Lens(["the", "masks"], 1, "w", [], 2)) == "inside.read_at_last"  # a causal LM


def test_where_the_answer_settles_is_said_for_the_embeddings_the_last_layer_and_a_layer_between() -> None:
    """The page says from which layer the answer is the first guess for good: "from layer 0" would read as a
    layer, and "from layer 30 of 30 on" as if more came after the last."""
    from components.inside_view import settles_where

    assert settles_where(lens_of([1, 1, 1])).startswith("it is the first guess already in the input embeddings")
    assert settles_where(lens_of([9, 9, 1])) == "it is the first guess only at the last layer, **2**"
    assert settles_where(lens_of([5, 1, 3, 1, 1])) == "it is the first guess from layer **3** of 4 on"


def test_a_knock_out_that_changes_nothing_reads_0_pp() -> None:
    from components.inside_view import signed_pp

    assert [signed_pp(x) for x in (-0.01, 0.0, 0.04, 2.34, -12.0)] == [
        "0.0 pp",
        "0.0 pp",
        "0.0 pp",
        "+2.3 pp",
        "-12.0 pp",
    ]


def test_the_answers_curve_draws_every_probability_where_it_is() -> None:
    """P(answer) below a billionth is drawn at its own height on an axis that reaches it (it was raised to 1e-9,
    a flat line that looked like a reading), its hover says the value; an underflow to 0 sits at the bottom."""
    from components.inside_view import build_answer_curve
    from model_zoo.lessons.inside import LayerGuess, Lens

    probabilities = [3.2e-14, 1e-11, 0.0, 2e-6, 0.4, 0.97]
    rows = [LayerGuess(i, [("x", 0.5)], 10 - i, p) for i, p in enumerate(probabilities)]
    figure = build_answer_curve({"logit lens": Lens(["a"], 0, "x", rows, 1)}, "x")
    (line,) = figure.data
    assert list(line.y) == [3.2e-14, 1e-11, 3.2e-14, 2e-6, 0.4, 0.97]
    assert [c[1] for c in line.customdata] == ["3.2·10⁻¹⁴", "10⁻¹¹", "0", "2.0·10⁻⁶", "40%", "97%"]
    bottom, top = figure.layout.yaxis.range
    assert bottom < -14 < -13.5 and top > 0
    axis = figure.layout.yaxis  # one notation down the axis: no "1%" above "10⁻⁸" to be read as a percentage
    assert list(axis.ticktext) == ["10⁻¹⁴", "10⁻¹²", "10⁻¹⁰", "10⁻⁸", "10⁻⁶", "10⁻⁴", "10⁻²", "1"]
    assert list(axis.tickvals) == pytest.approx([1e-14, 1e-12, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2, 1])


def test_a_text_read_again_is_the_same_reading_and_a_model_keeps_only_its_latest(gpt2: model_zoo.CausalLM) -> None:
    """A run reads its sentence five or six times: the second read is the first's Reading (the tokens, the inputs,
    the answer's position), a model keeps READINGS_KEPT texts at most, and a mistake is said again each time."""
    first = inside.read(gpt2, "the man went to the [MASK] .")
    again = inside.read(gpt2, "the man went to the [MASK] .")
    assert again is first and again.tokens == gpt2.token_strings(
        gpt2.tokenize("the man went to the")["input_ids"][0].tolist()
    )
    for i in range(inside.READINGS_KEPT + 5):
        inside.read(gpt2, f"the man {i} went to the")
    assert len(inside._readings[gpt2]) == inside.READINGS_KEPT
    assert inside.read(gpt2, "the man went to the [MASK] .") is not first  # dropped, read afresh: the same answer
    assert inside.read(gpt2, "the man went to the [MASK] .").at == first.at
    for _ in range(2):
        with pytest.raises(model_zoo.ModelZooError):
            inside.read(gpt2, "[MASK] comes first")
