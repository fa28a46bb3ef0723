"""What serving the masked LM (and the reader on its weights) with bf16 products changes, measured.

`scripts/serve.py` serves a class with CONTEXTLAB_BF16=auto: on a CPU that multiplies bf16 natively the
decoder's linear layers of smollm2-135m-mlm, shared by smollm2-135m-qa, run in bf16 (model_zoo.onednn).
This script loads both as the server does, once in fp32 and once in bf16 (each in a process of its own),
and writes `bf16.json` beside each model's metrics.json: the same measures as its training wrote, taken
again in bf16, how often the two precisions give the same first guess or the same answer, and the time of
thirty sentences through the masked LM in each. The pages show these figures where the model they serve
runs in bf16.

The choice of bf16 read only the development sentences (assets/eval/cloze_fresh_dev.tsv: the first guess
agreed on 197 of 200); the test sets are measured here for the report, and no choice reads them.

    python -m model_zoo.training.measure_bf16            # about 5 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
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
    import torch

    import model_zoo
    from model_zoo.lessons import cloze, tasks

    masked = model_zoo.load(MASKED)
    assert isinstance(masked, model_zoo.MaskedLM)
    assert masked.runs_bf16 == (precision == "bf16"), "CONTEXTLAB_BF16 did not take (no native bf16 here?)"
    sets = _cloze_sets()
    guesses = {name: cloze.first_guesses(masked, items) for name, items in sets.items()}
    texts = [i.text for i in sets["fresh_dev"][:SENTENCES]]
    masked.fill_masks(texts)  # warm
    times = []
    for _ in range(5):
        began = time.perf_counter()
        masked.fill_masks(texts)
        times.append(time.perf_counter() - began)
    reader = model_zoo.load(READER)
    assert isinstance(reader, model_zoo.Reader)
    answers = {
        name: [tasks.read_answer(reader, q.question, q.passage).text for q in examples]
        for name, examples in _written_sets().items()
    }
    lecture = [
        tasks.read_answer(reader, q.question, q.passage).text for q in tasks.written_passages()[tasks.LECTURE_PASSAGE]
    ]
    return {
        "guesses": guesses,
        "seconds_30": min(times),
        "threads": torch.get_num_threads(),
        "answers": answers,
        "lecture": lecture,
    }


def _in_process(precision: str) -> dict[str, Any]:
    """`_measure` in a fresh process with CONTEXTLAB_BF16 set for `precision` (each loads its own models)."""
    from model_zoo.onednn import BF16_VAR

    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.json"
        env = {**os.environ, BF16_VAR: "1" if precision == "bf16" else "0"}
        command = [sys.executable, "-m", "model_zoo.training.measure_bf16", "--one", precision, "--out", str(out)]
        subprocess.run(command, env=env, check=True)
        return dict(json.loads(out.read_text()))


def _same(a: list[Any], b: list[Any]) -> int:
    return sum(x == y for x, y in zip(a, b, strict=True))


def report(fp32: dict[str, Any], bf16: dict[str, Any], cpu: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the masked LM's bf16.json, the reader's): scores in bf16 beside fp32's and how often they agree."""
    from model_zoo.lessons import cloze, tasks
    from model_zoo.training.train_qa import evaluate_answers

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
    reader: dict[str, Any] = dict(common)
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
    return masked, reader


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", choices=("fp32", "bf16"), help=argparse.SUPPRESS)  # one precision, in this process
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        args.out.write_text(json.dumps(_measure(args.one)))
        return
    from model_zoo import onednn
    from model_zoo.registry import get_card, trained_file
    from model_zoo.trained import BF16_FILE

    if not onednn.bf16_native():
        parser.exit(2, "This CPU does not multiply bf16 natively (AVX512-BF16 or AMX): nothing to measure here.\n")
    fp32, bf16 = _in_process("fp32"), _in_process("bf16")
    masked, reader = report(fp32, bf16, onednn.cpu_name())
    for name, figures in ((MASKED, masked), (READER, reader)):
        path = trained_file(get_card(name)).parent / BF16_FILE
        path.write_text(json.dumps(figures, indent=1) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
