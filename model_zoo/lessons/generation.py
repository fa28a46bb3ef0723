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

import functools
import inspect
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar, get_args

import numpy as np
import torch

from ..contextual import MAX_CHARS, CausalLM, Guess, right_padded
from ..errors import EmptyInput, ModelZooError, NoMaskToken
from ..words import valid_text
from .attention import uniform_first_token_share

MAX_NEW_TOKENS = 64  # a page's limit: a class shares the server
PREFILL_TOKENS = 2048  # prompts joining a batch together run in passes of at most this many (padded) tokens
BLANK = "___"
DOCUMENT_START = "<|endoftext|>"  # the byte-level GPTs' document boundary: what a pre-trained text comes after
# The GPT lesson's own blanks (its example buttons): "deposit" and "river" come after the blank
LESSON_BLANKS = ("The man went to the ___ to deposit his money.", "She sat on the ___ of the river and fished all day.")
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


_ENDS: weakref.WeakKeyDictionary[CausalLM, frozenset[int]] = weakref.WeakKeyDictionary()


def end_ids(model: CausalLM) -> frozenset[int]:
    """The ids that end a text: the tokenizer's end-of-text token, the model's own (its generation
    config may name several) and those of END_TOKENS its vocabulary has. SmolLM2-Instruct's tokenizer
    names <|im_end|>, the end of a chat turn, while a plain text ends with <|endoftext|>. Read once per
    model: the vocabulary is a 49,152-entry dict built anew at each call, and thirty learners pressing Write
    at once spent 4% of a worker's time building it (py-spy)."""
    found = _ENDS.get(model)
    if found is None:
        found = _ENDS[model] = _end_ids(model)
    return found


def _end_ids(model: CausalLM) -> frozenset[int]:
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


@dataclass
class Writing:
    """One text being written: its settings, its own random stream (a seed gives the same text alone or
    in a batch) and what it has written so far."""

    strategy: Strategy
    prompt: str  # as read (its start cut where it was too long)
    cut: bool
    ends: frozenset[int]
    generator: torch.Generator
    left: int  # tokens it may still write
    made: list[int] = field(default_factory=list)
    last: int = -1  # the token chosen last: the next step's input
    done: bool = False


def start_writing(model: CausalLM, text: str, strategy: Strategy) -> tuple[Writing, torch.Tensor]:
    """A Writing for `text` and the prompt's ids (1, T) to run the model on (EmptyInput for no text)."""
    new = max(1, min(strategy.max_new_tokens, MAX_NEW_TOKENS))
    ids, cut = _prompt_ids(model, text, new)
    prompt = model.tokenizer.decode(ids[0], skip_special_tokens=False) if cut else valid_text(text[-MAX_CHARS:])
    writing = Writing(strategy, prompt, cut, end_ids(model), torch.Generator().manual_seed(strategy.seed), new)
    return writing, ids


def choose(model: CausalLM, writing: Writing, logits: torch.Tensor, n_candidates: int = 5) -> Step:
    """The next token of `writing` from the model's `logits` (V,) for it: drawn as its strategy says, with
    the candidates the model weighed."""
    probs = _distribution(logits.float().cpu(), writing.strategy)
    if writing.strategy.kind == "greedy":
        chosen = int(probs.argmax())
    else:
        chosen = int(torch.multinomial(probs, 1, generator=writing.generator))
    top = probs.topk(n_candidates)
    ended = chosen in writing.ends
    if not ended:
        writing.made.append(chosen)
    writing.last, writing.left = chosen, writing.left - 1
    writing.done = ended or writing.left <= 0
    return Step(
        token=model.shown_each([chosen])[0],  # a piece of a character as its bytes (‹e4 bd›), as the candidates
        token_id=chosen,
        probability=float(probs[chosen]),
        candidates=list(zip(model.shown_each(top.indices.tolist()), top.values.tolist())),
        # a character whose last bytes are still to come is written once whole, not as "�" meanwhile
        text=writing.prompt + model.tokenizer.decode(writing.made).rstrip("\ufffd"),
        cut=writing.cut,
        ended=ended,
    )


@torch.inference_mode()
def generate_steps(
    model: CausalLM, text: str, strategy: Strategy = Strategy(), n_candidates: int = 5
) -> Iterator[Step]:
    """Write after `text`, one token a step, until max_new_tokens or a token that ends a text (`end_ids`)."""
    writing, ids = start_writing(model, text, strategy)
    past, step_ids = None, ids.to(model.device)
    while not writing.done:
        out = _forward(model, past, input_ids=step_ids)
        past = _cache_of(out)
        yield choose(model, writing, out.logits[0, -1], n_candidates)
        step_ids = torch.tensor([[writing.last]], device=model.device)


