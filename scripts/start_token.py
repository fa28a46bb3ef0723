"""Which start token GPT's sentence scores should read: SmolLM2 on the development blanks, once after each
candidate token (docs/measurements.md, 2026-12-03). Development data only: cloze_fresh_dev.tsv.

    python scripts/start_token.py    # about 10 minutes on 2 cores

For each start token: the perplexity of the sentences with their answer in the blank, the median probability
of their first token, and how often the left context's first guess and the whole sentence's first candidate
(generation.left_only_vs_whole, as the GPT page ranks them) are the answer.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import model_zoo  # noqa: E402
from model_zoo.lessons import generation  # noqa: E402
from model_zoo.lessons.cloze import MASK, fresh_dev  # noqa: E402

STARTS = ("<|im_start|>", "<|endoftext|>")  # SmolLM2-Instruct's bos (a chat turn), its pre-training boundary


def _always(token_id: int) -> Callable[[object], int]:
    return lambda _model: token_id


def main() -> None:
    model = model_zoo.load("smollm2-135m")
    assert isinstance(model, model_zoo.CausalLM)
    for start in STARTS:
        start_id = int(model.tokenizer.convert_tokens_to_ids(start))
        generation._start_id = _always(start_id)  # type: ignore[assignment]  # every score reads it first
        logprobs, firsts, left, whole, blanks = [], [], 0, 0, 0
        for item in fresh_dev():
            answer = min(item.answers)
            factors = generation.token_logprobs(model, item.text.replace(MASK, answer))
            logprobs.append(factors.logprobs)
            firsts.append(factors.logprobs[0])
            if item.text.split(MASK)[0].strip():  # a blank with words before it
                rows = generation.left_only_vs_whole(model, item.text.replace(MASK, generation.BLANK))
                blanks += 1
                left += generation.left_first(rows).candidate.strip().lower() == answer
                whole += generation.whole_first(rows).candidate.strip().lower() == answer
        every = np.concatenate(logprobs)
        print(
            f"{start}: perplexity {np.exp(-every.mean()):.1f}, first token median P {np.exp(np.median(firsts)):.1e}, "
            f"left guess right {left / blanks:.1%}, whole sentence's first right {whole / blanks:.1%} "
            f"({len(logprobs)} sentences, {blanks} blanks)",
            flush=True,
        )


if __name__ == "__main__":
    main()
