"""The cache layer: every st.cache_resource / st.cache_data wrapper of the app lives here.

Models load once per process and are shared by every session (thirty students on one
server share one copy). model_zoo stays free of Streamlit; pages call these helpers. What holds
a class without needing Streamlit (batching, the shared memo, gates, low-priority threads, the
warm-up thread) is serving.runtime.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import streamlit as st

import model_zoo
from model_zoo import Availability, ModelUnavailable
from model_zoo.lessons import cloze
from model_zoo.words import fits_uncut

from .runtime import (
    TRAINING_NICE,
    Line,
    Memo,
    MicroBatcher,
    Together,
    Trainer,
    Writers,
    freeze_startup_objects,
    gate,
    low_priority_threads,
    start_warm_up,
)

if TYPE_CHECKING:  # importing this module must not import torch: the home page only reads availability
    import model_zoo.lessons.architecture
    import model_zoo.lessons.generation
    import model_zoo.lessons.masking
    import model_zoo.lessons.probing
    import model_zoo.lessons.projection
    import model_zoo.lessons.senses
    import model_zoo.lessons.tasks
    import model_zoo.lessons.transfer
    import model_zoo.lessons.transfer_record
    import model_zoo.lessons.why_mask
    from model_zoo import Model
    from model_zoo.contextual import Guess
    from model_zoo.lessons.attention import HeadSummary, QueryKey
    from model_zoo.lessons.generation import Step
    from model_zoo.lessons.tasks import TrainedHead
    from model_zoo.lessons.word2vec import EpochReport, Quality, TrainSettings

T = TypeVar("T")
M = TypeVar("M")
__all__ = ["TRAINING_NICE", "MicroBatcher"]  # re-exported: the runtime's names as pages and tests know them


@st.cache_resource(max_entries=8, show_spinner=False)
def load_model(name: str) -> Model:
    """The loaded model `name`, shared by every session; raises ModelUnavailable."""
    model = model_zoo.load(name)
    freeze_startup_objects()
    return model


WARM = ("glove-6b-50d", "minilm-l6")  # the models most pages open with
# Seconds between the server's first page run and the warm-up. Importing torch holds Python's
# GIL for long stretches and, with the model loads, takes both cores: begun during the first
# run, it slows that page's script and its browser (fetching and compiling the chart code).
WARM_DELAY_S = 4.0
_pause = time.sleep  # the warm-up's wait (a test holds it to see that nothing loads before)


@st.cache_resource(show_spinner=False)
def warm_up(delay_s: float = WARM_DELAY_S) -> threading.Thread | None:
    """Once per server, in the background after `delay_s`: load the default models.

    app.py calls this after the first page has run. The first visitor's next page then finds
    the models loaded (torch import + loads take seconds on 2 cores). load_model is
    cache_resource: a page asking for a model being loaded waits for this load, never starts a
    second. UMAP is not compiled here (seconds of CPU that would slow the first page); the pages
    open on PCA or precomputed maps. CONTEXTLAB_WARMUP=0 turns it off (the test suite does).
    """
    import os

    if os.environ.get("CONTEXTLAB_WARMUP", "1") == "0":
        return None
    return start_warm_up(lambda name: load_model(name), WARM, delay_s, lambda seconds: _pause(seconds))


def loaded(name: str, kind: type[M]) -> M:
    """load_model(name), checked to be a `kind` (StaticModel, Encoder, MaskedLM, CausalLM).

    A page asks serving for what a model can do; a model that cannot do it is one sentence
    (MissingCapability), not an AssertionError deep in the cache layer."""
    model = load_model(name)
    if not isinstance(model, kind):
        raise model_zoo.MissingCapability(name, kind.__name__, f"it is a {type(model).__name__}")
    return model


def contextual(name: str) -> model_zoo.Contextual:
    """loaded(name, ...) for any model that gives a vector per token at every layer (an encoder, an
    LM, ELMo): model_zoo.Contextual, a runtime-checkable Protocol that mypy will not take as a type[M]."""
    return loaded(name, model_zoo.Contextual)  # type: ignore[type-abstract]


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


def default_for(role: str) -> str:
    """The model a lesson opens on for `role` (model_zoo.registry.ROLES): the classic once prefetched,
    else the offline model that stands in for it."""
    from model_zoo.registry import ROLES

    return ready_or(ROLES[role].classic, ROLES[role].offline)


def static_model(name: str) -> tuple[model_zoo.StaticModel, ModelUnavailable | None]:
    """A static model by name (or its offline fallback, with the reason)."""
    model, unavailable = model_or_fallback(name)
    assert isinstance(model, model_zoo.StaticModel)
    return model, unavailable


@st.cache_data(max_entries=256, show_spinner=False)
def analogy(model_name: str, a: str, b: str, c: str, top_k: int) -> list[tuple[str, float]]:
    model = loaded(model_name, model_zoo.StaticModel)
    return model.analogy(a, b, c, top_k)


@st.cache_data(max_entries=64, show_spinner=False)
def word_map(model_name: str, words: tuple[str, ...], method: str, seed: int = 0) -> np.ndarray:
    """2-D positions of `words` (all in the vocabulary) by PCA or UMAP: (len(words), 2)."""
    from model_zoo.lessons.projection import project_2d

    model = loaded(model_name, model_zoo.StaticModel)
    vectors = np.stack([model.vector(w) for w in words])
    return project_2d(vectors, "umap" if method == "umap" else "pca", seed)


@st.cache_data(max_entries=256, show_spinner=False)
def neighbours(model_name: str, word: str, top_k: int) -> list[tuple[str, float]]:
    model = loaded(model_name, model_zoo.StaticModel)
    return model.most_similar(word, top_k)


@st.cache_data(max_entries=256, show_spinner=False)
def suggestions(model_name: str, word: str, n: int) -> list[str]:
    """Vocabulary words spelled closest to `word` (a word the model does not have)."""
    return loaded(model_name, model_zoo.StaticModel).suggestions(word, n)


# Few entries: one encoding of a long text by a deep model holds tens of MB of states.
@st.cache_data(max_entries=16, show_spinner=False)
def hidden_states(model_name: str, text: str) -> model_zoo.Encoding:
    """Tokens and every layer's vectors of `text`, without attention weights (any contextual model)."""
    return _states_batcher(model_name)((text, None))


