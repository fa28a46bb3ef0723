"""What serving SmolLM2 with bf16 products changes, measured: the masked LM, the reader on its weights, and
the causal LM of the GPT lessons.

`scripts/serve.py` serves a class with CONTEXTLAB_BF16=auto: on a CPU that multiplies bf16 natively the
decoder's linear layers of smollm2-135m-mlm, shared by smollm2-135m-qa, and those of smollm2-135m run in
bf16 (model_zoo.onednn). This script loads them as the server does, once in fp32 and once in bf16 (each in
a process of its own), and writes `bf16.json` beside each trained model's metrics.json: the same measures
as its training wrote, taken again in bf16, how often the two precisions give the same first guess or the
same answer, and the time of thirty sentences through the masked LM in each. For smollm2-135m, which this
project did not train, `assets/eval/smollm2-135m.bf16.json`: on the fresh test sentences, its perplexity
and how often its next word is fp32's; the GPT lesson's blanks; the tuned lens's test KL (Inside the
model); the time of thirty blanks' whole-sentence scores. The pages show these figures where the model
they serve runs in bf16.

The choice of bf16 read only development data (the masked LM's first guess agreed on 197 of 200 fresh
development sentences; SmolLM2's next word after their first two words, on 197 of 200); the test sets
are measured here for the report, and no choice reads them.

    python -m model_zoo.training.measure_bf16            # about 5 minutes on 2 cores
    python -m model_zoo.training.measure_bf16 --reader   # the reader alone, after it is trained again
    python -m model_zoo.training.measure_bf16 --blanks   # the GPT lesson's blanks and held-out perplexity alone,
                                                         # after the code that reads a sentence changes
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MASKED = "smollm2-135m-mlm"
READER = "smollm2-135m-qa"
SCRIPT = "python -m model_zoo.training.measure_bf16"
SENTENCES = 30  # a class typing at once


def _cloze_sets() -> dict[str, Any]:
    """The masked LM's sentences, by set: fresh development, fresh test, the lessons' own blanks."""
    from model_zoo.lessons import cloze

    return {"fresh_dev": cloze.fresh_dev(), "fresh": cloze.fresh(), "lessons": cloze.lessons()}


def _written_sets() -> dict[str, Any]:
    """The reader's written questions, by set: held-out test, development (train_qa's own split)."""
    from model_zoo.training.train_qa import WRITTEN_DEV_EVERY, dev_split, written

    mine = written()
    return {"written_test": mine["test"], "written_dev": dev_split(mine["train"], WRITTEN_DEV_EVERY)[1]}


def _measure(precision: str) -> dict[str, Any]:
    """Guesses, answers and timings of the served models in this process's precision."""
    import model_zoo
    from model_zoo.lessons import cloze

    masked = model_zoo.load(MASKED)
    assert isinstance(masked, model_zoo.MaskedLM)
    assert masked.runs_bf16 == (precision == "bf16"), "CONTEXTLAB_BF16 did not take (no native bf16 here?)"
    sets = _cloze_sets()
    guesses = {name: cloze.first_guesses(masked, items) for name, items in sets.items()}
    texts = [i.text for i in sets["fresh_dev"][:SENTENCES]]
    seconds = _fastest(lambda: masked.fill_masks(texts), 5)
    return {
        "guesses": guesses,
        "seconds_30": seconds,
        **_measure_reader(precision),
        "causal": _measure_causal(precision),
    }


def _measure_reader(precision: str) -> dict[str, Any]:
    """The reader's answers to the written questions and the lecture's, in this process's precision."""
    import torch

    import model_zoo
    from model_zoo.lessons import tasks

    reader = model_zoo.load(READER)
    assert isinstance(reader, model_zoo.Reader)
    assert reader.runs_bf16 == (precision == "bf16"), "CONTEXTLAB_BF16 did not take"
    answers = {
        name: [tasks.read_answer(reader, q.question, q.passage).text for q in examples]
        for name, examples in _written_sets().items()
    }
    lecture = [
        tasks.read_answer(reader, q.question, q.passage).text for q in tasks.written_passages()[tasks.LECTURE_PASSAGE]
    ]
    return {"threads": torch.get_num_threads(), "answers": answers, "lecture": lecture}


