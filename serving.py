"""The cache layer: every st.cache_resource / st.cache_data wrapper of the app lives here.

Models load once per process and are shared by every session (thirty students on one
server share one copy). model_zoo stays free of Streamlit; pages call these helpers.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import streamlit as st

import model_zoo
from model_zoo import Availability, Model, ModelUnavailable
from model_zoo.attention import HeadSummary, QueryKey
from model_zoo.word2vec import EpochReport, TrainSettings


@st.cache_resource(max_entries=8, show_spinner=False)
def load_model(name: str) -> Model:
    """The loaded model `name`, shared by every session; raises ModelUnavailable."""
    return model_zoo.load(name)


def model_or_fallback(name: str) -> tuple[Model, ModelUnavailable | None]:
    """`name` if it can be had, else its card's offline fallback together with the reason.

    The caller shows the reason on the page: a swap is never silent.
    """
    try:
        return load_model(name), None
    except ModelUnavailable as err:
        if err.fallback is None:
            raise
        return load_model(err.fallback), err


@st.cache_data(ttl=30, show_spinner=False)
def availabilities() -> dict[str, Availability]:
    """Availability of every registered model (re-read every 30 s: a prefetch shows up)."""
    return {card.name: model_zoo.availability(card) for card in model_zoo.list_models()}


def ready_or(preferred: str, otherwise: str) -> str:
    """`preferred` where its weights are on this machine (a prefetched classic), else `otherwise`."""
    return preferred if availabilities()[preferred].ready else otherwise


def static_model(name: str) -> tuple[model_zoo.StaticModel, ModelUnavailable | None]:
    """A static model by name (or its offline fallback, with the reason)."""
    model, unavailable = model_or_fallback(name)
    assert isinstance(model, model_zoo.StaticModel)
    return model, unavailable


@st.cache_data(max_entries=256, show_spinner=False)
def analogy(model_name: str, a: str, b: str, c: str, topn: int) -> list[tuple[str, float]]:
    model = load_model(model_name)
    assert isinstance(model, model_zoo.StaticModel)
    return model.analogy(a, b, c, topn)


@st.cache_data(max_entries=64, show_spinner=False)
def word_map(model_name: str, words: tuple[str, ...], method: str, seed: int = 0) -> np.ndarray:
    """2-D positions of `words` (all in the vocabulary) by PCA or UMAP: (len(words), 2)."""
    from model_zoo.projection import project_2d

    model = load_model(model_name)
    assert isinstance(model, model_zoo.StaticModel)
    vectors = np.stack([model.vector(w) for w in words])
    return project_2d(vectors, "umap" if method == "umap" else "pca", seed)


@st.cache_data(max_entries=256, show_spinner=False)
def neighbours(model_name: str, word: str, topn: int) -> list[tuple[str, float]]:
    model = load_model(model_name)
    assert isinstance(model, model_zoo.StaticModel)
    return model.most_similar(word, topn)


# Few entries: one encoding of a long text by a deep model holds tens of MB of states.
@st.cache_data(max_entries=16, show_spinner=False)
def hidden_states(model_name: str, text: str) -> model_zoo.Encoding:
    """Tokens and every layer's vectors of `text`, without attention weights."""
    model = load_model(model_name)
    assert isinstance(model, model_zoo.Encoder)
    return model.encode(text, attentions=False)


@st.cache_data(max_entries=16, show_spinner=False)
def pair_states(model_name: str, text_a: str, text_b: str) -> model_zoo.Encoding:
    """A sentence pair as BERT reads it ([CLS] A [SEP] B [SEP]), without attention weights."""
    model = load_model(model_name)
    assert isinstance(model, model_zoo.Encoder)
    return model.encode(text_a, text_b, attentions=False)


@st.cache_data(show_spinner=False)
def model_sizes() -> list:
    """BERT-base, BERT-large, the original Transformer encoder and MiniLM-L6, computed from configs.

    A classic in the Hugging Face cache is read from its own config; else from assets/configs.
    """
    from transformers import AutoConfig

    from model_zoo.architecture import size_from_config, size_from_json
    from model_zoo.registry import ASSETS, cached_file, get_card, package_file

    sizes = []
    for name in ("bert-base-uncased", "bert-large-uncased"):
        card = get_card(name)
        cached = cached_file(card.hub_repo or "", "config.json")
        if cached is not None:
            sizes.append(size_from_config(name, AutoConfig.from_pretrained(str(cached.parent))))
        else:
            sizes.append(size_from_json(name, ASSETS / "configs" / f"{name}.json"))
    sizes.append(size_from_json("Transformer (2017) encoder", ASSETS / "configs" / "transformer-base-encoder.json"))
    minilm = package_file(get_card("minilm-l6"))
    if minilm is not None:
        sizes.append(size_from_config("minilm-l6", AutoConfig.from_pretrained(str(minilm))))
    return sizes


