"""Lesson: the Transformer (2017), built for translation; why self-attention replaced the LSTM: any
distance in one step, every position at once. Live: where one word looks, layer by layer."""

import zlib
from collections.abc import Callable

import streamlit as st

import model_zoo
import serving
from components import transformer_view as view_
from components.frame import ensure_app_frame
from components.guide import Step, begin_path
from components.i18n import t
from components.notices import render_error, render_script_note, select_model
from components.quiz import Question, Solved, render_quiz
from components.tokens import readable
from components.url import keep_in_url, text_box
from model_zoo.registry import ATTENTIONS, models_where
from serving import lesson_attention as lesson

# Bidirectional encoders: the stop is about the encoder; GPT's masked attention has its own page.
MODELS = models_where(capability=ATTENTIONS, without=("causal_lm",))
EXAMPLES = (  # (sentence, the word whose attention is drawn), written for ContextLab
    ("The keys that the man who lives next door left on the kitchen table are mine.", "are"),
    ("The animal didn't cross the street because it was too tired.", "it"),
    ("The book that my sister gave me for my birthday last year was great.", "was"),
)
KEYS = EXAMPLES[0][0]
STEPS = (  # the steps that read the learner's sentence show the box it is typed in
    Step("reach", ("sentence", "reach")),
    Step("far", ("guess_far",)),
    Step("parallel", ("sentence", "parallel")),
    Step("encdec", ("encdec",)),
    Step("check", ("check",)),
)


def use_example(text: str, word: str) -> None:
    st.session_state.tf_text, st.session_state.tf_word = text, word


def sentence(model: model_zoo.Encoder) -> model_zoo.Encoding:
    """The learner's sentence, and its encoding with every head's attention."""
    st.session_state.setdefault("tf_text", EXAMPLES[0][0])
    text = text_box(st.text_input, t("tf.text"), "tf_text", 2000)
    render_script_note(model.name, text, ATTENTIONS)
    try:
        view = serving.attention_view(model.name, text, None)
    except model_zoo.ModelZooError as err:
        render_error(err)
        st.stop()
    if view.truncated:  # attention_view reads the first VIEW_TOKENS tokens: every one is drawn
        st.caption(t("tf.cut", n=serving.VIEW_TOKENS))
    return view


def reach(model: model_zoo.Encoder, view: model_zoo.Encoding) -> None:
    """How far one token's attention reaches, layer by layer, on the learner's sentence."""
    st.session_state.setdefault("tf_word", st.query_params.get("tf_word", EXAMPLES[0][1]))  # a shared link's word
    assert view.attentions is not None  # attention_view always asks for them
    tokens = view.tokens
    wanted = str(st.session_state.get("tf_word", "")).lower()
    found = next((k for k, tok in enumerate(tokens) if tok == wanted), None)
    default = min(1, len(tokens) - 1) if found is None else found
    if found is None and wanted:
        st.caption(t("tf.word_absent", word=wanted[:40], shown=readable(tokens[default])))
    i = st.selectbox(
        t("tf.word"),
        list(range(len(tokens))),
        index=default,
        format_func=lambda k: f"{k}: {readable(tokens[k])}",
        key=f"tf_pick_{zlib.crc32(view.text.encode())}",  # a new sentence: pick afresh
    )
    st.session_state.tf_word = tokens[i]
    keep_in_url("tf_word", tokens[i])  # a shared link reopens on the same word
    reached = lesson.reach(view, i)  # strongest: (layers, tokens)
    with st.container(key="main_output"):  # the lesson's main output (scripts/first_screen.py)
        view_.render_reach(reached.strongest, tokens, i, model.name, key="tf_reach")
    if reached.link is not None:
        layer, head, j, weight = reached.link
        distance = abs(j - i)
        note = t(
            "tf.reach_note",
            word=tokens[i],
            other=tokens[j],
            layer=layer + 1,
            head=head + 1,
            weight=f"{weight:.0%}",
            distance=distance,
        )
        st.markdown(note)
    st.write(t("tf.reach_intro"))  # what the chart shows, under it: the way to it is short on a phone
    st.caption(t("tf.reach_intro_more"))  # why an LSTM cannot do the same
    # The examples under the chart: on a projector and on a phone the chart is on the first screen (issue 34).
    cols = st.columns(len(EXAMPLES))
    for k, (col, (example, word)) in enumerate(zip(cols, EXAMPLES)):
        col.button(f"{word} · {example}", key=f"tf_ex{k}", on_click=use_example, args=(example, word), width="stretch")


