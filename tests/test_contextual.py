"""model_zoo on tiny random checkpoints, loaded through the same path as real ones."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import model_zoo
from model_zoo import CausalLM, MaskedLM


@pytest.fixture(scope="module")
def gpt(tiny_gpt2) -> CausalLM:
    model = model_zoo.load(tiny_gpt2)
    assert isinstance(model, CausalLM)
    return model


def test_encode_shapes_and_specials(bert: MaskedLM) -> None:
    enc = bert.encode("the man went to the bank")
    n = len(enc.tokens)
    assert enc.tokens[0] == "[CLS]" and enc.tokens[-1] == "[SEP]"
    assert enc.word_ids[0] is None and enc.word_ids[-1] is None
    assert enc.hidden_states.shape == (3, n, 32)  # embedding layer + 2 layers
    assert enc.attentions.shape == (2, 4, n, n)
    assert enc.words == ["the", "man", "went", "to", "the", "bank"]
    assert not enc.truncated


def test_attention_rows_sum_to_one(bert: MaskedLM) -> None:
    enc = bert.encode("we sat on the river bank")
    np.testing.assert_allclose(enc.attentions.sum(-1), 1.0, atol=1e-5)


def test_pair_has_segments(bert: MaskedLM) -> None:
    enc = bert.encode("the man went to the bank", "his money was at the bank")
    assert enc.tokens.count("[SEP]") == 2
    first_sep = enc.tokens.index("[SEP]")
    assert set(enc.segment_ids[: first_sep + 1]) == {0}
    assert set(enc.segment_ids[first_sep + 1 :]) == {1}
    # The second text's words continue the numbering: every token maps to its own word.
    assert enc.words == "the man went to the bank his money was at the bank".split()
    for token, word in zip(enc.tokens, enc.word_ids):
        assert word is None or enc.words[word] == token


def test_word_pooling_averages_pieces_and_skips_specials(bert: MaskedLM) -> None:
    text = "the embeddings of the bank"
    enc = bert.encode(text)
    assert enc.tokens[2:6] == ["em", "##bed", "##ding", "##s"]
    vectors = bert.word_vectors([text], "embeddings")
    assert vectors.shape == (1, 3, 32)
    np.testing.assert_allclose(vectors[0], enc.hidden_states[:, 2:6].mean(1), atol=1e-5)
    # A one-piece word is its own token; [CLS] at position 0 never enters the mean.
    at = enc.tokens.index("bank")
    bank = bert.word_vectors([text], "bank")[0]
    np.testing.assert_allclose(bank, enc.hidden_states[:, at], atol=1e-5)
    assert not np.allclose(bank, enc.hidden_states[:, [0, at]].mean(1), atol=1e-3)


def test_word_vectors_batches_and_padding(bert: MaskedLM) -> None:
    texts = ["bank", "we sat on the river bank and the water was on the bank"]
    batched = bert.word_vectors(texts, "bank")
    alone = np.concatenate([bert.word_vectors([t], "bank") for t in texts])
    np.testing.assert_allclose(batched, alone, atol=1e-5)  # padding changes nothing


def test_word_vectors_names_the_sentence_without_the_word(bert: MaskedLM) -> None:
    with pytest.raises(model_zoo.WordNotInText) as err:
        bert.word_vectors(["the bank", "the river"], "bank")
    assert err.value.index == 1 and "river" in str(err.value)


def test_fill_mask_equals_transformers_pipeline(bert: MaskedLM, tiny_bert) -> None:
    from transformers import pipeline

    pipe = pipeline("fill-mask", model=str(tiny_bert), tokenizer=str(tiny_bert))
    for text in ["the man went to the [MASK]", "the [MASK] went to the [MASK] ."]:
        ours = bert.fill_mask(text, top_k=5)
        theirs = pipe(text, top_k=5)
        theirs = [theirs] if isinstance(theirs[0], dict) else theirs
        assert len(ours) == text.count("[MASK]")
        for mine, ref in zip(ours, theirs):
            assert [tok for tok, _ in mine] == [r["token_str"] for r in ref]
            np.testing.assert_allclose([p for _, p in mine], [r["score"] for r in ref], rtol=1e-4)


def test_mask_logits_run_the_last_layer_only_at_the_masks(bert: MaskedLM, monkeypatch) -> None:
    """The last layer runs at the [MASK]s only (keys and values from every token) and gives
    the full model's logits there, for a pair and for a first sequence with padding."""
    from model_zoo import contextual

    assert bert._trunk is not None
    assert len(bert._trunk.encoder.layer) == bert.config.num_hidden_layers - 1 and bert._trunk.pooler is None
    assert (
        bert._trunk.encoder.layer[0].attention.self.query.weight
        is bert.model.bert.encoder.layer[0].attention.self.query.weight
    )
    seen = []
    real = contextual._layer_at
    monkeypatch.setattr(contextual, "_layer_at", lambda *args: seen.append(args[2].tolist()) or real(*args))
    batches = [
        bert.tokenize("the [MASK] went to the [MASK] ."),
        bert.tokenize("[MASK] man", "went to the [MASK]"),
        bert.tokenize(["the [MASK] bank", "the man went to the river bank to fish and sit"]),  # first one padded
    ]
    for batch in batches:
        positions = (batch["input_ids"][0] == bert.tokenizer.mask_token_id).nonzero().flatten()
        with torch.inference_mode():
            full = bert.model(**batch).prediction_logits[0, positions]
        torch.testing.assert_close(bert.logits_at(batch, positions), full, atol=1e-4, rtol=1e-4)
        assert seen.pop() == positions.tolist()
    assert int(batches[2]["attention_mask"][0].sum()) < batches[2]["attention_mask"].shape[1]


