"""load(name_or_path): one entry point for registered models and local checkpoints."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import pieces
from .bidirectional import BidirectionalLM, BidirectionalReader, load_mntp_reader, served_causal, served_mntp
from .contextual import CausalLM, Encoder, MaskedLM, Reader
from .device import select_device
from .elmo import OPTIONS, WEIGHTS, ElmoModel, load_elmo
from .errors import BadCheckpoint, ModelUnavailable, ModelZooError
from .onednn import bf16_wanted, serve_in_bf16
from .registry import (
    ModelCard,
    _offline_forced,
    availability,
    cache_root,
    cached_file,
    download_dir,
    get_card,
    hub_reachable,
    offline_forced_reason,
    package_file,
    trained_file,
)
from .static import StaticModel

if TYPE_CHECKING:
    import torch

Model = StaticModel | Encoder | ElmoModel  # MaskedLM and CausalLM are Encoders

log = logging.getLogger(__name__)

UNREACHABLE = "not in the Hugging Face cache, and the Hugging Face Hub cannot be reached from this machine"
_MLM_SUFFIXES = ("ForPreTraining", "ForMaskedLM")
_CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")
QA_HEAD = ("qa_outputs.weight", "qa_outputs.bias")  # what every reader's trained weights must hold


def load(name_or_path: str | os.PathLike[str], device: str | None = None) -> Model:
    """Load a registered model by name, or a local checkpoint folder.

    A folder may hold a transformers checkpoint (config.json: its `architectures` decide
    encoder, masked LM or causal LM), a single .gguf file (a causal LM), a gensim
    KeyedVectors file (.kv / .model), or an ELMo biLM (AllenNLP's options.json +
    weights.hdf5). Raises ModelUnavailable for a registered model whose weights are not
    here and cannot be downloaded now.
    """
    path = Path(name_or_path)
    with _LOADING:
        try:
            if path.is_dir():
                return _load_folder(path, device)
            return _load_card(get_card(str(name_or_path)), device)
        except ModelZooError:
            raise
        except DAMAGED as err:  # a weights file cut short or overwritten: one sentence, never a traceback
            problem = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
            raise BadCheckpoint(name_or_path, f"its files are damaged or unreadable ({problem})") from err


def _damaged() -> tuple[type[BaseException], ...]:
    """What reading a damaged checkpoint raises: the OS, numpy/json (ValueError), torch (RuntimeError),
    safetensors' own error, a missing tensor (KeyError), a file cut short (EOFError)."""
    from safetensors import SafetensorError

    return (OSError, ValueError, RuntimeError, KeyError, EOFError, SafetensorError)


DAMAGED = _damaged()


# One load at a time in a process. transformers builds a model's skeleton on the meta device through
# process-wide switches (torch's default device, patched init functions): two threads loading at once
# (a fresh server whose students open different pages) corrupt each other's models ("Cannot copy out
# of meta tensor") and can race transformers' lazy imports. Loads are CPU-bound anyway, so taking
# turns costs a waiting page little. Re-entrant: a loader may load another model inside.
_LOADING = threading.RLock()


def _load_card(card: ModelCard, device: str | None) -> Model:
    state = availability(card)
    if state.status in ("coming", "missing"):
        raise ModelUnavailable(card.name, state.reason, card.fallback, status=state.status)
    if card.kind == "elmo":
        if not state.ready:  # AllenNLP's files come from outside the Hub: `python -m model_zoo prefetch`
            raise ModelUnavailable(card.name, state.reason, card.fallback, status=state.status)
        return _load_elmo_card(card, device)
    if card.package is not None:
        location = package_file(card)
        assert location is not None
        if card.kind == "static":
            return StaticModel.from_glove_package(card.name, location)
        if card.trained and location.suffix == ".gguf":
            return _load_mntp(card, location, device)
        if card.trained:
            return _load_trained(card, location, device)
        if location.suffix == ".gguf":
            return _load_gguf(card.name, location, device)
        return _load_transformers(card.name, str(location), _kind_of(location), device)
    assert card.hub_repo is not None
    if card.kind == "static":
        local = _hub_snapshot(card)
        return StaticModel.from_gensim_file(card.name, local / card.hub_files[0])
    return _load_transformers(card.name, card.hub_repo, card.kind, device, card=card)


