"""The lessons' own arithmetic, as model_zoo computes it for the pages (numpy only: fast tier)."""

from __future__ import annotations

import numpy as np
import pytest

from model_zoo.attention import attention_to_later_tokens, strongest_head_reach, uniform_first_token_share
from model_zoo.elmo import layer_cosines, scalar_mix
from model_zoo.probing import normalised_depth

LAYERS = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])  # (S=3, D=2)


def test_scalar_mix_is_gamma_times_the_softmax_weighted_sum() -> None:
    even = scalar_mix(LAYERS, [0.0, 0.0, 0.0], 1.0)
    np.testing.assert_allclose(even.weights, [1 / 3] * 3)
    np.testing.assert_allclose(even.vector, LAYERS.mean(0), rtol=1e-6)
    top = scalar_mix(LAYERS, [-20.0, -20.0, 20.0], 2.0)  # nearly all weight on the last layer, doubled
    np.testing.assert_allclose(top.vector, 2 * LAYERS[2], rtol=1e-5)
    assert top.weights.sum() == pytest.approx(1.0) and top.norm == pytest.approx(
        2 * np.linalg.norm(LAYERS[2]), rel=1e-5
    )


def test_layer_cosines_compare_one_word_layer_by_layer() -> None:
    pair = np.stack([LAYERS, LAYERS * [[1, 1], [1, -1], [-1, -1]]])  # same, orthogonal-ish, opposite
    np.testing.assert_allclose(layer_cosines(pair), [1.0, -1.0, -1.0], atol=1e-6)


def test_a_causal_mask_leaves_no_attention_on_later_tokens() -> None:
    t = 4
    causal = np.tril(np.ones((t, t))) / np.arange(1, t + 1)[:, None]  # each query spreads over what it sees
    full = np.full((t, t), 1 / t)
    assert attention_to_later_tokens(causal[None, None]) == 0.0
    assert attention_to_later_tokens(full[None, None]) == pytest.approx(0.25)
    assert uniform_first_token_share(t) == pytest.approx(np.mean([1 / 2, 1 / 3, 1 / 4]))


def test_the_strongest_head_of_each_layer_gives_the_reach() -> None:
    attn = np.zeros((2, 3, 4, 4))  # (L, H, T, T)
    attn[0, 1, 2, 0] = 0.9
    attn[1, 2, 2, 3] = 0.7
    reach = strongest_head_reach(attn, 2)
    assert reach.shape == (2, 4) and reach[0, 0] == 0.9 and reach[1, 3] == 0.7 and reach[0, 3] == 0.0


def test_normalised_depth_runs_from_the_embeddings_to_the_last_layer() -> None:
    assert normalised_depth(0, 7) == 0.0 and normalised_depth(6, 7) == 1.0 and normalised_depth(1.5, 4) == 0.5


def test_a_coin_needs_20_of_30_to_beat_chance() -> None:
    from model_zoo.tasks import chance_cutoff

    assert chance_cutoff(30) == 20  # P(X >= 20) = 4.9% for a fair coin; P(X >= 19) = 10%
    assert chance_cutoff(10) == 9 and chance_cutoff(100) == 59


def test_a_diagram_shows_each_segment_abridged_and_counts_a_passage_from_one() -> None:
    from model_zoo.tasks import abridged

    tokens = ["[CLS]", "where", "is", "it", "?", "[SEP]", *[f"d{k}" for k in range(1, 9)], "[SEP]"]
    segments = [0] * 6 + [1] * 9
    shown = abridged(tokens, segments, passage=True, per_segment=3)
    assert shown.tokens == ["[CLS]", "where", "is", "…", "[SEP]", "d1", "d2", "d3", "…", "[SEP]"]
    assert shown.positions == [0, 1, 2, None, 5, 1, 2, 3, None, 9]  # the passage's words from 1
    assert shown.segments == [0] * 5 + [1] * 5
    assert abridged(tokens, segments, passage=False, per_segment=3).positions[5] == 6  # the sequence from [CLS]
