"""Pack a from-scratch training run's sense snapshots for the Word senses slider (issue 38).

    python scripts/pack_forming.py --run ~/.cache/contextlab/elmo_scratch [--model elmo-mini]

Reads the run's OUT/senses/step-*.npz and learning_curve.json (written by `python -m
model_zoo.train_elmo --sense-snapshots N`), reads the sense set again with the model shipped under
`--model` (the run's exported weights, copied into assets/models/), and writes
assets/senses/forming/MODEL.npz (model_zoo.lessons.forming). The run's own last snapshot is replaced
by the shipped model's reading, so the slider's last step shows the figures the page measures for it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

import model_zoo  # noqa: E402
from model_zoo import pieces  # noqa: E402
from model_zoo.lessons import forming  # noqa: E402
from model_zoo.lessons.sense_data import load_senses  # noqa: E402
from model_zoo.lessons.senses import encode_senses  # noqa: E402
from model_zoo.registry import get_card, trained_file, trained_metrics, weights_fingerprint  # noqa: E402


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--run", type=Path, required=True, help="train_elmo's --out folder")
    parser.add_argument("--model", default="elmo-mini", help="the registry name the run's model ships under")
    parser.add_argument("--out", type=Path, default=forming.FORMING)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    sets = load_senses()
    card = get_card(args.model)
    exported, shipped = args.run / "elmo-mini" / "weights.hdf5", trained_file(card)
    if not pieces.exists(exported) or pieces.read_bytes(exported) != pieces.read_bytes(shipped):
        parser.error(f"{shipped} is not the run's exported model ({exported}): copy the run's export there first")
    model = model_zoo.load(args.model)
    assert isinstance(model, model_zoo.Contextual)
    metrics = trained_metrics(card)
    arrays = forming.pack_run(
        args.run,
        {word: encode_senses(model, s).vectors for word, s in sets.items()},
        sets,
        args.model,
        str(weights_fingerprint(args.model)),
        metrics["commands"][0].replace(str(Path.home()), "~"),  # the run's command (a resume adds --resume only)
    )
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{args.model}.npz"
    np.savez_compressed(path, **arrays)
    for step, seen, acc in zip(arrays["steps"], arrays["tokens"], arrays["accuracy"].mean(1)):
        print(f"step {step:>6}  {seen / 1e6:5.2f}M tokens  accuracy by layer {np.round(acc, 3).tolist()}")
    print(f"{path}: {path.stat().st_size / 1e3:.0f} kB in {time.perf_counter() - start:.0f} s")
    return path


if __name__ == "__main__":
    main()