def encoder(model: model_zoo.Encoder) -> Callable[[str], model_zoo.Encoding]:
    """A lesson sentence's encoding with attentions, cached per server (the predict-first moments read it)."""
    return lambda text: serving.attention_view(model.name, text, None)


LSTM_LAYERS = 2  # ELMo's, in each direction


def lstm_steps(tokens: int) -> int:
    """Steps one after another for a stacked LSTM: each layer waits for the one below only one token,
    so layer 2 reads token t while layer 1 reads token t + 1 (a pipeline): T + L - 1, not L x T."""
    return tokens + LSTM_LAYERS - 1


def in_parallel(model: model_zoo.Encoder, view: model_zoo.Encoding) -> None:
    """Steps in parallel: a Transformer's layers against an LSTM's steps."""
    assert view.attentions is not None
    st.header(t("tf.parallel_title"))
    n_layers = view.attentions.shape[0]
    a, b = st.columns(2)
    a.metric(t("tf.steps_transformer"), n_layers)
    b.metric(t("tf.steps_lstm"), lstm_steps(len(view.tokens)))
    st.write(t("tf.parallel_note", n=len(view.tokens), layers=n_layers, model=model.name))


def encoder_decoder(model: model_zoo.Encoder) -> None:
    """Encoder and decoder: first a guess at how much an encoder's token reads the words after it; where next."""
    st.header(t("tf.encdec_title"))
    view_.render_guess_after(model.name, encoder(model))
    st.write(t("tf.encdec"))
    left, right = st.columns(2)
    left.page_link("pages/bert_inputs.py", label=t("tf.to_bert"), icon=":material/token:")
    right.page_link("pages/gpt.py", label=t("tf.to_gpt"), icon=":material/arrow_forward:")


def check_yourself(model: model_zoo.Encoder) -> None:
    layers = serving.attention_view(model.name, KEYS, None).num_layers  # its answer reads the same sentence

    def solve_layer() -> Solved:
        link = lesson.strongest_link(model.name, KEYS, "are", "keys")
        if link is None:
            raise model_zoo.WordNotInText("keys", KEYS, 0)
        facts = {"model": model.name, "weight": f"{link.weight:.0%}", "distance": link.distance}
        return Solved(str(link.layer + 1), facts | {"head": link.head + 1})

    n = len(serving.token_strings(model.name, KEYS))  # the tokenizer alone: the options need no forward pass

    def solve_steps() -> Solved:
        return Solved(str(lstm_steps(n)), {"n": n, "layers": layers})

    render_quiz(
        (
            Question("tf_layer", tuple(str(k) for k in range(1, layers + 1)), solve_layer),
            Question("tf_steps", tuple(dict.fromkeys(str(k) for k in (layers, n, lstm_steps(n), 2 * n))), solve_steps),
        )
    )


def run() -> None:
    ensure_app_frame()
    st.title(t("lesson.transformer.title"))
    st.write(t("tf.intro"))
    picker, more = st.columns(2, vertical_alignment="bottom")
    with picker:
        model = select_model(t("tf.model"), MODELS, serving.default_for("attention"), serving.model_or_fallback)
    assert isinstance(model, model_zoo.Encoder)
    with more.expander(t("lesson.more")):
        st.write(t("tf.intro_more"))
    path = begin_path("transformer", STEPS)
    if path.shows("reach"):
        st.header(t("tf.reach_title"))
    view = sentence(model) if path.shows("sentence") else None
    if view is not None and path.shows("reach"):
        reach(model, view)
    if path.shows("guess_far"):  # does "it" give more to a word 8 tokens back than to one 2 tokens back?
        view_.render_guess_far(model.name, encoder(model))
    if view is not None and path.shows("parallel"):
        in_parallel(model, view)
    if path.shows("encdec"):
        encoder_decoder(model)
    if path.shows("check"):
        check_yourself(model)
    path.end()


run()
