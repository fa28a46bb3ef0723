"""What pre-training buys (ULMFiT's lesson, and ImageNet's before it): the same network fine-tuned on a few
labelled sentences, once starting from pre-trained weights and once from the random weights pre-training
starts from; and, for scale, a linear classifier on one-hot word counts.

Two kinds of network race: a BERT-like encoder ([CLS] into a linear layer, as BERT fine-tunes), and an
ELMo-architecture biLM such as elmo-mini, ULMFiT's own kind of model (an LSTM language model pre-trained
on plain text only; ULMFiT's concat pooling of the top layer into a linear layer). ULMFiT's middle step,
fine-tuning the language model on the task's own text first, is left out: 240 sentences are too few.

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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..contextual import Encoder
from ..elmo import BiLm, ElmoModel, char_id_tensor, fresh_bilm
from ..registry import weights_fingerprint
from ..words import split_words
from .tasks import (
    FineTuned,
    Labelled,
    Progress,
    Split,
    fine_tune,
    load_sentences,
    train_head,
    train_whole,
)

# The race's record lives in a module without torch (a page draws the shipped curve from it alone)
from .transfer_record import (
    SHIPPED,
    Recipe,
    TransferCurve,
    data_version,
    recipe_for,
)

SCRIPT = "python -m model_zoo.lessons.transfer"
SIZES = (16, 32, 64, 128, 240)
SOURCES = ("pretrained", "random", "onehot")  # the learners, in the chart's order
EPOCHS = 4
Racer = Encoder | ElmoModel  # a network the race can fine-tune whole


def recipe_of(model: Racer) -> Recipe:
    """The recipe of a loaded network: recipe_for its family."""
    return recipe_for("ELMo" if isinstance(model, ElmoModel) else None)


def untrained_twin(model: Racer, seed: int = 0) -> Racer:
    """`model`'s architecture and tokenizer with freshly initialised weights: where pre-training starts."""
    if isinstance(model, ElmoModel):
        return ElmoModel(f"{model.name} (untrained)", fresh_bilm(model.options, seed), device=model.device)
    from transformers import AutoModel

    torch.manual_seed(seed)
    fresh = AutoModel.from_config(copy.deepcopy(model.base.config), attn_implementation="eager")
    return Encoder(f"{model.name} (untrained)", fresh, model.tokenizer, model.device)


def concat_pooled(bilm: BiLm, sentences: Sequence[Sequence[str]], device: torch.device) -> torch.Tensor:
    """ULMFiT's concat pooling of the top layer (forward and backward states side by side): the mean and
    the max over each sentence's words, markers left out: (B, 4P)."""
    ids, lengths = char_id_tensor(sentences)
    out = bilm(ids.to(device), lengths.to(device))
    top = torch.cat([out.forward[-1], out.backward[-1]], -1)  # (B, T, 2P), <S> at 0
    t = torch.arange(top.shape[1], device=device)[None]  # (1, T)
    words = ((t >= 1) & (t < lengths.to(device)[:, None] - 1))[..., None]  # (B, T, 1)
    mean = (top * words).sum(1) / words.sum(1).clamp(min=1)  # (B, 2P)
    most = top.masked_fill(~words, -torch.inf).amax(1)  # (B, 2P)
    return torch.cat([mean, most], -1)


def fine_tune_elmo(
    model: ElmoModel,
    data: Split,
    *,
    epochs: int = EPOCHS,
    lr: float = 1e-3,
    head_lr: float | None = None,
    batch_size: int = 16,
    on_progress: Progress | None = None,
    seed: int = 0,
) -> FineTuned:
    """tasks.fine_tune for an ELMo biLM: a copy of the whole biLM (its softmax aside) and a linear layer on
    its concat-pooled top layer, trained together (the shared model is never touched)."""
    torch.manual_seed(seed)
    bilm = copy.deepcopy(model.bilm)
    linear = torch.nn.Linear(4 * model.options.projection_dim, len(data.classes)).to(model.device)

    def pooled(chosen: list[Labelled]) -> torch.Tensor:  # (B, 4P)
        return concat_pooled(bilm, [model.tokenize(x.text) for x in chosen], model.device)

    body = [p for n, p in bilm.named_parameters() if not n.startswith("softmax")]
    # ULMFiT's discriminative rates in their simplest form: the new layer may learn faster than the body.
    groups = [{"params": body, "lr": lr}, {"params": [*linear.parameters()], "lr": head_lr or lr}]
    return train_whole(bilm, pooled, linear, groups, data, epochs, batch_size, on_progress, seed)


def fine_tune_any(
    model: Racer,
    data: Split,
    *,
    epochs: int,
    lr: float,
    seed: int,
    head_lr: float | None = None,
    on_progress: Progress | None = None,
) -> FineTuned:
    """Its kind's fine-tuning (the encoder's head learns at the network's rate; `head_lr` is ELMo's)."""
    if isinstance(model, ElmoModel):
        return fine_tune_elmo(model, data, epochs=epochs, lr=lr, head_lr=head_lr, seed=seed, on_progress=on_progress)
    return fine_tune(model, data, epochs=epochs, lr=lr, seed=seed, on_progress=on_progress)


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