def test_fill_mask_needs_a_mask(bert: MaskedLM) -> None:
    with pytest.raises(model_zoo.NoMaskToken, match=r"\[MASK\]"):
        bert.fill_mask("the man went to the bank")


def test_next_sentence_is_the_isnext_probability(bert: MaskedLM) -> None:
    a, b = "the man went to the bank", "his money was in the river"
    p = bert.next_sentence(a, b)
    inputs = bert.tokenizer(a, b, return_tensors="pt")
    with torch.inference_mode():
        logits = bert.model(**inputs).seq_relationship_logits
    assert p == pytest.approx(float(logits.softmax(-1)[0, 0]), abs=1e-6)
    assert 0.0 < p < 1.0


def test_encoder_without_heads_has_no_fill_mask(tmp_path) -> None:
    from tests.conftest import save_tiny_bert

    model = model_zoo.load(save_tiny_bert(tmp_path / "bare", pretraining=False))
    assert type(model) is model_zoo.Encoder
    assert not hasattr(model, "fill_mask")


def test_long_text_is_truncated_visibly(bert: MaskedLM) -> None:
    enc = bert.encode("the bank " * 100)  # max_position_embeddings is 64
    assert enc.truncated and len(enc.tokens) == 64


def test_empty_text_is_refused(bert: MaskedLM) -> None:
    with pytest.raises(model_zoo.EmptyInput):
        bert.encode("   ")


def test_causal_lm_next_words_are_its_softmax(gpt: CausalLM) -> None:
    from model_zoo.words import BYTE_PIECE

    text = "I deposited the cheque at the"
    preds = gpt.next_words(text, top_k=5)
    probs = [p for _, p in preds]
    assert probs == sorted(probs, reverse=True) and sum(probs) <= 1.0 + 1e-6
    ids = gpt.tokenizer(text, return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        ref = gpt.model(input_ids=ids).logits[0, -1].softmax(-1)
    top = ref.topk(5)
    decoded = [gpt.tokenizer.decode([int(i)]) for i in top.indices]  # a piece of a character: as its bytes
    assert [tok for tok, _ in preds] == [
        t if "\ufffd" not in t else s for t, s in zip(decoded, gpt.shown_each(top.indices.tolist()))
    ]
    assert all(BYTE_PIECE.fullmatch(tok) for tok, t in zip((p for p, _ in preds), decoded) if "\ufffd" in t)
    np.testing.assert_allclose(probs, top.values.numpy(), rtol=1e-5)


def test_causal_attention_never_looks_ahead(gpt: CausalLM) -> None:
    enc = gpt.encode("We sat on the river bank.")
    n = len(enc.tokens)
    assert enc.attentions.shape == (2, 4, n, n)
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    assert np.all(enc.attentions[:, :, upper] == 0)
    np.testing.assert_allclose(enc.attentions.sum(-1), 1.0, atol=1e-5)
    assert gpt.word_vectors(["We sat on the river bank."], "river").shape == (1, 3, 32)


def test_one_model_serves_many_threads_at_once(bert: MaskedLM) -> None:
    """A classroom: one shared model, calls with different padding/truncation in parallel.

    Fast tokenizers keep truncation/padding as state; unguarded, concurrent calls fail
    with "RuntimeError: Already borrowed".
    """
    from concurrent.futures import ThreadPoolExecutor

    calls = [
        lambda: bert.encode("the man went to the bank " * 3),
        lambda: bert.word_vectors(["the bank", "we sat on the river bank and the water"], "bank"),
        lambda: bert.fill_mask("the man went to the [MASK]"),
        lambda: bert.next_sentence("the man went to the bank", "his money was there"),
        lambda: bert.encode("the bank " * 100),  # truncated
    ]
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda i: calls[i % len(calls)](), range(400)))
    assert len(results) == 400
    np.testing.assert_allclose(results[0].hidden_states, bert.encode("the man went to the bank " * 3).hidden_states)


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_gpt2"])
def test_fused_twin_shares_weights_and_agrees_with_eager(fixture: str, request) -> None:
    """Calls without attention weights run on an SDPA twin: same tensors, same numbers."""
    model = model_zoo.load(request.getfixturevalue(fixture))
    assert model.model.config._attn_implementation == "eager"
    assert model.fast_model.config._attn_implementation == "sdpa"
    for a, b in zip(model.model.parameters(), model.fast_model.parameters(), strict=True):
        assert a is b
    text = "the man went to the bank"
    eager = model.encode(text, attentions=True)
    fused = model.encode(text, attentions=False)
    assert eager.attentions is not None and fused.attentions is None
    np.testing.assert_allclose(eager.hidden_states, fused.hidden_states, atol=1e-5)


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_gpt2"])
def test_every_transformer_meets_the_contextual_contract(fixture: str, request) -> None:
    model = model_zoo.load(request.getfixturevalue(fixture))
    assert isinstance(model, model_zoo.Contextual)
    encoding = model.encode("the man went to the bank")
    assert encoding.hidden_states.shape[:2] == (model.config.num_hidden_layers + 1, len(encoding.tokens))
    assert model.count_tokens("the man went to the bank") == len(encoding.tokens)
    assert model.word_vectors(["the man went to the bank"], "bank").shape[1:] == encoding.hidden_states.shape[::2]


