"""Inside one forward pass (the "Inside the model" lesson): what each layer would predict, and what
changes when a part is knocked out.

- **The logit lens** (nostalgebraist 2020): the residual stream after each layer, read through the
  model's own output head (a decoder's final norm and unembedding; a BERT's MLM head: its transform and
  decoder), at the position the model's answer is read from: a [MASK] for a BERT, the position before it
  for a decoder made a masked LM (it predicts each token from the one before), the last token for a
  causal LM. The last row is the model's own answer.
- **Knocking out** one head, every head of a layer, a layer's MLP, or a whole layer, by zeroing (or
  replacing with its mean over the text) that part's output during the forward pass: forward hooks on
  the linear layer that takes the concatenated heads (transformers 5 has no `head_mask`) and on the MLP.
  Every head's effect on the answer comes from one batched pass: row r of the batch has head r knocked out.

Everything runs on the model's eager twin (`Encoder.model`) with hooks added for one call and removed
after it: the shared model is never changed. Shapes: T tokens, D width, V vocabulary, L layers, H heads.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from ..bidirectional import LowRankAdded
from ..contextual import CausalLM, Encoder, MaskedLM
from ..errors import EmptyInput, MissingCapability, NoMaskToken

Part = Literal["head", "heads", "mlp", "layer"]
Mode = Literal["zero", "mean"]
HEAD_ROWS = 64  # knocked-out copies of the text in one pass (head_effects)
MASK = "[MASK]"  # the blank as a learner writes it: a causal LM reads the words before it


@dataclass(frozen=True)
class Anatomy:
    """Where a model's parts are: its blocks, the output head read from any layer's residual stream, the
    linear layer each block's heads are concatenated into, and each block's MLP (its output is what the
    MLP adds)."""

    layers: list[Any]
    read: Callable[[torch.Tensor], torch.Tensor]  # (N, D) residual stream -> (N, V) logits
    heads_out: list[Any]  # per layer: o_proj (Llama), c_proj (GPT-2), attention.output.dense (BERT)
    mlp: list[Any]  # per layer: mlp (Llama, GPT-2), output.dense (BERT: before its residual and LayerNorm)
    heads: int
    post_norm: bool  # BERT: each layer's output is already normalised (the lens reads it as it is)
    mlp_down: list[Any]  # per layer: the MLP's output layer, whose input is its neurons' activations
    unembedding: torch.Tensor  # (V, D): the output head's word vectors
    # the model without its output head, called with the model's keyword arguments: every view reads the
    # stream at one position, and the head over every position (V = 49,152 for SmolLM2) cost more than the blocks
    trunk: Callable[..., Any]


def anatomy(model: Encoder) -> Anatomy:
    """The parts of a BERT (BertForMaskedLM / BertForPreTraining), a GPT-2 or a Llama-type decoder
    (SmolLM2, plain or made a masked LM); MissingCapability for any other."""
    net = model.model
    # the output head is read through the fused twin, which shares its weights: there use_onednn made its
    # products oneDNN's on CPU (onednn.py). For SmolLM2's 49,152-word head that is 0.74 ms a row against MKL's
    # 1.1 (one thread), and a class's lenses are most of Inside the model's work
    fast = getattr(model, "fast_model", net)
    heads = int(model.config.num_attention_heads)
    if hasattr(net, "cls") and hasattr(getattr(net, "bert", None), "encoder"):  # BERT with its MLM head
        layers = list(net.bert.encoder.layer)
        predictions = fast.cls.predictions
        return Anatomy(
            layers,
            lambda h: predictions(h).float(),
            [layer.attention.output.dense for layer in layers],
            [layer.output.dense for layer in layers],
            heads,
            post_norm=True,
            mlp_down=[layer.output.dense for layer in layers],
            unembedding=predictions.decoder.weight,
            trunk=net.bert,
        )
    transformer = getattr(net, "transformer", None)
    if transformer is not None and hasattr(transformer, "h"):  # GPT-2
        blocks = list(transformer.h)
        return _pre_norm(fast, blocks, transformer.ln_f, [b.attn.c_proj for b in blocks], heads, "c_proj", transformer)
    decoder = getattr(net, "model", None)
    if decoder is not None and hasattr(decoder, "layers") and hasattr(decoder, "norm"):  # Llama and kin
        blocks = list(decoder.layers)
        return _pre_norm(fast, blocks, decoder.norm, [b.self_attn.o_proj for b in blocks], heads, "down_proj", decoder)
    raise MissingCapability(model.name, "the inside view", f"its parts ({type(net).__name__}) are not mapped")


def _pre_norm(
    fast: Any, blocks: list[Any], norm: Any, heads_out: list[Any], heads: int, down: str, trunk: Any
) -> Anatomy:
    """A decoder's parts: any layer's stream read through the final norm and the unembedding (the fused
    twin's, `fast`: the same weights)."""
    unembed = fast.get_output_embeddings()
    mlp = [b.mlp for b in blocks]
    return Anatomy(
        blocks,
        lambda h: unembed(norm(h)).float(),
        heads_out,
        mlp,
        heads,
        post_norm=False,
        mlp_down=[getattr(m, down) for m in mlp],
        unembedding=unembed.weight,
        trunk=lambda **inputs: trunk(**inputs, use_cache=False),
    )


@dataclass(frozen=True)
class Reading:
    """The text as the model reads it, and where its answer is read."""

    tokens: list[str]
    inputs: dict[str, torch.Tensor]  # the model's keyword arguments, one row
    at: int  # the position whose output is the answer
    answered: int  # the position the answer fills (the [MASK], or the next one for a causal LM)


def read_text(model: Encoder, text: str) -> str:
    """What the model reads of `text`: a causal LM, the words before a [MASK] (so that one sentence serves
    both kinds of model); a masked LM, all of it."""
    if isinstance(model, CausalLM) and MASK in text:
        text = text.split(MASK, 1)[0].rstrip()
        if not text.strip():
            raise EmptyInput("text before the blank")
    return text


# Readings kept per model, the most recent texts: one run of the page reads its sentence five or six times (the
# pass, its lenses, the token's path, the page's own checks), a tokenizer call and the model's inputs each time
# (py-spy under a class of thirty: 4.7% of what a worker spent holding the GIL). Weakly keyed: a model the
# registry lets go is not kept alive by its readings.
READINGS_KEPT = 64
_readings: weakref.WeakKeyDictionary[Encoder, OrderedDict[str, Reading]] = weakref.WeakKeyDictionary()
_readings_lock = threading.Lock()


def read(model: Encoder, text: str) -> Reading:
    """Tokenise `text`; the answer position: the first [MASK] of a masked LM (a decoder made one reads
    it from the position before), the last token of a causal LM (read_text: before a [MASK]). The same
    Reading for the same text while it is among the model's READINGS_KEPT latest (a mistake is never kept)."""
    with _readings_lock:
        kept = _readings.setdefault(model, OrderedDict())
        if text in kept:
            kept.move_to_end(text)
            return kept[text]
    with torch.inference_mode(False):  # kept tensors, read again outside inference mode too (a tuned lens's training)
        found = _read(model, text)
    with _readings_lock:
        kept[text] = found
        while len(kept) > READINGS_KEPT:
            kept.popitem(last=False)
    return found


def _read(model: Encoder, text: str) -> Reading:
    text = read_text(model, text)
    model.check_text(text)
    batch = model.tokenize(text)
    ids = batch["input_ids"][0]
    if isinstance(model, MaskedLM):
        found = (ids == model.tokenizer.mask_token_id).nonzero().flatten()
        if len(found) == 0:
            raise NoMaskToken(model.mask_token)
        answered = int(found[0])
        at = answered - 1 if _reads_before(model) else answered
    elif isinstance(model, CausalLM):
        answered = len(ids)
        at = answered - 1
    else:
        raise MissingCapability(model.name, "the inside view", "it predicts no word (no output head)")
    if at < 0:
        raise EmptyInput("text before the blank")
    return Reading(model.token_strings(ids.tolist()), model.model_inputs(batch), at, answered)


def _reads_before(model: Encoder) -> bool:
    from ..bidirectional import BidirectionalLM

    return isinstance(model, BidirectionalLM)


def _never(model: Encoder) -> torch.Tensor | None:
    """Tokens the model's own answers never offer (a decoder made a masked LM: [MASK] and the like)."""
    return getattr(model, "_never", None) if _reads_before(model) else None


def _logits(model: Encoder, parts: Anatomy, states: torch.Tensor) -> torch.Tensor:
    logits = parts.read(states)
    never = _never(model)
    if never is not None:
        logits[..., never] = -torch.inf
    return logits


def _tensor(output: Any) -> torch.Tensor:
    return output[0] if isinstance(output, tuple) else output


Hook = tuple[Any, Callable[..., Any], Literal["pre", "post"]]  # (module, hook, before or after its forward)


@contextmanager
def _hooks(hooks: list[Hook]) -> Iterator[None]:
    """`hooks` on their modules for the length of the block (pre-hooks see keyword arguments too), acting on
    this thread's forward passes only: the model is shared, and another session's pass through the same
    modules meanwhile (an attention view reads this eager model too) must see them as they are."""
    me = threading.get_ident()

    def mine(hook: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *args: hook(*args) if threading.get_ident() == me else None

    handles = [
        module.register_forward_pre_hook(mine(hook), with_kwargs=True)
        if kind == "pre"
        else module.register_forward_hook(mine(hook))
        for module, hook, kind in hooks
    ]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _hidden_in(args: tuple, kwargs: dict) -> torch.Tensor:
    """A block's input stream, passed by position or by name."""
    return _tensor(kwargs["hidden_states"] if "hidden_states" in kwargs else args[0])


# -- the logit lens ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class LayerGuess:
    layer: int  # 0: the embeddings, l: after block l
    top: list[tuple[str, float]]  # the words this layer's stream would predict, with probabilities
    answer_rank: int  # where the model's final answer stands in this layer's reading (1 = first)
    answer_probability: float


@dataclass(frozen=True)
class Lens:
    tokens: list[str]
    at: int
    answer: str  # the model's own answer (the last layer's first word)
    rows: list[LayerGuess]  # L + 1 rows: the embeddings, then every block
    answered: int  # the position the answer fills (Reading.answered: the [MASK], or len(tokens) for a causal LM)


@torch.inference_mode()
def residual_streams(model: Encoder, reading: Reading, parts: Anatomy) -> torch.Tensor:
    """(L + 1, T, D): the stream entering block 1 (the embeddings) and leaving every block."""
    return streams(model, reading.inputs, parts)[:, 0]


def streams(model: Encoder, inputs: dict[str, torch.Tensor], parts: Anatomy) -> torch.Tensor:
    """(L + 1, B, T, D) for a batch of the model's keyword arguments."""
    found: list[torch.Tensor] = []

    def before(module: Any, args: tuple, kwargs: dict) -> None:
        found.append(_hidden_in(args, kwargs))

    def after(module: Any, args: tuple, output: Any) -> None:
        found.append(_tensor(output))

    with _hooks([(parts.layers[0], before, "pre"), *[(layer, after, "post") for layer in parts.layers]]):
        parts.trunk(**inputs)
    return torch.stack(found)


@torch.inference_mode()
def logit_lens(model: Encoder, text: str, k: int = 5) -> Lens:
    """What each layer would predict at the answer position, read through the model's own head; the rank
    and probability of the final answer at every layer."""
    parts, reading = anatomy(model), read(model, text)
    return _lens_rows(model, parts, reading, residual_streams(model, reading, parts)[:, reading.at], k)


@dataclass(frozen=True)
class AnswerPass:
    """What one forward pass gives at a text's answer position: every view of the lesson's first screen."""

    streams: torch.Tensor  # (L + 1, D) the stream entering block 1, then leaving every block
    attention: torch.Tensor  # (L, D) what each block's heads' output layer adds
    mlp: torch.Tensor  # (L, D) what each block's MLP adds
    neurons: torch.Tensor  # (L, F) each block's MLP neuron activations


@torch.inference_mode()
def answer_passes(model: Encoder, texts: list[str]) -> list[AnswerPass]:
    """For each text, its AnswerPass, from one padded pass over all of them (a class's sentences together);
    each equals what the text alone gives, to float rounding. Raises what read() would for any text."""
    parts = anatomy(model)
    ats = torch.tensor([read(model, text).at for text in texts])
    rows = torch.arange(len(texts))
    batch = model.tokenize([read_text(model, text) for text in texts])
    found: dict[str, list[torch.Tensor]] = {"streams": [], "attention": [], "mlp": [], "neurons": []}

    def grab(name: str, of_input: bool = False) -> Callable[..., Any]:
        def hook(module: Any, args: tuple, rest: Any) -> None:
            source = (_hidden_in(args, rest) if name == "streams" else _tensor(args[0])) if of_input else _tensor(rest)
            found[name].append(source[rows, ats.to(source.device)].float())

        return hook

    hooks: list[Hook] = [(parts.layers[0], grab("streams", True), "pre")]
    hooks += [(layer, grab("streams"), "post") for layer in parts.layers]
    hooks += [(m, grab("attention"), "post") for m in parts.heads_out] + [(m, grab("mlp"), "post") for m in parts.mlp]
    hooks += [(m, grab("neurons", True), "pre") for m in parts.mlp_down]
    with _hooks(hooks):
        parts.trunk(**model.model_inputs(batch))
    stacked = {name: torch.stack(values, dim=1) for name, values in found.items()}  # (B, L or L + 1, ...)
    return [AnswerPass(*(stacked[name][row] for name in found)) for row in range(len(texts))]


@torch.inference_mode()
def lens_of(model: Encoder, text: str, states: torch.Tensor, lens: TunedLens | None = None, k: int = 5) -> Lens:
    """The logit lens (or, with `lens`, the tuned lens) of `text` from its answer_streams row (L + 1, D)."""
    parts, reading = anatomy(model), read(model, text)
    return _lens_rows(model, parts, reading, states, k, lens)


def _lens_rows(
    model: Encoder, parts: Anatomy, reading: Reading, states: torch.Tensor, k: int, lens: TunedLens | None = None
) -> Lens:
    """The lens's rows from each layer's stream at the answer position, (L + 1, D), each mapped by `lens` first
    where one is given (the tuned lens)."""
    return _lens_from(model, reading, _logits(model, parts, _through(states, lens)), k)


def _through(states: torch.Tensor, lens: TunedLens | None) -> torch.Tensor:
    """(L + 1, ..., D): each layer's stream mapped by the tuned `lens`, or as it is (the logit lens)."""
    return states if lens is None else lens.each_layer(states)


# layer readings read through the output head at a time (each a vocabulary of floats: 0.2 MB); half of 256 runs a
# class's lenses as fast alone and a little faster with the other worker busy (its product's rows stay in cache)
LENS_ROWS = 128


@torch.inference_mode()
def lenses_many(
    model: Encoder, texts: Sequence[str], found: Sequence[AnswerPass], lens: TunedLens | None = None, k: int = 5
) -> list[tuple[Lens, Lens | None]]:
    """For each text, its logit lens and (with `lens`) its tuned lens from its AnswerPass, as lens_of gives
    them, the output head read for all of them together, LENS_ROWS layer readings at a time. Read one lens at
    a time, thirty learners' sixty lenses read the head's weights (SmolLM2: 49,152 x 576) sixty times for 31
    rows each; here a few times, in products big enough to keep the cores busy."""
    parts = anatomy(model)
    maps = (None,) if lens is None else (None, lens)  # each text's logit lens, then its tuned lens
    if not found:
        return []
    streams = torch.stack([f.streams for f in found], dim=1)  # (L + 1, N, D): each layer's map read once for all
    mapped = [_through(streams, m) for m in maps]
    stacks = [m[:, i] for i in range(len(found)) for m in mapped]  # (L + 1, D) each: a text's lenses in turn
    readings = [read(model, text) for text in texts]
    per = max(1, LENS_ROWS // len(stacks[0]))  # whole lenses in each product
    read_out: list[Lens] = []
    for start in range(0, len(stacks), per):
        chunk = stacks[start : start + per]
        logits = _logits(model, parts, torch.cat(chunk)).split([len(c) for c in chunk])
        read_out += [_lens_from(model, readings[i // len(maps)], r, k) for i, r in enumerate(logits, start)]
    return [(read_out[i], read_out[i + 1] if lens is not None else None) for i in range(0, len(read_out), len(maps))]


def _lens_from(model: Encoder, reading: Reading, logits: torch.Tensor, k: int) -> Lens:
    """A Lens from each layer's logits at the answer position, (L + 1, V). One lens's softmax at a time: over a
    whole product's rows (four lenses) it took twice as long, its rows no longer in the cache (fifteen sentences'
    lenses on one thread, with the ranks' count and the tuned lens in one product: 1.27-1.43 → 1.07-1.26 s)."""
    probs = logits.softmax(-1)
    answer = int(probs[-1].argmax())
    at_answer = probs[:, answer : answer + 1]
    ranks = (probs > at_answer).sum(-1, dtype=torch.int32) + 1  # counted in int64, it took as long as the softmax
    top = probs.topk(k, dim=-1)
    top_p, answer_p = top.values.tolist(), at_answer[:, 0].tolist()
    words = model.shown_each(top.indices.flatten().tolist())
    rows = [
        LayerGuess(layer, list(zip(words[layer * k : (layer + 1) * k], top_p[layer])), int(rank), answer_p[layer])
        for layer, rank in enumerate(ranks.tolist())
    ]
    return Lens(reading.tokens, reading.at, model.shown_each([answer])[0], rows, reading.answered)


# -- knocking parts out -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Knock:
    part: Part  # one head, every head of a layer, a layer's MLP, or the whole layer
    layer: int  # 0-based block
    head: int = 0  # for part == "head"
    mode: Mode = "zero"  # zero the part's output, or put its mean over the text's tokens in its place


@dataclass(frozen=True)
class Knocked:
    answer: str  # the intact model's answer
    top: list[tuple[str, float]]  # the prediction with the part knocked out
    before: float  # P(answer), intact
    after: float  # P(answer), knocked out
    loss_before: float  # -log P(answer)
    loss_after: float


def _heads_hook(parts: Anatomy, mask: torch.Tensor, mode: Mode) -> Callable[..., Any]:
    """A pre-hook on the heads' output layer: its input (B, T, H * d) with head h of row b knocked out
    where mask[b, h] (zeroed, or its mean over the row's tokens)."""

    def hook(module: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        x = args[0]
        b, t, width = x.shape
        heads = x.view(b, t, parts.heads, width // parts.heads)
        keep = ~mask.to(x.device)[:, None, :, None]  # (B, 1, H, 1)
        stand_in = heads.mean(1, keepdim=True).expand_as(heads) if mode == "mean" else torch.zeros_like(heads)
        return (torch.where(keep, heads, stand_in).reshape(b, t, width), *args[1:]), kwargs

    return hook


def _knock_hooks(parts: Anatomy, knock: Knock) -> list[Hook]:
    """The hooks that knock `knock`'s part out of a forward pass."""
    if not 0 <= knock.layer < len(parts.layers):
        raise ValueError(f"layer {knock.layer} is not one of the model's {len(parts.layers)}")
    if knock.part in ("head", "heads"):
        if knock.part == "head" and not 0 <= knock.head < parts.heads:
            raise ValueError(f"head {knock.head} is not one of the layer's {parts.heads}")
        mask = torch.ones(1, parts.heads, dtype=torch.bool)
        if knock.part == "head":
            mask[:] = False
            mask[0, knock.head] = True
        return [(parts.heads_out[knock.layer], _heads_hook(parts, mask, knock.mode), "pre")]
    if knock.part == "mlp":

        def no_mlp(module: Any, args: tuple, output: Any) -> Any:
            out = _tensor(output)
            new = out.mean(1, keepdim=True).expand_as(out) if knock.mode == "mean" else torch.zeros_like(out)
            return (new, *output[1:]) if isinstance(output, tuple) else new

        return [(parts.mlp[knock.layer], no_mlp, "post")]
    entered: list[torch.Tensor] = []  # a skipped block passes on the stream it was given

    def remember(module: Any, args: tuple, kwargs: dict) -> None:
        entered[:] = [_hidden_in(args, kwargs)]

    def skip(module: Any, args: tuple, output: Any) -> Any:
        return (entered[0], *output[1:]) if isinstance(output, tuple) else entered[0]

    block = parts.layers[knock.layer]
    return [(block, remember, "pre"), (block, skip, "post")]


@torch.inference_mode()
def intact_answer(model: Encoder, text: str) -> tuple[int, float]:
    """The intact model's answer at the text's blank (a token id) and its probability: what every knock-out of
    the text is measured against, from a pass of the text alone, as the knocked pass is run."""
    parts, reading = anatomy(model), read(model, text)
    intact = _logits(model, parts, _last_stream(model, reading, parts)).softmax(-1)
    answer = int(intact.argmax())
    return answer, float(intact[answer])


@torch.inference_mode()
def knock_out(model: Encoder, text: str, knock: Knock, k: int = 5, intact: tuple[int, float] | None = None) -> Knocked:
    """The answer with and without one part: its probability and loss, and the new top words. `intact`: the
    text's intact_answer where it is known (a learner knocking one part after another pays one pass each)."""
    answer, before = intact if intact is not None else intact_answer(model, text)
    parts, reading = anatomy(model), read(model, text)
    with _hooks(_knock_hooks(parts, knock)):
        knocked = _logits(model, parts, _last_stream(model, reading, parts)).softmax(-1)
    top = knocked.topk(k)
    return Knocked(
        model.shown_each([answer])[0],
        list(zip(model.shown_each(top.indices.tolist()), top.values.tolist())),
        before,
        float(knocked[answer]),
        -math.log(before),
        -float(torch.log(knocked[answer].clamp_min(1e-30))),
    )


def _last_stream(model: Encoder, reading: Reading, parts: Anatomy) -> torch.Tensor:
    """(D,) the last block's output at the answer position (what the model's head reads)."""
    found: list[torch.Tensor] = []

    def after(module: Any, args: tuple, output: Any) -> None:
        found.append(_tensor(output)[0, reading.at])

    with _hooks([(parts.layers[-1], after, "post")]):
        parts.trunk(**reading.inputs)
    return found[-1]


@torch.inference_mode()
def head_effects(
    model: Encoder, text: str, mode: Mode = "zero", on_progress: Callable[[float], object] | None = None
) -> tuple[np.ndarray, str, float]:
    """(L, H) the change in log P(answer) when each head alone is knocked out (negative: the head helped),
    from batched passes (row r: head r knocked out); the answer and log P(answer) intact. `on_progress`
    hears the share done after each pass."""
    parts, reading = anatomy(model), read(model, text)
    intact = _logits(model, parts, _last_stream(model, reading, parts)).log_softmax(-1)
    answer = int(intact.argmax())
    n_layers, n_heads = len(parts.layers), parts.heads
    effects = np.zeros(n_layers * n_heads)
    found: list[torch.Tensor] = []

    def after(module: Any, args: tuple, output: Any) -> None:
        found.append(_tensor(output)[:, reading.at])

    for start in range(0, n_layers * n_heads, HEAD_ROWS):
        rows = list(range(start, min(start + HEAD_ROWS, n_layers * n_heads)))
        inputs = {k: v.expand(len(rows), *v.shape[1:]) for k, v in reading.inputs.items()}
        masks = [torch.zeros(len(rows), n_heads, dtype=torch.bool) for _ in range(n_layers)]
        for i, r in enumerate(rows):
            masks[r // n_heads][i, r % n_heads] = True
        hooks: list[Hook] = [(parts.heads_out[i], _heads_hook(parts, masks[i], mode), "pre") for i in range(n_layers)]
        with _hooks([*hooks, (parts.layers[-1], after, "post")]):
            parts.trunk(**inputs)
        logp = _logits(model, parts, found.pop()).log_softmax(-1)[:, answer]
        effects[rows] = (logp - intact[answer]).cpu().numpy()
        if on_progress is not None:
            on_progress(rows[-1] / (n_layers * n_heads - 1) if n_layers * n_heads > 1 else 1.0)
    return effects.reshape(n_layers, n_heads), model.shown_each([answer])[0], float(intact[answer])


# -- one token's path through a block ---------------------------------------------------------------
@dataclass(frozen=True)
class Neuron:
    index: int
    activation: float  # its value at the token (after the MLP's nonlinearity)
    promotes: list[str]  # the words its output vector points to, read through the unembedding (Geva et al. 2022)


@dataclass(frozen=True)
class BlockPath:
    tokens: list[str]
    token: int
    layer: int
    width: int  # D: the stream's size
    expansion: int  # the MLP's hidden size (4 x D in BERT and GPT-2; 1,536 for MiniLM's 384)
    stream_in: np.ndarray  # (D,) the stream entering the block at the token
    attention: np.ndarray  # (D,) what the heads' output layer adds (before a BERT's LayerNorm)
    mlp: np.ndarray  # (D,) what the MLP adds (before a BERT's LayerNorm)
    stream_out: np.ndarray  # (D,) the stream leaving the block
    neurons: list[Neuron]  # the most active MLP neurons at the token
    post_norm: bool  # BERT: out = LN(LN(in + attention) + mlp), not in + attention + mlp

    @staticmethod
    def cosine(a: np.ndarray, b: np.ndarray) -> float:
        return float(a @ b / max(float(np.linalg.norm(a) * np.linalg.norm(b)), 1e-12))


PROMOTED_KEPT = 4096  # neurons whose promoted words are kept (a class's sentences light up the same few)
_PROMOTED: dict[tuple[str, int, int, int, int], list[str]] = {}  # (model, its unembedding, layer, neuron, words)


def _neuron_vectors(module: Any, neurons: list[int]) -> torch.Tensor:
    """(k, D): the output vectors of the MLP neurons `neurons` (nn.Linear keeps (D, F), GPT-2's Conv1D (F, D)).
    A linear layer with its adapter beside it (the served masked LM) adds the adapter's part to those columns
    alone: its whole weight merged for five neurons, on every token's path, took about half as long as the
    class's lenses' head products (a profile of Inside the model under thirty learners, docs/measurements.md)."""
    if isinstance(module, LowRankAdded):
        index = torch.tensor(neurons, device=module.down.device)
        return (module.base.weight[:, index].float() + module.up @ module.down[:, index]).T
    index = torch.tensor(neurons, device=module.weight.device)
    return module.weight[:, index].T if isinstance(module, torch.nn.Linear) else module.weight[index]


@torch.inference_mode()
def block_path(model: Encoder, text: str, layer: int, token: int, k: int = 5, words: int = 5) -> BlockPath:
    """One token's path through block `layer`: the stream in, what attention and the MLP add, the stream
    out, and the `k` most active MLP neurons with the `words` each promotes."""
    parts, reading = anatomy(model), read(model, text)
    if not 0 <= layer < len(parts.layers):
        raise ValueError(f"layer {layer} is not one of the model's {len(parts.layers)}")
    if not 0 <= token < len(reading.tokens):
        raise ValueError(f"token {token} is not one of the text's {len(reading.tokens)}")
    seen: dict[str, torch.Tensor] = {}

    def keep(name: str, of_input: bool = False) -> Callable[..., Any]:
        def hook(module: Any, args: tuple, rest: Any) -> None:
            source = (_hidden_in(args, rest) if name == "in" else _tensor(args[0])) if of_input else _tensor(rest)
            seen[name] = source[0, token].float()

        return hook

    block = parts.layers[layer]
    with _hooks(
        [
            (block, keep("in", True), "pre"),
            (parts.heads_out[layer], keep("attention"), "post"),
            (parts.mlp[layer], keep("mlp"), "post"),
            (parts.mlp_down[layer], keep("neurons", True), "pre"),
            (block, keep("out"), "post"),
        ]
    ):
        parts.trunk(**reading.inputs)
    return _block_path(model, parts, reading.tokens, token, layer, seen, k, words)


@torch.inference_mode()
def path_from_pass(model: Encoder, text: str, layer: int, found: AnswerPass, k: int = 5, words: int = 5) -> BlockPath:
    """block_path at the answer position, from the text's AnswerPass (no forward pass of its own)."""
    parts, reading = anatomy(model), read(model, text)
    if not 0 <= layer < len(parts.layers):
        raise ValueError(f"layer {layer} is not one of the model's {len(parts.layers)}")
    seen = {"in": found.streams[layer], "attention": found.attention[layer], "mlp": found.mlp[layer]}
    seen |= {"out": found.streams[layer + 1], "neurons": found.neurons[layer]}
    return _block_path(model, parts, reading.tokens, reading.at, layer, seen, k, words)


def _block_path(
    model: Encoder,
    parts: Anatomy,
    tokens: list[str],
    token: int,
    layer: int,
    seen: dict[str, torch.Tensor],
    k: int,
    words: int,
) -> BlockPath:
    """The BlockPath from what a pass saw at the token: in, attention, mlp, out (D,) and neurons (F,)."""
    acts = seen["neurons"]
    top = acts.topk(min(k, len(acts)))
    indices = top.indices.tolist()

    def key(i: int) -> tuple[str, int, int, int, int]:
        return (model.name, id(parts.unembedding), layer, i, words)

    # A neuron's words come from its weights alone: read once per server. Those not read yet go through the
    # head in one product, its 49,152 x 576 weights read once and not once a neuron (five neurons on one
    # thread: 25 ms against 55; the same words, to float rounding)
    if missing := [i for i in indices if key(i) not in _PROMOTED]:
        rows = _neuron_vectors(parts.mlp_down[layer], missing).to(parts.unembedding.dtype)
        promoted = torch.nn.functional.linear(rows, parts.unembedding).topk(words, dim=1).indices
        for i, ids in zip(missing, promoted.tolist(), strict=True):
            if len(_PROMOTED) >= PROMOTED_KEPT:
                _PROMOTED.pop(next(iter(_PROMOTED)))
            _PROMOTED[key(i)] = model.shown_each(ids)
    neurons = [Neuron(i, a, _PROMOTED[key(i)]) for i, a in zip(indices, top.values.tolist(), strict=True)]
    return BlockPath(
        tokens,
        token,
        layer,
        int(seen["in"].shape[0]),
        int(acts.shape[0]),
        seen["in"].cpu().numpy(),
        seen["attention"].cpu().numpy(),
        seen["mlp"].cpu().numpy(),
        seen["out"].cpu().numpy(),
        neurons,
        parts.post_norm,
    )


# -- the tuned lens ---------------------------------------------------------------------------------
class TunedLens(torch.nn.Module):
    """Belrose et al. (2023): one affine map per layer, stream h -> h + A h + b, before the model's own head,
    trained so that each layer's reading matches the model's final distribution (train_lens). A and b start
    at zero, where it is the logit lens; the last layer keeps them at zero (its reading is the answer)."""

    def __init__(self, layers: int, width: int) -> None:
        super().__init__()
        self.a = torch.nn.Parameter(torch.zeros(layers + 1, width, width))
        self.b = torch.nn.Parameter(torch.zeros(layers + 1, width))

    def forward(self, layer: int, h: torch.Tensor) -> torch.Tensor:
        if layer == len(self.b) - 1:
            return h
        return h + h @ self.a[layer].T.to(h.dtype) + self.b[layer].to(h.dtype)

    def each_layer(self, states: torch.Tensor) -> torch.Tensor:
        """(L + 1, ..., D) every layer's streams (one text's or a class's) through that layer's map, in one
        batched product: one small product per layer and text took a tenth of a class's lenses."""
        flat = states.reshape(len(states), -1, states.shape[-1])
        moved = torch.baddbmm(self.b[:, None].to(flat.dtype), flat, self.a.transpose(1, 2).to(flat.dtype)) + flat
        moved[-1] = flat[-1]  # the last layer's reading is the answer
        return moved.reshape(states.shape)


@torch.inference_mode()
def tuned_lens(model: Encoder, lens: TunedLens, text: str, k: int = 5) -> Lens:
    """logit_lens with each layer's stream mapped by `lens` before the head reads it."""
    parts, reading = anatomy(model), read(model, text)
    return _lens_rows(model, parts, reading, residual_streams(model, reading, parts)[:, reading.at], k, lens)


def load_lens(folder: Path, layers: int, width: int) -> TunedLens:
    """A lens saved by model_zoo.training.train_lens.save (fp16 files, one or more layers' maps each)."""
    from safetensors.torch import load_file

    lens = TunedLens(layers, width)
    with torch.no_grad():
        for path in sorted(folder.glob("lens-*.safetensors")):
            for name, tensor in load_file(str(path)).items():
                kind, layer = name.split(".")
                getattr(lens, kind)[int(layer)] = tensor.float()
    return lens


# -- what the learner's numbers show ----------------------------------------------------------------
def settles_at(lens: Lens) -> int:
    """The first layer from which the final answer stays first to the end (the last layer at the latest)."""
    layer = len(lens.rows) - 1
    while layer > 0 and lens.rows[layer - 1].answer_rank == 1:
        layer -= 1
    return layer


@torch.inference_mode()
def answer_attention(model: Encoder, text: str) -> np.ndarray:
    """(L, H, T) each head's attention weights from the answer position over the text's tokens."""
    parts, reading = anatomy(model), read(model, text)
    out = parts.trunk(**reading.inputs, output_attentions=True)
    return np.stack([layer[0, :, reading.at].float().cpu().numpy() for layer in out.attentions])


@dataclass(frozen=True)
class WeightAndEffect:
    """Every head's attention weight next to its effect on the answer (Jain & Wallace 2019 against
    Wiegreffe & Pinter 2019: is a weight an explanation?)."""

    weight: np.ndarray  # (L, H) the largest weight from the answer position on any token but the first
    effect: np.ndarray  # (L, H) |change in log P(answer)| when the head alone is knocked out
    spearman: float  # rank correlation of the two over every head (nan where either is constant)
    small: int  # heads whose knock-out moves P(answer) by less than SMALL_CHANGE (Michel et al. 2019)
    heads: int


SMALL_CHANGE = 0.10  # a 10% change of P(answer): less than this, the head "can go"


def weight_and_effect(effects: np.ndarray, attention: np.ndarray) -> WeightAndEffect:
    """`effects` (L, H) from head_effects, `attention` (L, H, T) from answer_attention. The first token is
    left out of the weights: most heads park attention there (the sink) without reading anything."""
    from scipy.stats import spearmanr

    weight = attention[:, :, 1:].max(-1) if attention.shape[-1] > 1 else attention[:, :, 0]
    effect = np.abs(effects)
    flat_w, flat_e = weight.ravel(), effect.ravel()
    rho = float("nan") if flat_w.std() == 0 or flat_e.std() == 0 else float(spearmanr(flat_w, flat_e).statistic)
    small = int((np.abs(np.expm1(effects)) < SMALL_CHANGE).sum())
    return WeightAndEffect(weight, effect, rho, small, effects.size)


THIRDS = ("first", "middle", "last", "only_last")  # where in the depth an answer settles (the lesson's question)


def depth_third(layer: int, layers: int) -> str:
    """Which part of a model's depth layer `layer` (0: the embeddings, `layers`: the last block) lies in:
    "only_last" where it is the last block itself, else the first, middle or last third of the blocks."""
    if layer >= layers:
        return "only_last"
    return THIRDS[min(2, 3 * max(layer - 1, 0) // layers)]