@st.cache_data(max_entries=256, show_spinner=False)
def fill_mask(model_name: str, text: str, top_k: int) -> list[list[tuple[str, float]]]:
    model = load_model(model_name)
    assert isinstance(model, model_zoo.MaskedLM)
    return model.fill_mask(text, top_k)


@st.cache_data(max_entries=256, show_spinner=False)
def next_words(model_name: str, text: str, top_k: int) -> list[tuple[str, float]]:
    model = load_model(model_name)
    assert isinstance(model, model_zoo.CausalLM)
    return model.next_words(text, top_k)


# -- attention ----------------------------------------------------------------------------
VIEW_TOKENS = 48  # bertviz draws every token and every head: beyond this the view is unreadable and slow


@st.cache_data(max_entries=16, show_spinner=False)
def attention_view(model_name: str, text: str, text_b: str | None) -> model_zoo.Encoding:
    """The first VIEW_TOKENS tokens of `text` (and `text_b`) with every head's attention."""
    model = load_model(model_name)
    assert isinstance(model, model_zoo.Encoder)
    return model.encode(text, text_b, attentions=True, max_length=VIEW_TOKENS)


@st.cache_data(max_entries=16, show_spinner=False)
def bertviz_page(model_name: str, text: str, text_b: str | None, view: str, title: str) -> str:
    """bertviz's head or model view of `text` as a standalone page that fetches nothing."""
    from components.attention_view import build_bertviz_html

    encoding = attention_view(model_name, text, text_b)
    assert encoding.attentions is not None
    b_start = int(encoding.segment_ids.argmax()) if text_b is not None and encoding.segment_ids.any() else None
    return build_bertviz_html(
        "head" if view == "head" else "model", encoding.tokens, encoding.attentions, b_start, title
    )


@st.cache_data(max_entries=64, show_spinner=False)
def head_summary(model_name: str, texts: tuple[str | tuple[str, str], ...]) -> HeadSummary:
    """Clark et al.'s measures of every head, averaged over `texts` (the whole text, up to the model's limit)."""
    from model_zoo.attention import head_summary as summarise

    model = load_model(model_name)
    assert isinstance(model, model_zoo.Encoder)
    return summarise(model, list(texts))


@st.cache_data(max_entries=64, show_spinner=False)
def query_key(model_name: str, text: str, text_b: str | None, layer: int, head: int) -> QueryKey:
    """One head's queries, keys and attention, recomputed from the weights (first VIEW_TOKENS tokens)."""
    from model_zoo.attention import query_key as compute

    model = load_model(model_name)
    assert isinstance(model, model_zoo.Encoder)
    return compute(model, text, layer, head, text_b, max_length=VIEW_TOKENS)


@st.cache_resource
def _training_gate() -> threading.Semaphore:
    """One word2vec training at a time per server: thirty clicks must not starve the CPU."""
    return threading.Semaphore(1)


@dataclass(frozen=True)
class TrainedWord2Vec:
    """A word2vec model trained in this session, with how it was made and how good it is."""

    model: model_zoo.StaticModel
    settings: TrainSettings
    watch: str
    seconds: float
    agreement: float  # nearest neighbour in the same WordNet class, among frequent words
    glove_agreement: float  # the same measure for GloVe on the same words
    chance: float  # what random vectors would score
    quality_words: int


def train_word2vec(settings: TrainSettings, watch: str, on_epoch: Callable[[EpochReport], None]) -> TrainedWord2Vec:
    """Train on the shipped corpus (waiting for a free slot first) and measure the result."""
    from model_zoo import lexicon
    from model_zoo.word2vec import class_agreement
    from model_zoo.word2vec import train_word2vec as train

    with _training_gate():
        start = time.perf_counter()
        model = train(lexicon.corpus(), settings, watch=watch, on_epoch=on_epoch)
        seconds = time.perf_counter() - start
    classes = lexicon.word_classes()
    words = [w for w in model.kv.index_to_key[:3000] if w in classes]
    glove = load_model("glove-6b-50d")
    assert isinstance(glove, model_zoo.StaticModel)
    shares = Counter(classes[w] for w in words).values()
    return TrainedWord2Vec(
        model=model,
        settings=settings,
        watch=watch,
        seconds=seconds,
        agreement=class_agreement(model, classes, words),
        glove_agreement=class_agreement(glove, classes, words),
        chance=sum((n / len(words)) ** 2 for n in shares),
        quality_words=len(words),
    )