def _load_folder(path: Path, device: str | None) -> Model:
    if (path / "config.json").exists():
        return _load_transformers(path.name, str(path), _kind_of(path), device)
    ggufs = sorted(path.glob("*.gguf"))
    if len(ggufs) == 1:
        return _load_gguf(path.name, ggufs[0], device)
    kvs = sorted([*path.glob("*.kv"), *path.glob("*.model")])
    if len(kvs) == 1:
        return StaticModel.from_gensim_file(path.name, kvs[0])
    if (path / OPTIONS).exists() and pieces.exists(path / WEIGHTS):
        return load_elmo(path, device=device)
    raise FileNotFoundError(
        f"{path} holds no config.json (transformers checkpoint), no single .gguf file, no single "
        f"gensim .kv/.model file and no {OPTIONS} + {WEIGHTS} (an ELMo biLM): nothing ContextLab knows how to load."
    )


def _load_elmo_card(card: ModelCard, device: str | None) -> ElmoModel:
    """A registered ELMo: weights ContextLab trained (under assets/), or AllenNLP's files once prefetched."""
    folder = trained_file(card).parent if card.trained else download_dir(card)
    return load_elmo(folder, name=card.name, device=device)


def masked_lm_from_encoder(encoder_dir: Path, attn_implementation: str = "eager") -> Any:
    """BertForMaskedLM with an encoder's weights and a fresh head, its decoder tied to the word embeddings."""
    from transformers import BertForMaskedLM

    model = _with_fresh_head(BertForMaskedLM, encoder_dir, attn_implementation)
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    return model


def reader_from_encoder(encoder_dir: Path, attn_implementation: str = "eager") -> Any:
    """BertForQuestionAnswering with an encoder's weights and a fresh start/end layer."""
    from transformers import BertForQuestionAnswering

    return _with_fresh_head(BertForQuestionAnswering, encoder_dir, attn_implementation)


def _with_fresh_head(cls: Any, encoder_dir: Path, attn_implementation: str) -> Any:
    from transformers.utils import logging as hf_logging

    # The encoder's checkpoint has no task head by design: transformers' "missing weights"
    # report would only alarm whoever reads the server log.
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        return cls.from_pretrained(str(encoder_dir), attn_implementation=attn_implementation)
    finally:
        hf_logging.set_verbosity(verbosity)


# The matrix a trained masked LM leaves as the encoder shipped it: its decoder reads it too.
FROZEN = "bert.embeddings.word_embeddings.weight"


def trained_state(model: Any) -> dict[str, torch.Tensor]:
    """Every weight of a BertForMaskedLM but the frozen word embeddings (and the decoder tied to them)."""
    state = model.state_dict()
    tied = {k for k, v in state.items() if v.data_ptr() == state[FROZEN].data_ptr()}
    return {k: v.detach().contiguous() for k, v in state.items() if k not in tied}


def masked_lm_with_trained_weights(encoder_dir: Path, weights: Path) -> Any:
    """The encoder's checkpoint with every weight ContextLab trained replaced from `weights` (fp16 ok)."""
    return load_trained_weights(masked_lm_from_encoder(encoder_dir), weights)


def load_trained_weights(model: Any, weights: Path) -> Any:
    """Put `weights` (a file of trained_state's keys, any float dtype) into `model`; refuse a file
    made for another model, naming what is missing or extra."""
    shipped = _shipped(weights)
    expected = trained_state(model)
    if set(shipped) != set(expected):
        missing, extra = sorted(set(expected) - set(shipped)), sorted(set(shipped) - set(expected))
        raise ValueError(f"{weights} does not fit this model: missing {missing[:5]}, unexpected {extra[:5]}")
    model.load_state_dict({k: v.to(expected[k].dtype) for k, v in shipped.items()}, strict=False)
    return model


def _shipped(weights: Path) -> dict[str, Any]:
    """The tensors of a safetensors file ContextLab shipped, whole or in pieces (model_zoo.pieces)."""
    from safetensors.torch import load

    return load(pieces.read_bytes(weights))


def load_partial_weights(model: Any, weights: Path, required: tuple[str, ...] = QA_HEAD) -> Any:
    """Put `weights` (the tensors a training changed, any float dtype) into `model`, leaving the rest
    as loaded; refuse a file made for another model, naming what does not fit."""
    shipped = _shipped(weights)
    state = model.state_dict()
    unknown = sorted(k for k in shipped if k not in state or shipped[k].shape != state[k].shape)
    missing = [k for k in required if k not in shipped]
    if unknown or missing:
        raise ValueError(f"{weights} does not fit this model: missing {missing[:5]}, unexpected {unknown[:5]}")
    model.load_state_dict({k: v.to(state[k].dtype) for k, v in shipped.items()}, strict=False)
    return model


