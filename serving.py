"""The cache layer: every st.cache_resource / st.cache_data wrapper of the app lives here.

Models load once per process and are shared by every session (thirty students on one
server share one copy). model_zoo stays free of Streamlit; pages call these helpers.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import streamlit as st

import model_zoo
from model_zoo import Availability, ModelUnavailable

if TYPE_CHECKING:  # importing this module must not import torch: the home page only reads availability
    import model_zoo.senses
    from model_zoo import Model
    from model_zoo.attention import HeadSummary, QueryKey
    from model_zoo.word2vec import EpochReport, TrainSettings

T = TypeVar("T")


@st.cache_resource(max_entries=8, show_spinner=False)
def load_model(name: str) -> Model:
    """The loaded model `name`, shared by every session; raises ModelUnavailable."""
    return model_zoo.load(name)


WARM = ("glove-6b-50d", "minilm-l6")  # the models most pages open with


@st.cache_resource(show_spinner=False)
def warm_up() -> threading.Thread | None:
    """Once per server, in the background: load the default models.

    The first visitor's next page then finds them loaded (torch import + loads take ~7 s
    on 2 cores). load_model is cache_resource: a page asking for a model being loaded
    waits for this load, never starts a second. UMAP is not compiled here (12 s of CPU
    that would slow the first page); the pages open on PCA or precomputed maps.
    CONTEXTLAB_WARMUP=0 turns it off (the test suite does).
    """
    import os

    if os.environ.get("CONTEXTLAB_WARMUP", "1") == "0":
        return None

    def work() -> None:
        for name in WARM:
            try:
                load_model(name)
            except model_zoo.ModelZooError:
                pass  # the page that needs it will say why

    thread = threading.Thread(target=work, name="contextlab-warm-up", daemon=True)
    thread.start()
    return thread


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


@st.cache_resource
def _slow_results() -> tuple[OrderedDict, threading.Lock, dict[tuple, threading.Lock]]:
    """Results that take seconds and draw a progress bar while computed (head summaries,
    encoded sense sets), shared by every session, least recently used dropped first; with
    one lock per result being computed. Not st.cache_data: the progress bar must not be
    replayed on a cache hit (Streamlit refuses to replay it into another run's layout)."""
    return OrderedDict(), threading.Lock(), {}


SLOW_RESULTS = 128


def _shared(key: tuple, compute: Callable[[], T]) -> T:
    """`compute()` once per server for `key` (see _slow_results). Sessions asking while it
    runs wait for it: thirty students opening one page start one computation, not thirty."""
    store, lock, computing = _slow_results()
    with lock:
        if key in store:
            store.move_to_end(key)
            return store[key]
        gate = computing.setdefault(key, threading.Lock())
    with gate:  # one session computes; the others wait here, then find its result
        with lock:
            if key in store:
                return store[key]
        try:
            value = compute()
            with lock:
                store[key] = value
                while len(store) > SLOW_RESULTS:
                    store.popitem(last=False)
        finally:  # stored first: a session arriving now finds the value, or (after an error) computes
            with lock:
                computing.pop(key, None)
    return value


def head_summary(
    model_name: str, texts: tuple[str | tuple[str, str], ...], on_progress: Callable[[float], None] | None = None
) -> HeadSummary:
    """Clark et al.'s measures of every head, averaged over `texts` (the whole text, up to the model's limit)."""
    from model_zoo.attention import head_summary as summarise

    def compute() -> HeadSummary:
        model = load_model(model_name)
        assert isinstance(model, model_zoo.Encoder)
        return summarise(model, list(texts), on_progress)

    return _shared(("head summary", model_name, texts), compute)


@st.cache_data(max_entries=64, show_spinner=False)
def query_key(model_name: str, text: str, text_b: str | None, layer: int, head: int) -> QueryKey:
    """One head's queries, keys and attention, recomputed from the weights (first VIEW_TOKENS tokens)."""
    from model_zoo.attention import query_key as compute

    model = load_model(model_name)
    assert isinstance(model, model_zoo.Encoder)
    return compute(model, text, layer, head, text_b, max_length=VIEW_TOKENS)


# -- word senses ---------------------------------------------------------------------------
def sense_vectors(
    model_name: str, word: str, on_progress: Callable[[float], None] | None = None
) -> model_zoo.senses.SenseVectors:
    """`word`'s vector in every sentence of the shipped set, at every layer of contextual
    model `model_name` (encoded once, kept on disk across restarts)."""
    from model_zoo import senses

    def compute() -> senses.SenseVectors:
        model = load_model(model_name)
        assert isinstance(model, model_zoo.Encoder)
        folder = model_zoo.cache_root() / "senses"
        return senses.cached_sense_vectors(model, senses.load_senses()[word], folder, on_progress)

    return _shared(("sense vectors", model_name, word), compute)


@st.cache_data(max_entries=256, show_spinner=False)
def sense_measures(model_name: str, word: str) -> model_zoo.senses.LayerMeasures:
    """Per-layer sense accuracy and Ethayarajh's similarities of `word` in `model_name`."""
    from model_zoo import senses

    return senses.layer_measures(sense_vectors(model_name, word), senses.load_senses()[word].senses)


@st.cache_data(max_entries=256, show_spinner=False)
def sense_map(
    model_name: str,
    word: str,
    layer: int,
    method: str,
    extra: tuple[float, ...] | None,
    seed: int,
    neighbours: int,
    min_dist: float,
) -> np.ndarray:
    """2-D positions of the word's uses at `layer` (and of one extra vector, last): (n [+1], 2)."""
    from model_zoo.projection import pca_2d, umap_2d

    vectors = sense_vectors(model_name, word).vectors[:, layer]
    if extra is not None:
        vectors = np.vstack([vectors, np.asarray(extra, dtype=vectors.dtype)[None]])
    if method == "umap":
        return umap_2d(vectors, seed, n_neighbors=neighbours, min_dist=min_dist)
    return pca_2d(vectors)


@st.cache_data(max_entries=64, show_spinner=False)
def own_sentence_vector(model_name: str, sentence: str, word: str) -> np.ndarray:
    """The word's vector in the learner's own sentence at every layer of a contextual model: (layers, dim)."""
    model = load_model(model_name)
    assert isinstance(model, model_zoo.Encoder)
    return model.word_vectors([sentence], word)[0]


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