@st.cache_data(max_entries=16, show_spinner=False)
def pair_states(model_name: str, text_a: str, text_b: str) -> model_zoo.Encoding:
    """A sentence pair as BERT reads it ([CLS] A [SEP] B [SEP]), without attention weights."""
    loaded(model_name, model_zoo.Encoder)  # a model that reads no pairs says so in one sentence
    return _states_batcher(model_name)((text_a, text_b))


@st.cache_data(max_entries=256, show_spinner=False)
def read_texts(model_name: str, text_a: str, text_b: str | None = None) -> tuple[list[str], list[int]]:
    """The tokens pair_states (or, without `text_b`, hidden_states) reads, each with the text it is part of (0, 1),
    without a pass of the model (a diagram's labels; Encoder.read_texts)."""
    return loaded(model_name, model_zoo.Encoder).read_texts(text_a, text_b)


@st.cache_resource(show_spinner=False)
def _states_batcher(model_name: str) -> MicroBatcher[tuple[str, str | None], model_zoo.Encoding]:
    """Texts (and pairs) a class sends together, as BERT inputs' sentences, read in padded passes
    (encode_many: an encoder's, pairs too; ELMo's, single texts), not one pass per learner (the model looked up at
    each batch, as in _fill_mask_batcher)."""

    def run(items: list[tuple[str, str | None]]) -> list[model_zoo.Encoding]:
        texts = [text for text, _ in items]
        if any(pair is not None for _, pair in items):
            return loaded(model_name, model_zoo.Encoder).encode_many(texts, [pair for _, pair in items])
        return contextual(model_name).encode_many(texts)

    return MicroBatcher(run)


@st.cache_data(show_spinner=False)
def model_sizes() -> list[model_zoo.lessons.architecture.Size]:
    """The BERT inputs lesson's size table, computed from configs (model_zoo.lessons.architecture.lesson_sizes)."""
    from model_zoo.lessons.architecture import lesson_sizes

    return lesson_sizes()


GUESSES = 15  # the most guesses the Masked LM page shows a [MASK]: it asks fill_mask for this many, once a sentence


@st.cache_data(max_entries=256, show_spinner=False)
def fill_mask(model_name: str, text: str, top_k: int) -> list[list[tuple[str, float]]]:
    model = loaded(model_name, model_zoo.MaskedLM)
    model.check_masked(text)  # a learner's own mistake stays theirs: it never joins a batch
    return _fill_mask_batcher(model_name)((text, top_k))


@st.cache_data(max_entries=64, show_spinner=False)
def lesson_fill_mask(model_name: str, text: str, top_k: int) -> list[list[tuple[str, float]]]:
    """fill_mask for a lesson's own sentence (a predict-first moment's): the same for every learner, so computed
    once per server and model, not once per session and rerun."""
    return fill_mask(model_name, text, top_k)


@st.cache_resource(show_spinner=False)
def _fill_mask_batcher(model_name: str) -> MicroBatcher[tuple[str, int], list[list[tuple[str, float]]]]:
    """Sentences sent together share one pass. The model is looked up at each batch, not kept: a model
    load_model let go of (it keeps 8) is not held alive here."""

    def run(items: list[tuple[str, int]]) -> list[list[list[tuple[str, float]]]]:
        model = loaded(model_name, model_zoo.MaskedLM)
        if len(items) == 1:  # alone: the single-sentence path, which spares part of the last layer
            return [model.fill_mask(*items[0])]
        top_k = max(k for _, k in items)
        filled = model.fill_masks([text for text, _ in items], top_k)
        return [[guesses[:k] for guesses in each] for each, (_, k) in zip(filled, items)]

    return MicroBatcher(run)


@st.cache_data(max_entries=64, show_spinner=False)
def lesson_blank(model_name: str, text: str) -> cloze.LessonCheck | None:
    """For one of the lessons' own one-blank sentences, how the masked LM's guesses meet the answer the
    lesson names (None for any other text)."""
    answers = cloze.lesson_answers(text)
    if answers is None or text.count("[MASK]") != 1:
        return None
    return cloze.check(answers, fill_mask(model_name, text, GUESSES)[0])  # the page's own call, cached


@st.cache_data(max_entries=64, show_spinner=False)
def lesson_next_word(model_name: str, text: str) -> cloze.LessonCheck | None:
    """For a text whose next word a lesson names, where that word stands among the language model's
    guesses: an ELMo's whole vocabulary, or a GPT's 15 best tokens (None for any other text)."""
    answers = cloze.NEXT_WORDS_NAMED.get(text.strip())
    if answers is None:
        return None
    if model_zoo.get_card(model_name).family == "ELMo":
        elmo = loaded(model_name, model_zoo.ElmoModel)
        return cloze.check(answers, elmo.next_words(text, elmo.vocab_size))
    return cloze.check(answers, next_words(model_name, text, 15))


@st.cache_data(max_entries=64, show_spinner=False)
def lesson_next_ranks(model_name: str, text: str, words: tuple[str, ...]) -> dict[str, cloze.LessonCheck]:
    """Where an ELMo's forward LM puts each of `words` after a lesson's own `text` (a predict-first moment's),
    among its whole vocabulary: the same for every learner, so computed once per server and model."""
    elmo = loaded(model_name, model_zoo.ElmoModel)
    guesses = elmo.next_words(text, elmo.vocab_size)
    return {word: cloze.check(frozenset({word}), guesses) for word in words}


@st.cache_data(max_entries=256, show_spinner=False)
def next_words(model_name: str, text: str, top_k: int) -> list[tuple[str, float]]:
    loaded(model_name, model_zoo.CausalLM).check_text(text)  # a learner's own mistake never joins a batch
    return _next_words_batcher(model_name)((text, top_k))


@st.cache_resource(show_spinner=False)
def _next_words_batcher(model_name: str) -> MicroBatcher[tuple[str, int], list[tuple[str, float]]]:
    """The next tokens a class asks for together (the Playground, GPT's guess, a cloze check) in shared passes
    (CausalLM.next_words_many)."""
    return _top_guesses(model_name, lambda model, texts, k: model.next_words_many(texts, k))