class Batch:
    """Texts written together (continuous batching): each step runs the model once for every text in the
    batch, one new token each; a text joins between steps (its prompt run alone, then its cache put beside
    the others', left-padded) and leaves when it ends, reaches its length or its writer stops. Each text
    keeps its own strategy, seed, candidates and stop.

    transformers' own ContinuousBatchingManager (generate_batch) writes in batches too, and on CPU here: 30
    requests of 30 tokens in 8.9 s. It cannot serve the GPT lesson: one greedy-or-sampling choice for the
    whole manager, no seed per request, and only the chosen token's log-probability where the page draws
    the candidates the model weighed at every step (docs/deploy.md). So the step is written here, on the
    model's own forward with its KV cache, attention mask and position ids; a test holds every text's
    tokens to those of the same text written alone."""

    def __init__(self, model: CausalLM, n_candidates: int = 5) -> None:
        self.model, self.n_candidates = model, n_candidates
        self.rows: list[Writing] = []
        self._cache: Any = None  # the batch's KV cache (transformers' DynamicCache), rows in self.rows' order
        self._mask = torch.zeros((0, 0), dtype=torch.long)  # (B, T) 1 where a row has a token, 0 for padding
        self._next = torch.zeros(0, dtype=torch.long)  # (B,) each row's next position

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, text: str, strategy: Strategy) -> tuple[Writing, Step]:
        """Start writing `text` (add_many for one; its ModelZooError raised)."""
        found = self.add_many([(text, strategy)])[0]
        if isinstance(found, ModelZooError):
            raise found
        return found

    @torch.inference_mode()
    def add_many(self, texts: Sequence[tuple[str, Strategy]]) -> list[tuple[Writing, Step] | ModelZooError]:
        """Start writing these texts: their prompts run together (left-padded, one forward pass) and give each
        its first step; those that go on join the batch for the next steps. A text the model cannot take
        gets its ModelZooError in its place, the others go on."""
        started: list[tuple[Writing, torch.Tensor] | ModelZooError] = []
        for text, strategy in texts:
            try:
                started.append(start_writing(self.model, text, strategy))
            except ModelZooError as err:
                started.append(err)
        results: list[Any] = list(started)  # the errors stay in their places; the rest are filled in below
        ready = [(i, found) for i, found in enumerate(started) if not isinstance(found, ModelZooError)]
        # shortest first, in passes of at most PREFILL_TOKENS padded tokens: thirty long prompts at once
        # would hold thirty 512-token passes' activations together
        ready.sort(key=lambda item: item[1][1].shape[1])
        while ready:
            count = 1
            while count < len(ready) and (count + 1) * ready[count][1][1].shape[1] <= PREFILL_TOKENS:
                count += 1
            self._prefill(ready[:count], results)
            ready = ready[count:]
        return results

    def _prefill(self, ready: list[tuple[int, tuple[Writing, torch.Tensor]]], results: list[Any]) -> None:
        """One forward pass over these prompts, left-padded: each text's first step into `results`, and the
        texts that go on into the batch."""
        width = max(ids.shape[1] for _, (_, ids) in ready)
        ids = torch.cat([_left_pad(ids, width, dim=1) for _, (_, ids) in ready])
        mask = torch.cat([_left_pad(torch.ones_like(i), width, dim=1) for _, (_, i) in ready])
        device = self.model.device
        out = _forward(
            self.model,
            None,
            input_ids=ids.to(device),
            attention_mask=mask.to(device),
            position_ids=(mask.cumsum(1) - 1).clamp(min=0).to(device),
        )
        going = []
        for row, (i, (writing, _)) in enumerate(ready):
            results[i] = (writing, choose(self.model, writing, out.logits[row, -1], self.n_candidates))
            if not writing.done:
                going.append(row)
        if going:
            index = torch.tensor(going)
            self._join([ready[r][1][0] for r in going], _rows_of(out, index.to(device)), mask[index])

    def _join(self, rows: list[Writing], layers: list[tuple[torch.Tensor, torch.Tensor]], mask: torch.Tensor) -> None:
        """Put rows with their KV cache (B', H, T', D) and mask (B', T') beside the batch's, both left-padded
        to the longer of the two."""
        from transformers import DynamicCache

        self._next = torch.cat([self._next, mask.sum(1)])  # each new row's next position: the tokens it has
        if self.rows:
            width = max(self._mask.shape[1], mask.shape[1])
            old = [(layer.keys, layer.values) for layer in self._cache.layers]
            layers = [
                (
                    torch.cat([_left_pad(k0, width), _left_pad(k1, width)]),
                    torch.cat([_left_pad(v0, width), _left_pad(v1, width)]),
                )
                for (k0, v0), (k1, v1) in zip(old, layers, strict=True)
            ]
            mask = torch.cat([_left_pad(self._mask, width, dim=1), _left_pad(mask, width, dim=1)])
        self._cache = DynamicCache(ddp_cache_data=layers)
        self._mask = mask
        self.rows += rows

    @torch.inference_mode()
    def step(self) -> list[tuple[Writing, Step]]:
        """One token for every text in the batch; the texts that are done leave it."""
        if not self.rows:
            return []
        device = self.model.device
        batch = len(self.rows)
        mask = torch.cat([self._mask, torch.ones((batch, 1), dtype=torch.long)], dim=1)
        out = _forward(
            self.model,
            self._cache,
            input_ids=torch.tensor([[w.last] for w in self.rows], device=device),
            attention_mask=mask.to(device),
            position_ids=self._next[:, None].to(device),
        )
        self._cache, self._mask, self._next = _cache_of(out), mask, self._next + 1
        logits = out.logits[:, -1]
        stepped = [(w, choose(self.model, w, logits[i], self.n_candidates)) for i, w in enumerate(self.rows)]
        self.leave([w for w in self.rows if w.done])
        return stepped

    def leave(self, gone: Sequence[Writing]) -> None:
        """Take these texts out of the batch (ended, or their writer stopped or left): their slots free."""
        keep = [i for i, w in enumerate(self.rows) if not any(w is g for g in gone)]
        if len(keep) == len(self.rows):
            return
        self.rows = [self.rows[i] for i in keep]
        if not keep:
            self._cache, self._mask, self._next = None, torch.zeros((0, 0), dtype=torch.long), self._next[:0]
            return
        index = torch.tensor(keep)
        self._cache.batch_select_indices(index.to(self.model.device))
        self._mask, self._next = self._mask[index], self._next[index]
        first = int(self._mask.any(0).long().argmax())  # columns every row left pads: dropped
        if first:
            self._mask = self._mask[:, first:]
            for layer in self._cache.layers:
                layer.keys, layer.values = layer.keys[..., first:, :], layer.values[..., first:, :]


