"""A decoder made into a masked LM, as LLM2Vec does (BehnamGhader et al., 2024).

SmolLM2-135M was pre-trained left to right on trillions of tokens: it knows everyday English far
better than any encoder ContextLab can pre-train on two CPU cores. LLM2Vec's recipe turns such a
decoder into an encoder that reads both sides of every word:

1. **Bidirectional attention.** The causal mask is replaced by one that lets every token see every
   other token of its text (padding excepted): `bidirectional_mask`.
2. **Masked next-token prediction (MNTP).** Some tokens are replaced by a mask token, and the model
   predicts each one *from the position before it*, so the language-model head keeps the job it was
   trained for (position i - 1 predicts token i). A short training with LoRA adapters teaches the
   layers to use the right-hand context they can now see (`model_zoo.training.train_mntp`).

ContextLab adds a `[MASK]` token (one trained embedding vector, shipped beside the adapters) and
starts every text with `<|endoftext|>`, SmolLM2's document separator, so that the first word too
has a position before it to be predicted from.

Shapes as in contextual.py: B texts, T tokens, D width, V the vocabulary.
"""

from __future__ import annotations

import copy
import threading
import weakref
from functools import cached_property
from pathlib import Path
from typing import Any

import torch

from .contextual import Encoder, MaskedLM, Reader, sharing_weights
from .onednn import bf16_wanted, serve_in_bf16

MASK = "[MASK]"
START = "<|endoftext|>"  # SmolLM2's document separator: the position before a text's first word
ADAPTER = "adapter_model.safetensors"  # peft's own file name: `PeftModel.from_pretrained` reads the folder
MASK_VECTOR = "mask_embedding.safetensors"  # the [MASK] token's input embedding, (D,)


def mlm_tokenizer(tokenizer: Any) -> Any:
    """A copy of a byte-level BPE tokenizer that knows `[MASK]` and starts every text with START.

    `[MASK]` takes the space before it (lstrip), as the masked token " france" carries its own
    space: "capital of [MASK]." reads as Ġof, [MASK], '.'. The new token's id is the vocabulary size V.
    """
    from tokenizers import AddedToken
    from tokenizers.processors import TemplateProcessing

    tok = copy.deepcopy(tokenizer)
    tok.add_special_tokens({"mask_token": AddedToken(MASK, lstrip=True, special=True, normalized=False)})
    start_id = tok.convert_tokens_to_ids(START)
    tok.backend_tokenizer.post_processor = TemplateProcessing(
        single=f"{START} $A",
        pair=f"{START} $A {START} $B:1",
        special_tokens=[(START, start_id)],
    )
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def reader_tokenizer(tokenizer: Any) -> Any:
    """`mlm_tokenizer`'s, for a span reader: "START question START passage START". The closing START is
    where a reader puts "no answer", as BERT's readers use the closing [SEP] (start there, end on the
    first token); offsets are trimmed of the byte-level space, so an answer's characters are its words'
    alone (" gravity" covers "gravity")."""
    from tokenizers.processors import ByteLevel, Sequence, TemplateProcessing

    tok = mlm_tokenizer(tokenizer)
    start_id = tok.convert_tokens_to_ids(START)
    tok.backend_tokenizer.post_processor = Sequence(
        [
            ByteLevel(trim_offsets=True),
            TemplateProcessing(
                single=f"{START} $A {START}",
                pair=f"{START} $A {START} $B:1 {START}:1",
                special_tokens=[(START, start_id)],
            ),
        ]
    )
    return tok


