"""A decoder made a masked LM (model_zoo.bidirectional, LLM2Vec's recipe), on a tiny random Llama:
bidirectional attention, the [MASK] read one position earlier, adapters merged from peft's files."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from model_zoo.bidirectional import (
    ADAPTER,
    MASK,
    START,
    BidirectionalLM,
    bidirectional_mask,
    load_mntp,
)
from model_zoo.lessons import cloze
from model_zoo.training.train_mntp import blocks, join_runs, mask_blocks, neighbours, run_history


@pytest.fixture(scope="module")
def tiny_lm(tiny_mntp: tuple[Path, Path]) -> BidirectionalLM:
    model, tokenizer = load_mntp(*tiny_mntp)
    return BidirectionalLM("tiny-mntp", model, tokenizer, torch.device("cpu"))


def test_every_text_starts_with_the_separator_and_mask_is_one_token(tiny_lm: BidirectionalLM) -> None:
    enc = tiny_lm.encode("the bank [MASK] river")
    assert enc.tokens[0] == START and enc.word_ids[0] is None
    assert enc.tokens.count(MASK) == 1
    assert tiny_lm.tokenizer.mask_token_id == tiny_lm.tokenizer.convert_tokens_to_ids(MASK)
    assert not tiny_lm.has_segments  # a pair is one text: the Using BERT page says so beside the pair head


def test_adapters_are_merged_into_the_weights(tiny_mntp: tuple[Path, Path], tiny_lm: BidirectionalLM) -> None:
    from transformers import AutoModelForCausalLM

    plain = AutoModelForCausalLM.from_pretrained(str(tiny_mntp[0]))
    before = plain.model.layers[0].self_attn.q_proj.weight
    after = tiny_lm.model.model.layers[0].self_attn.q_proj.weight
    assert before.shape == after.shape and not torch.allclose(before, after)
    assert (tiny_mntp[1] / ADAPTER).exists()


def test_attention_reaches_both_sides(tiny_lm: BidirectionalLM) -> None:
    """A causal LM's first word never sees the last; this one's does, and a word after the blank
    changes the guess at the blank."""
    enc = tiny_lm.encode("we sat on the river bank")
    assert enc.attentions is not None
    assert (enc.attentions[:, :, 1, -1] > 0).all()
    a = tiny_lm.mask_logits("we sat on the [MASK] bank")[2]
    b = tiny_lm.mask_logits("we sat on the [MASK] water")[2]
    assert not torch.allclose(a, b)


def test_the_blank_is_read_one_position_earlier(tiny_lm: BidirectionalLM) -> None:
    """MNTP: the language-model head at the token before [MASK] predicts the hidden token."""
    batch, positions, logits = tiny_lm.mask_logits("the river [MASK] was muddy")
    inputs = {k: v for k, v in batch.items() if k != "token_type_ids"}
    inputs["attention_mask"] = bidirectional_mask(inputs["attention_mask"], torch.float32)
    with torch.inference_mode():
        states = tiny_lm.model.model(**inputs).last_hidden_state
        expected = tiny_lm.model.lm_head(states[0, positions - 1]).float()
    shown = torch.isfinite(logits)
    assert torch.allclose(logits[shown], expected[shown], atol=1e-4)


def test_guesses_are_words_never_mask_or_specials(tiny_lm: BidirectionalLM) -> None:
    guesses = tiny_lm.fill_mask("the [MASK] sat on the [MASK]", top_k=20)
    assert len(guesses) == 2
    for row in guesses:
        words = [w for w, _ in row]
        assert MASK not in words and START not in words and "" not in words
        assert all(w == w.strip() for w in words)
    batched = tiny_lm.fill_masks(["the [MASK] sat on the [MASK]", "a [MASK]"], top_k=20)
    assert [[w for w, _ in row] for row in batched[0]] == [[w for w, _ in row] for row in guesses]


def test_a_word_with_and_without_its_space_is_one_guess(tiny_lm: BidirectionalLM) -> None:
    """' bank' (after a space) and 'bank' (glued on, as in 'riverbank') fill the blank with the same word:
    one bar, both probabilities summed; sorted, and as many as asked."""
    vocab = tiny_lm.tokenizer.get_vocab()
    word = next(w for w in sorted(vocab) if len(w) > 2 and w.isalpha() and "Ġ" + w in vocab)
    other = next(w for w in sorted(vocab) if w.startswith("Ġ") and w[1:].isalpha() and w[1:] != word)
    spaced, glued, third = vocab["Ġ" + word], vocab[word], vocab[other]
    logits = torch.full((1, len(tiny_lm.tokenizer)), -20.0)
    logits[0, spaced], logits[0, glued], logits[0, third] = 2.0, 1.5, 2.2  # apart, each below the third
    (row,) = tiny_lm._guesses(logits, top_k=2)
    p = logits.softmax(-1)[0]
    assert [w for w, _ in row] == [word, other[1:]]
    assert row[0][1] == pytest.approx(float(p[spaced] + p[glued])) and row[1][1] == pytest.approx(float(p[third]))


def test_bidirectional_mask_hides_padding_only() -> None:
    mask = bidirectional_mask(torch.tensor([[1, 1, 1], [1, 1, 0]]), torch.float32)
    assert mask.shape == (2, 1, 3, 3)
    assert (mask[0] == 0).all()
    assert (mask[1, 0, :, :2] == 0).all() and (mask[1, 0, :, 2] < -1e30).all()


def test_training_masks_like_bert_never_the_first_position_or_a_separator() -> None:
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 100, (64, 50))
    ids[:, 0] = 0
    ids[:, 25] = 0
    picked, corrupted, masked = mask_blocks(ids, 0.2, 100, ids == 0, generator)
    assert not picked[:, 0].any() and not picked[:, 25].any()
    assert 0.17 < picked.float().mean() / (48 / 50) < 0.23
    assert (masked <= picked).all() and 0.75 < masked.sum() / picked.sum() < 0.85
    kept_or_random = picked & ~masked
    assert (corrupted[~picked] == ids[~picked]).all() and kept_or_random.any()


def test_unlikelihood_negatives_are_the_nearby_words_except_the_answer() -> None:
    # "<s> paris is the capital of france . <s> the sea" with ids 0 = <s>; "france" (6) is picked
    ids = torch.tensor([[0, 11, 12, 13, 14, 15, 16, 17, 0, 13, 18]])
    picked = torch.zeros_like(ids, dtype=torch.bool)
    picked[0, 6] = True
    picked[0, 9] = True  # the second "the": its own id stays a negative only where another "the" is near
    near = neighbours(ids, picked, window=3, start_id=0, vocab=20)
    assert near.shape == (2, 20)
    assert sorted(near[0].nonzero().flatten().tolist()) == [13, 14, 15, 17]  # not 16 (the answer), not <s>
    assert sorted(near[1].nonzero().flatten().tolist()) == [16, 17, 18]  # "the" is the answer: never negative


def test_blocks_follow_the_stream_each_after_the_separator(tiny_mntp: tuple[Path, Path]) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_mntp[0]))
    start = tokenizer.convert_tokens_to_ids(START)
    docs = [["We sat on the river bank.", "The water was cold."], ["I deposited the cheque at the bank."]]
    out = blocks(docs, tokenizer, 8, start)
    assert all(len(b) == 8 and b[0] == start for b in out)
    stream = [t for b in out for t in b[1:]]
    first = tokenizer(" ".join(docs[0]), add_special_tokens=False)["input_ids"]
    assert stream[1 : 1 + len(first)] == first  # the first document follows its separator


def test_cloze_scores_copies_and_splits() -> None:
    items = [cloze.ClozeItem("Paris is the capital of [MASK].", frozenset({"france"}))]
    assert cloze.score(items, [["paris", "france"]]) == {
        "cloze_top1": 0.0,
        "cloze_top5": 1.0,
        "cloze_copies": 1.0,
        "cloze_items": 1,
    }
    assert cloze.score(items, [["France"]])["cloze_copies"] == 0.0
    dev, test = cloze.items("dev"), cloze.items("test")
    assert not set(dev) & set(test) and len(dev) + len(test) == len(cloze.items())
    assert len(cloze.fresh()) >= 150 and all(len(i.answers) == 1 for i in cloze.fresh())
    texts = {i.text for i in cloze.items()}
    assert not texts & {i.text for i in cloze.fresh()}


def test_runs_that_continue_one_another_export_one_history(tmp_path: Path) -> None:
    """Plain MNTP, then two anti-copy runs, each started from the last one's checkpoint: one curve counted
    from the first run's start, totals of all three, and each run's own settings."""
    import json

    before: Path | None = None
    for k, (steps, tokens, seconds) in enumerate([(360, 1000, 60.0), (120, 300, 30.0), (80, 200, 20.0)]):
        run = tmp_path / f"run{k}"
        run.mkdir()
        init = None if before is None else {"checkpoint": str(before), "steps": 0}
        state = {
            "config": {"unlikelihood": float(k)},
            "step": steps,
            "tokens": tokens,
            "seconds": seconds,
            "init": init,
        }
        torch.save(state, run / "checkpoint.pt")
        points = [{"step": 0, "tokens": 0, "seconds": 0, "copies": 0.2 - 0.05 * k}]
        points.append({"step": steps, "tokens": tokens, "seconds": seconds, "copies": 0.15 - 0.05 * k})
        (run / "curve.jsonl").write_text("\n".join(json.dumps(p) for p in points) + "\n")
        before = run / "checkpoint.pt"
    assert before is not None
    runs = run_history(before)
    assert [r["steps"] for r in runs] == [360, 120, 80] and [r["config"]["unlikelihood"] for r in runs] == [0, 1, 2]
    curve, totals = join_runs(runs)
    assert totals == {"step": 560, "tokens": 1500, "seconds": 110}
    assert [p["step"] for p in curve] == [0, 360, 480, 560]  # one point at each junction
    assert [p["copies"] for p in curve] == pytest.approx([0.2, 0.15, 0.1, 0.05])
