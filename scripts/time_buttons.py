"""How long each button that trains something takes the first time on a server, measured on this machine:
the figures the buttons' labels quote (assets/timings.json), so that a promise is a measurement.

    python scripts/time_buttons.py [--jobs why_mask tagger qa_frozen finetune]

Each job runs in a fresh process with an empty CONTEXTLAB_CACHE (the model conversions linked in, so that a
model loads as it does on a warm server), the model loaded before the clock starts: what a learner waits
after the click, the first time anyone on the server asks. As scripts/serve.py, it sets CONTEXTLAB_BF16=auto
unless set (bf16 products where the CPU has them), and the machine it records says which. Run it alone on
the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "assets" / "timings.json"

# job -> (what to load first, the call the button makes), both in the words of the pages' serving calls.
JOBS = {
    "why_mask": ("None", "serving.masking_race(0)"),
    "tagger": (
        "serving.loaded(serving.tagger_model(serving.default_for('task_encoder')), model_zoo.Encoder)",
        "serving.ner_tagger(serving.tagger_model(serving.default_for('task_encoder')))",
    ),
    "qa_frozen": (
        "serving.loaded(serving.default_for('task_encoder'), model_zoo.Encoder)",
        "serving.qa_head(serving.default_for('task_encoder'))",
    ),
    "finetune": (
        "serving.loaded(serving.default_for('task_encoder'), model_zoo.Encoder)",
        "serving.fine_tuned(serving.default_for('task_encoder'), 'sentiment')",
    ),
}


def run_job(name: str) -> float:
    load, call = JOBS[name]
    code = (
        "import time, warnings; warnings.filterwarnings('ignore'); import model_zoo, serving; "
        f"{load}; t0 = time.perf_counter(); {call}; print('SECONDS', time.perf_counter() - t0)"
    )
    home = Path(os.environ.get("CONTEXTLAB_CACHE") or Path.home() / ".cache" / "contextlab")
    with tempfile.TemporaryDirectory() as cache:
        if (home / "gguf").exists():
            (Path(cache) / "gguf").symlink_to(home / "gguf")
        env = {**os.environ, "CONTEXTLAB_CACHE": cache, "PYTHONPATH": str(ROOT)}  # CONTEXTLAB_BF16 as main set it
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    lines = [line for line in out.stdout.splitlines() if line.startswith("SECONDS")]
    if out.returncode or not lines:
        raise SystemExit(f"{name} failed:\n{out.stderr[-2000:]}")
    return float(lines[-1].split()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", nargs="+", default=list(JOBS), choices=list(JOBS))
    args = parser.parse_args()
    record = json.loads(OUT.read_text(encoding="utf-8")) if OUT.exists() else {}
    os.environ.setdefault("CONTEXTLAB_BF16", "auto")  # as a class's server runs (scripts/serve.py); run_job's too
    sys.path.insert(0, str(ROOT))
    from model_zoo.onednn import bf16_wanted

    products = "bf16 products" if bf16_wanted() else "fp32"
    machine = f"{os.cpu_count()} CPU cores, {platform.machine()}, {products}"
    for name in args.jobs:
        seconds = run_job(name)
        record[name] = {"seconds": round(seconds, 1), "machine": machine, "date": time.strftime("%Y-%m-%d")}
        print(f"{name}: {seconds:.1f} s", flush=True)
    OUT.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"written to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
