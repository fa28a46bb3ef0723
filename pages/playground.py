"""Playground: type text, pick any model of the zoo, see its real output."""

import streamlit as st

import model_zoo
import serving
from components.charts import build_score_bars, build_similarity_heatmap
from components.elmo_view import render_both_ways, render_markers
from components.frame import ensure_app_frame
from components.i18n import md_escape, t, t_plain
from components.models_panel import STATUS_MARK
from components.notices import render_error, render_script_note, with_fallback
from components.tokens import readable, render_tokens
from components.url import keep_in_url, key_from_url, number_from_url, text_box
from model_zoo.capabilities import can
from model_zoo.registry import FILL_MASK, HIDDEN_STATES, NEXT_WORDS, PREVIOUS_WORDS, VECTORS
from serving import lesson_vectors

MAX_CHARS = 2000
MAX_WORDS = 12  # neighbour tables for a static model


def neighbours(model: model_zoo.StaticModel, text: str) -> None:
    """A static model: each word's nearest neighbours (a word it does not know, with suggestions)."""
    words = lesson_vectors.words_typed(text)
    if not words:
        raise model_zoo.EmptyInput()
    if len(words) > MAX_WORDS:
        st.caption(t("playground.capped", shown=MAX_WORDS, total=len(words)))
    rows = {}
    for word in words[:MAX_WORDS]:
        try:
            rows[md_escape(word)] = md_escape(", ".join(w for w, _ in serving.neighbours(model.name, word, 5)))
        except model_zoo.WordNotInVocabulary as err:
            rows[md_escape(word)] = "⚠ " + t("playground.oov", suggestions=", ".join(err.suggestions) or "-")
    st.subheader(t("playground.neighbours"))
    st.table({t("playground.word"): list(rows), t("playground.nearest"): list(rows.values())})
    st.caption(t("playground.static_note"))


def contextual(model: model_zoo.Encoder | model_zoo.ElmoModel, text: str) -> None:
    """A contextual model: its tokens, what it predicts where it can, and token similarity at a layer."""
    encoding = serving.hidden_states(model.name, text)
    st.subheader(t("playground.tokens", n=len(encoding.tokens)))
    render_tokens(encoding.tokens, encoding.word_ids)
    if encoding.truncated:
        st.warning(t("playground.truncated", n=len(encoding.tokens)), icon=":material/content_cut:")
    if can(model, FILL_MASK):
        assert isinstance(model, model_zoo.MaskedLM)
        if model.mask_token in text:
            for i, preds in enumerate(serving.fill_mask(model.name, text, 8)):
                st.plotly_chart(build_score_bars(preds, t_plain("playground.mask_title", i=i + 1)), key=f"mask{i}")
        else:
            st.info(t("playground.no_mask", mask=model.mask_token))
    if can(model, NEXT_WORDS) and not can(model, PREVIOUS_WORDS):  # a left-to-right LM
        guesses = serving.next_words(model.name, text, 10)
        st.plotly_chart(build_score_bars(guesses, t("playground.next_title")))
    if can(model, NEXT_WORDS) and can(model, PREVIOUS_WORDS):  # a biLM with its softmax: both ways
        forward, backward, vocab = serving.elmo_next_words(model.name, text, 10)
        render_both_ways(st.container(), text, forward, backward)
        st.caption(t("playground.elmo_note", n=f"{vocab:,}"))
        render_markers((forward, backward), vocab)
    if not can(model, FILL_MASK) and not can(model, NEXT_WORDS):  # an encoder without an output head: says so
        masked, causal = serving.default_for("masked_lm"), serving.default_for("causal_lm")
        st.caption(t("playground.no_head", model=model.name, masked=masked, causal=causal))
    layers = encoding.num_layers
    layer = number_from_url("layer", 0, layers, layers)  # a link's layer, else the top one
    layer = st.slider(t("playground.layer"), 0, layers, layer, key="layer", help=t("playground.layer_help"))
    keep_in_url("layer", layer)
    sim = lesson_vectors.token_cosines(model.name, text, layer)
    labels = [readable(token) for token in encoding.tokens]  # as the chips above spell them ("␣bank")
    st.plotly_chart(build_similarity_heatmap(labels, sim, t_plain("playground.sim_title", layer=layer)))


def run() -> None:
    ensure_app_frame()  # before anything is drawn
    states = serving.availabilities()
    names = [card.name for card in model_zoo.list_models()]
    st.title(t("lesson.playground.title"))
    st.write(t("playground.intro"))
    key_from_url("model", names, "minilm-l6")  # before the picker, which drops another name without a word
    left, right = st.columns([1, 2])
    name = left.selectbox(
        t("playground.model"),
        names,
        index=names.index("minilm-l6"),
        key="model",
        bind="query-params",
    )
    text = text_box(
        right.text_area,
        t("playground.text"),
        "text",
        MAX_CHARS,
        value=t("playground.default_text"),
        help=t("playground.text_help"),
    )

    with st.spinner(t("playground.loading", name=name)):
        model = with_fallback(name, serving.model_or_fallback)
    card = model_zoo.get_card(model.name)
    st.caption(
        f"{STATUS_MARK[states[card.name].status]} "
        + t("playground.using", name=card.name, kind=t(f"kind.{card.kind}"), source=card.source)
    )
    render_script_note(model.name, text, VECTORS if can(model, VECTORS) else HIDDEN_STATES)
    try:  # what the model can do (its card, and its object's contract) decides what is drawn
        if can(model, VECTORS):
            assert isinstance(model, model_zoo.StaticModel)
            neighbours(model, text)
        else:
            assert isinstance(model, model_zoo.Encoder | model_zoo.ElmoModel)
            contextual(model, text)
    except model_zoo.ModelZooError as err:
        render_error(err)


run()