Guesses = list[tuple[str, float]]


def _top_guesses(
    model_name: str, read: Callable[[model_zoo.CausalLM, list[str], int], list[Guesses]]
) -> MicroBatcher[tuple[str, int], Guesses]:
    """A batcher of (text, top_k) asks: `read` gives every text of a batch its guesses at once, as many as the
    batch's largest top_k (the model looked up at each batch, as in _fill_mask_batcher), each ask its top_k."""

    def run(items: list[tuple[str, int]]) -> list[Guesses]:
        most = max(k for _, k in items)
        found = read(loaded(model_name, model_zoo.CausalLM), [text for text, _ in items], most)
        return [guesses[:k] for guesses, (_, k) in zip(found, items, strict=True)]

    return MicroBatcher(run)


@st.cache_data(max_entries=256, show_spinner=False)
def next_sentence(model_name: str, a: str, b: str) -> float:
    """Probability that `b` follows `a`, from the model's NSP head."""
    model = loaded(model_name, model_zoo.MaskedLM)
    return model.next_sentence(a, b)


@st.cache_data(max_entries=128, show_spinner=False)
def pretraining_pair(model_name: str, a: str, b: str, seed: int) -> list[model_zoo.lessons.masking.PairLoss]:
    """BERT's two losses on the learner's pair (labelled IsNext) and on A with a sentence drawn at random from
    WordNet's examples (NotNext): next-sentence prediction as negative sampling of sentences."""
    import random

    from model_zoo.lessons.lexicon import examples
    from model_zoo.lessons.masking import pair_loss

    model = loaded(model_name, model_zoo.MaskedLM)
    pool = [s for s in examples() if s.strip() != b.strip()]
    negative = random.Random(seed).choice(pool)
    return [pair_loss(model, a, b, True, seed), pair_loss(model, a, negative, False, seed)]


@st.cache_data(max_entries=256, show_spinner=False)
def recipe_demo(model_name: str, text: str, seed: int) -> model_zoo.lessons.masking.RecipeDemo:
    """BERT's corruption of `text` (draw `seed`) with the model's guesses and loss."""
    from model_zoo.lessons.masking import recipe_demo as demo

    model = loaded(model_name, model_zoo.MaskedLM)
    return demo(model, text, seed)


@st.cache_data(max_entries=256, show_spinner=False)
def token_count(model_name: str, text: str, text_b: str | None = None) -> int:
    """How many tokens the model's tokenizer makes of `text` (and `text_b`), uncut."""
    model = contextual(model_name)
    return model.count_tokens(text, text_b)


def over_limit(model_name: str, text: str, text_b: str | None = None) -> int | None:
    """The model's token limit where `text` (and `text_b`) is longer than it reads, else None.

    A text that surely fits (model_zoo.words.fits_uncut: its UTF-8 bytes and SPECIAL_ROOM) is told without
    tokenizing it. Tokenizing takes the tokenizer's lock, which the class's fill-mask batch holds too:
    30 sessions on the Masked LM page waited p95 1.63-1.70 s with a tokenization each after their
    answer, 1.11-1.22 s without (make bench-load)."""
    model = contextual(model_name)
    if fits_uncut(model.max_length, text, text_b):
        return None
    return model.max_length if token_count(model_name, text, text_b) > model.max_length else None


@st.cache_data(max_entries=256, show_spinner=False)
def token_strings(model_name: str, text: str) -> list[str]:
    """`text`'s tokens as the model reads them, its special tokens included: the tokenizer only, no forward pass."""
    model = loaded(model_name, model_zoo.Encoder)
    return model.token_strings(model.tokenize(text, padding=False, return_tensors=None)["input_ids"])


@st.cache_data(max_entries=256, show_spinner=False)
def multi_piece_words(model_name: str, words: tuple[str, ...]) -> list[str]:
    """The words the model's tokenizer cuts into several pieces (em ##bed ##ding ##s)."""
    model = loaded(model_name, model_zoo.Encoder)
    return [w for w in words if len(model.pieces(w)) > 1]


@st.cache_data(max_entries=16, show_spinner=False)
def lesson_word_pieces(model_name: str, word: str) -> list[str]:
    """The pieces the model's tokenizer cuts a lesson's own word into (a predict-first moment's): the same for
    every learner, so computed once per server and model."""
    return loaded(model_name, model_zoo.Encoder).pieces(word)


@st.cache_data(max_entries=16, show_spinner=False)
def input_embeddings(model_name: str, text: str, text_b: str | None) -> model_zoo.lessons.architecture.InputEmbeddings:
    """BERT's three input embeddings of `text` (and `text_b`), term by term, from the model's weights."""
    from model_zoo.lessons.architecture import input_embeddings as parts

    model = loaded(model_name, model_zoo.Encoder)
    encoding = hidden_states(model_name, text) if text_b is None else pair_states(model_name, text, text_b)
    return parts(model, encoding.token_ids, encoding.segment_ids)


@st.cache_data(max_entries=64, show_spinner=False)  # a class's sentences: each guessed one reruns from here
def reorderings(model_name: str, text: str) -> list[model_zoo.lessons.architecture.Reordering]:
    """`text` fed with [CLS] last and with its words reversed, keeping or renumbering positions
    (model_zoo.lessons.architecture.reorderings): the top layer's cosine with the usual order."""
    from model_zoo.lessons.architecture import reorderings as reorder

    model = loaded(model_name, model_zoo.Encoder)
    return reorder(model, hidden_states(model_name, text).token_ids)


@st.cache_data(max_entries=64, show_spinner=False)
def word_vectors(model_name: str, texts: tuple[str, ...], word: str) -> np.ndarray:
    """`word`'s vector in each text at every layer: (texts, layers + 1, dim) (any contextual model)."""
    model = contextual(model_name)
    return model.word_vectors(list(texts), word)


@st.cache_data(max_entries=256, show_spinner=False)
def elmo_next_words(model_name: str, text: str, top_k: int) -> tuple[list[Guess], list[Guess], int]:
    """An ELMo biLM with its softmax: the forward LM's words after `text`, the backward LM's words
    before it, and the size of the vocabulary they are chosen from."""
    model = loaded(model_name, model_zoo.ElmoModel)
    return model.next_words(text, top_k), model.previous_words(text, top_k), model.vocab_size