def _forward(model: CausalLM, cache: Any, **inputs: Any) -> Any:
    """The model's forward with its KV cache: named `cache` from transformers 5.2x on (`past_key_values`,
    deprecated there, goes in 5.40), `past_key_values` before."""
    return model.fast_model(**inputs, **{_cache_keyword(model.fast_model.__class__): cache}, use_cache=True)


@functools.lru_cache(maxsize=16)
def _cache_keyword(model_type: Any) -> str:
    """The name a model class's forward takes its cache by (read once per class, not per step)."""
    return "cache" if "cache" in inspect.signature(model_type.forward).parameters else "past_key_values"


def _cache_of(out: Any) -> Any:
    found = getattr(out, "cache", None)
    return found if found is not None else out.past_key_values


def _left_pad(tensor: torch.Tensor, width: int, dim: int = 2) -> torch.Tensor:
    """`tensor` with zeros before its entries along `dim` up to `width` (a KV cache: (B, H, T, D), dim 2)."""
    missing = width - tensor.shape[dim]
    if missing <= 0:
        return tensor
    shape = list(tensor.shape)
    shape[dim] = missing
    return torch.cat([tensor.new_zeros(shape), tensor], dim=dim)


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
    """The token a text is read after: the pre-training corpus's document boundary where the vocabulary has one
    (GPT-2's and SmolLM2's <|endoftext|>, the masked LM's START), else the start-of-text token. Not SmolLM2-
    Instruct's bos, <|im_start|>: it opens a chat turn, and "The" after it has 0.027% where it has 0.6% after
    <|endoftext|>. On the 200 development blanks (cloze_fresh_dev.tsv), <|endoftext|> against <|im_start|>:
    perplexity of the answered sentences 50 against 97, the whole sentence's first guess right 28% against
    23%, the left context's 22% against 19%."""
    tok = model.tokenizer
    boundary = tok.convert_tokens_to_ids(DOCUMENT_START)  # the unknown token's id where it has none
    if isinstance(boundary, int) and tok.convert_ids_to_tokens(boundary) == DOCUMENT_START:
        return boundary
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
    hidden = _hidden(model, None, input_ids=full[:, :-1]).last_hidden_state  # the last token predicts nothing here
    logprobs = _picked_logprobs(model, hidden, full[:, 1:], torch.ones_like(full[:, 1:], dtype=torch.bool))[0]
    return Factors(model.shown_each(ids[0].tolist()), logprobs.cpu().numpy(), model.tokenizer.decode([start]))


@torch.inference_mode()
def sentence_logprobs(model: CausalLM, texts: Sequence[str]) -> list[float]:
    """log P(text) of each of `texts` (token_logprobs' total), in padded passes: the whole-sentence scores of
    a blank's candidates cost a pass, not one each (shared_start_logprobs, the texts one group)."""
    return shared_start_logprobs(model, [texts])[0] if texts else []


# sentences after their shared start scored in one pass at most (and their groups' starts; texts in one of
# next_whole_words' passes, where WORD_CACHE binds first). 128 rather than 32: a class's short blanks then go about
# 60 to a pass (SHARED_TOKENS binds, so a pass's positions keep their bound) where 32 let 22 (two blanks' dozen):
# fifteen blanks' whole sentences on one AVX2 thread, fp32, 5.5-6.7 -> 4.8 s, the same totals to 8e-6
SHARED_ROWS = 128
SHARED_TOKENS = 1024  # positions in one pass at most (its rows × the longest): a long blank's rows go a few at a time


