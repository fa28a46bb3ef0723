"""serving.lesson_attention: what the Attention, Transformer, GPT and Masked LM pages show, read on the tiny
zoo (tests/conftest.py: minilm-l6 is a 2-layer, 4-head BERT with a fixed vocabulary; smollm2-135m a 2-layer,
4-head causal LM). The tiny models' weights are random: the tests check each reading against the attention
it reads, and what does not depend on the weights (token counts, spellings, the causal mask) exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import serving
from model_zoo.lessons import lexicon
from serving import lesson_attention as lesson

BANK = "the man went to the bank ."  # every word is in the tiny BERT's vocabulary: one token each


def test_constants_are_the_lessons() -> None:
    assert lesson.BLANK == "___"
    assert lesson.MAX_NEW_TOKENS == 64
    assert lesson.STRATEGIES == ("greedy", "top_k", "top_p")


def test_example_sentences_are_the_shipped_ones() -> None:
    sentences = lesson.example_sentences()
    assert sentences == tuple(lexicon.examples())
    assert len(sentences) > 100 and all(s.strip() for s in sentences)


def test_query_starts_on_the_first_word_or_on_a_causal_models_last_token(tiny_zoo: Path) -> None:
    encoding = serving.attention_view("minilm-l6", BANK, None)
    assert lesson.query_start(encoding, causal=False) == lesson.QueryStart(2, 4, 1)  # [CLS] is no word
    assert lesson.query_start(encoding, causal=True).query == len(encoding.tokens) - 1 == 8


def test_heads_grid_counts_layers_and_heads(tiny_zoo: Path) -> None:
    assert lesson.heads_grid("minilm-l6", BANK) == (2, 4)
    assert lesson.heads_grid("smollm2-135m", "We sat on the river bank.") == (2, 4)


def test_spelled_tokens_keep_the_specials_and_drop_space_marks(tiny_zoo: Path) -> None:
    assert lesson.spelled_tokens("minilm-l6", BANK) == [
        "[CLS]",
        "the",
        "man",
        "went",
        "to",
        "the",
        "bank",
        ".",
        "[SEP]",
    ]
    raw = serving.token_strings("smollm2-135m", "We sat on the river bank.")
    spelled = lesson.spelled_tokens("smollm2-135m", "We sat on the river bank.")
    assert any(token.startswith("Ġ") for token in raw)  # byte-level BPE marks a space before a word
    assert spelled == [token.strip("Ġ▁ ") for token in raw] and not any("Ġ" in token for token in spelled)


def test_most_attended_is_the_last_layers_heads_averaged_argmax(tiny_zoo: Path) -> None:
    view = serving.attention_view("minilm-l6", BANK, None)
    assert view.attentions is not None
    found = lesson.most_attended("minilm-l6", BANK, "bank")
    shares = view.attentions[-1, :, 6, :].mean(0)  # "bank" is token 6
    assert found == (view.tokens[int(shares.argmax())], pytest.approx(float(shares.max())))
    assert found is not None and found[0] in lesson.spelled_tokens("minilm-l6", BANK)  # a quiz option can match
    assert lesson.most_attended("minilm-l6", BANK, "river") is None


def test_reach_reads_the_strongest_head_and_the_farthest_link(tiny_zoo: Path) -> None:
    view = serving.attention_view("minilm-l6", BANK, None)
    assert view.attentions is not None
    reached = lesson.reach(view, 2)  # from "man"
    assert np.allclose(reached.strongest, view.attentions[:, :, 2, :].max(axis=1))
    assert len(reached.strongest) == 2 and all(len(row) == 9 for row in reached.strongest)
    assert reached.link is not None
    layer, head, j, weight = reached.link
    assert j not in (0, 2, 8)  # a word other than "man": never [CLS] or [SEP]
    assert weight == pytest.approx(float(view.attentions[layer, head, 2, j]))
    words = [k for k in range(1, 8) if k != 2]
    reach_of = {
        (lay, h, k): view.attentions[lay, h, 2, k] * abs(k - 2) for lay in (0, 1) for h in range(4) for k in words
    }
    assert max(reach_of.values()) == pytest.approx(reach_of[(layer, head, j)])


def test_strongest_link_between_two_words(tiny_zoo: Path) -> None:
    view = serving.attention_view("minilm-l6", BANK, None)
    assert view.attentions is not None
    link = lesson.strongest_link("minilm-l6", BANK, "bank", "man")
    assert link is not None and link.distance == 4
    per_layer = view.attentions[:, :, 6, 2].max(axis=1)
    assert link.layer == int(per_layer.argmax())
    assert link.weight == pytest.approx(float(per_layer.max()))
    assert link.weight == pytest.approx(float(view.attentions[link.layer, link.head, 6, 2]))
    assert lesson.strongest_link("minilm-l6", BANK, "bank", "river") is None


def test_a_causal_model_looks_only_left_and_an_encoder_does_not(tiny_zoo: Path) -> None:
    causal = lesson.later_tokens("smollm2-135m", "We sat on the river bank.")
    assert causal.only_left and causal.largest < 1e-6
    full = lesson.later_tokens("minilm-l6", BANK)
    assert not full.only_left and full.largest > 0.01


def test_first_token_sink_of_a_causal_model(tiny_zoo: Path) -> None:
    text = "We sat on the river bank."
    tokens = len(serving.attention_view("smollm2-135m", text, None).tokens)
    sink = lesson.first_token_sink("smollm2-135m", text, tokens)
    shares = serving.first_token_shares("smollm2-135m", text)
    assert sink.heads == 8 and sink.parked == int((shares > 0.5).sum())
    assert sink.mean == pytest.approx(float(shares.mean()))
    assert sink.even == pytest.approx(np.mean([1 / (q + 1) for q in range(1, tokens)]))


def test_left_first_is_the_left_contexts_first_word(tiny_zoo: Path) -> None:
    text = "We sat on the ___ bank."
    rows = serving.left_vs_whole("smollm2-135m", text, ())
    first = min((r for r in rows if r.left_rank), key=lambda r: r.left_rank)
    assert lesson.left_first("smollm2-135m", text) == first.candidate
    words = [
        w.strip() for w, _ in serving.next_words("smollm2-135m", "We sat on the", 8) if any(c.isalnum() for c in w)
    ]
    assert first.candidate == words[0]


def test_maskable_words_and_masking_the_first_use() -> None:
    assert lesson.maskable_words("the man went to the [MASK] .") == ["the", "man", "went", "to"]
    assert lesson.mask_first("the man saw the man", "man") == "the [MASK] saw the man"
    assert lesson.mask_first("the [MASK] saw the man", "man") == "the [MASK] saw the [MASK]"
    assert lesson.mask_first("the man", "dog") == "the man"


def test_rollout_over_the_pages_view(tiny_zoo: Path) -> None:
    tokens, rolled = lesson.rollout("minilm-l6", BANK)
    assert tokens == serving.attention_view("minilm-l6", BANK, None).tokens
    matrix = np.array(rolled.rolled)
    assert matrix.shape == (9, 9) and np.allclose(matrix.sum(axis=1), 1.0)  # each position draws on inputs: all of it
    assert rolled.layers == 2 and rolled.even == pytest.approx(1 / 9)
    assert rolled.own == pytest.approx(float(np.diag(matrix).mean()))