def bidirectional_mask(attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(B, T) 1/0 padding mask -> (B, 1, T, T) additive mask: every token sees every real token of its
    text, none sees padding. transformers passes a 4D mask through unchanged, to eager and SDPA alike."""
    keep = attention_mask[:, None, None, :].bool()  # (B, 1, 1, T)
    blocked = torch.zeros(keep.shape, dtype=dtype, device=attention_mask.device)
    blocked = blocked.masked_fill(~keep, torch.finfo(dtype).min)
    return blocked.expand(-1, 1, attention_mask.shape[1], -1)


def with_mask_row(model: Any, vector: torch.Tensor) -> Any:
    """Give the vocabulary one more input row, the [MASK] embedding (id V). The output head is tied to
    the same matrix, so it gains a logit for [MASK] too, which `BidirectionalLM` never offers. A model that
    shares its weights with another (served_mntp: the causal LM's) keeps them unchanged (_own_vocabulary)."""
    _own_vocabulary(model)
    size = model.get_input_embeddings().weight.shape[0]
    model.resize_token_embeddings(size + 1, mean_resizing=False)
    with torch.no_grad():
        model.get_input_embeddings().weight[size] = vector.to(model.get_input_embeddings().weight.dtype)
    return model


def load_mntp(causal_dir: Path, trained_dir: Path) -> tuple[Any, Any]:
    """The causal LM in `causal_dir` with ContextLab's MNTP adapters (merged into its weights) and
    [MASK] vector from `trained_dir`: (model, tokenizer), eager attention (it can return weights)."""
    from peft import PeftModel
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = AutoModelForCausalLM.from_pretrained(str(causal_dir), attn_implementation="eager")
    model = PeftModel.from_pretrained(base, str(trained_dir)).merge_and_unload()
    model = with_mask_row(model, load_file(str(trained_dir / MASK_VECTOR))["mask"])
    return model, mlm_tokenizer(AutoTokenizer.from_pretrained(str(causal_dir)))


# The models loaded for serving, while anything uses them: the causal LMs (GPT's pages) and the masked LMs made
# from them, which read the causal LM's weights (_weights_of keeps a causal LM while a masked LM or reader reads it)
_served_causal: weakref.WeakValueDictionary[tuple[str, bool], Any] = weakref.WeakValueDictionary()
_served_mntp: weakref.WeakValueDictionary[tuple[str, str, bool], Any] = weakref.WeakValueDictionary()
_weights_of: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_served_lock = threading.RLock()


def served_causal(causal_dir: Path, bf16: bool) -> Any:
    """The causal LM in `causal_dir` (eager attention), loaded once per process while it is in use: GPT's pages
    read it, and the masked LM made from it (`served_mntp`) reads its weights. Only for serving: nothing may
    change the model. With `bf16` its linear layers but the output head multiply in bf16 (`serve_in_bf16`)."""
    from transformers import AutoModelForCausalLM

    key = (str(Path(causal_dir).resolve()), bf16)
    with _served_lock:
        model = _served_causal.get(key)
        if model is None:
            model = AutoModelForCausalLM.from_pretrained(str(causal_dir), attn_implementation="eager")
            if bf16:
                serve_in_bf16(model)  # nothing shares the model yet
            _served_causal[key] = model
        return model


def served_mntp(causal_dir: Path, trained_dir: Path) -> tuple[Any, Any]:
    """`load_mntp`, loaded once per process while it is in use: the masked LM page and the reader built on
    it (`load_mntp_reader`) read the same weights. Only for serving: nothing may change the model.

    Its decoder is the causal LM's own (`served_causal`: the same tensors GPT's pages read), each linear layer
    with its MNTP adapter added beside it (`LowRankAdded`), not merged in: merged, a worker held SmolLM2's
    linear weights twice (about 425 MB more in fp32). Beside them, the adapters' products (rank 16) add about
    4.5% of the multiply-adds (the masked LM's fifteen sentences on one thread, median 1.21-1.35 s merged,
    1.37-1.38 s beside; the same first guesses, docs/measurements.md).
    Only its input embeddings are its own (they gain the [MASK] row). Where `onednn.bf16_wanted()` (a class's
    server on a CPU that multiplies bf16 natively), the shared linear layers multiply in bf16 and the output
    head stays fp32."""
    from peft import PeftModel
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    bf16 = bf16_wanted()
    key = (str(Path(causal_dir).resolve()), str(Path(trained_dir).resolve()), bf16)
    with _served_lock:
        model = _served_mntp.get(key)
        if model is None:
            causal = served_causal(causal_dir, bf16)
            model = PeftModel.from_pretrained(sharing_weights(causal), str(trained_dir)).get_base_model()
            model = with_mask_row(with_low_rank_layers(model), load_file(str(trained_dir / MASK_VECTOR))["mask"])
            _weights_of[model] = causal
            _served_mntp[key] = model
    return model, mlm_tokenizer(AutoTokenizer.from_pretrained(str(causal_dir)))


def reader_from_mntp(causal_dir: Path, trained_dir: Path) -> tuple[Any, Any]:
    """A span reader on the decoder made a masked LM (`load_mntp`): transformers' QuestionAnswering
    model of its architecture (the decoder stack, then a linear layer giving each token a start and an
    end score), the stack's weights those of the masked LM, the start/end layer new. (model, tokenizer)."""
    from transformers import AutoModelForQuestionAnswering

    masked, tokenizer = load_mntp(causal_dir, trained_dir)
    reader = AutoModelForQuestionAnswering.from_config(masked.config, attn_implementation="eager")
    reader.base_model.load_state_dict(masked.base_model.state_dict())
    return reader, reader_tokenizer(tokenizer)


def _own_vocabulary(model: Any) -> None:
    """`model`'s input embeddings (and the output head tied to them) on a parameter of its own, over the same
    tensor: transformers resizes the matrix in place (a parameter's data), which would grow any model sharing
    that parameter too (a copy of the causal LM would give it the [MASK] row)."""
    embeddings, head = model.get_input_embeddings(), model.get_output_embeddings()
    tied = head is not None and head.weight is embeddings.weight
    old = embeddings.weight
    embeddings.weight = torch.nn.Parameter(old.detach(), requires_grad=old.requires_grad)
    if tied:
        head.weight = embeddings.weight


def load_mntp_reader(causal_dir: Path, mntp_dir: Path, reader_dir: Path) -> tuple[Any, Any]:
    """The served reader: the masked LM's weights (`served_mntp`, shared with the Masked LM page's and so with
    the causal LM's) with the reader's trained adapters and start/end layer (`reader_dir`, as `train_qa --base`
    exports them) added beside them, not merged in. Merging would write another full copy of SmolLM2 into each
    worker (about 540 MB); unmerged, each linear layer adds its low-rank products (the masked LM's and the
    reader's, one product of their ranks together) to the shared one. (model, tokenizer)."""
    from peft import PeftModel
    from transformers import AutoModelForQuestionAnswering

    masked, tokenizer = served_mntp(causal_dir, mntp_dir)
    reader = AutoModelForQuestionAnswering.from_config(masked.config, attn_implementation="eager")
    # the masked LM's decoder, its layers as the causal LM has them (peft adds the reader's adapters to plain
    # linear layers), its own [MASK]-row embeddings
    setattr(reader, reader.base_model_prefix, sharing_weights(_weights_of[masked].base_model))
    reader.base_model.set_input_embeddings(masked.get_input_embeddings())
    reader = with_low_rank_layers(PeftModel.from_pretrained(reader, str(reader_dir)).get_base_model())
    stack = reader.base_model
    for name, added in masked.base_model.named_modules():
        if isinstance(added, LowRankAdded):
            layer = stack.get_submodule(name)
            if isinstance(layer, LowRankAdded):  # both updates in one: [A_masked; A_reader], [B_masked, B_reader]
                layer.down = torch.cat([added.down, layer.down])
                layer.up = torch.cat([added.up, layer.up], 1)
            else:
                parent, _, child = name.rpartition(".")
                setattr(stack.get_submodule(parent), child, LowRankAdded(layer, added.down, added.up))
    _weights_of[reader] = masked  # the masked LM (and its causal LM) live as long as a reader holds their weights
    return reader, reader_tokenizer(tokenizer)


class LowRankAdded(torch.nn.Module):
    """A linear layer plus a trained low-rank update kept beside it: base(x) + (x A^T) B^T, the update
    added in place (one small product, one addmm). peft's own LoRA layer computes the same with a
    scaling multiply and an add over the whole output, each a new tensor: 30 passages a pass read about
    25% slower unmerged through it than merged, against a few per cent here."""

    down: torch.Tensor
    up: torch.Tensor

    def __init__(self, base: torch.nn.Linear, down: torch.Tensor, up: torch.Tensor) -> None:
        super().__init__()
        self.base = base
        # Buffers, not parameters: the update is another way of storing this layer's weights (merged, the
        # same count), so the reader counts the parameters the models panel gives it. They move with .to().
        self.register_buffer("down", down, persistent=False)  # (r, in)
        self.register_buffer("up", up, persistent=False)  # (out, r), the LoRA scaling folded in

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.base(x)
        low = torch.nn.functional.linear(x, self.down)
        if torch.is_grad_enabled():
            return out + torch.nn.functional.linear(low, self.up)
        flat = out.view(-1, out.shape[-1])
        flat.addmm_(low.reshape(-1, low.shape[-1]), self.up.t())
        return out


def with_low_rank_layers(model: Any) -> Any:
    """`model` with each of peft's (unmerged, single-adapter, plain) LoRA linear layers turned into a
    `LowRankAdded` over the same base layer and weights; any other module as it was."""
    from peft.tuners.lora import Linear as LoraLinear

    for name, found in list(model.named_modules()):
        if not isinstance(found, LoraLinear) or found.merged or len(found.active_adapters) != 1:
            continue
        layer: Any = found  # peft's layers are typed loosely
        (adapter,) = layer.active_adapters
        if adapter in layer.lora_variant or adapter not in layer.lora_A:
            continue
        down = layer.lora_A[adapter].weight.detach().float()  # fp32 whatever the base layer's dtype
        up = layer.lora_B[adapter].weight.detach().float() * layer.scaling[adapter]
        parent = model.get_submodule(name.rpartition(".")[0]) if "." in name else model
        setattr(parent, name.rpartition(".")[2], LowRankAdded(layer.base_layer, down, up))
    return model


def save_adapters(model: Any, out: Path, base: str) -> None:
    """peft's adapter folder for `model` in `out`, as ContextLab ships one: the adapters (and any module
    trained whole, such as a reader's start/end layer) in fp16, never the embeddings (none is trained; peft
    would save them whole where the vocabulary grew by [MASK]), `base` named as the model they sit on, and
    peft's blank model card left out."""
    import json

    from safetensors.torch import load_file, save_file

    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out), save_embedding_layers=False)
    (out / "README.md").unlink(missing_ok=True)
    config = json.loads((out / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = base
    if config.get("modules_to_save"):  # peft lists the start/end layer twice for a model loaded to train on
        config["modules_to_save"] = list(dict.fromkeys(config["modules_to_save"]))
    (out / "adapter_config.json").write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
    save_file({k: v.half().contiguous() for k, v in load_file(str(out / ADAPTER)).items()}, str(out / ADAPTER))


def never_offered(tokenizer: Any) -> list[int]:
    """Ids never offered for a blank: [MASK], the special tokens, pieces that are only whitespace
    (a bare space or newline reads as an empty guess) and bytes of a character cut in the middle
    (a Chinese character is often several byte-level tokens: alone, each reads as "\ufffd")."""
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
    blank = [i for i, text in enumerate(texts) if not text.strip() or "\ufffd" in text]
    return sorted({*blank, *tokenizer.all_special_ids})


class ReadsBothWays(Encoder):
    """A decoder whose every token sees its whole text: no segment ids, the padding mask made
    bidirectional (`bidirectional_mask`), for every forward pass the encoder makes."""

    fine_tune_from_probe = True  # see Encoder.fine_tune_from_probe

    def model_inputs(self, batch: Any) -> dict[str, torch.Tensor]:
        inputs = {k: v.to(self.device) for k, v in batch.items() if k != "token_type_ids"}
        inputs["attention_mask"] = bidirectional_mask(inputs["attention_mask"], self.model.dtype)
        return inputs


class BidirectionalLM(ReadsBothWays, MaskedLM):
    """A decoder turned masked LM (LLM2Vec): bidirectional attention, and the word at a [MASK] read
    from the language-model head one position earlier. Serves the pages exactly as a BERT does."""

    @torch.inference_mode()
    def logits_of(self, batch: Any, rows: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits for the tokens at (rows, positions), read one position earlier: (N, V)."""
        states = self.fast_base(**self.model_inputs(batch)).last_hidden_state  # (B, T, D)
        picked = states[rows.to(self.device), positions.to(self.device) - 1]  # (N, D)
        logits = self.fast_model.lm_head(picked).float()  # (N, V + 1)
        logits[:, self._never] = -torch.inf
        return logits

    @cached_property
    def _never(self) -> torch.Tensor:
        with self._tokenizer_lock:
            return torch.tensor(never_offered(self.tokenizer), device=self.device)

    def logits_at(self, batch: Any, positions: torch.Tensor) -> torch.Tensor:
        return self.logits_of(batch, torch.zeros_like(positions), positions)

    def _guesses(self, logits: torch.Tensor, top_k: int) -> list[list[tuple[str, float]]]:
        """As MaskedLM's, with the byte-level space marker gone: ' france' reads 'france'. A word the
        vocabulary holds with and without its leading space (' bank' after a space, 'bank' glued on as
        in 'riverbank') is one guess for the blank, its two probabilities summed, not the same word
        twice."""
        out: list[list[tuple[str, float]]] = []
        for row in super()._guesses(logits, 2 * top_k):  # each word can take two of the top places
            merged: dict[str, float] = {}
            for word, p in row:
                merged[word.strip()] = merged.get(word.strip(), 0.0) + p
            out.append(sorted(merged.items(), key=lambda g: -g[1])[:top_k])
        return out


class BidirectionalReader(ReadsBothWays, Reader):
    """A decoder made a masked LM, then fine-tuned as a span reader (`train_qa --base`): read as BERT's
    readers are, "no answer" on the closing START (`reader_tokenizer`)."""