# -- attention ----------------------------------------------------------------------------
VIEW_TOKENS = 48  # bertviz draws every token and every head: beyond this the view is unreadable and slow


@st.cache_data(max_entries=16, show_spinner=False)
def attention_view(model_name: str, text: str, text_b: str | None) -> model_zoo.Encoding:
    """The first VIEW_TOKENS tokens of `text` (and `text_b`) with every head's attention."""
    model = loaded(model_name, model_zoo.Encoder)
    # Two passes at a time: thirty of them at once (a class typing together) fight over the cores, each
    # with torch's own threads: Attention's p95 for 30 sessions 2.25 s, with the gate 1.3-1.4 s (make bench-load)
    with gate("attention encode", 2):
        return model.encode(text, text_b, attentions=True, max_length=VIEW_TOKENS)


@st.cache_data(max_entries=16, show_spinner=False)
def attention_page(
    model_name: str, text: str, text_b: str | None, view: str, title: str, _build: Callable[..., str]
) -> str:
    """A standalone HTML view of `text`'s attention, built once per input by `_build(view, tokens,
    attentions, b_start, title)` (the page passes components' bertviz builder; it is not part of the key)."""
    encoding = attention_view(model_name, text, text_b)
    assert encoding.attentions is not None
    b_start = int(encoding.segment_ids.argmax()) if text_b is not None and encoding.segment_ids.any() else None
    return _build(view, encoding.tokens, encoding.attentions, b_start, title)


SLOW_RESULTS = 128
SLOW = Memo(SLOW_RESULTS)  # results that take seconds and draw a progress bar (runtime.Memo): one per server


def _shared(key: tuple, compute: Callable[[], T]) -> T:
    """`compute()` once per server for `key`: sessions asking while it runs wait for it."""
    return SLOW.get(key, compute)


def _kept_even_if_left(
    key: tuple, work: Callable[[Callable[[object], None]], T], on_progress: Callable[[Any], object] | None
) -> T:
    """`work(report)` once per server for `key`, in a thread of its own (LIVE), its result kept (SLOW): everyone
    asking while it runs sees its reports (`on_progress`, in their own thread), and one who leaves stops only
    their own waiting. Every train-on-click button's work runs so. In the first presser's thread (`_shared`), a
    presser who clicked elsewhere during a two-minute fine-tuning ended the wait of the training they led,
    which went on in the trainer process for nobody: the next press queued a second one behind it (a training
    in the worker stopped instead, and the next press began it again); and those who pressed after the first
    saw no progress until the result was in."""
    found = SLOW.peek(key)
    if found is not None:
        return found  # type: ignore[return-value]
    report = (lambda _: None) if on_progress is None else on_progress
    return LIVE.run(("kept", key), lambda told: SLOW.get(key, lambda: work(told)), report)


def head_summary(
    model_name: str, texts: tuple[str | tuple[str, str], ...], on_progress: Callable[[float], object] | None = None
) -> HeadSummary:
    """Clark et al.'s measures of every head, averaged over `texts` (the whole text, up to the model's limit)."""
    from model_zoo.lessons.attention import head_summary as summarise

    def compute() -> HeadSummary:
        model = loaded(model_name, model_zoo.Encoder)
        return summarise(model, list(texts), on_progress)

    return _shared(("head summary", model_name, texts), compute)


@st.cache_data(max_entries=64, show_spinner=False)
def query_key(model_name: str, text: str, text_b: str | None, layer: int, head: int) -> QueryKey:
    """One head's queries, keys and attention, recomputed from the weights (first VIEW_TOKENS tokens)."""
    from model_zoo.lessons.attention import query_key as compute

    model = loaded(model_name, model_zoo.Encoder)
    return compute(model, text, layer, head, text_b, max_length=VIEW_TOKENS)


# -- word senses ---------------------------------------------------------------------------
def sense_vectors(
    model_name: str, word: str, on_progress: Callable[[float], object] | None = None
) -> model_zoo.lessons.senses.SenseVectors:
    """`word`'s vector in every sentence of the shipped set, at every layer of contextual
    model `model_name` (encoded once, kept on disk across restarts)."""
    from model_zoo.lessons import senses

    def compute() -> senses.SenseVectors:
        model = contextual(model_name)
        folder = model_zoo.cache_root() / "senses"
        return senses.cached_sense_vectors(model, senses.load_senses()[word], folder, on_progress)

    return _shared(("sense vectors", model_name, word), compute)


@st.cache_data(max_entries=256, show_spinner=False)
def sense_measures(model_name: str, word: str) -> model_zoo.lessons.senses.LayerMeasures:
    """Per-layer sense accuracy and Ethayarajh's similarities of `word` in `model_name`."""
    from model_zoo.lessons import senses

    return senses.layer_measures(sense_vectors(model_name, word), senses.load_senses()[word].senses)


@st.cache_data(max_entries=256, show_spinner=False)
def sense_map(
    model_name: str,
    word: str,
    layer: int,
    method: str,
    extra: bytes | None,
    seed: int,
    neighbours: int,
    min_dist: float,
) -> np.ndarray:
    """2-D positions of the word's uses at `layer` (and of one extra vector, last, as senses.own_point gives it):
    (n [+1], 2)."""
    from model_zoo.lessons.projection import umap_2d

    vectors = sense_vectors(model_name, word).vectors[:, layer]
    if extra is not None:
        vectors = np.vstack([vectors, np.frombuffer(extra, dtype=np.float64).astype(vectors.dtype)[None]])
    if method == "umap":
        return umap_2d(vectors, seed, n_neighbors=neighbours, min_dist=min_dist)
    # The axes are fitted once per server on the uses alone; a learner's sentence is placed on them.
    return sense_pca(model_name, word, layer).place(vectors)


def sense_pca(model_name: str, word: str, layer: int) -> model_zoo.lessons.projection.Pca2:
    """The PCA of `word`'s uses at `layer`, fitted once per server: the learner's sentence is placed on
    these axes (a projection of one point, no new fit), so thirty students typing at once cost thirty
    small products, not thirty SVDs fighting over the BLAS threads (which took a class 50 s a rerun)."""
    from model_zoo.lessons.projection import fit_pca_2d

    return _shared(
        ("sense pca", model_name, word, layer),
        lambda: fit_pca_2d(sense_vectors(model_name, word).vectors[:, layer]),
    )


