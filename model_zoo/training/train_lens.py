"""Train a tuned lens for a model of the zoo: `python -m model_zoo.train_lens --model smollm2-135m`.

The tuned lens (Belrose et al. 2023, model_zoo.lessons.inside.TunedLens): one affine map per layer, applied
to that layer's residual stream before the model's own head reads it, trained so that each layer's reading
matches the model's final distribution (the KL divergence from the final distribution to the layer's, at
every position of the training texts; the model itself is frozen). The raw logit lens is the same with the
maps at zero, which is where training starts.

Texts: WordNet 3.0's example sentences (assets/corpus/wordnet_examples.txt, WordNet licence) and the
everyday texts written by SmolLM2-135M-Instruct (assets/corpus/everyday_smollm2.jsonl.gz, labelled as
such), split by a hash of each text: train 90%, dev 5% (the run keeps the step whose dev KL is lowest),
test 5% (read once, for the shipped figures). A masked LM reads its texts with `--mask-rate` of the words
masked, as its page gives it a [MASK]. Writes OUT/lens-N.safetensors (fp16, each at most 16 MiB) and
OUT/metrics.json: for each layer, the test KL of the logit lens and of the tuned lens, in bits.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import random
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from ..contextual import Encoder, MaskedLM
from ..lessons.inside import Anatomy, TunedLens, anatomy, streams
from ..lessons.lexicon import ASSETS

SCRIPT = "python -m model_zoo.train_lens"
FILE_BYTES = 16 * 2**20  # a shipped file's size at most
SPLITS = {"train": 90, "dev": 5, "test": 5}  # percent of the texts, by hash


def split_of(text: str) -> str:
    """train, dev or test, fixed for a text by its SHA-1 (the same split on every machine and run)."""
    bucket = int(hashlib.sha1(text.encode("utf-8")).hexdigest(), 16) % 100
    return "train" if bucket < SPLITS["train"] else "dev" if bucket < SPLITS["train"] + SPLITS["dev"] else "test"


def shipped_texts() -> list[str]:
    """The lens's texts: WordNet's examples and SmolLM2's everyday texts (cut into paragraphs)."""
    texts = [line.strip() for line in (ASSETS / "corpus" / "wordnet_examples.txt").read_text("utf-8").splitlines()]
    with gzip.open(ASSETS / "corpus" / "everyday_smollm2.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            texts += [p.strip() for p in json.loads(line)["text"].split("\n") if p.strip()]
    return [t for t in texts if len(t.split()) >= 4]


def _masked(model: Encoder, texts: Sequence[str], rate: float, rng: random.Random) -> list[str]:
    """A masked LM's texts with `rate` of their words replaced by its mask token (at least one each)."""
    if not isinstance(model, MaskedLM):
        return list(texts)
    out = []
    for text in texts:
        words = text.split()
        picked = {i for i in range(len(words)) if rng.random() < rate} or {rng.randrange(len(words))}
        out.append(" ".join(model.mask_token if i in picked else w for i, w in enumerate(words)))
    return out


def layer_kl(model: Encoder, parts: Anatomy, lens: TunedLens, texts: Sequence[str], positions: int = 0) -> torch.Tensor:
    """(L + 1,) the mean KL divergence, in nats, from the model's final distribution to each layer's reading
    through `lens`, over the texts' real positions (at most `positions` of them, drawn evenly; 0: all)."""
    batch = model.tokenize(list(texts))
    with torch.no_grad():
        found = streams(model, model._inputs(batch), parts)  # (L + 1, B, T, D)
    where = batch["attention_mask"].bool().reshape(-1).nonzero().squeeze(1).to(found.device)  # real tokens
    if positions and len(where) > positions:
        where = where[torch.linspace(0, len(where) - 1, positions).long()]
    flat = found.reshape(found.shape[0], -1, found.shape[-1])[:, where]  # (L + 1, N, D)
    with torch.no_grad():
        final = parts.read(flat[-1]).log_softmax(-1)
    losses = []
    for layer in range(len(flat)):
        read = parts.read(lens(layer, flat[layer])).log_softmax(-1)
        losses.append(torch.nn.functional.kl_div(read, final, log_target=True, reduction="batchmean"))
    return torch.stack(losses)


def train(
    model: Encoder,
    train_texts: Sequence[str],
    dev_texts: Sequence[str],
    *,
    steps: int = 300,
    batch: int = 8,
    positions: int = 256,
    lr: float = 1e-3,
    mask_rate: float = 0.15,
    eval_every: int = 50,
    seed: int = 0,
) -> tuple[TunedLens, list[dict]]:
    """A tuned lens for `model`, the step with the lowest mean dev KL kept; the dev curve."""
    parts = anatomy(model)
    for p in model.model.parameters():
        p.requires_grad_(False)
    rng = random.Random(seed)
    torch.manual_seed(seed)
    lens = TunedLens(len(parts.layers), int(model.config.hidden_size)).to(model.device)
    optimizer = torch.optim.Adam(lens.parameters(), lr=lr)
    dev = _masked(model, dev_texts, mask_rate, random.Random(seed + 1))
    curve: list[dict] = []
    best: tuple[float, dict[str, torch.Tensor]] | None = None
    for step in range(steps + 1):
        if step % eval_every == 0 or step == steps:
            with torch.no_grad():
                kl = float(layer_kl(model, parts, lens, dev).mean())
            curve.append({"step": step, "dev_kl_nats": round(kl, 5)})
            if best is None or kl < best[0]:
                best = (kl, {k: v.detach().clone() for k, v in lens.state_dict().items()})
        if step == steps:
            break
        texts = _masked(model, rng.sample(list(train_texts), min(batch, len(train_texts))), mask_rate, rng)
        loss = layer_kl(model, parts, lens, texts, positions)[:-1].mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert best is not None
    lens.load_state_dict(best[1])
    return lens, curve


def save(lens: TunedLens, out: Path) -> list[Path]:
    """The lens as fp16 safetensors files of at most FILE_BYTES each (a layer's map in one file)."""
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("lens-*.safetensors"):
        old.unlink()
    files: list[Path] = []
    part: dict[str, torch.Tensor] = {}
    size = 0
    for layer in range(len(lens.b)):
        tensors = {f"a.{layer}": lens.a[layer].detach().half(), f"b.{layer}": lens.b[layer].detach().half()}
        more = sum(t.numel() * 2 for t in tensors.values())
        if part and size + more > FILE_BYTES - 2**16:  # room for the header
            files.append(out / f"lens-{len(files)}.safetensors")
            save_file(part, str(files[-1]))
            part, size = {}, 0
        part |= {k: v.contiguous() for k, v in tensors.items()}
        size += more
    files.append(out / f"lens-{len(files)}.safetensors")
    save_file(part, str(files[-1]))
    return files


def load(folder: Path, layers: int, width: int) -> TunedLens:
    """A lens saved by `save`."""
    from safetensors.torch import load_file

    lens = TunedLens(layers, width)
    with torch.no_grad():
        for path in sorted(folder.glob("lens-*.safetensors")):
            for name, tensor in load_file(str(path)).items():
                kind, layer = name.split(".")
                getattr(lens, kind)[int(layer)] = tensor.float()
    return lens


def main(argv: list[str] | None = None) -> None:
    from .. import load as load_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--out", type=Path, default=None, help="default: assets/models/MODEL-lens")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--positions", type=int, default=256)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--texts", type=int, default=400, help="dev and test texts used at most")
    args = parser.parse_args(argv)
    out = args.out or ASSETS / "models" / f"{args.model}-lens"
    model = load_model(args.model, device=args.device)
    if not isinstance(model, Encoder):
        parser.error(f"{args.model} is not a transformer with an output head")
    texts = shipped_texts()
    split: dict[str, list[str]] = {name: [] for name in SPLITS}
    for text in texts:
        split[split_of(text)].append(text)
    began = time.perf_counter()
    lens, curve = train(
        model,
        split["train"],
        split["dev"][: args.texts],
        steps=args.steps,
        batch=args.batch,
        positions=args.positions,
        lr=args.lr,
    )
    seconds = time.perf_counter() - began
    parts = anatomy(model)
    test = _masked(model, split["test"][: args.texts], 0.15, random.Random(2))
    bits = 1 / torch.log(torch.tensor(2.0))
    with torch.no_grad():
        raw = layer_kl(model, parts, TunedLens(len(parts.layers), lens.b.shape[1]).to(model.device), test) * bits
        tuned = layer_kl(model, parts, lens, test) * bits
    files = save(lens, out)
    metrics = {
        "model": args.model,
        "command": f"{SCRIPT} --model {args.model} --steps {args.steps} --batch {args.batch} --lr {args.lr}",
        "device": args.device,
        "seconds": round(seconds, 1),
        "texts": {name: len(v) for name, v in split.items()},
        "dev_curve": curve,
        "test_kl_bits": {
            "logit_lens": [round(float(x), 4) for x in raw],
            "tuned_lens": [round(float(x), 4) for x in tuned],
        },
        "files": [f.name for f in files],
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(metrics["test_kl_bits"]))


if __name__ == "__main__":
    main()
