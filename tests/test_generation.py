"""Generation and left-only measures (model_zoo.lessons.generation) on a tiny random GPT-2 (fast tier)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import model_zoo
from model_zoo.lessons.generation import (
    MAX_NEW_TOKENS,
    Strategy,
    _distribution,
    end_ids,
    first_token_share,
    generate_steps,
    left_only_vs_whole,
    token_logprobs,
)

PROMPT = "the man went to the bank"


def test_greedy_steps_equal_transformers_generate(gpt2) -> None:  # noqa: ANN001
    steps = list(generate_steps(gpt2, PROMPT, Strategy("greedy", max_new_tokens=12)))
    ids = gpt2.tokenize(PROMPT, padding=False)["input_ids"]
    with torch.inference_mode():
        expected = gpt2.model.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=12, do_sample=False, pad_token_id=0
        )[0, ids.shape[1] :].tolist()
    eos = gpt2.tokenizer.eos_token_id
    made = [s.token_id for s in steps]
    assert made == expected[: len(made)] and (len(made) == 12 or made[-1] == eos)
    kept = [s.token_id for s in steps if not s.ended]  # a text's end token is not written into it
    assert steps[-1].text == PROMPT + gpt2.tokenizer.decode(kept)
    for step in steps:  # the chosen token is the likeliest, and its probability is the top candidate's
        assert step.candidates[0][1] == pytest.approx(step.probability)
        assert [p for _, p in step.candidates] == sorted((p for _, p in step.candidates), reverse=True)


@pytest.mark.parametrize("kind", ["top_k", "top_p"])
def test_sampling_with_a_seed_is_reproducible_and_seeds_differ(gpt2, kind: str) -> None:  # noqa: ANN001
    def run(seed: int) -> list[int]:
        strategy = Strategy(kind, top_k=20, top_p=0.95, temperature=1.5, seed=seed, max_new_tokens=16)
        return [s.token_id for s in generate_steps(gpt2, PROMPT, strategy)]

    assert run(1) == run(1)
    assert len({tuple(run(seed)) for seed in range(5)}) > 1


def test_top_k_and_top_p_keep_only_their_tokens(gpt2) -> None:  # noqa: ANN001
    logits = torch.tensor([0.5, 0.3, 0.15, 0.05]).log()
    top_k = _distribution(logits, Strategy("top_k", top_k=3))
    torch.testing.assert_close(top_k, torch.tensor([0.5, 0.3, 0.15, 0.0]) / 0.95)
    top_p = _distribution(logits, Strategy("top_p", top_p=0.6))  # 0.5 is short of 0.6: 0.3 joins it
    torch.testing.assert_close(top_p, torch.tensor([0.5, 0.3, 0.0, 0.0]) / 0.8)
    hot = _distribution(logits, Strategy("top_k", top_k=4, temperature=2.0))  # flatter, same order
    assert hot[0] < 0.5 and hot[3] > 0.05 and (hot.diff() < 0).all()
    (step,) = list(generate_steps(gpt2, PROMPT, Strategy("top_k", top_k=3, max_new_tokens=1), n_candidates=5))
    assert [p > 0 for _, p in step.candidates] == [True, True, True, False, False]
    assert sum(p for _, p in step.candidates) == pytest.approx(1.0)


def test_a_long_prompt_loses_its_start_and_says_so(gpt2) -> None:  # noqa: ANN001
    words = " ".join(f"w{i}" for i in range(400))  # past the tiny model's 64 positions
    steps = list(generate_steps(gpt2, words, Strategy(max_new_tokens=3)))
    assert steps and all(s.cut for s in steps)
    assert not steps[0].text.startswith("w0 ") and "w399" in steps[0].text
    assert len(list(generate_steps(gpt2, words, Strategy(max_new_tokens=10_000)))) <= MAX_NEW_TOKENS


def test_empty_prompt_gets_a_message(gpt2) -> None:  # noqa: ANN001
    with pytest.raises(model_zoo.EmptyInput):
        next(generate_steps(gpt2, "   "))


def test_an_encoding_shows_a_piece_of_a_character_as_its_bytes_and_a_word_as_spelled(gpt2) -> None:  # noqa: ANN001
    """The tokens a page shows for a byte-level model (chips, axes): 语's three one-byte tokens as ‹e8› ‹af› ‹ad›,
    not the byte alphabet's "è¯Ń"; an English word's token as the vocabulary spells it."""
    from model_zoo.words import BYTE_PIECE

    tokens = gpt2.encode("语 at the bank", attentions=False).tokens
    assert [t for t in tokens if BYTE_PIECE.fullmatch(t)] == ["‹e8›", "‹af›", "‹ad›"]
    assert "Ġbank" in tokens and not any(ch in "".join(tokens) for ch in "è¯Ń")


def test_the_next_tokens_show_a_piece_of_a_character_as_its_bytes(gpt2) -> None:  # noqa: ANN001
    """The next-token bars (Playground, GPT) name a token that is part of a character by its bytes, not "�"."""
    from model_zoo.words import BYTE_PIECE

    guesses = [w for w, _ in gpt2.next_words("语", top_k=250)]  # the tiny vocabulary: every byte a token
    assert any(BYTE_PIECE.fullmatch(w) for w in guesses) and not any("\ufffd" in w for w in guesses)


def test_a_sentence_s_factors_show_a_piece_of_a_character_as_its_bytes(gpt2) -> None:  # noqa: ANN001
    """The factor bars label each token as shown_each does: the pieces of 语 as their bytes, not as "�"."""
    factors = token_logprobs(gpt2, "语 is a word")
    assert factors.tokens[0].startswith("‹") and "\ufffd" not in "".join(factors.tokens)


def test_a_written_piece_of_a_character_shows_as_its_bytes_and_the_text_takes_the_character_once_whole(gpt2) -> None:  # noqa: ANN001
    """Writing Chinese, a byte-level GPT picks pieces of a character: "Token chosen" spells each as its bytes,
    as the candidates beside it do (not "�"), and the text written so far adds the character once whole (it
    ended in "�" where max tokens stopped in the middle of one)."""
    from model_zoo.lessons.generation import choose, start_writing

    pieces = gpt2.tokenizer("语", add_special_tokens=False)["input_ids"]  # 语 is three bytes: e8 af ad
    assert len(pieces) >= 2
    writing, _ = start_writing(gpt2, PROMPT, Strategy("greedy", max_new_tokens=len(pieces)))
    steps = []
    for piece in pieces:  # logits that make each piece the model's choice in turn
        logits = torch.full((gpt2.model.config.vocab_size,), -10.0)
        logits[piece] = 10.0
        steps.append(choose(gpt2, writing, logits))
    chosen = [s.token for s in steps]
    assert chosen[0] == steps[0].candidates[0][0] and chosen[0].startswith("‹") and chosen[0].endswith("›")
    assert "\ufffd" not in "".join(chosen) and " " not in "".join(chosen)  # the page's ␣ marks spaces only
    assert [s.text for s in steps[:-1]] == [PROMPT] * (len(pieces) - 1) and steps[-1].text == PROMPT + "语"


def test_a_sentence_is_read_after_the_document_boundary_not_a_chat_models_turn_marker(gpt2, monkeypatch) -> None:  # noqa: ANN001
    """SmolLM2-Instruct's bos is <|im_start|>, the start of a chat turn: a sentence read after it had "tide"
    at 4.4e-9 where the document boundary it was pre-trained with, <|endoftext|>, gives 6.3e-5. The page's
    factors start from <|endoftext|> wherever the vocabulary has it."""
    import copy

    tokenizer = copy.deepcopy(gpt2.tokenizer)
    tokenizer.add_special_tokens({"bos_token": "<|im_start|>"})
    monkeypatch.setattr(gpt2, "tokenizer", tokenizer)
    assert tokenizer.bos_token_id != tokenizer.convert_tokens_to_ids("<|endoftext|>")
    assert token_logprobs(gpt2, PROMPT).start == "<|endoftext|>"


def test_sentence_probability_is_the_product_of_its_factors(gpt2) -> None:  # noqa: ANN001
    factors = token_logprobs(gpt2, PROMPT)
    ids = gpt2.tokenize(PROMPT, padding=False)["input_ids"][0].tolist()
    assert len(factors.tokens) == len(ids) and (factors.logprobs <= 0).all()
    # the first factor is P(first token | start token), from the model's own softmax
    start = gpt2.tokenizer.bos_token_id
    with torch.inference_mode():
        logits = gpt2.model(input_ids=torch.tensor([[start] + ids])).logits[0].log_softmax(-1)
    expected = [float(logits[i, t]) for i, t in enumerate(ids)]
    np.testing.assert_allclose(factors.logprobs, expected, atol=1e-4)
    assert factors.total == pytest.approx(sum(expected), abs=1e-3)


def test_left_only_candidates_are_rescored_with_the_whole_sentence(gpt2) -> None:  # noqa: ANN001
    rows = left_only_vs_whole(gpt2, "the man went to the ___ to get money", k=8)
    assert rows and sorted(r.left_rank for r in rows) == list(range(1, len(rows) + 1))
    assert sorted(r.whole_rank for r in rows) == list(range(1, len(rows) + 1))
    best = min(rows, key=lambda r: r.whole_rank)
    assert best.whole_logprob == max(r.whole_logprob for r in rows)
    filled = token_logprobs(gpt2, f"the man went to the {best.candidate} to get money").total
    assert best.whole_logprob == pytest.approx(filled, abs=1e-4)
    # the left context is read as the whole sentence's score reads it (after the start token): a one-token
    # word's left probability is its own factor in that score, the right context all that differs
    left = len(gpt2.tokenize("the man went to the", padding=False)["input_ids"][0])
    one_token = 0
    for r in rows:
        factors = token_logprobs(gpt2, f"the man went to the {r.candidate} to get money")
        if len(gpt2.tokenize(f" {r.candidate}", padding=False)["input_ids"][0]) == 1:
            assert r.left_probability == pytest.approx(factors.probabilities[left], rel=1e-4)
            one_token += 1
    assert one_token
    with pytest.raises(model_zoo.NoMaskToken):
        left_only_vs_whole(gpt2, "no blank here")
    more = left_only_vs_whole(gpt2, "the man went to the ___ to get money", k=8, extra=("bank", rows[0].candidate))
    brought = [r for r in more if r.left_rank == 0]  # a masked LM's word, scored by the causal LM too
    assert [r.candidate for r in brought] == (["bank"] if "bank" not in {r.candidate for r in rows} else [])
    assert sorted(r.whole_rank for r in more) == list(range(1, len(more) + 1))


def test_the_causal_mask_leaves_the_upper_triangle_at_zero(gpt2) -> None:  # noqa: ANN001
    attentions = gpt2.encode(PROMPT).attentions  # (L, H, T, T)
    assert attentions is not None
    upper = np.triu(np.ones(attentions.shape[-2:], dtype=bool), k=1)
    assert (attentions[..., upper] == 0).all()
    np.testing.assert_allclose(attentions.sum(-1), 1.0, atol=1e-5)
    share = first_token_share(attentions)
    assert share.shape == attentions.shape[:2] and ((share >= 0) & (share <= 1)).all()
    planted = np.zeros((1, 1, 4, 4))
    planted[..., 0] = 1.0
    assert first_token_share(planted)[0, 0] == 1.0


def test_writing_stops_at_any_token_that_ends_a_text_and_leaves_it_out_of_the_text(gpt2, monkeypatch) -> None:  # noqa: ANN001
    from model_zoo.lessons import generation

    first = next(generate_steps(gpt2, PROMPT, Strategy("greedy", max_new_tokens=5)))
    assert not first.ended and gpt2.tokenizer.eos_token_id in end_ids(gpt2)
    monkeypatch.setattr(generation, "end_ids", lambda model: frozenset({first.token_id}))  # as <|im_end|> is
    steps = list(generate_steps(gpt2, PROMPT, Strategy("greedy", max_new_tokens=5)))
    assert len(steps) == 1 and steps[0].ended and steps[0].token_id == first.token_id
    assert steps[0].text == PROMPT


@pytest.mark.slow
def test_smollm2_ends_a_text_at_either_of_its_end_tokens() -> None:
    model = model_zoo.load("smollm2-135m")
    assert isinstance(model, model_zoo.CausalLM)
    vocab = model.tokenizer.get_vocab()
    assert {vocab["<|endoftext|>"], vocab["<|im_end|>"]} <= end_ids(model)


# -- continuous batching (model_zoo.lessons.generation.Batch) -------------------------------------
WRITERS = (
    ("the man went to the bank", Strategy("greedy", max_new_tokens=9)),
    ("a river", Strategy("top_k", top_k=5, seed=3, max_new_tokens=12)),
    (
        "she sat on the bank of the river and looked at the water",
        Strategy("top_p", top_p=0.8, seed=7, max_new_tokens=6),
    ),
    ("the", Strategy("top_k", top_k=40, temperature=1.5, seed=1, max_new_tokens=15)),
)


def same_text(
    model: model_zoo.CausalLM, text: str, strategy: Strategy, got: list[int], upto: int | None = None
) -> None:
    """`got` is the text written alone (its first `upto` tokens). Padding changes a batched pass's float
    rounding: where the tiny random model's two likeliest tokens tie within 1e-4, greedy may break the tie
    the other way and the texts part there (so they are compared up to it)."""
    alone = list(generate_steps(model, text, strategy))[:upto]
    for i, (mine, step) in enumerate(zip(got, alone)):
        if mine != step.token_id:
            (_, p1), (_, p2) = step.candidates[:2]
            assert strategy.kind == "greedy" and p1 - p2 < 1e-4, f"{text!r}, step {i}: {mine} != {step.token_id}"
            return
    assert len(got) == len(alone), (text, got, [s.token_id for s in alone])


def _alone(model: model_zoo.CausalLM, text: str, strategy: Strategy) -> list[tuple[int, float]]:
    return [(s.token_id, s.probability) for s in generate_steps(model, text, strategy)]


@pytest.mark.parametrize("zoo_model", ["gpt2", "llama"])
def test_texts_written_together_are_the_texts_written_alone(zoo_model: str, request: pytest.FixtureRequest) -> None:
    """Four writers with their own strategies and seeds, joining a running batch at different steps and
    leaving it at their own lengths: each writes exactly the tokens it writes alone."""
    model = request.getfixturevalue(zoo_model)
    from model_zoo.lessons.generation import Batch

    batch = Batch(model)
    written: list[list[tuple[int, float]]] = [[] for _ in WRITERS]
    rows = {}
    for step_no in range(40):
        if step_no < len(WRITERS):  # one more joins at each of the first steps
            text, strategy = WRITERS[step_no]
            writing, first = batch.add(text, strategy)
            rows[id(writing)] = step_no
            written[step_no].append((first.token_id, first.probability))
        for writing, step in batch.step():
            written[rows[id(writing)]].append((step.token_id, step.probability))
    assert len(batch) == 0  # every text left when it was done
    for (text, strategy), got in zip(WRITERS, written, strict=True):
        expected = _alone(model, text, strategy)
        assert [t for t, _ in got] == [t for t, _ in expected], text
        assert [p for _, p in got] == pytest.approx([p for _, p in expected], abs=1e-4)


def test_a_writer_that_stops_leaves_the_batch_and_the_others_go_on(gpt2) -> None:  # noqa: ANN001
    from model_zoo.lessons.generation import Batch

    batch = Batch(gpt2)
    a, _ = batch.add(WRITERS[0][0], Strategy("greedy", max_new_tokens=30))
    b, first = batch.add(WRITERS[1][0], WRITERS[1][1])
    got = [first.token_id] + [s.token_id for w, s in batch.step() if w is b]
    batch.leave([a])  # Stop pressed, or the tab closed: its slot is free at once
    assert batch.rows == [b]
    while len(batch):
        got += [s.token_id for _, s in batch.step()]
    same_text(gpt2, *WRITERS[1], got)
    with pytest.raises(model_zoo.ModelZooError):
        batch.add("   ", Strategy())


# -- a worker's writers (serving.runtime.Writers around Batch) -------------------------------------
def _write_in_threads(writers, jobs, stop_after=None):  # noqa: ANN001, ANN202
    """Each (text, strategy) of `jobs` written from a thread of its own, as thirty sessions do; the tokens
    each got, or the error it met. A writer in `stop_after` leaves after that many steps."""
    import threading

    got: list = [None] * len(jobs)
    start = threading.Barrier(len(jobs))

    def one(i: int) -> None:
        start.wait()
        tokens = []
        try:
            for step in writers.write(*jobs[i]):
                tokens.append(step.token_id)
                if stop_after and i in stop_after and len(tokens) >= stop_after[i]:
                    break
            got[i] = tokens
        except Exception as err:  # noqa: BLE001
            got[i] = err

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return got


def test_a_class_writing_at_once_shares_steps_and_each_gets_its_own_text(gpt2) -> None:  # noqa: ANN001
    from model_zoo.lessons.generation import Batch
    from serving.runtime import Writers

    writers = Writers(lambda: Batch(gpt2), slots=64)
    jobs = [WRITERS[i % len(WRITERS)] for i in range(12)]
    got = _write_in_threads(writers, jobs)
    for (text, strategy), tokens in zip(jobs, got, strict=True):
        same_text(gpt2, text, strategy, tokens)
    assert max(writers.steps_run) > 1  # steps were shared, not one loop per writer


def test_a_writer_who_leaves_frees_its_slot_and_a_bad_prompt_stops_only_its_writer(gpt2) -> None:  # noqa: ANN001
    from model_zoo.lessons.generation import Batch
    from serving.runtime import Writers

    writers = Writers(lambda: Batch(gpt2), slots=2)  # two at once: the third waits its turn
    long = Strategy("greedy", max_new_tokens=40)
    jobs = [(PROMPT, long), ("   ", Strategy()), (PROMPT, long), ("a river", long)]
    got = _write_in_threads(writers, jobs, stop_after={0: 3})
    same_text(gpt2, PROMPT, long, got[0], upto=3)  # left after three tokens
    assert isinstance(got[1], model_zoo.ModelZooError)  # one sentence for its writer alone
    same_text(gpt2, PROMPT, long, got[2])
    same_text(gpt2, "a river", long, got[3])
    assert max(writers.steps_run) <= 2


def test_prompts_joining_together_run_in_passes_of_bounded_size(gpt2, monkeypatch) -> None:  # noqa: ANN001
    """Many prompts at once run in passes of at most PREFILL_TOKENS padded tokens (thirty long prompts must
    not hold thirty long passes' activations at once), and each text is still the text written alone."""
    from model_zoo.lessons import generation
    from model_zoo.lessons.generation import Batch

    monkeypatch.setattr(generation, "PREFILL_TOKENS", 24)
    passes: list[int] = []
    batch = Batch(gpt2)
    real = batch._prefill
    monkeypatch.setattr(batch, "_prefill", lambda ready, results: passes.append(len(ready)) or real(ready, results))
    jobs = [WRITERS[i % len(WRITERS)] for i in range(8)] + [("  ", Strategy())]
    started = batch.add_many(jobs)
    assert isinstance(started[-1], model_zoo.ModelZooError)  # the empty prompt alone
    assert len(passes) > 1 and sum(passes) == 8
    written = {id(w): [s.token_id] for w, s in started[:-1]}
    while len(batch):
        for w, s in batch.step():
            written[id(w)].append(s.token_id)
    for (text, strategy), (w, _) in zip(jobs, started[:-1]):
        same_text(gpt2, text, strategy, written[id(w)])


@pytest.mark.parametrize("zoo_model", ["gpt2", "llama"])
def test_sentences_scored_together_score_as_each_alone(zoo_model: str, request: pytest.FixtureRequest) -> None:
    """A blank's candidates rescored in one padded pass (sentence_logprobs) get the totals each sentence gets
    alone (token_logprobs), whatever their lengths."""
    from model_zoo.lessons.generation import sentence_logprobs

    model = request.getfixturevalue(zoo_model)
    texts = [PROMPT, "a", "she sat on the bank of the river and looked at the water for a long time", "the bank"]
    together = sentence_logprobs(model, texts)
    assert together == pytest.approx([token_logprobs(model, t).total for t in texts], abs=1e-3)
    assert sentence_logprobs(model, []) == []
    with pytest.raises(model_zoo.ModelZooError):
        sentence_logprobs(model, ["ok", "  "])


@pytest.mark.parametrize("zoo_model", ["gpt2", "llama"])
def test_sentences_that_begin_alike_score_as_each_alone(zoo_model: str, request: pytest.FixtureRequest) -> None:
    """A class's blanks rescored with each blank's shared start run once (shared_start_logprobs): every
    sentence gets the total it gets alone (token_logprobs), whatever their lengths, a sentence that is the
    start of another, the same sentence twice, a group of one, and groups beyond one pass included."""
    from model_zoo.lessons import generation
    from model_zoo.lessons.generation import shared_start_logprobs

    model = request.getfixturevalue(zoo_model)
    left = "she sat on the bank of the river and looked at the"
    groups = [
        [f"{left} {w} for a long time" for w in ("water", "boats", "sky over the hills", "water")],
        ["a", "a b", "a b c d e f"],  # one is the start of the next
        [PROMPT],
        [f"the {w}" for w in ("bank", "river", "money", "fish", "tree", "stone")],
    ]
    want = [[pytest.approx(token_logprobs(model, t).total, abs=1e-3) for t in g] for g in groups]
    assert shared_start_logprobs(model, groups) == want
    old, tokens, rows = generation.SHARED_ROWS, generation.SHARED_TOKENS, generation.LOGIT_ROWS
    try:  # groups split over several passes, a long group a few rows at a time, the head a few positions
        generation.SHARED_ROWS = 5
        assert shared_start_logprobs(model, groups) == want
        generation.SHARED_TOKENS = 30
        assert shared_start_logprobs(model, groups) == want
        generation.LOGIT_ROWS = 3
        assert shared_start_logprobs(model, groups) == want
    finally:
        generation.SHARED_ROWS, generation.SHARED_TOKENS, generation.LOGIT_ROWS = old, tokens, rows
    with pytest.raises(model_zoo.EmptyInput):
        shared_start_logprobs(model, [["ok"], ["ok", " "]])


@pytest.mark.parametrize("zoo_model", ["gpt2", "llama"])
def test_a_blank_s_whole_sentences_start_from_its_left_guesses_pass(
    zoo_model: str, request: pytest.FixtureRequest
) -> None:
    """The whole sentences of a class's blanks (shared_start_logprobs) take each blank's start, its left
    context after the start token, from the pass that gave its left guesses (next_whole_words), instead of
    running it again, and each guessed word's sentence goes on from that word's first step there: every total
    is the one the sentence gets alone (token_logprobs), in one pass or several, a start the guesses never read
    runs in the same call, and what a model keeps stays within START_POSITIONS and WORD_STEPS."""
    from model_zoo.lessons import generation
    from model_zoo.lessons.generation import kept_starts, kept_words, next_whole_words, shared_start_logprobs

    model = request.getfixturevalue(zoo_model)
    blanks = ["she sat on the bank of the river and looked at the ___ for a long time", "the man went to the ___ ."]
    lefts = [b.split("___")[0].rstrip() for b in blanks]
    groups = [
        generation.filled(b, [w.strip() for w, _ in words])
        for b, words in zip(blanks, next_whole_words(model, lefts, 4), strict=True)
    ]
    groups.append([f"a cat sat on the {w}" for w in ("mat", "dog", "hat")])  # a start no guess read
    store, runs, words = kept_starts(model), [], kept_words(model)
    used, padded, stepped = store.used, generation._left_padded_pass, words.used

    def counted(model, rows):  # noqa: ANN001, ANN202
        runs.append(len(rows))
        return padded(model, rows)

    try:
        generation._left_padded_pass = counted
        found = shared_start_logprobs(model, groups)
    finally:
        generation._left_padded_pass = padded
    want = [[pytest.approx(token_logprobs(model, t).total, abs=1e-3) for t in g] for g in groups]
    assert found == want
    assert store.used - used == 2 and runs == [1]  # the two blanks' starts kept, the third run alone
    # every guessed word's sentence that goes on after the word's first token, from that token's kept step
    goes_on = sum(len(model.last_ids(t)) > len(model.last_ids(lefts[i])) + 1 for i in range(2) for t in groups[i])
    assert goes_on > 4 and words.used - stepped == goes_on
    rows, tokens = generation.SHARED_ROWS, generation.SHARED_TOKENS
    try:  # in passes of a few sentences, stepped and not mixed
        generation.SHARED_ROWS, generation.SHARED_TOKENS = 3, 40
        assert shared_start_logprobs(model, groups) == want
        assert words.used - stepped == 2 * goes_on
    finally:
        generation.SHARED_ROWS, generation.SHARED_TOKENS = rows, tokens
    texts = [f"{w} went to the shop and bought some" for w in ("he", "she", "they", "we")]
    start = torch.tensor([generation._start_id(model)])
    keys = [tuple(torch.cat([start, model.last_ids(t, room=generation.WORD_PIECES + 1)]).tolist()) for t in texts]
    old, bound = generation.START_POSITIONS, len(keys[0]) + len(keys[1])
    try:  # a model keeps few positions: the least recently used go first
        generation.START_POSITIONS = bound
        generation._kept.pop(model)
        next_whole_words(model, texts, 2)
        small = kept_starts(model)
        assert small.held <= bound and small.get(keys[0]) is None and small.get(keys[-1]) is not None
        generation.WORD_STEPS = 3
        generation._kept_words.pop(model)
        next_whole_words(model, texts, 2)  # eight words' steps, the last three kept
        assert kept_words(model).held == 3
    finally:
        generation.START_POSITIONS, generation.WORD_STEPS = old, 512
        generation._kept.pop(model, None)
        generation._kept_words.pop(model, None)


def _greedy_word(model: model_zoo.CausalLM, left: torch.Tensor, first: int, p: float) -> tuple[str, float]:
    """A token read on to the end of its word the slow way: the whole text through the model at every step."""
    from model_zoo.lessons.generation import WORD_PIECES

    pieces = [first]
    for _ in range(WORD_PIECES - 1 if any(c.isalnum() for c in model.decode_each([first])[0]) else 0):
        ids = torch.cat([left, torch.tensor(pieces)])[None]
        with torch.inference_mode():
            probs = model.fast_model(input_ids=ids).logits[0, -1].float().softmax(-1)
        best = int(probs.argmax())
        if not model.decode_each([best])[0][:1].isalnum():
            break
        pieces.append(best)
        p *= float(probs[best])
    return model.decode_rows([pieces])[0], p


@pytest.mark.parametrize("zoo_model", ["gpt2", "llama"])
def test_a_blank_s_candidates_are_whole_words(zoo_model: str, request: pytest.FixtureRequest) -> None:
    """A blank holds words: each of the left context's likeliest next tokens (with a letter or digit in it) is read
    on while the model's own next token goes on the word (" sid" then "ewalk"), as many tokens as WORD_PIECES, its
    probability the product
    of its tokens'; the words the class's shared passes give are the ones each text gets alone, read the slow way
    (the whole text through the model at every step), likeliest first."""
    from model_zoo.lessons import generation
    from model_zoo.lessons.generation import WORD_PIECES, next_whole_words

    model = request.getfixturevalue(zoo_model)
    texts = ["she sat on the bank of the river and looked at the", "the man went to the", "a"]
    together = next_whole_words(model, texts, 6)
    pieces = 0
    start = torch.tensor([generation._start_id(model)])  # read as the whole sentence's score reads it
    for text, words in zip(texts, together, strict=True):
        left = torch.cat([start, model.last_ids(text)])
        slow = [_greedy_word(model, left, token, p) for token, p in _top_ids(model, left, 6)]
        slow.sort(key=lambda w: -w[1])
        assert [w for w, _ in words] == [w for w, _ in slow]
        assert all(w[:1] == " " and w[1:2].isalnum() for w, _ in words)  # a new word each, not the last one's end
        assert [p for _, p in words] == pytest.approx([p for _, p in slow], rel=1e-4)
        alone = next_whole_words(model, [text], 6)[0]
        assert [w for w, _ in alone] == [w for w, _ in words]
        assert [p for _, p in alone] == pytest.approx([p for _, p in words], rel=1e-4)
        pieces = max(pieces, *(len(model.last_ids(text + w)) - len(left) + 1 for w, _ in words))
    assert 1 < pieces <= WORD_PIECES  # some token went on its word, none beyond the limit
    passes: list[tuple[int, int]] = []  # each pass's texts, and its words' cache positions (texts × k × the longest)
    whole, budget = generation._whole_words, generation.WORD_CACHE

    def counted(model, rows, k):  # noqa: ANN001, ANN202
        passes.append((len(rows), len(rows) * k * max(len(r) for r in rows)))
        return whole(model, rows, k)

    try:  # a class's long texts go a few at a time: the same words
        generation._whole_words, generation.WORD_CACHE = counted, 6 * 12
        again = next_whole_words(model, texts, 6)
    finally:
        generation._whole_words, generation.WORD_CACHE = whole, budget
    assert [[w for w, _ in ws] for ws in again] == [[w for w, _ in ws] for ws in together]
    assert len(passes) > 1 and all(n <= 6 * 12 or texts_in == 1 for texts_in, n in passes)  # one text may exceed it


def _top_ids(model: model_zoo.CausalLM, left: torch.Tensor, k: int) -> list[tuple[int, float]]:
    with torch.inference_mode():
        probs = model.fast_model(input_ids=left[None]).logits[0, -1].float().softmax(-1)
    texts = model.decode_each(list(range(len(probs))))
    begins = [i for i, text in enumerate(texts) if text[:1] == " " and text[1:2].isalnum()]  # " bank", not "ank"
    top = probs[begins].topk(k)
    return list(zip([begins[i] for i in top.indices.tolist()], top.values.tolist(), strict=True))


@pytest.mark.parametrize("zoo_model", ["gpt2", "llama"])
def test_the_shared_passes_never_read_a_sentence_s_last_token(zoo_model: str, request: pytest.FixtureRequest) -> None:
    """A sentence's last token predicts nothing its score needs: the passes over a blank's candidates read
    each one's shared start once and its own tokens but the last (a fifth fewer positions for a blank of
    five or six own tokens), with the totals each sentence gets alone."""
    from model_zoo.lessons.generation import _scored_ids, _shared_length, _start_id, shared_start_logprobs

    model = request.getfixturevalue(zoo_model)
    base = model.fast_model.base_model
    forward, read = base.forward, []

    def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        read.append(int(kwargs["input_ids"].shape[1]))
        return forward(*args, **kwargs)

    groups = [
        [f"she sat by the {w} of the river" for w in ("bank", "edge", "side", "mouth")],
        ["a", "b", "c"],  # one token each, nothing after it: the start token's pass alone
    ]
    ids = [[_scored_ids(model, t, _start_id(model)) for t in g] for g in groups]
    want = [[pytest.approx(token_logprobs(model, t).total, abs=1e-3) for t in g] for g in groups]
    base.forward = counted
    try:
        for group, rows, alone in zip(groups, ids, want, strict=True):
            read.clear()
            assert shared_start_logprobs(model, [group]) == [alone]
            start = _shared_length(rows)
            longest = max(len(r) for r in rows) - start  # own tokens of the longest sentence
            assert read[0] == start
            assert read[1:] == ([longest - 1] if longest > 1 else [])
    finally:
        base.forward = forward
    assert read == [1]  # the start token's pass, no second one for a token that ends its sentence


@pytest.mark.parametrize("zoo_model", ["gpt2", "llama"])
def test_next_words_asked_together_are_each_texts_own(zoo_model: str, request: pytest.FixtureRequest) -> None:
    """A class's blanks ask for their next words in one right-padded pass (next_words_many), the head read
    at each text's last token: each gets the candidates and probabilities the whole model gives it alone,
    a text longer than the model reads keeping its end."""
    model = request.getfixturevalue(zoo_model)
    texts = [PROMPT, "a", "she sat on the bank of the river and looked at the", "the " * 900 + "bank"]
    for text, got in zip(texts, model.next_words_many(texts, 5), strict=True):
        ids = model.tokenize(text[-model_zoo.contextual.MAX_CHARS :], truncation=False, padding=False)["input_ids"]
        with torch.inference_mode():
            probs = model.model(input_ids=ids[:, -model.max_length :]).logits[0, -1].float().softmax(-1)
        top = probs.topk(5)
        assert [w for w, _ in got] == model.shown_each(top.indices.tolist())  # a piece of a character: its bytes
        assert [p for _, p in got] == pytest.approx(top.values.tolist(), abs=1e-5)
    with pytest.raises(model_zoo.EmptyInput):
        model.next_words_many(["ok", " "], 3)


def test_a_failed_step_tells_every_writer_in_one_sentence_and_the_next_writer_starts_afresh(gpt2) -> None:  # noqa: ANN001
    from model_zoo.lessons.generation import Batch
    from serving.runtime import Writers, WritingFailed

    class Failing(Batch):
        failures = [RuntimeError("mat1 and mat2 shapes cannot be multiplied\n(a long trace)")]

        def step(self):  # noqa: ANN202
            if self.failures:
                raise self.failures.pop()
            return super().step()

    writers = Writers(lambda: Failing(gpt2))
    jobs = [(PROMPT, Strategy("greedy", max_new_tokens=10))]
    got = _write_in_threads(writers, jobs)
    assert isinstance(got[0], WritingFailed)  # a ModelZooError: the page shows its one sentence, no traceback
    assert (
        str(got[0])
        == "The model stopped writing (RuntimeError: mat1 and mat2 shapes cannot be multiplied). Press Write again."
    )
    same_text(gpt2, *jobs[0], [s.token_id for s in writers.write(*jobs[0])])


def test_writing_after_a_quiet_spell_uses_the_model_loaded_now_and_a_model_that_fails_to_load_is_said(
    gpt2,  # noqa: ANN001
    llama,  # noqa: ANN001
) -> None:
    """The worker's writers look the model up again whenever writing starts in an empty batch: a model loaded
    anew under its name since (the cache evicted it, or another model took the name) writes the next texts,
    never the one the writing thread began with; a model that cannot be had is told to each writer."""
    from model_zoo.lessons.generation import Batch
    from serving.runtime import Writers

    now: list = [gpt2]

    def batch() -> Batch:
        if isinstance(now[0], Exception):
            raise now[0]
        return Batch(now[0])

    writers = Writers(batch)
    job = (PROMPT, Strategy("greedy", max_new_tokens=5))
    same_text(gpt2, *job, [s.token_id for s in writers.write(*job)])
    now[0] = llama
    same_text(llama, *job, [s.token_id for s in writers.write(*job)])
    now[0] = model_zoo.ModelUnavailable("smollm2-135m", "its file is damaged")
    with pytest.raises(model_zoo.ModelUnavailable):
        list(writers.write(*job))
    now[0] = gpt2
    same_text(gpt2, *job, [s.token_id for s in writers.write(*job)])
