"""Why BERT masks (model_zoo.lessons.why_mask): two tiny Transformers, one copying and one masked, and attention
rollout. Fast tier: a planted corpus, seconds on a CPU."""

from __future__ import annotations

import random

import numpy as np

from model_zoo.lessons import why_mask


def planted(n: int = 600) -> list[list[str]]:
    """Sentences whose hidden word follows from its context ("... the cat eats fish ..."), at a varying
    place among random filler words, so that no position gives a word away."""
    rng = random.Random(0)
    pairs = [("cat", "fish"), ("dog", "bones"), ("cow", "grass"), ("bird", "seeds"), ("bee", "nectar")]
    fillers = [f"w{i}" for i in range(12)]
    out = []
    for _ in range(n):
        animal, food = rng.choice(pairs)
        before = rng.choices(fillers, k=rng.randint(0, 3))
        out.append([*before, "the", animal, "eats", food, *rng.choices(fillers, k=rng.randint(0, 3))])
    return out


def test_the_copying_model_learns_nothing_a_mask_can_ask_while_the_masked_one_learns() -> None:
    race = why_mask.race(planted(), steps=150, every=50, vocab=40, max_len=12)
    copy, masked = race.masked_accuracy["copy"], race.masked_accuracy["masked"]
    assert race.steps == [0, 50, 100, 150] and len(copy) == len(masked) == 4
    assert race.loss["copy"][-1] < 0.05  # reading the word it predicts, the loss all but vanishes
    assert race.loss["masked"][-1] > race.loss["copy"][-1] + 0.2  # the masked model really has to guess
    assert copy[-1] <= race.commonest + 0.05  # ... yet at a [MASK] the copier does no better than always "the"
    assert masked[-1] > race.commonest + 0.3 and masked[-1] > copy[-1] + 0.3
    assert race.test_positions > 0 and race.train_sentences == 540


def test_both_models_start_from_the_same_weights() -> None:
    race = why_mask.race(planted(100), steps=1, every=1, vocab=40, max_len=12)
    assert race.masked_accuracy["copy"][0] == race.masked_accuracy["masked"][0]


def test_rollout_follows_the_residual_path_and_keeps_rows_summing_to_one() -> None:
    n = 5
    identity = np.tile(np.eye(n), (3, 2, 1, 1))  # every head attends to itself
    np.testing.assert_allclose(why_mask.attention_rollout(identity), np.eye(n))
    uniform = np.full((3, 2, n, n), 1 / n)
    rolled = why_mask.attention_rollout(uniform)
    np.testing.assert_allclose(rolled.sum(axis=1), 1.0)
    assert np.all(np.diag(rolled) > 1 / n) and np.diag(rolled).max() < 0.5  # the residual keeps some of itself