@torch.inference_mode()
def shared_start_logprobs(model: CausalLM, groups: Sequence[Sequence[str]]) -> list[list[float]]:
    """sentence_logprobs for groups of sentences that begin alike (a blank's candidates: the same words
    before the blank), the same totals to float rounding. Each group's common first tokens are read once (kept
    from the left guesses' pass, next_whole_words, or run in one left-padded pass over the starts not kept);
    then every sentence's own tokens in right-padded passes over its group's KV cache. A class's thirty blanks
    of a dozen candidates each cost their starts once, not a dozen times: a pass over fewer tokens, where the
    work is the tokens (SmolLM2 on two cores). A sentence whose first own token is a word the left guesses read
    goes on from that word's step (kept too), one token later. Sentences go into passes by how many tokens they
    read, whatever their group: a pass pads its rows to its longest, and a blank's candidates differ (a word of
    three tokens, the masked LM's words read from their first). At most SHARED_ROWS sentences and SHARED_TOKENS
    positions a pass: a pass's memory (its KV cache and attention) stays that of a short text whatever the
    learner types."""
    start = _start_id(model)
    rows = [[_scored_ids(model, text, start) for text in group] for group in groups]
    shared = [_shared_length(group) if group else 0 for group in rows]  # a group's start, in whichever pass
    words = kept_words(model)
    items: list[_Row] = []
    for g, group in enumerate(rows):
        n = shared[g]
        for j, row in enumerate(group):
            items.append(_Row(g, j, words.get(tuple(row[: n + 1].tolist())) if len(row) > n + 1 else None))

    def reads(item: _Row) -> int:  # the positions its pass runs
        return len(rows[item.group][item.row]) - shared[item.group] - (1 if item.step is None else 2)

    items.sort(key=reads)  # stable: a group's rows stay in their order
    found: list[list[float]] = [[0.0] * len(group) for group in rows]
    begun: dict[int, _Begun] = {}
    chunk: list[_Row] = []
    for item in items:
        together = [*chunk, item]
        if chunk and (
            len(together) > SHARED_ROWS
            or len(together) * max(len(rows[r.group][r.row]) for r in together) > SHARED_TOKENS
        ):
            _score_rows(model, rows, shared, chunk, begun, found)
            together = [item]
        chunk = together
    if chunk:
        _score_rows(model, rows, shared, chunk, begun, found)
    return found


@dataclass(frozen=True)
class _Row:
    """A sentence to score: its group, its number there, and the kept step of its first own token (or None)."""

    group: int
    row: int
    step: _Step | None


@dataclass(frozen=True)
class _Begun:
    """A group's shared start, read once for all its rows' passes: its keys, values and states, the log
    probability of its tokens, and the log-probabilities of the token after it (V,)."""

    start: _Start
    before: float
    last: torch.Tensor


def _scored_ids(model: CausalLM, text: str, start: int) -> torch.Tensor:
    """A sentence's token ids as its score reads them: the start-of-text token, then the text (cut to fit)."""
    if not text or not text.strip():
        raise EmptyInput()
    ids = model.tokenize(text, truncation=True, padding=False, max_length=model.max_length - 1)["input_ids"][0]
    return torch.cat([torch.tensor([start]), ids])


def _shared_length(group: list[torch.Tensor]) -> int:
    """How many first tokens every row of `group` has in common, leaving each row at least one of its own."""
    most = min(len(r) for r in group) - 1
    first = group[0]
    n = 1  # the start token
    while n < most and all(bool(r[n] == first[n]) for r in group):
        n += 1
    return n


def _begin(model: CausalLM, starts: dict[int, torch.Tensor], begun: dict[int, _Begun]) -> None:
    """Each group of `starts` (group -> its start's token ids) not begun yet: its start from what
    next_whole_words kept, or run (those together, one left-padded pass), then its before and last."""
    new = [g for g in starts if g not in begun]
    if not new:
        return
    store = kept_starts(model)
    kept = {g: store.get(tuple(starts[g].tolist())) for g in new}
    missing = [g for g in new if kept[g] is None]
    if missing:
        _, _, out = _left_padded_pass(model, [starts[g] for g in missing])
        for j, g in enumerate(missing):
            kept[g] = _start_of(out, j, len(starts[g]))
    ready = [start for start in kept.values() if start is not None]
    ids, mask = _left_padded([starts[g] for g in new])
    hidden = torch.stack([_left_pad(start.hidden, ids.shape[1], dim=0) for start in ready])
    seen = (mask[:, :-1] * mask[:, 1:]).bool()  # a real token predicted from a real one
    before = _picked_logprobs(model, hidden[:, :-1], ids[:, 1:], seen).sum(1).tolist()
    last = model.head_logits(hidden[:, -1]).log_softmax(-1)  # what follows each start
    for i, (g, start) in enumerate(zip(new, ready, strict=True)):
        begun[g] = _Begun(start, before[i], last[i])