def _held_out_sentences() -> list[str]:
    """The fresh test sentences with their one accepted answer in the blank: English no choice here read."""
    from model_zoo.lessons import cloze

    return [item.text.replace("[MASK]", min(item.answers)) for item in cloze.fresh()]


def _fastest(run: Callable[[], object], times: int) -> float:
    """The fastest of `times` runs of `run` (seconds), after one to warm up."""
    run()
    best = float("inf")
    for _ in range(times):
        began = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - began)
    return best


def _measure_causal(precision: str) -> dict[str, Any]:
    """smollm2-135m in this process's precision: next words and log-probabilities on held-out sentences, the
    GPT lesson's blanks, the tuned lens's test KL, and the time of thirty blanks' whole sentences."""
    import torch

    import model_zoo
    from model_zoo.lessons import cloze, generation
    from model_zoo.lessons.inside import TunedLens, anatomy, load_lens
    from model_zoo.lessons.lexicon import ASSETS
    from model_zoo.trained import CAUSAL_BF16
    from model_zoo.training.train_lens import TEST_POSITIONS, TEST_TEXTS, kl_bits, sampled_rows, texts_by_split

    model = model_zoo.load(CAUSAL_BF16)
    assert isinstance(model, model_zoo.CausalLM)
    assert model.runs_bf16 == (precision == "bf16"), "CONTEXTLAB_BF16 did not take (no native bf16 here?)"
    next_ids = []
    for sentence in _held_out_sentences():
        batch = model.tokenize(sentence)
        with torch.inference_mode():
            next_ids.append(model.fast_model(**model.model_inputs(batch)).logits[0].argmax(-1).tolist())
    texts = [item.text.replace("[MASK]", generation.BLANK) for item in cloze.fresh_dev()[:SENTENCES]]

    def whole_tables() -> None:  # the GPT page's work for a class's thirty blanks: left guesses, whole sentences
        guesses = generation.next_whole_words(model, [text.split(generation.BLANK)[0].rstrip() for text in texts], 8)
        generation.shared_start_logprobs(
            model, [generation.filled(text, [g.strip() for g, _ in found]) for text, found in zip(texts, guesses)]
        )

    parts = anatomy(model)
    layers, width = int(model.config.num_hidden_layers), int(model.config.hidden_size)
    # the tuned lens's test texts and positions, as train_lens scored them (a causal LM reads them unmasked)
    rows = sampled_rows(model, parts, texts_by_split()["test"][:TEST_TEXTS], TEST_POSITIONS)
    lens = load_lens(ASSETS / "models" / f"{CAUSAL_BF16}-lens", layers, width)
    return {
        **_held_out_logprob(model),
        "next": next_ids,
        "blanks": _lesson_blanks(model),
        "seconds_30": _fastest(whole_tables, 3),
        "logit_lens_bits": kl_bits(parts, TunedLens(layers, width), rows).tolist(),
        "tuned_lens_bits": kl_bits(parts, lens, rows).tolist(),
    }


def _held_out_logprob(model: Any) -> dict[str, float]:
    """The held-out sentences' summed log-probability, each read after the start token as the GPT page reads a
    sentence (generation.token_logprobs), and their tokens."""
    from model_zoo.lessons import generation

    logprob, tokens = 0.0, 0
    for sentence in _held_out_sentences():
        factors = generation.token_logprobs(model, sentence)
        logprob, tokens = logprob + factors.total, tokens + len(factors.probabilities)
    return {"logprob": logprob, "tokens": tokens}


def _perplexity(found: dict[str, Any]) -> float:
    return round(math.exp(-found["logprob"] / found["tokens"]), 2)


def _lesson_blanks(model: Any) -> list[dict[str, str]]:
    """The GPT lesson's blanks: the first word from the left context alone and from the whole sentence."""
    from model_zoo.lessons import generation

    blanks = [generation.left_only_vs_whole(model, text) for text in generation.LESSON_BLANKS]
    return [
        {"left": generation.left_first(rows).candidate, "whole": generation.whole_first(rows).candidate}
        for rows in blanks
    ]