def _load_trained(card: ModelCard, encoder_dir: Path, device: str | None) -> MaskedLM | Reader:
    """An offline encoder further trained by ContextLab (weights shipped in assets/): a masked LM, or a
    reader for extractive question answering."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(encoder_dir))
    if card.kind == "qa":
        reader = load_partial_weights(reader_from_encoder(encoder_dir), trained_file(card))
        return Reader(card.name, reader, tokenizer, select_device(device))
    model = masked_lm_with_trained_weights(encoder_dir, trained_file(card))
    return MaskedLM(card.name, model, tokenizer, select_device(device))


def _load_mntp(card: ModelCard, gguf: Path, device: str | None) -> BidirectionalLM | BidirectionalReader:
    """A GGUF decoder ContextLab made into a masked LM (adapters and [MASK] vector under assets/), or a
    reader ContextLab fine-tuned on top of that masked LM (`builds_on`; its own adapters under assets/)."""
    if card.kind == "qa":
        assert card.builds_on is not None
        masked = trained_file(get_card(card.builds_on)).parent
        model, tokenizer = load_mntp_reader(gguf_checkpoint(gguf), masked, trained_file(card).parent)
        return BidirectionalReader(card.name, model, tokenizer, select_device(device))
    model, tokenizer = served_mntp(gguf_checkpoint(gguf), trained_file(card).parent)
    return BidirectionalLM(card.name, model, tokenizer, select_device(device))


def _kind_of(path: Path) -> str:
    """encoder / masked_lm / causal_lm / qa, from the checkpoint's declared architectures."""
    architectures = json.loads((path / "config.json").read_text()).get("architectures") or []
    for arch in architectures:
        if arch.endswith("ForQuestionAnswering"):
            return "qa"
        if arch.endswith(_MLM_SUFFIXES):
            return "masked_lm"
        if arch.endswith(_CAUSAL_SUFFIXES):
            return "causal_lm"
    return "encoder"


# A transformers checkpoint's kind -> the class that serves it; any other kind has no loader here.
_CLASSES: dict[str, type[Encoder]] = {"encoder": Encoder, "masked_lm": MaskedLM, "causal_lm": CausalLM, "qa": Reader}


def _load_transformers(
    name: str, source: str, kind: str, device: str | None, card: ModelCard | None = None, bf16: bool = False
) -> Encoder:
    """The one path every transformers checkpoint takes, local folder or Hub repository. With `bf16`, its
    linear layers but the output head multiply in bf16 (`onednn.serve_in_bf16`)."""
    from transformers import (
        AutoModel,
        AutoModelForCausalLM,
        AutoModelForMaskedLM,
        AutoModelForPreTraining,
        AutoModelForQuestionAnswering,
        AutoTokenizer,
    )

    if kind not in _CLASSES:
        raise ValueError(f"{name}: no transformers loader for a model of kind {kind!r} (known: {sorted(_CLASSES)})")
    auto: Any = {
        "encoder": AutoModel,
        "masked_lm": AutoModelForPreTraining,
        "causal_lm": AutoModelForCausalLM,
        "qa": AutoModelForQuestionAnswering,
    }[kind]
    # Eager attention: the fused kernels (SDPA, flash) do not return attention weights.
    kwargs = {"attn_implementation": "eager"}
    try:
        model, tokenizer = _from_pretrained(auto, AutoTokenizer, source, kwargs, card)
    except ValueError:
        if auto is not AutoModelForPreTraining:
            raise
        # Some masked LMs (DistilBERT, RoBERTa) register only a ForMaskedLM class.
        model, tokenizer = _from_pretrained(AutoModelForMaskedLM, AutoTokenizer, source, kwargs, card)
    cls = _CLASSES[kind]
    if bf16:
        serve_in_bf16(model)  # before the fused twin shares its layers
    return cls(name, model, _padding(tokenizer), select_device(device))


