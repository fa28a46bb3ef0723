"""The cache layer: every st.cache_resource / st.cache_data wrapper of the app lives here.

Models load once per process and are shared by every session (thirty students on one
server share one copy). model_zoo stays free of Streamlit; pages call these helpers.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

import model_zoo
from model_zoo import Availability, Model, ModelUnavailable


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


def token_similarity(hidden: np.ndarray) -> np.ndarray:
    """Cosine similarity between every pair of token vectors: (tokens, dim) -> (tokens, tokens)."""
    unit = hidden / np.maximum(np.linalg.norm(hidden, axis=-1, keepdims=True), 1e-12)
    return unit @ unit.T