@st.cache_data(max_entries=64, show_spinner=False)
def own_sentence_vector(model_name: str, sentence: str, word: str) -> np.ndarray:
    """The word's vector in the learner's own sentence at every layer of a contextual model: (layers, dim)."""
    return _word_vector_batcher(model_name)((sentence, word))


@st.cache_resource(show_spinner=False)
def _word_vector_batcher(model_name: str) -> MicroBatcher[tuple[str, str], np.ndarray]:
    """Own sentences sent together (a class on Word senses) are read in one pass per word (the model looked
    up at each batch, as in _fill_mask_batcher)."""

    def run(items: list[tuple[str, str]]) -> list[np.ndarray]:
        model = contextual(model_name)
        out: dict[int, np.ndarray] = {}
        for word in dict.fromkeys(w for _, w in items):
            where = [i for i, (_, w) in enumerate(items) if w == word]
            for i, vectors in zip(where, model.word_vectors([items[i][0] for i in where], word), strict=True):
                out[i] = vectors
        return [out[i] for i in range(len(items))]

    return MicroBatcher(run)


def _training_gate() -> Line:
    """One word2vec training at a time per server: thirty clicks must not starve the CPU."""
    return gate("word2vec training", 1)


@dataclass(frozen=True)
class TrainedWord2Vec:
    """A word2vec model trained in this session, with how it was made and how good it is."""

    model: model_zoo.StaticModel
    settings: TrainSettings
    watch: str
    seconds: float
    quality: Quality


LIVE = Together()  # live trainings: learners pressing Train with the same settings watch one training


def train_word2vec(
    settings: TrainSettings,
    watch: str,
    on_epoch: Callable[[EpochReport], None],
    on_wait: Callable[[int], object] | None = None,
) -> TrainedWord2Vec:
    """Train on the shipped corpus (waiting in line for a free slot first, `on_wait(trainings ahead)` told
    as the line moves) and measure the result. Learners who press with the same settings and word while
    it waits or runs join it: one training for them all, its place in line and every epoch shown to each."""
    from model_zoo.lessons import lexicon
    from model_zoo.lessons.word2vec import quality
    from model_zoo.lessons.word2vec import train_word2vec as train

    def work(report: Callable[[object], None]) -> TrainedWord2Vec:
        with _training_gate().place(_told_place(report)), low_priority_threads(thread_ends=True):  # Together's thread
            start = time.perf_counter()
            model = train(lexicon.corpus(), settings, watch=watch, on_epoch=report)
            seconds = time.perf_counter() - start
        glove = loaded("glove-6b-50d", model_zoo.StaticModel)
        return TrainedWord2Vec(model, settings, watch, seconds, quality(model, glove, lexicon.word_classes()))

    return LIVE.run(("word2vec", settings, watch), work, _place_or_progress(on_wait, on_epoch))


@dataclass(frozen=True)
class _Ahead:
    """A report of a shared training's place in line: the trainings ahead of it (its other reports are its
    progress, a number or an epoch)."""

    trainings: int


def _told_place(report: Callable[[object], None]) -> Callable[[int], None]:
    """A Line's `on_wait` for a shared training: its place in line among its reports, as an _Ahead."""
    return lambda ahead: report(_Ahead(ahead))


def _place_or_progress(
    on_wait: Callable[[int], object] | None, on_progress: Callable[[Any], object] | None
) -> Callable[[object], None]:
    """One watcher's share of a shared training's reports: its place in line to `on_wait`, the rest (progress, an
    epoch's report) to `on_progress`, each in the watcher's own thread."""

    def deliver(item: object) -> None:
        if isinstance(item, _Ahead):
            if on_wait is not None:
                on_wait(item.trainings)
        elif on_progress is not None:
            on_progress(item)

    return deliver


# -- probing -------------------------------------------------------------------------------------
@st.cache_data(max_entries=32, show_spinner=False)
def probing_results(model_name: str) -> model_zoo.lessons.probing.ModelResults | None:
    """The probing results the project ships for `model_name` (python -m model_zoo.probing), or None."""
    from model_zoo.lessons import probing

    return probing.load_results(model_name)


@st.cache_resource(show_spinner=False)
def _probing_data() -> tuple[list[model_zoo.lessons.probing.Sentence], model_zoo.lessons.probing.Targets]:
    from model_zoo.lessons import probing

    sentences = probing.load_sentences()
    return sentences, probing.select_targets(sentences)


# the probe retrainings, the masking race, the reader's head and fine-tuning run in this worker's trainer process
TRAINER = Trainer()


def warm_trainer() -> None:
    """Have this worker's trainer process ready (started, the probes' code imported) before a learner
    presses Retrain: the Probing page asks on every run; it costs nothing while the process lives."""
    TRAINER.warm("model_zoo.lessons.probing")


def _probe_gate() -> Line:
    """One probe retraining at a time per server: a class clicking "Retrain" queues, the pages stay quick."""
    return gate("probe training", 1)


def masking_race(
    seed: int = 0, on_progress: Callable[[float], object] | None = None
) -> model_zoo.lessons.why_mask.Race:
    """The Masked LM page's two tiny Transformers (copying vs BERT's masking), trained on the probing
    lesson's sentences once per server and seed, one training at a time, at low priority."""
    from model_zoo.lessons import probing, why_mask

    def work(report: Callable[[object], None]) -> why_mask.Race:
        sentences = [[w.lower() for w in s.words] for s in probing.load_sentences()]
        with _probe_gate():
            return TRAINER.run(why_mask.seeded_race, sentences, seed, on_report=report)

    return _kept_even_if_left(("masking race", seed), work, on_progress)


def transfer_curve(
    model_name: str, on_progress: Callable[[float], object] | None = None
) -> model_zoo.lessons.transfer.TransferCurve:
    """The transfer-learning stop's race (model_zoo.lessons.transfer): `model_name` fine-tuned from its pre-trained
    weights and from random ones on growing shares of the sentiment set; once per server, at low priority."""
    from model_zoo.lessons import transfer

    def work(report: Callable[[object], None]) -> transfer.TransferCurve:
        with _probe_gate(), low_priority_threads(thread_ends=True):  # in Together's thread: the idle priority
            return transfer.transfer_curve(racer(model_name), on_progress=report)

    return _kept_even_if_left(("transfer curve", model_name), work, on_progress)