def _measure_blanks(precision: str) -> dict[str, Any]:
    """What the code that reads a sentence changes (its start token, say): the GPT lesson's blanks and the
    held-out perplexity, in this process's precision."""
    import model_zoo
    from model_zoo.trained import CAUSAL_BF16

    model = model_zoo.load(CAUSAL_BF16)
    assert isinstance(model, model_zoo.CausalLM)
    assert model.runs_bf16 == (precision == "bf16"), "CONTEXTLAB_BF16 did not take"
    return {"causal": {"blanks": _lesson_blanks(model), **_held_out_logprob(model)}}


def _in_process(precision: str, part: str = "") -> dict[str, Any]:
    """`_measure` (`_measure_reader` for part "reader", `_measure_blanks` for "blanks") in a fresh process
    with CONTEXTLAB_BF16 set for `precision` (each loads its own models)."""
    from model_zoo.onednn import BF16_VAR

    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.json"
        env = {**os.environ, BF16_VAR: "1" if precision == "bf16" else "0"}
        command = [sys.executable, "-m", "model_zoo.training.measure_bf16", "--one", precision, "--out", str(out)]
        command += [f"--{part}"] if part else []
        subprocess.run(command, env=env, check=True)
        return dict(json.loads(out.read_text()))


def _same(a: list[Any], b: list[Any]) -> int:
    return sum(x == y for x, y in zip(a, b, strict=True))


def report(fp32: dict[str, Any], bf16: dict[str, Any], cpu: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the masked LM's bf16.json, the reader's): scores in bf16 beside fp32's and how often they agree."""
    from model_zoo.lessons import cloze

    common = {"script": SCRIPT, "cpu": cpu, "threads": bf16["threads"]}
    masked: dict[str, Any] = {**common, "seconds_30_fp32": round(fp32["seconds_30"], 3)}
    masked["seconds_30_bf16"] = round(bf16["seconds_30"], 3)
    for name, items in _cloze_sets().items():
        a, b = fp32["guesses"][name], bf16["guesses"][name]
        masked[name] = {
            "items": len(items),
            "same_first": _same([g[0] for g in a], [g[0] for g in b]),
            "fp32": cloze.score(items, a),
            "bf16": cloze.score(items, b),
        }
    return masked, report_reader(fp32, bf16, cpu)


def report_reader(fp32: dict[str, Any], bf16: dict[str, Any], cpu: str, script: str = SCRIPT) -> dict[str, Any]:
    """The reader's bf16.json: its answers' scores in bf16 beside fp32's and how often they agree."""
    from model_zoo.lessons import tasks
    from model_zoo.training.train_qa import evaluate_answers

    reader: dict[str, Any] = {"script": script, "cpu": cpu, "threads": bf16["threads"]}
    for name, examples in _written_sets().items():
        a, b = fp32["answers"][name], bf16["answers"][name]
        reader[name] = {
            "questions": len(examples),
            "same_answer": _same(a, b),
            "fp32": evaluate_answers(examples, a),
            "bf16": evaluate_answers(examples, b),
        }
    lecture = tasks.written_passages()[tasks.LECTURE_PASSAGE]
    reader["lecture"] = [
        {"question": q.question, "answer": q.answer, "fp32": x, "bf16": y}
        for q, x, y in zip(lecture, fp32["lecture"], bf16["lecture"], strict=True)
    ]
    return reader


def _blank_rows(fp32: dict[str, Any], bf16: dict[str, Any]) -> list[dict[str, Any]]:
    from model_zoo.lessons.generation import LESSON_BLANKS

    a, b = fp32["causal"]["blanks"], bf16["causal"]["blanks"]
    return [{"text": text, "fp32": x, "bf16": y} for text, x, y in zip(LESSON_BLANKS, a, b, strict=True)]