def _score_rows(
    model: CausalLM,
    rows: list[list[torch.Tensor]],
    shared: list[int],
    items: list[_Row],
    begun: dict[int, _Begun],
    found: list[list[float]],
) -> None:
    """shared_start_logprobs for sentences (`items`) that fit one pass: each total into `found`."""
    device = model.device
    groups = list(dict.fromkeys(item.group for item in items))
    _begin(model, {g: rows[g][0][: shared[g]] for g in groups}, begun)
    starts = [begun[g].start for g in groups]
    width = max(start.positions for start in starts)
    layers = [
        (
            torch.cat([_left_pad(start.layers[i][0], width) for start in starts]),
            torch.cat([_left_pad(start.layers[i][1], width) for start in starts]),
        )
        for i in range(len(starts[0].layers))
    ]
    start_mask = torch.stack(
        [_left_pad(torch.ones(1, start.positions, dtype=torch.long), width, dim=1)[0] for start in starts]
    )
    at = {g: i for i, g in enumerate(groups)}
    owner = [at[item.group] for item in items]
    index = torch.tensor(owner, device=device)
    own = [rows[item.group][item.row][shared[item.group] :] for item in items]
    before = torch.tensor([begun[g].before for g in groups], device=device)
    last = torch.stack([begun[g].last for g in groups])
    firsts = torch.tensor([int(row[0]) for row in own], device=device)
    totals = before[index] + last[index].gather(1, firsts[:, None]).squeeze(1)  # each row's first own token
    # A row whose first own token is a word the left guesses read goes on from that step: its second token read
    # from the step's state, its pass from its third (the step's keys and values a column of its cache; the
    # other rows' column masked)
    stepped = [i for i, item in enumerate(items) if item.step is not None]
    steps = [item.step for item in items if item.step is not None]
    if steps:
        seconds = torch.tensor([int(own[i][1]) for i in stepped], device=device)
        logprobs = model.head_logits(torch.stack([step.hidden for step in steps]).to(device)).log_softmax(-1)
        totals[stepped] += logprobs.gather(1, seconds[:, None]).squeeze(1)
    skip = [int(item.step is not None) for item in items]
    # A row's last token predicts nothing the score needs: the pass reads every row without it (a blank's
    # candidate and its right context are five or six tokens: a fifth less of this pass)
    reads, read_mask = right_padded([row[k:-1] for row, k in zip(own, skip, strict=True)])
    targets, _ = right_padded([row[k + 1 :] for row, k in zip(own, skip, strict=True)])
    if reads.shape[1]:  # the tokens after each row's first (or second), each read from the ones before it
        masks = [start_mask[owner]]
        if steps:
            cached = _rows_with_steps(layers, index, stepped, steps)
            masks.append(torch.tensor([[k] for k in skip], dtype=start_mask.dtype))
        else:
            cached = [(keys[index], values[index]) for keys, values in layers]
        positions = torch.tensor([shared[item.group] + k for item, k in zip(items, skip, strict=True)])[:, None]
        rest = _hidden(
            model,
            _cache_from(cached),
            input_ids=reads.to(device),
            attention_mask=torch.cat([*masks, read_mask], 1).to(device),
            position_ids=(positions + torch.arange(reads.shape[1])[None]).to(device),
        ).last_hidden_state
        totals = totals + _picked_logprobs(model, rest, targets, read_mask.bool()).sum(1)
    for item, total in zip(items, totals.cpu().tolist(), strict=True):
        found[item.group][item.row] = total


Layers = list[tuple[torch.Tensor, torch.Tensor]]  # a KV cache as each layer's keys and values, (B, H, T, D)


def _rows_with_steps(layers: Layers, index: torch.Tensor, rows: list[int], steps: list[_Step]) -> Layers:
    """The rows `index` of `layers` (the groups' starts), each with one more column: the kept step of each of
    `rows` (in order), zeros in the others'. The column joins the few group rows before they are taken for every
    sentence, so the sentences' cache is copied once."""
    out = []
    for i, (keys, values) in enumerate(layers):
        both = []
        for cache, part in ((keys, [step.keys[i] for step in steps]), (values, [step.values[i] for step in steps])):
            taken = torch.cat([cache, cache.new_zeros(cache.shape[0], cache.shape[1], 1, cache.shape[3])], 2)[index]
            taken[rows, :, -1] = torch.stack(part).to(taken)
            both.append(taken)
        out.append((both[0], both[1]))
    return out


def _rows_of(out: Any, index: torch.Tensor) -> Layers:
    """The rows `index` of a pass's KV cache: each layer's keys and values (a row may be taken more than once)."""
    return [(layer.keys[index], layer.values[index]) for layer in _cache_of(out).layers]


def _cache_rows(out: Any, index: torch.Tensor) -> Any:
    """A KV cache (transformers' DynamicCache) of the rows `index` of a pass's cache."""
    from transformers import DynamicCache

    return DynamicCache(ddp_cache_data=_rows_of(out, index))


def _cache_from(layers: Layers) -> Any:
    """A KV cache (transformers' DynamicCache) of `layers`."""
    from transformers import DynamicCache

    return DynamicCache(ddp_cache_data=layers)


@dataclass(frozen=True)
class _Start:
    """What a pass left of one text: each layer's keys and values (1, H, T, D) and its last hidden states (T, D)."""

    layers: Layers
    hidden: torch.Tensor

    @property
    def positions(self) -> int:
        return int(self.hidden.shape[0])


@dataclass(frozen=True)
class _Step:
    """What next_whole_words' first step left of one word's first token after its text: that position's keys
    and values at every layer (L, H, D) and its last hidden state (D,)."""

    keys: torch.Tensor
    values: torch.Tensor
    hidden: torch.Tensor
    positions: int = 1