@st.cache_data(show_spinner=False)
def measured(job: str) -> tuple[float, str] | None:
    """How long a train-on-click button's work took the first time on a server (seconds, machine), as
    scripts/time_buttons.py measured it (assets/timings.json); None where it has not been measured."""
    from model_zoo.lessons.lexicon import ASSETS

    path = ASSETS / "timings.json"
    record = json.loads(path.read_text(encoding="utf-8")).get(job) if path.exists() else None
    return None if record is None else (float(record["seconds"]), str(record["machine"]))


def racer(model_name: str) -> model_zoo.lessons.transfer.Racer:
    """A network the transfer race can fine-tune whole: a BERT-like encoder or an ELMo biLM."""
    model = load_model(model_name)
    if not isinstance(model, model_zoo.Encoder | model_zoo.ElmoModel):
        raise model_zoo.MissingCapability(model_name, "fine-tuning", f"it is a {type(model).__name__}")
    return model


def transfer_recipe(model_name: str) -> model_zoo.lessons.transfer_record.Recipe:
    """How the race fine-tunes `model_name` (its kind's learning rates and pooling), without loading it."""
    from model_zoo.lessons import transfer_record

    return transfer_record.recipe_for(model_zoo.get_card(model_name).family)


def transfer_known(model_name: str) -> model_zoo.lessons.transfer_record.KnownCurve:
    """The race's curve without running it: this server's live run if one finished, else the run shipped
    for these weights (assets/transfer/); NotRunYet where neither exists. A page draws it at once; a
    question reads it and never starts minutes of training. Without torch: a fresh server draws it first."""
    from model_zoo.lessons import transfer_record as transfer

    live = SLOW.peek(("transfer curve", model_name))
    if isinstance(live, transfer.TransferCurve):
        return transfer.KnownCurve(live, None)
    shipped = transfer.shipped_curve(model_name)
    if shipped is None:
        raise model_zoo.NotRunYet(model_name, "transfer")
    return transfer.KnownCurve(shipped.curve, shipped)


@dataclass(frozen=True)
class WordsSeen:
    """Which of the distinct words of the transfer race's held-out sentences each learner of the race has met."""

    sizes: tuple[int, ...]  # labelled sentences drawn, as the race draws them
    labelled: list[float]  # at each size, the share in those sentences: the one-hot classifier's only words
    vocabulary: float | None  # the share that are whole words of the pre-trained network's vocabulary
    words: int  # distinct words in the held-out sentences
    test: int  # held-out sentences


@st.cache_data(max_entries=8, show_spinner=False)
def transfer_words_seen(model_name: str) -> WordsSeen:
    """The race's held-out words met by its one-hot classifier (the words of its labelled draw at each size,
    the race's own draws) and by `model_name` (whole words of its vocabulary; None for an ELMo without
    one). The lesson's fixed data: once per server and model; no training."""
    from model_zoo.lessons import transfer
    from model_zoo.lessons.tasks import load_sentences
    from model_zoo.words import split_words

    data = load_sentences("sentiment")
    held = sorted({w for x in data.test for w in split_words(x.text)})
    labels = [x.label for x in data.train]
    sizes = tuple(min(n, len(labels)) for n in transfer.SIZES)
    labelled = []
    for _, indices in transfer.labelled_draws(labels, sizes):  # the race's own draws
        seen = {w for i in indices for w in split_words(data.train[i].text)}
        labelled.append(sum(w in seen for w in held) / len(held))
    model = racer(model_name)
    if isinstance(model, model_zoo.ElmoModel):
        vocab = {w.lower() for w in model.vocab}
        known = sum(w in vocab for w in held) / len(held) if vocab else None
    else:
        known = sum(len(model.pieces(w)) == 1 for w in held) / len(held)
    return WordsSeen(sizes, labelled, known, len(held), len(data.test))


def probing_features(model_name: str, on_progress: Callable[[float], object] | None = None) -> np.ndarray:
    """Every probed word's vector at every layer of `model_name` (computed once, kept on disk)."""
    from model_zoo.lessons import probing

    def compute() -> np.ndarray:
        sentences, targets = _probing_data()
        folder = model_zoo.cache_root() / "probing"
        with low_priority_threads():
            return probing.cached_features(contextual(model_name), sentences, targets, folder, on_progress)

    return _shared(("probing features", model_name), compute)


def retrain_probe(
    model_name: str,
    task: str,
    seed: int,
    on_progress: Callable[[float], object] | None = None,
    on_wait: Callable[[int], object] | None = None,
) -> model_zoo.lessons.probing.TaskResult:
    """Every probe of `task` on `model_name` trained anew (the scalar mix, each layer, the control task
    and the cumulative mixes), once per server for each seed; waits in line for a free slot first
    (`on_wait(trainings ahead)` told as the line moves; a learner asking for a seed already training
    waits for that one)."""
    from model_zoo.lessons import probing

    def work(report: Callable[[object], None]) -> probing.TaskResult:
        features = probing_features(model_name)
        sentences, targets = _probing_data()
        data = probing.task_set(sentences, targets, task, seed=seed, max_train=probing.max_train_rows(features))
        with _probe_gate().place(_told_place(report)):
            settings = probing.ProbeSettings(seed=seed)
            where = probing.mapped_path(features)
            return TRAINER.run(probing.probe_task_from, where, data, model_name, settings, on_report=report)

    return _kept_even_if_left(("probe", model_name, task, seed), work, _place_or_progress(on_wait, on_progress))


# -- GPT vs BERT ---------------------------------------------------------------------------------
WRITERS_AT_ONCE = 64  # texts a worker writes together with one model at most; more wait their turn


@st.cache_resource(show_spinner=False)
def writers(model_name: str) -> Writers[Step]:
    """Everything this worker's learners write with `model_name`, written together (serving.runtime.Writers
    around model_zoo.lessons.generation.Batch), once per server and model."""
    from model_zoo.lessons.generation import Batch

    loaded(model_name, model_zoo.CausalLM)  # a model that cannot load is said here, to the learner who asked
    # each burst of writing looks the model up again (Writers._forever): never a model since loaded anew
    return Writers(lambda: Batch(loaded(model_name, model_zoo.CausalLM)), slots=WRITERS_AT_ONCE)