def _padding(tokenizer: Any) -> Any:
    """`tokenizer` with a pad token: GPT-2 style tokenizers have none, and batching needs one (their end token)."""
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _from_pretrained(
    auto: Any, tok: Any, source: str, kwargs: dict[str, Any], card: ModelCard | None
) -> tuple[Any, Any]:
    if card is None:
        return auto.from_pretrained(source, **kwargs), tok.from_pretrained(source)
    # A classic: from its snapshot folder in the cache when its files are there, with no network at all
    # (given the repository's name, even with local_files_only, transformers asks the Hub for an adapter
    # file and retries for about 25 s on a machine without internet); else the Hub if it can be reached.
    snapshot = _cached_snapshot(card)
    if snapshot is not None:
        try:
            return auto.from_pretrained(str(snapshot), **kwargs), tok.from_pretrained(str(snapshot))
        except OSError:
            pass
    _require_hub(card)
    try:
        return auto.from_pretrained(source, **kwargs), tok.from_pretrained(source)
    except OSError as err:
        raise ModelUnavailable(card.name, _short_reason(err), card.fallback) from err


def _cached_snapshot(card: ModelCard) -> Path | None:
    """The folder of the Hugging Face cache that holds every file `card` needs, or None."""
    assert card.hub_repo is not None
    found = [cached_file(card.hub_repo, f) for f in card.hub_files]
    return None if not found or None in found else found[0].parent  # type: ignore[union-attr]


def _hub_snapshot(card: ModelCard) -> Path:
    from huggingface_hub import snapshot_download

    assert card.hub_repo is not None
    try:
        return Path(snapshot_download(card.hub_repo, allow_patterns=card.download_patterns, local_files_only=True))
    except Exception:  # noqa: BLE001 - any cache miss means "try the network"
        pass
    _require_hub(card)
    try:
        return Path(snapshot_download(card.hub_repo, allow_patterns=card.download_patterns))
    except Exception as err:  # noqa: BLE001 - network errors come in many classes
        raise ModelUnavailable(card.name, _short_reason(err), card.fallback) from err


def _require_hub(card: ModelCard) -> None:
    if _offline_forced():
        raise ModelUnavailable(card.name, offline_forced_reason(card), card.fallback)
    if not hub_reachable():
        raise ModelUnavailable(card.name, UNREACHABLE, card.fallback)


def _load_gguf(name: str, path: Path, device: str | None) -> Encoder:
    """A GGUF causal LM, dequantised by transformers (converted once: `gguf_checkpoint`). On a class's server
    with bf16 products (`onednn.bf16_wanted`) its linear layers multiply in bf16, as the masked LM's do: the
    GPT lessons' figures in bf16 are measured beside fp32's by model_zoo.training.measure_bf16."""
    from transformers import AutoTokenizer

    checkpoint = gguf_checkpoint(path)
    # the causal LM the masked LM made from it reads too (served_causal: one copy of the weights a process)
    model = served_causal(checkpoint, bf16_wanted(device))
    return CausalLM(name, model, _padding(AutoTokenizer.from_pretrained(str(checkpoint))), select_device(device))


def gguf_checkpoint(path: Path) -> Path:
    """A plain transformers checkpoint of the GGUF model at `path`, converted once and kept.

    Converting the GGUF file (tokenizer included) takes about 20 s on two cores; the converted
    checkpoint is saved under CONTEXTLAB_CACHE and loads in about a second. Where the cache cannot
    be written (a read-only home), it goes to a temporary folder for this process.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    stat = path.stat()
    key = hashlib.sha1(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:12]
    converted = cache_root() / "gguf" / f"{path.stem}-{key}"
    if (converted / "config.json").exists():
        return converted
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, attn_implementation="eager")
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    # The weights are already dequantised to float32; forget the GGUF quantiser so that
    # save_pretrained writes a plain checkpoint.
    model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    try:
        tmp = converted.with_name(f"{converted.name}.tmp{os.getpid()}-{uuid.uuid4().hex[:8]}")
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        tmp.rename(converted)
    except OSError as err:
        if (converted / "config.json").exists():  # another process or thread got there first
            return converted
        log.warning("could not cache the converted GGUF model at %s: %s", converted, err)
        converted = Path(tempfile.mkdtemp(prefix="contextlab-gguf-"))
        model.save_pretrained(converted)
        tokenizer.save_pretrained(converted)
    return converted


def _short_reason(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    lowered = text.lower()
    if any(s in lowered for s in ("connect", "resolve", "network", "offline", "timed out", "unreachable")):
        return UNREACHABLE
    return text[:200]
