"""Precompute the Word senses page's default figures for its default contextual models (real models, shipped data).

    python scripts/precompute_senses.py [NAME ...]      # default: minilm-l6 elmo-mini

Writes assets/senses/precomputed/NAME.npz: for each word, PCA and UMAP (default
settings) of its vector in every sentence at every layer, and the per-layer measures.
The page draws these at once and loads the model only for what is not precomputed.
Re-run after changing assets/senses/senses.tsv (the page ignores a file made from other data).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import model_zoo  # noqa: E402
from model_zoo.lessons.sense_data import PRECOMPUTED  # noqa: E402
from model_zoo.lessons.senses import precompute  # noqa: E402

MODELS = ("minilm-l6", "elmo-mini")


def main(names: list[str]) -> None:
    for name in names or MODELS:
        start = time.perf_counter()
        model = model_zoo.load(name)
        assert isinstance(model, model_zoo.Contextual)
        path = precompute(model, PRECOMPUTED, on_word=lambda w, n=name: print(f"  {n}: {w}", flush=True))
        print(
            f"{path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}: "
            f"{path.stat().st_size / 1e3:.0f} kB in {time.perf_counter() - start:.0f} s"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