def generate(
    model_name: str, text: str, strategy: model_zoo.lessons.generation.Strategy
) -> Generator[Step, None, None]:
    """The causal LM's steps after `text`, one at a time, as the worker's shared batch writes them (not
    cached: the page draws each as it comes; leaving the loop takes the text out of the batch)."""
    yield from writers(model_name).write(text, strategy)


@st.cache_data(max_entries=64, show_spinner=False)
def sentence_factors(model_name: str, text: str) -> model_zoo.lessons.generation.Factors:
    """The causal LM's log P(token | everything before it) for each token of `text`."""
    from model_zoo.lessons.generation import token_logprobs

    return token_logprobs(loaded(model_name, model_zoo.CausalLM), text)


def blank_candidates(
    model_name: str, text: str, extra: tuple[str, ...]
) -> list[model_zoo.lessons.generation.Candidate]:
    """The blank's candidates from the left alone (one shared pass): what the page shows before the
    whole-sentence scores (left_vs_whole, which reads the same cached guesses) are in."""
    from model_zoo.lessons.generation import blank_candidates as candidates

    model = loaded(model_name, model_zoo.CausalLM)
    return candidates(model, text, BLANK_GUESSES, extra, functools.partial(blank_words, model_name))


BLANK_GUESSES = 8  # the left context's candidates for a blank


@st.cache_data(max_entries=64, show_spinner=False)
def left_vs_whole(model_name: str, text: str, extra: tuple[str, ...]) -> list[model_zoo.lessons.generation.Rescored]:
    """The blank filled from the left alone, each candidate (and `extra` ones) rescored with the whole sentence."""
    from model_zoo.lessons.generation import left_only_vs_whole

    model = loaded(model_name, model_zoo.CausalLM)
    return left_only_vs_whole(
        model,
        text,
        BLANK_GUESSES,
        extra,
        _sentence_batcher(model_name),
        functools.partial(blank_words, model_name),
    )


@st.cache_data(max_entries=256, show_spinner=False)
def blank_words(model_name: str, text: str, top_k: int) -> list[tuple[str, float]]:
    """The words a blank after `text` may hold, from the left alone: the causal LM's top_k next tokens, each
    read on to the end of its word (generation.next_whole_words), in passes the class shares."""
    loaded(model_name, model_zoo.CausalLM).check_text(text)  # a learner's own mistake never joins a batch
    return _blank_words_batcher(model_name)((text, top_k))


@st.cache_resource(show_spinner=False)
def _blank_words_batcher(model_name: str) -> MicroBatcher[tuple[str, int], list[tuple[str, float]]]:
    """The blanks' words a class asks for together (GPT's blanks), in shared passes (next_whole_words)."""
    from model_zoo.lessons.generation import next_whole_words

    return _top_guesses(model_name, next_whole_words)


@st.cache_resource(show_spinner=False)
def _sentence_batcher(model_name: str) -> MicroBatcher[list[str], list[float]]:
    """The whole-sentence scores of the blanks a class sends together, in shared passes (a blank's candidates
    are a dozen sentences that begin alike: each blank's start runs once, every candidate's own words in
    passes shared by the class, generation.shared_start_logprobs)."""

    def run(items: list[list[str]]) -> list[list[float]]:
        from model_zoo.lessons.generation import shared_start_logprobs

        return shared_start_logprobs(loaded(model_name, model_zoo.CausalLM), items)

    return MicroBatcher(run)


@st.cache_data(max_entries=32, show_spinner=False)
def first_token_shares(model_name: str, text: str) -> np.ndarray:
    """(layers, heads): each head's share of attention on the first token, over the page's view of `text`."""
    from model_zoo.lessons.generation import first_token_share

    encoding = attention_view(model_name, text, None)
    assert encoding.attentions is not None
    return first_token_share(encoding.attentions)


@st.cache_data(show_spinner=False)
def gpt_sizes(own: tuple[str, ...]) -> list[model_zoo.lessons.architecture.Size]:
    """GPT-1, GPT-2 and GPT-3 from their shapes, and the named loaded models from their configs."""
    from model_zoo.lessons.architecture import gpt_sizes as sizes

    return sizes({name: loaded(name, model_zoo.CausalLM).config for name in own})


# -- using BERT ----------------------------------------------------------------------------------
def task_head(
    model_name: str, task: str, pooling: str, on_progress: Callable[[float], object] | None = None
) -> TrainedHead:
    """The linear head of a sentence task (sentiment, spam) or the entailment pairs ("nli") on the frozen
    [CLS] (or mean) vectors of `model_name` at the layer that read best on development folds of the
    training set: trained once per server for both poolings (one forward pass; kept on disk across
    restarts, keyed on the weights and the data), shared by every session."""
    return _task_heads(model_name, task, on_progress)[pooling]


def pair_pooling(model_name: str) -> str:
    """The pooling the entailment head reads: the one whose best layer scored best on development folds."""
    heads = _task_heads(model_name, "nli", None)
    return max(heads, key=lambda p: max(heads[p].development))


def _task_heads(model_name: str, task: str, on_progress: Callable[[float], object] | None) -> dict[str, TrainedHead]:
    from model_zoo.lessons import tasks

    def work(report: Callable[[object], None]) -> dict[str, TrainedHead]:
        model = loaded(model_name, model_zoo.Encoder)
        with _probe_gate(), low_priority_threads(thread_ends=True):  # in Together's thread: the idle priority
            return tasks.cached_task_heads(model, task, model_zoo.cache_root() / "heads", report)

    return _kept_even_if_left(("task heads", model_name, task), work, on_progress)


@st.cache_data(max_entries=256, show_spinner=False)
def classify(model_name: str, task: str, pooling: str, text: str, text_b: str | None = None) -> list[Guess]:
    """The trained head's classes for the learner's text (or pair), most likely first."""
    from model_zoo.lessons import tasks

    model = loaded(model_name, model_zoo.Encoder)
    trained = task_head(model_name, task, pooling)
    x = tasks.sentence_features(model, [text], None if text_b is None else [text_b], pooling, trained.head.layer)
    p = trained.head.probabilities(x)[0]
    return sorted(zip(trained.head.classes, p.tolist()), key=lambda g: -g[1])


