"""What pre-training buys (ULMFiT's lesson, and ImageNet's before it): the same network fine-tuned on a few
labelled sentences, once starting from pre-trained weights and once from the random weights pre-training
starts from; and, for scale, a linear classifier on one-hot word counts.

The race takes minutes on a CPU, so the page draws a run of this same code shipped in assets/transfer/
(`python -m model_zoo.lessons.transfer MODEL`: the curve, its time, the machine and the weights'
fingerprint) at once, and runs it live only on request.

The labelled set is the Using BERT lesson's sentiment set (assets/tasks/sentiment.tsv): 240 sentences to
train on, 60 held out. At each number of labels every learner gets the same draw of training sentences
(both classes in it) and is scored on the same 60.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from ..contextual import Encoder
from ..registry import weights_fingerprint
from ..words import split_words
from .lexicon import ASSETS
from .sense_data import data_version as file_version
from .tasks import TASKS_DIR, Split, fine_tune, load_sentences, train_head

SHIPPED = ASSETS / "transfer"  # MODEL.json: a run of transfer_curve, drawn at once by the page
SCRIPT = "python -m model_zoo.lessons.transfer"
SIZES = (16, 32, 64, 128, 240)
SOURCES = ("pretrained", "random", "onehot")  # the learners, in the chart's order
EPOCHS = 4


@dataclass(frozen=True)
class TransferCurve:
    sizes: tuple[int, ...]  # labelled sentences each learner saw
    accuracy: dict[str, list[float]]  # learner -> held-out accuracy at each size
    test_size: int
    chance: float  # the commonest class's share of the held-out sentences
    epochs: int
    seconds: float


def untrained_twin(model: Encoder, seed: int = 0) -> Encoder:
    """`model`'s architecture and tokenizer with freshly initialised weights: where pre-training starts."""
    from transformers import AutoModel

    torch.manual_seed(seed)
    fresh = AutoModel.from_config(copy.deepcopy(model.base.config), attn_implementation="eager")
    return Encoder(f"{model.name} (untrained)", fresh, model.tokenizer, model.device)


def word_counts(train: Sequence[str], texts: Sequence[str]) -> np.ndarray:
    """One-hot bag of words over the training sentences' vocabulary: (len(texts), V) counts."""
    vocab = {w: i for i, w in enumerate(sorted({w for s in train for w in split_words(s)}))}
    out = np.zeros((len(texts), max(len(vocab), 1)), np.float32)
    for row, text in enumerate(texts):
        for w in split_words(text):
            if w in vocab:
                out[row, vocab[w]] += 1
    return out


def draw(labels: Sequence[str], n: int, rng: np.random.Generator) -> list[int]:
    """n training indices at random, at least one of each class (a classifier needs both to learn anything)."""
    array = np.asarray(labels)
    first = [int(rng.choice(np.flatnonzero(array == c))) for c in sorted(set(labels))]
    rest = rng.permutation([i for i in range(len(labels)) if i not in first])[: max(n - len(first), 0)]
    return first + [int(i) for i in rest]


