"""A causal LM writing, one token at a time, and what "only looks left" means, measured.

- `generate_steps`: greedy, top-k or nucleus (top-p) sampling with a temperature and a seed, one
  step at a time with the candidates the model weighed (the KV cache carries the prefix: each step
  runs the model on one new token).
- `token_logprobs`: a sentence's probability as the product of next-token probabilities from the
  start token, one factor per token (GPT's objective as the lecture draws it).
- `left_only_vs_whole`: a blank filled from the left context alone, then each candidate rescored
  with the whole sentence.
- `first_token_share`: how much of each head's attention goes to the first token (`first_token_sink`:
  how many heads park it there).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import torch

from ..contextual import MAX_CHARS, CausalLM, Guess
from ..errors import EmptyInput, NoMaskToken
from ..words import valid_text
from .attention import uniform_first_token_share

MAX_NEW_TOKENS = 64  # a page's limit: a class shares the server
BLANK = "___"
StrategyKind = Literal["greedy", "top_k", "top_p"]
STRATEGIES: tuple[StrategyKind, ...] = get_args(StrategyKind)
# what a link may say instead of a key: the words on the page's buttons ("nucleus (top-p)", "top-k sampling")
STRATEGY_ALIASES: dict[str, StrategyKind] = {
    "nucleus": "top_p",
    "top-p": "top_p",
    "topp": "top_p",
    "top-k": "top_k",
    "topk": "top_k",
}


@dataclass(frozen=True)
class Strategy:
    """How the next token is chosen. Temperature divides the logits before top-k / top-p filtering
    (as transformers' `generate` does); greedy ignores it."""

    kind: StrategyKind = "greedy"
    top_k: int = 40
    top_p: float = 0.9
    temperature: float = 1.0
    seed: int = 0
    max_new_tokens: int = 30


@dataclass(frozen=True)
class Step:
    token: str  # the chosen token, as text
    token_id: int
    probability: float  # its probability in the distribution it was drawn from
    candidates: list[Guess]  # the likeliest tokens of that distribution, with probabilities
    text: str  # the prompt (as read) and everything generated so far, an end-of-text token left out
    cut: bool  # the prompt was longer than the model reads and lost its start
    ended: bool = False  # the token is one that ends a text: the last step


END_TOKENS = ("<|endoftext|>", "<|im_end|>", "</s>")  # GPT-2's and SmolLM2's ends of a document and of a turn


def end_ids(model: CausalLM) -> frozenset[int]:
    """The ids that end a text: the tokenizer's end-of-text token, the model's own (its generation
    config may name several) and those of END_TOKENS its vocabulary has. SmolLM2-Instruct's tokenizer
    names <|im_end|>, the end of a chat turn, while a plain text ends with <|endoftext|>."""
    tok = model.tokenizer
    ids: set[int | None] = {tok.eos_token_id}
    named = getattr(getattr(model.fast_model, "generation_config", None), "eos_token_id", None)
    ids |= set(named) if isinstance(named, list) else {named}
    vocab = tok.get_vocab()
    ids |= {vocab[name] for name in END_TOKENS if name in vocab}
    return frozenset(i for i in ids if isinstance(i, int))


def _distribution(logits: torch.Tensor, strategy: Strategy) -> torch.Tensor:
    """The probabilities the next token is drawn from (greedy: the model's own)."""
    if strategy.kind == "greedy":
        return logits.softmax(-1)
    logits = logits / max(strategy.temperature, 1e-4)
    if strategy.kind == "top_k":
        kth = logits.topk(min(strategy.top_k, logits.shape[-1])).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    elif strategy.kind == "top_p":  # the smallest set of tokens whose probability reaches top_p
        ordered, order = logits.sort(descending=True)
        cumulative = ordered.softmax(-1).cumsum(-1)
        drop = cumulative > strategy.top_p
        drop[1:] = drop[:-1].clone()  # keep the token that crosses the threshold
        drop[0] = False
        logits = logits.masked_fill(torch.zeros_like(drop).scatter(0, order, drop), float("-inf"))
    return logits.softmax(-1)


def _prompt_ids(model: CausalLM, text: str, room: int) -> tuple[torch.Tensor, bool]:
    """The prompt's ids, its start cut so that `room` more tokens fit in what the model reads."""
    if not text or not text.strip():
        raise EmptyInput("prompt")
    batch = model.tokenize(text[-MAX_CHARS:], truncation=False, padding=False)
    ids = batch["input_ids"]
    keep = max(1, model.max_length - room)
    return ids[:, -keep:], ids.shape[1] > keep or len(text) > MAX_CHARS


@torch.inference_mode()
def generate_steps(
    model: CausalLM, text: str, strategy: Strategy = Strategy(), n_candidates: int = 5
) -> Iterator[Step]:
    """Write after `text`, one token a step, until max_new_tokens or a token that ends a text (`end_ids`)."""
    new = max(1, min(strategy.max_new_tokens, MAX_NEW_TOKENS))
    ids, cut = _prompt_ids(model, text, new)
    prompt = model.tokenizer.decode(ids[0], skip_special_tokens=False) if cut else valid_text(text[-MAX_CHARS:])
    generator = torch.Generator().manual_seed(strategy.seed)
    ends = end_ids(model)
    made: list[int] = []
    past, step_ids = None, ids.to(model.device)
    for _ in range(new):
        out = model.fast_model(input_ids=step_ids, past_key_values=past, use_cache=True)
        past = out.past_key_values
        probs = _distribution(out.logits[0, -1].float().cpu(), strategy)
        if strategy.kind == "greedy":
            chosen = int(probs.argmax())
        else:
            chosen = int(torch.multinomial(probs, 1, generator=generator))
        top = probs.topk(n_candidates)
        ended = chosen in ends
        if not ended:
            made.append(chosen)
        yield Step(
            token=model.tokenizer.decode([chosen]),
            token_id=chosen,
            probability=float(probs[chosen]),
            candidates=list(zip(model.decode_each(top.indices.tolist()), top.values.tolist())),
            text=prompt + model.tokenizer.decode(made),
            cut=cut,
            ended=ended,
        )
        if ended:
            return
        step_ids = torch.tensor([[chosen]], device=model.device)


@dataclass(frozen=True)
class Factors:
    tokens: list[str]  # each token of the text, as text
    logprobs: np.ndarray  # (tokens,) log P(token | the start token and every token before it)
    start: str  # the start token the first factor is conditioned on

    @property
    def total(self) -> float:
        return float(self.logprobs.sum())

    @property
    def probabilities(self) -> list[float]:
        """(tokens,) each factor P(token | the start token and every token before it)."""
        return np.exp(self.logprobs).tolist()

    @property
    def probability(self) -> float:
        """P(text): the product of the factors."""
        return float(np.exp(self.total))


def _start_id(model: CausalLM) -> int:
    tok = model.tokenizer
    start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    if start is None:
        raise ValueError(f"{model.name} has no start-of-text token")
    return int(start)


@torch.inference_mode()
def token_logprobs(model: CausalLM, text: str) -> Factors:
    """log P(text) as a sum over its tokens of log P(token | start token, tokens before it)."""
    if not text or not text.strip():
        raise EmptyInput()
    ids = model.tokenize(text, truncation=True, padding=False, max_length=model.max_length - 1)["input_ids"]
    start = _start_id(model)
    full = torch.cat([torch.tensor([[start]]), ids], 1).to(model.device)
    logits = model.fast_model(input_ids=full).logits[0, :-1].float()
    logprobs = logits.log_softmax(-1).gather(1, full[0, 1:, None]).squeeze(1)
    return Factors(model.decode_each(ids[0].tolist()), logprobs.cpu().numpy(), model.tokenizer.decode([start]))


@dataclass(frozen=True)
class Rescored:
    candidate: str
    left_probability: float  # P(candidate | the words before the blank)
    left_rank: int  # 0: not among the left context's top candidates (brought in from elsewhere)
    whole_logprob: float  # log P(the whole sentence with the candidate in the blank)
    whole_rank: int


def left_only_vs_whole(model: CausalLM, text: str, k: int = 8, extra: tuple[str, ...] = ()) -> list[Rescored]:
    """Fill the blank (___) in `text` from its left context alone (the causal LM's top k next words),
    then rank those candidates, and any `extra` ones (a masked LM's), by the probability of the whole
    sentence with each in place: what reading both sides of the blank gives."""
    if BLANK not in text:
        raise NoMaskToken(BLANK)
    left, right = text.split(BLANK, 1)
    if not left.strip():
        raise EmptyInput("text before the blank")
    guesses = model.next_words(left.rstrip(), k)
    words = [(g.strip(), p) for g, p in guesses if g.strip() and any(c.isalnum() for c in g)]
    words = list(dict(words).items())  # " bank" and "bank": one candidate
    seen = {w.lower() for w, _ in words}
    more = [(w.strip(), 0.0) for w in extra if w.strip() and w.strip().lower() not in seen]
    joined = left.rstrip() + " {} " + right.lstrip() if right.strip() else left.rstrip() + " {}"
    everyone = words + list(dict(more).items())
    totals = [token_logprobs(model, joined.format(w)).total for w, _ in everyone]
    rank = {int(i): r + 1 for r, i in enumerate(np.argsort(-np.array(totals), kind="stable"))}
    return [Rescored(w, p, i + 1 if i < len(words) else 0, totals[i], rank[i]) for i, (w, p) in enumerate(everyone)]


def left_first(rows: list[Rescored]) -> Rescored:
    """The left context's first guess among `rows` (those brought in from elsewhere have no left rank)."""
    return min((r for r in rows if r.left_rank), key=lambda r: r.left_rank)


def whole_first(rows: list[Rescored]) -> Rescored:
    """The candidate that makes the whole sentence likeliest."""
    return min(rows, key=lambda r: r.whole_rank)


def first_token_share(attentions: np.ndarray) -> np.ndarray:
    """(layers, heads): the mean share of attention that positions 1.. give to position 0, from a
    causal model's attentions (L, H, T, T). Near 1: the head parks its attention on the first token."""
    if attentions.shape[-1] < 2:
        return np.zeros(attentions.shape[:2])
    return attentions[:, :, 1:, 0].mean(-1)


SINK = 0.5  # a head that gives the first token more than half of its attention parks it there


@dataclass(frozen=True)
class FirstTokenSink:
    """How much of a causal model's attention its heads park on the first token, against an even spread."""

    shares: np.ndarray  # (layers, heads) each head's mean share on the first token (first_token_share)
    parked: int  # heads that give the first token more than SINK of their attention
    mean: float  # the mean share over every head
    even: float  # the share an even spread over the tokens each query sees would give

    @property
    def heads(self) -> int:
        return int(self.shares.size)


def first_token_sink(shares: np.ndarray, tokens: int) -> FirstTokenSink:
    """FirstTokenSink of the shares (layers, heads) that first_token_share gives for a text of `tokens` tokens."""
    return FirstTokenSink(shares, int((shares > SINK).sum()), float(shares.mean()), uniform_first_token_share(tokens))