# Left contexts next_whole_words read, kept for the whole sentences that follow. A blank's left context, after
# the start token, is the start its candidates' whole sentences share (shared_start_logprobs), asked for a
# second or two later: kept, that start's pass is not run again (fifteen blanks' whole sentences on one AVX2
# thread: about a tenth of the work). At most START_POSITIONS positions a model, the least recently used going
# first (SmolLM2: 46 KB of cache and 2 KB of states a position, so 25 MB at most; a worker's fifteen blanks
# take about 165)
START_POSITIONS = 512


Kept = TypeVar("Kept", _Start, _Step)


class _KeptStarts(Generic[Kept]):
    """The kept left contexts (or words' first steps) of one model, by their token ids (shared by the worker's
    threads)."""

    def __init__(self, positions: int) -> None:
        self.positions, self.held, self.used = positions, 0, 0  # used: starts found here (tests, bench)
        self._kept: OrderedDict[tuple[int, ...], Kept] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, ids: tuple[int, ...], start: Kept) -> None:
        if start.positions > self.positions:
            return
        with self._lock:
            if ids in self._kept:
                self._kept.move_to_end(ids)
                return
            self._kept[ids] = start
            self.held += start.positions
            while self.held > self.positions:
                self.held -= self._kept.popitem(last=False)[1].positions

    def get(self, ids: tuple[int, ...]) -> Kept | None:
        with self._lock:
            found = self._kept.get(ids)
            if found is not None:
                self._kept.move_to_end(ids)
                self.used += 1
            return found


# Each word next_whole_words guessed for a blank: its first token's position after the left context, kept as
# that step ran it. Eight of a blank's dozen whole sentences go on from there (shared_start_logprobs): their
# first own token's pass is not run again, a fifth of those sentences' positions (fifteen blanks' whole
# sentences on one AVX2 thread, fp32: 540 positions run rather than 660, 3.34 s rather than 3.70, the mean of
# twelve runs each). At most WORD_STEPS a model, the least recently used going first (SmolLM2: 48 KB each, so
# 25 MB at most; a worker's fifteen blanks take 120)
WORD_STEPS = 512

_kept: weakref.WeakKeyDictionary[CausalLM, _KeptStarts[_Start]] = weakref.WeakKeyDictionary()
_kept_words: weakref.WeakKeyDictionary[CausalLM, _KeptStarts[_Step]] = weakref.WeakKeyDictionary()
_kept_lock = threading.Lock()


def kept_starts(model: CausalLM) -> _KeptStarts[_Start]:
    """The left contexts kept for `model` (one store a loaded model, gone with it)."""
    with _kept_lock:
        return _kept.setdefault(model, _KeptStarts(START_POSITIONS))


def kept_words(model: CausalLM) -> _KeptStarts[_Step]:
    """The guessed words' first steps kept for `model` (one store a loaded model, gone with it)."""
    with _kept_lock:
        return _kept_words.setdefault(model, _KeptStarts(WORD_STEPS))


def _keep_words(model: CausalLM, keys: list[tuple[int, ...]], step: Any) -> None:
    """The last position of each row of a words' step (its token ids `keys[i]`, text and word's first token)
    kept, each row its own copy (a view would hold the whole step's column while any of its rows is kept)."""
    layers = _cache_of(step).layers
    column = torch.stack([layer.keys[:, :, -1] for layer in layers], 1)  # (B, L, H, D)
    values = torch.stack([layer.values[:, :, -1] for layer in layers], 1)
    hidden = step.last_hidden_state[:, -1]
    store = kept_words(model)
    for i, ids in enumerate(keys):
        store.put(ids, _Step(column[i].clone(), values[i].clone(), hidden[i].clone()))


def _start_of(out: Any, row: int, n: int) -> _Start:
    """Row `row` of a left-padded pass (its `n` tokens in the last columns), as if it had run alone: views of
    the pass's tensors."""
    keys_values = [
        (layer.keys[row : row + 1, :, -n:], layer.values[row : row + 1, :, -n:]) for layer in _cache_of(out).layers
    ]
    return _Start(keys_values, out.last_hidden_state[row, -n:])


def _keep_starts(model: CausalLM, rows: list[torch.Tensor], out: Any) -> None:
    """Each row of a left-padded pass kept (copied: a view would hold the whole pass's cache)."""
    store = kept_starts(model)
    for r, row in enumerate(rows):
        start = _start_of(out, r, len(row))
        kept = [(keys.clone(), values.clone()) for keys, values in start.layers]
        store.put(tuple(row.tolist()), _Start(kept, start.hidden.clone()))