def transfer_curve(
    model: Encoder,
    sizes: Sequence[int] | None = None,
    epochs: int | None = None,
    seed: int = 0,
    on_progress: Callable[[float], object] | None = None,
) -> TransferCurve:
    """Fine-tune `model` and its untrained twin (whole network and a linear layer on [CLS], `epochs`
    passes) on growing draws of the sentiment set; a one-hot linear classifier on the same draws."""
    began = time.perf_counter()
    data = load_sentences("sentiment")
    labels = [x.label for x in data.train]
    sizes = tuple(min(n, len(labels)) for n in (sizes or SIZES))
    epochs = epochs or EPOCHS
    scratch = untrained_twin(model, seed)
    x_test_of = [x.text for x in data.test]
    work = sum(sizes) * 2
    done = 0
    accuracy: dict[str, list[float]] = {s: [] for s in SOURCES}
    rng = np.random.default_rng(seed)
    for n in sizes:
        picked = [data.train[i] for i in draw(labels, n, rng)]
        subset = Split(picked, data.test)
        for source, encoder in (("pretrained", model), ("random", scratch)):
            # A freshly initialised network learns at a larger rate (its weights have nothing to keep).
            lr = 5e-5 if source == "pretrained" else 1e-4

            def report(share: float, base: int = done, size: int = n) -> None:
                if on_progress is not None:
                    on_progress(min(1.0, (base + share * size) / work))

            accuracy[source].append(
                fine_tune(encoder, subset, epochs=epochs, lr=lr, seed=seed, on_progress=report).accuracy
            )
            done += n
        train_text = [x.text for x in picked]
        head = train_head(
            word_counts(train_text, train_text),
            [x.label for x in picked],
            word_counts(train_text, x_test_of),
            [x.label for x in data.test],
        )
        accuracy["onehot"].append(head.accuracy)
    common = max(set(labels), key=labels.count)
    return TransferCurve(
        sizes=sizes,
        accuracy=accuracy,
        test_size=len(data.test),
        chance=float(np.mean([x.label == common for x in data.test])),
        epochs=epochs,
        seconds=time.perf_counter() - began,
    )


@dataclass(frozen=True)
class ShippedCurve:
    """A run of transfer_curve kept in assets/transfer/: the curve and how it was made."""

    curve: TransferCurve
    command: str
    machine: str  # where it ran ("2 CPU threads, x86_64")
    date: str
    fingerprint: str | None  # weights_fingerprint of the model it ran on


def data_version() -> str:
    """A hash of the labelled set the race reads (hashed once per version of the file, as the senses'
    set is): a shipped run of other data is not this race's."""
    return file_version(TASKS_DIR / "sentiment.tsv")


@dataclass(frozen=True)
class KnownCurve:
    """A curve a page can draw now: a live run of this server (shipped None), or the shipped one."""

    curve: TransferCurve
    shipped: ShippedCurve | None


def save_curve(curve: TransferCurve, model_name: str, path: Path, command: str) -> None:
    record = {
        "model": model_name,
        "fingerprint": weights_fingerprint(model_name),
        "data": data_version(),
        "command": command,
        "machine": f"{torch.get_num_threads()} CPU threads, {platform.machine()}",
        "date": time.strftime("%Y-%m-%d"),
        "curve": asdict(curve),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def shipped_curve(model_name: str, folder: Path | None = None) -> ShippedCurve | None:
    """The shipped run for `model_name`, or None where there is none, or it ran on other weights than the
    ones installed here or on another labelled set (then it would not be this race's result)."""
    path = (folder or SHIPPED) / f"{model_name}.json"
    if not path.exists():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    if record["fingerprint"] != weights_fingerprint(model_name) or record["data"] != data_version():
        return None
    c = record["curve"]
    curve = TransferCurve(tuple(c["sizes"]), c["accuracy"], c["test_size"], c["chance"], c["epochs"], c["seconds"])
    return ShippedCurve(curve, record["command"], record["machine"], record["date"], record["fingerprint"])


def main(argv: list[str] | None = None) -> None:
    from ..loading import load

    parser = argparse.ArgumentParser(description="Run the transfer-learning race and ship its curve.")
    parser.add_argument("model", help="a registered encoder (minilm-l6)")
    parser.add_argument("--out", type=Path, default=None, help="default: assets/transfer/MODEL.json")
    args = parser.parse_args(argv)
    model = load(args.model)
    assert isinstance(model, Encoder), f"{args.model} is not an encoder"
    curve = transfer_curve(model, on_progress=lambda share: print(f"{share:.0%}", end=" ", flush=True))
    out = args.out or SHIPPED / f"{args.model}.json"
    save_curve(curve, args.model, out, f"{SCRIPT} {args.model}")
    print(f"\n{out}: {json.dumps(curve.accuracy)} in {curve.seconds:.0f} s (pid {os.getpid()})")


if __name__ == "__main__":
    main()