def cross_lingual(
    model_name: str, on_progress: Callable[[float], object] | None = None
) -> model_zoo.lessons.tasks.CrossLingual:
    """The Using BERT lesson's sentiment head on `model_name`'s mean-pooled vectors (task_head: trained on
    English only, shared), scored on the Chinese sentences; once per server.

    Mean pooling, not [CLS]: multilingual BERT's [CLS] was trained only on next-sentence prediction,
    and the mean of the tokens carries more of what a sentence says across languages."""
    from model_zoo.lessons import tasks

    def work(report: Callable[[object], None]) -> tasks.CrossLingual:
        english = task_head(model_name, "sentiment", "mean", report)
        with _probe_gate(), low_priority_threads(thread_ends=True):  # in Together's thread: the idle priority
            return tasks.cross_lingual(loaded(model_name, model_zoo.Encoder), english.head, "mean")

    return _kept_even_if_left(("cross-lingual", model_name), work, on_progress)


def qa_head(model_name: str, on_progress: Callable[[float], object] | None = None) -> model_zoo.lessons.tasks.QAHead:
    """Start and end vectors learned on `model_name`'s frozen features of the shipped questions."""
    from model_zoo.lessons import tasks

    def work(report: Callable[[object], None]) -> tasks.QAHead:
        loaded(model_name, model_zoo.Encoder)  # a model that cannot load or read is said here, to the presser
        train, test = tasks.load_questions()
        with _probe_gate():  # in the trainer process: its features' pass never holds this worker's lock
            return TRAINER.run(tasks.train_qa_named, model_name, train, test, on_report=report)

    return _kept_even_if_left(("qa head", model_name), work, on_progress)


@st.cache_data(max_entries=128, show_spinner=False)
def answer_question(model_name: str, question: str, passage: str) -> model_zoo.lessons.tasks.Answer:
    """The span the QA head picks in `passage` (or none), with both score curves."""
    from model_zoo.lessons import tasks

    model = loaded(model_name, model_zoo.Encoder)
    (read,) = tasks.passage_vectors(model, [question], [passage])
    if not read.tokens:
        raise model_zoo.EmptyInput("passage")
    return tasks.answer(qa_head(model_name), read, passage)


@st.cache_data(max_entries=128, show_spinner=False)
def read_question(model_name: str, question: str, passage: str) -> model_zoo.lessons.tasks.Answer:
    """A reader fine-tuned for extractive QA (minilm-l6-qa, or a SQuAD 2.0 BERT once prefetched) on the
    learner's question: its own start and end scores over [CLS], the passage and [SEP], and the span."""
    from model_zoo.lessons import tasks

    reader = loaded(model_name, model_zoo.Reader)
    reader.check_question(question, passage)  # a learner's own mistake stays theirs: it never joins a batch
    return tasks.answer_of(_reading_batcher(model_name)((question, passage)), question)


@st.cache_resource(show_spinner=False)
def _reading_batcher(model_name: str) -> MicroBatcher[tuple[str, str], model_zoo.Reading]:
    """Questions and passages a class sends together (Using BERT's reader) read in padded passes
    (Reader.read_many; the model looked up at each batch, as in _fill_mask_batcher)."""
    return MicroBatcher(lambda asked: loaded(model_name, model_zoo.Reader).read_many(asked))


def fine_tuned(
    model_name: str, task: str, on_progress: Callable[[float], object] | None = None
) -> model_zoo.lessons.tasks.FineTuned:
    """A copy of the whole encoder fine-tuned on `task` (one at a time per server, in this worker's trainer process,
    at the idle priority)."""
    from model_zoo.lessons import tasks

    def work(report: Callable[[object], None]) -> tasks.FineTuned:
        loaded(model_name, model_zoo.Encoder)  # a model that cannot load or read is said here, to the presser
        data = tasks.load_pairs() if task == "nli" else tasks.load_sentences(task)
        with _probe_gate():  # in the trainer process: the copy, its gradients and AdamW's moments stay out of here
            return TRAINER.run(tasks.fine_tune_named, model_name, data, on_report=report)

    return _kept_even_if_left(("fine-tuned", model_name, task), work, on_progress)


TAGGER_FALLBACK = "minilm-l6"  # what the tagger reads where the page's encoder is too big to probe here


def tagger_model(model_name: str) -> str:
    """The encoder the Using BERT tagger reads: `model_name` where its every layer fits the probing
    lesson's word vectors on this server (probing.fits), else TAGGER_FALLBACK (the page says so)."""
    from model_zoo.lessons import probing

    config = loaded(model_name, model_zoo.Encoder).config
    _, targets = _probing_data()
    return model_name if probing.fits(config.num_hidden_layers + 1, config.hidden_size, targets) else TAGGER_FALLBACK


def ner_tagger(model_name: str, on_progress: Callable[[float], object] | None = None) -> model_zoo.lessons.tasks.Tagger:
    """A linear BIO tagger on `model_name`'s layer that tags the development words best, trained on the
    probing lesson's silver tags."""
    from model_zoo.lessons import probing, tasks

    def work(report: Callable[[object], None]) -> tasks.Tagger:
        features = probing_features(model_name, report)
        sentences, targets = _probing_data()
        data = probing.task_set(sentences, targets, probing.TAGGING, max_train=probing.max_train_rows(features))
        with _probe_gate(), low_priority_threads(thread_ends=True):  # in Together's thread: the idle priority
            return tasks.train_tagger(features, data)

    return _kept_even_if_left(("ner tagger", model_name), work, on_progress)


@st.cache_data(max_entries=128, show_spinner=False)
def tag_sentence(model_name: str, text: str) -> list[model_zoo.lessons.tasks.TaggedWord]:
    """Each word of `text` with the trained tagger's tag (kept to the B-/I- rule), its probability, and the
    word's top tag alone."""
    from model_zoo.lessons import tasks

    return tasks.tag_words(contextual(model_name), ner_tagger(model_name), text)