def test_a_page_asking_a_model_for_what_it_cannot_do_gets_one_sentence(tiny_gpt2, monkeypatch) -> None:
    import serving

    gpt = model_zoo.load(tiny_gpt2)
    monkeypatch.setattr(serving, "load_model", lambda name: gpt)
    assert serving.loaded("tiny", model_zoo.CausalLM) is gpt
    with pytest.raises(model_zoo.MissingCapability, match="tiny cannot do MaskedLM: it is a CausalLM"):
        serving.loaded("tiny", model_zoo.MaskedLM)


def test_a_checkpoint_of_an_unknown_kind_is_refused(tiny_bert) -> None:
    from model_zoo.loading import _load_transformers

    with pytest.raises(ValueError, match="no transformers loader for a model of kind 'elmo'"):
        _load_transformers("x", str(tiny_bert), "elmo", "cpu")


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_gpt2"])
def test_broken_text_gets_an_answer_not_a_tokenizer_error(fixture: str, request) -> None:
    """A lone surrogate (a broken copy-paste) or a NUL reaches no tokenizer as such."""
    model = model_zoo.load(request.getfixturevalue(fixture))
    text = "the bank \ud83d and\x00 the river\x07 bank"
    encoding = model.encode(text)
    assert encoding.hidden_states.shape[1] == len(encoding.tokens) >= 5
    assert model.word_vectors([text], "river").shape[0] == 1


def test_no_model_reads_more_than_the_page_limit(tiny_gpt2) -> None:
    """A causal LM's context (8,192 tokens for SmolLM2) is not a page's limit: one pasted essay
    must not hold the shared server, so every model reads at most MAX_TOKENS tokens."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from model_zoo.contextual import MAX_CHARS, MAX_TOKENS, CausalLM

    gpt = model_zoo.load(tiny_gpt2)
    config = GPT2Config(vocab_size=gpt.config.vocab_size, n_embd=32, n_layer=1, n_head=4, n_positions=8192)
    config._attn_implementation = "eager"  # attention weights, as the Attention page asks for them
    long_context = GPT2LMHeadModel(config)
    model = CausalLM("long", long_context, gpt.tokenizer, torch.device("cpu"))
    assert model.max_length == MAX_TOKENS
    text = "1 " * 5000
    encoding = model.encode(text, attentions=True)
    assert encoding.truncated and len(encoding.tokens) == MAX_TOKENS
    assert len(model.next_words(text, top_k=3)) == 3
    assert model.count_tokens("x" * (10 * MAX_CHARS)) <= MAX_CHARS  # the tokenizer saw at most MAX_CHARS characters