def _left_padded(rows: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Token id rows left-padded to the longest (each row's last token in the last column), and their mask."""
    width = max(len(r) for r in rows)
    ids = torch.stack([_left_pad(r[None], width, dim=1)[0] for r in rows])
    mask = torch.stack([_left_pad(torch.ones(1, len(r), dtype=torch.long), width, dim=1)[0] for r in rows])
    return ids, mask


def _left_padded_pass(model: CausalLM, rows: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, Any]:
    """Token id rows in one left-padded pass (each row's last token in the last column, its positions from 0):
    the ids, their attention mask and the pass's output (last hidden states and KV cache)."""
    ids, mask = _left_padded(rows)
    device = model.device
    out = _hidden(
        model,
        None,
        input_ids=ids.to(device),
        attention_mask=mask.to(device),
        position_ids=(mask.cumsum(1) - 1).clamp(min=0).to(device),
    )
    return ids, mask, out


# positions read through the output head at a time (each a vocabulary of floats: 0.2 MB). 128 rather than 256:
# the fused log_softmax then reads the product while it is still in cache (fifteen blanks' whole sentences on one
# thread: 3.37 s against 3.66, the same figures to the bit)
LOGIT_ROWS = 128


def _hidden(model: CausalLM, cache: Any, **inputs: Any) -> Any:
    """The model's last hidden states (its output head not applied yet: _picked_logprobs reads them a few
    positions at a time) and its KV cache."""
    base = model.fast_model.base_model
    return base(**inputs, **{_cache_keyword(base.__class__): cache}, use_cache=True)


def _picked_logprobs(model: CausalLM, hidden: torch.Tensor, targets: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """(B, L) log P(targets[b, i] | hidden[b, i]) where `keep` (B, L) holds, 0 elsewhere: the output head read
    over the kept positions only, LOGIT_ROWS at a time. All at once, a long sentence's dozen candidates
    would hold positions × vocabulary floats twice over (2.2 GB more for SmolLM2 on 2,000 characters)."""
    device = hidden.device
    where = keep.to(device).reshape(-1).nonzero().squeeze(1)
    flat, wanted = hidden.reshape(-1, hidden.shape[-1]), targets.to(device).reshape(-1)
    picked = torch.zeros(wanted.shape, dtype=torch.float32, device=device)
    for i in range(0, len(where), LOGIT_ROWS):
        rows = where[i : i + LOGIT_ROWS]
        # log_softmax, then the target's: torch's logsumexp over a vocabulary on CPU is about 14 times slower
        # than its fused log_softmax (0.65 s against 0.05 s for 1,536 positions of SmolLM2's 49,152 words)
        picked[rows] = model.head_logits(flat[rows]).log_softmax(-1).gather(1, wanted[rows, None]).squeeze(1)
    return picked.view(targets.shape)


@dataclass(frozen=True)
class Candidate:
    """A word for the blank, as the left context alone sees it."""

    candidate: str
    left_probability: float  # P(candidate | the words before the blank)
    left_rank: int  # 0: not among the left context's top candidates (brought in from elsewhere)


@dataclass(frozen=True)
class Rescored(Candidate):
    whole_logprob: float  # log P(the whole sentence with the candidate in the blank)
    whole_rank: int


WORD_PIECES = 4  # tokens a blank's candidate word takes at most: its first and up to three more
# positions of KV cache the words' steps hold at once (texts × k × the longest text): each word reads its text's
# cache, copied for it (SmolLM2: 46 KB a position, so about 94 MB); a class's long blanks go a few at a time
WORD_CACHE = 2048


@torch.inference_mode()
def next_whole_words(model: CausalLM, texts: Sequence[str], k: int) -> list[list[Guess]]:
    """For each of `texts`, the model's k likeliest next tokens that begin a word (CausalLM.word_starts: a
    space, then a letter or digit), each read on to the end of its word: a blank holds a word, and a token
    such as " sid" is the start of one (SmolLM2 after "We sat by the": " sid", then
    "ewalk"). Each token is followed by the model's own likeliest next token while that one goes on the word
    (no space before it: a letter or a digit), WORD_PIECES tokens at most; the word's probability is the
    product of its tokens' (the path the model likes best, not every way to spell it). Texts run together in
    left-padded passes (SHARED_ROWS texts, WORD_CACHE positions of their words' caches at most), each token's
    word one row on its text's KV cache. Each text is read after the start-of-text token, as the whole
    sentence's score reads it (shared_start_logprobs): a word's left probability is then its factor in that
    score, and what the right context changes is all that differs (without it SmolLM2's first guess on 62
    blanks was the same as with it on 26, its top 8 sharing 4 words)."""
    for text in texts:
        model.check_text(text)
    start = torch.tensor([_start_id(model)])
    ids = [torch.cat([start, model.last_ids(text, room=WORD_PIECES + 1)]) for text in texts]
    found: list[list[Guess]] = []
    chunk: list[torch.Tensor] = []
    for row in ids:
        if chunk and (
            len(chunk) == SHARED_ROWS or (len(chunk) + 1) * k * max(len(r) for r in [*chunk, row]) > WORD_CACHE
        ):
            found += _whole_words(model, chunk, k)
            chunk = []
        chunk.append(row)
    return found + (_whole_words(model, chunk, k) if chunk else [])


def _whole_words(model: CausalLM, rows: list[torch.Tensor], k: int) -> list[list[Guess]]:
    """next_whole_words for texts (as token ids) that run in one pass."""
    device = model.device
    _, mask, out = _left_padded_pass(model, rows)
    _keep_starts(model, rows, out)  # for the whole sentences that follow (shared_start_logprobs)
    probs = model.head_logits(out.last_hidden_state[:, -1]).softmax(-1)  # over the whole vocabulary, as scored
    top = probs.masked_fill(~model.word_starts, 0.0).topk(k)  # the likeliest of those that begin a word
    owner = torch.arange(len(rows)).repeat_interleave(k)  # every (text, token) a row
    pieces = [[int(i)] for i in top.indices.reshape(-1).tolist()]
    chances = top.values.reshape(-1).tolist()
    # the rows whose word may go on: every word start has a letter or digit; this drops only the zero-probability
    # fillers topk takes where a vocabulary has fewer than k word starts (a quote mark or a comma starts no word)
    live = [r for r, text in enumerate(model.decode_each([p[0] for p in pieces])) if any(c.isalnum() for c in text)]
    owner = owner[live]
    index = owner.to(device)
    cache = _cache_rows(out, index)
    seen, position = mask[owner], torch.tensor([len(rows[o]) for o in owner.tolist()])
    for piece in range(1, WORD_PIECES if live else 1):
        seen = torch.cat([seen, torch.ones(len(live), 1, dtype=torch.long)], 1)
        step = _hidden(
            model,
            cache,
            input_ids=torch.tensor([[pieces[r][-1]] for r in live], device=device),
            attention_mask=seen.to(device),
            position_ids=position[:, None].to(device),
        )
        if piece == 1:  # each word's first token after its text, for the whole sentences that follow
            _keep_words(model, [(*rows[o].tolist(), pieces[r][0]) for o, r in zip(owner.tolist(), live)], step)
        best = model.head_logits(step.last_hidden_state[:, -1]).softmax(-1).max(-1)
        following = best.indices.tolist()
        # a token that goes on a word starts with a letter or digit (an end-of-text token with "<" or nothing)
        goes_on = [i for i, text in enumerate(model.decode_each(following)) if text[:1].isalnum()]
        for i in goes_on:
            pieces[live[i]].append(following[i])
            chances[live[i]] *= float(best.values[i])
        if not goes_on or piece == WORD_PIECES - 1:  # no word goes on, or none may: no cache to keep
            break
        keep = torch.tensor(goes_on)
        live, seen, position = [live[i] for i in goes_on], seen[keep], position[keep] + 1
        cache = _cache_rows(step, keep.to(device))
    words = list(zip(model.decode_rows(pieces), chances, strict=True))
    return [sorted(words[r : r + k], key=lambda w: -w[1]) for r in range(0, len(words), k)]


def blank_candidates(
    model: CausalLM,
    text: str,
    k: int = 8,
    extra: tuple[str, ...] = (),
    guess: Callable[[str, int], list[Guess]] | None = None,
) -> list[Candidate]:
    """The blank (___) in `text` filled from its left context alone (the causal LM's top k next tokens, each
    read on to the end of its word: next_whole_words), then any `extra` candidates (a masked LM's) not among
    them. `guess` gives those words (default: next_whole_words); the server's shares its passes across
    sessions."""
    if BLANK not in text:
        raise NoMaskToken(BLANK)
    left = text.split(BLANK, 1)[0]
    if not left.strip():
        raise EmptyInput("text before the blank")
    guesses = (guess or (lambda text, n: next_whole_words(model, [text], n)[0]))(left.rstrip(), k)
    words: dict[str, float] = {}
    for g, p in guesses:  # shown without its space; a guess of two spellings (" bank", "bank") once, the likelier
        if g.strip() and any(c.isalnum() for c in g):
            words.setdefault(g.strip(), p)
    seen = {w.lower() for w in words}
    more = [w.strip() for w in extra if w.strip() and w.strip().lower() not in seen]
    return [Candidate(w, p, i + 1) for i, (w, p) in enumerate(words.items())] + [
        Candidate(w, 0.0, 0) for w in dict.fromkeys(more)
    ]


def left_only_vs_whole(
    model: CausalLM,
    text: str,
    k: int = 8,
    extra: tuple[str, ...] = (),
    score: Callable[[list[str]], list[float]] | None = None,
    guess: Callable[[str, int], list[Guess]] | None = None,
) -> list[Rescored]:
    """blank_candidates, each ranked by the probability of the whole sentence with it in place: what reading
    both sides of the blank gives. `score` gives those sentences' log-probabilities (default:
    sentence_logprobs); the server's shares its passes across sessions."""
    candidates = blank_candidates(model, text, k, extra, guess)
    sentences = filled(text, [c.candidate for c in candidates])
    totals = score(sentences) if score is not None else sentence_logprobs(model, sentences)
    rank = {int(i): r + 1 for r, i in enumerate(np.argsort(-np.array(totals), kind="stable"))}
    return [
        Rescored(c.candidate, c.left_probability, c.left_rank, totals[i], rank[i]) for i, c in enumerate(candidates)
    ]


def filled(text: str, words: Sequence[str]) -> list[str]:
    """`text` with each of `words` in its blank (___): the whole sentences left_only_vs_whole scores."""
    left, right = text.split(BLANK, 1)
    joined = left.rstrip() + " {} " + right.lstrip() if right.strip() else left.rstrip() + " {}"
    return [joined.format(w) for w in words]


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