def labelled_draws(labels: Sequence[str], sizes: Sequence[int], seed: int = 0) -> Iterator[tuple[int, list[int]]]:
    """The race's draws of training sentences, in its order: at each size, the indices it learns from."""
    rng = np.random.default_rng(seed)
    for n in sizes:
        yield n, draw(labels, n, rng)


def transfer_curve(
    model: Racer,
    sizes: Sequence[int] | None = None,
    epochs: int | None = None,
    seed: int = 0,
    on_progress: Callable[[float], object] | None = None,
    data: Split | None = None,
) -> TransferCurve:
    """Fine-tune `model` and its untrained twin (the whole network and a linear layer, `epochs` passes; the
    recipe of its kind) on growing draws of `data`'s training sentences (default: the sentiment set),
    scored on its test sentences; a one-hot linear classifier on the same draws."""
    began = time.perf_counter()
    data = data or load_sentences("sentiment")
    labels = [x.label for x in data.train]
    sizes = tuple(min(n, len(labels)) for n in (sizes or SIZES))
    recipe = recipe_of(model)
    epochs = epochs or EPOCHS
    scratch = untrained_twin(model, seed)
    x_test_of = [x.text for x in data.test]
    work = sum(sizes) * 2
    done = 0
    accuracy: dict[str, list[float]] = {s: [] for s in SOURCES}
    for n, indices in labelled_draws(labels, sizes, seed):
        picked = [data.train[i] for i in indices]
        subset = Split(picked, data.test)
        for source, encoder in (("pretrained", model), ("random", scratch)):
            lr = recipe.lr_pretrained if source == "pretrained" else recipe.lr_random

            def report(share: float, base: int = done, size: int = n) -> None:
                if on_progress is not None:
                    on_progress(min(1.0, (base + share * size) / work))

            accuracy[source].append(
                fine_tune_any(
                    encoder, subset, epochs=epochs, lr=lr, head_lr=recipe.lr_head, seed=seed, on_progress=report
                ).accuracy
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


def development_split(seed: int = 0, held: int = 40) -> Split:
    """The race's training sentences cut in two: `held` of them to score choices on, the rest to draw
    from. The race's 60 test sentences are not in it: no choice reads them."""
    train = load_sentences("sentiment").train
    order = np.random.default_rng(seed).permutation(len(train))
    return Split([train[i] for i in order[held:]], [train[i] for i in order[:held]])


def choose_rates(
    model: Racer, rates: Sequence[float], epochs: Sequence[int] = (EPOCHS,), sizes: Sequence[int] = (16, 32, 64, 128)
) -> dict[str, Any]:
    """Mean development accuracy over `sizes` for each learning rate, from pre-trained and from random weights
    (the recipe's rates are set from this by hand, and the command recorded in RECIPES' comment)."""
    dev = development_split()
    scratch = untrained_twin(model)
    rng = np.random.default_rng(0)
    labels = [x.label for x in dev.train]
    draws = [[dev.train[i] for i in draw(labels, n, rng)] for n in sizes]
    out: dict[str, Any] = {"sizes": list(sizes), "dev_sentences": len(dev.test)}
    for source, net in (("pretrained", model), ("random", scratch)):
        for lr, passes in ((lr, e) for lr in rates for e in epochs):
            scores = [fine_tune_any(net, Split(d, dev.test), epochs=passes, lr=lr, seed=0).accuracy for d in draws]
            out[f"{source} lr={lr:g} epochs={passes}"] = {
                "by_size": [round(a, 3) for a in scores],
                "mean": round(float(np.mean(scores)), 3),
            }
            print(source, lr, passes, out[f"{source} lr={lr:g} epochs={passes}"], flush=True)
    return out


def main(argv: list[str] | None = None) -> None:
    from ..loading import load

    parser = argparse.ArgumentParser(description="Run the transfer-learning race and ship its curve.")
    parser.add_argument("model", help="a registered encoder (minilm-l6)")
    parser.add_argument("--out", type=Path, default=None, help="default: assets/transfer/MODEL.json")
    parser.add_argument("--choose", nargs="*", type=float, help="development runs of these learning rates; no curve")
    parser.add_argument("--epochs", nargs="+", type=int, default=[EPOCHS], help="with --choose: these epoch counts")
    args = parser.parse_args(argv)
    model = load(args.model)
    assert isinstance(model, Encoder | ElmoModel), f"{args.model} is neither an encoder nor an ELMo"
    if args.choose is not None:
        print(json.dumps(choose_rates(model, args.choose or [3e-4, 1e-3, 3e-3], args.epochs), indent=1))
        return
    curve = transfer_curve(model, on_progress=lambda share: print(f"{share:.0%}", end=" ", flush=True))
    out = args.out or SHIPPED / f"{args.model}.json"
    save_curve(curve, args.model, out, f"{SCRIPT} {args.model}")
    print(f"\n{out}: {json.dumps(curve.accuracy)} in {curve.seconds:.0f} s (pid {os.getpid()})")


if __name__ == "__main__":
    main()
