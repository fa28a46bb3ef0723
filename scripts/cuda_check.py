"""The app's CUDA path, checked against its CPU path: `python scripts/cuda_check.py [NAME ...]`.

Every offline model the app serves is loaded twice through `model_zoo.load` (the function every page's
serving layer calls), once on the CPU and once on `cuda`, and asked what its pages ask: fill-mask
guesses, next words, a reader's answer, layer vectors. The script prints one line a check and a JSON
summary, and exits non-zero where the two devices disagree on an answer a page shows (the first guess,
the answer span) or where probabilities differ by more than TOLERANCE. Meant for a machine with a GPU
(there is none in CI); models whose weights are not installed are reported and skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import model_zoo  # noqa: E402
from model_zoo.capabilities import can  # noqa: E402
from model_zoo.lessons.tasks import read_answer  # noqa: E402
from model_zoo.registry import ANSWER_SPAN, FILL_MASK, HIDDEN_STATES, NEXT_WORDS  # noqa: E402

TOLERANCE = 0.02  # fp32 on both devices; kernels differ in summation order only
MASKED = ("Paris is the capital of [MASK].", "We sat on the river [MASK] and watched the boats.")
PROMPTS = ("After work we like to hang", "Let's stick to")
QUESTION = (
    "What causes precipitation to fall?",
    "In meteorology, precipitation is any product of the condensation of atmospheric water vapor that falls "
    "under gravity.",
)
DEFAULT = ("smollm2-135m-mlm", "smollm2-135m-qa", "smollm2-135m", "elmo-mini", "minilm-l6", "minilm-l6-mlm")


def ask(model: Any) -> dict[str, Any]:
    """What the pages ask of a model, as plain data."""
    out: dict[str, Any] = {}
    if can(model, FILL_MASK):
        out["fill_mask"] = [list(model.fill_mask(s, top_k=5)[0]) for s in MASKED]
    if can(model, NEXT_WORDS):
        out["next_words"] = [list(model.next_words(p, top_k=5)) for p in PROMPTS]
    if can(model, ANSWER_SPAN):
        got = read_answer(model, *QUESTION)
        out["read"] = [got.text, got.inside]
    if can(model, HIDDEN_STATES):
        encoding = model.encode("The river bank was muddy.")
        out["layers"] = np.stack([np.asarray(h, np.float32) for h in encoding.hidden_states])
    return out


def compare(cpu: dict[str, Any], gpu: dict[str, Any]) -> list[str]:
    """The disagreements a learner could see, in words (empty: none)."""
    problems = []
    for key in ("fill_mask", "next_words"):
        for a, b in zip(cpu.get(key, []), gpu.get(key, [])):
            if a[0][0] != b[0][0]:
                problems.append(f"{key}: first guess {a[0][0]!r} on the CPU, {b[0][0]!r} on CUDA")
            gap = max(abs(pa - pb) for (_, pa), (_, pb) in zip(a, b))
            if gap > TOLERANCE:
                problems.append(f"{key}: probabilities differ by {gap:.3f}")
    if "read" in cpu and cpu["read"][0] != gpu["read"][0]:
        problems.append(f"read: {cpu['read'][0]!r} on the CPU, {gpu['read'][0]!r} on CUDA")
    if "layers" in cpu:
        a, b = cpu["layers"], gpu["layers"]
        cosine = float((a * b).sum() / (np.linalg.norm(a) * np.linalg.norm(b)))
        if a.shape != b.shape or cosine < 0.999:
            problems.append(f"layers: shape {a.shape} vs {b.shape}, cosine {cosine:.4f}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(DEFAULT))
    parser.add_argument("--against", default="cuda", help="the device compared with the CPU (cpu: a dry run)")
    args = parser.parse_args(argv)
    if args.against.startswith("cuda") and not torch.cuda.is_available():
        print("torch sees no CUDA device here: nothing to check")
        return 2
    shown_device = torch.cuda.get_device_name(0) if args.against.startswith("cuda") else args.against
    summary: dict[str, Any] = {"device": shown_device, "torch": torch.__version__, "models": {}}
    failed = False
    for name in args.names:
        try:
            began = time.perf_counter()
            cpu_model = model_zoo.load(name, device="cpu")
            cpu = ask(cpu_model)
            del cpu_model
            loaded = time.perf_counter()
            gpu_model = model_zoo.load(name, device=args.against)
            load_s = time.perf_counter() - loaded
            weights = getattr(gpu_model, "model", None) or getattr(gpu_model, "bilm", None)
            where = str(next(weights.parameters()).device) if weights is not None else "cpu"  # static vectors: numpy
            gpu = ask(gpu_model)
            del gpu_model
        except model_zoo.ModelUnavailable as err:
            print(f"{name}: skipped ({err})")
            summary["models"][name] = {"skipped": str(err)}
            continue
        problems = compare(cpu, gpu)
        failed |= bool(problems) or not where.startswith(args.against)
        shown = {k: v for k, v in gpu.items() if k != "layers"}
        summary["models"][name] = {"on": where, "cuda_load_s": round(load_s, 1), "problems": problems, **shown}
        print(
            f"{name}: on {where}, loaded in {load_s:.1f} s, {len(problems)} problems {problems} ({time.perf_counter() - began:.0f} s)"
        )
    print(json.dumps(summary, indent=1, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