def report_causal(fp32: dict[str, Any], bf16: dict[str, Any], cpu: str) -> dict[str, Any]:
    """smollm2-135m's bf16.json: held-out perplexity and next words, the lesson's blanks, the lens's test KL
    (mean over the layers before the last, bits) and thirty blanks' time, in each precision."""
    from model_zoo.training.train_lens import TEST_POSITIONS

    a, b = fp32["causal"], bf16["causal"]
    pairs = [
        (x, y) for row_a, row_b in zip(a["next"], b["next"], strict=True) for x, y in zip(row_a, row_b, strict=True)
    ]
    figures: dict[str, Any] = {"script": SCRIPT, "cpu": cpu, "threads": bf16["threads"]}
    figures["held_out"] = {
        "sentences": len(a["next"]),
        "tokens": a["tokens"],
        "perplexity_fp32": _perplexity(a),
        "perplexity_bf16": _perplexity(b),
        "positions": len(pairs),
        "same_next": sum(x == y for x, y in pairs),
    }
    figures["lesson_blanks"] = _blank_rows(fp32, bf16)
    figures["seconds_30_fp32"], figures["seconds_30_bf16"] = round(a["seconds_30"], 3), round(b["seconds_30"], 3)
    figures["lens_test_bits"] = {
        f"{lens}_{precision}": round(sum(found[f"{lens}_lens_bits"][:-1]) / (len(found[f"{lens}_lens_bits"]) - 1), 4)
        for lens in ("logit", "tuned")
        for precision, found in (("fp32", a), ("bf16", b))
    }
    figures["lens_test_positions"] = TEST_POSITIONS
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", choices=("fp32", "bf16"), help=argparse.SUPPRESS)  # one precision, in this process
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument(
        "--blanks",
        action="store_true",
        help="measure the GPT lesson's blanks and the held-out perplexity alone (after the code that reads a "
        "sentence changes) into smollm2-135m.bf16.json, the other figures kept; emulated where bf16 is not native, and the file says so",
    )
    parser.add_argument(
        "--reader",
        action="store_true",
        help="measure the reader alone (after it is trained again); on a CPU without native bf16 its products "
        "are emulated: the same arithmetic, slower, and the file says so",
    )
    args = parser.parse_args(argv)
    if args.one:
        measure = _measure_reader if args.reader else _measure_blanks if args.blanks else _measure
        args.out.write_text(json.dumps(measure(args.one)))
        return
    from model_zoo import onednn
    from model_zoo.registry import get_card, trained_file
    from model_zoo.trained import BF16_FILE, causal_bf16_file

    cpu = onednn.cpu_name() + ("" if onednn.bf16_native() else " (bf16 emulated: no AVX512-BF16 or AMX)")
    if args.blanks:
        figures = json.loads(causal_bf16_file().read_text())
        fp32, bf16 = _in_process("fp32", "blanks"), _in_process("bf16", "blanks")
        figures["lesson_blanks"] = _blank_rows(fp32, bf16)
        held = figures["held_out"]
        held["tokens"] = fp32["causal"]["tokens"]
        held["perplexity_fp32"], held["perplexity_bf16"] = _perplexity(fp32["causal"]), _perplexity(bf16["causal"])
        figures["lesson_blanks_measured"] = {
            "script": f"{SCRIPT} --blanks",
            "cpu": cpu,
            "figures": ["lesson_blanks", "held_out.tokens", "held_out.perplexity_fp32", "held_out.perplexity_bf16"],
        }
        causal_bf16_file().write_text(json.dumps(figures, indent=1) + "\n")
        print(f"wrote {causal_bf16_file()}")
        return
    if args.reader:
        path = trained_file(get_card(READER)).parent / BF16_FILE
        figures = report_reader(_in_process("fp32", "reader"), _in_process("bf16", "reader"), cpu, f"{SCRIPT} --reader")
        path.write_text(json.dumps(figures, indent=1) + "\n")
        print(f"wrote {path}")
        return
    if not onednn.bf16_native():
        parser.exit(2, "This CPU does not multiply bf16 natively (AVX512-BF16 or AMX): nothing to measure here.\n")
    fp32, bf16 = _in_process("fp32"), _in_process("bf16")
    masked, reader = report(fp32, bf16, onednn.cpu_name())
    paths = [trained_file(get_card(name)).parent / BF16_FILE for name in (MASKED, READER)] + [causal_bf16_file()]
    for path, figures in zip(paths, (masked, reader, report_causal(fp32, bf16, onednn.cpu_name())), strict=True):
        path.write_text(json.dumps(figures, indent=1) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
