"""Lesson: the Transformer (2017), built for translation; why self-attention replaced the LSTM: any
distance in one step, every position at once. Live: where one word looks, layer by layer."""

import zlib

import streamlit as st

import model_zoo
import serving
from components.charts import build_matrix
from components.frame import ensure_app_frame
from components.i18n import t, t_plain
from components.notices import render_error, select_model
from components.quiz import Question, Solved, render_quiz
from components.url import keep_in_url, said_if_cut
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


def use_example(text: str, word: str) -> None:
    st.session_state.tf_text, st.session_state.tf_word = text, word


def reach(model: model_zoo.Encoder) -> model_zoo.Encoding:
    """How far one token's attention reaches, layer by layer, on the learner's sentence; its encoding."""
    st.session_state.setdefault("tf_text", EXAMPLES[0][0])
    st.session_state.setdefault("tf_word", st.query_params.get("tf_word", EXAMPLES[0][1]))  # a shared link's word
    said_if_cut(tf_text=2000)
    text = st.text_input(t("tf.text"), key="tf_text", bind="query-params", max_chars=2000)
    try:
        view = serving.attention_view(model.name, text, None)
    except model_zoo.ModelZooError as err:
        render_error(err)
        st.stop()
    assert view.attentions is not None  # attention_view always asks for them
    tokens = view.tokens
    if view.truncated:  # attention_view reads the first VIEW_TOKENS tokens: every one is drawn
        st.caption(t("tf.cut", n=serving.VIEW_TOKENS))
    wanted = str(st.session_state.get("tf_word", "")).lower()
    found = next((k for k, tok in enumerate(tokens) if tok == wanted), None)
    default = min(1, len(tokens) - 1) if found is None else found
    if found is None and wanted:
        st.caption(t("tf.word_absent", word=wanted[:40], shown=tokens[default]))
    i = st.selectbox(
        t("tf.word"),
        list(range(len(tokens))),
        index=default,
        format_func=lambda k: f"{k}: {tokens[k]}",
        key=f"tf_pick_{zlib.crc32(text.encode())}",  # a new sentence: pick afresh
    )
    st.session_state.tf_word = tokens[i]
    keep_in_url("tf_word", tokens[i])  # a shared link reopens on the same word
    reached = lesson.reach(view, i)  # strongest: (layers, tokens)
    ticks = [f"{k}:{tok}" for k, tok in enumerate(tokens)]
    st.container(key="main_output").plotly_chart(  # the lesson's main output (scripts/first_screen.py)
        build_matrix(
            reached.strongest,
            [t_plain("tf.layer", n=layer + 1) for layer in range(len(reached.strongest))],
            ticks,
            t_plain("tf.reach_chart", word=tokens[i], model=model.name),
            zmin=0.0,
            zmax=1.0,
            colorscale="Blues",
            hover="%{y} · %{x}<br>%{z:.2f}",
        ),
        key="tf_reach",
    )
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
    return view


LSTM_LAYERS = 2  # ELMo's, in each direction


def lstm_steps(tokens: int) -> int:
    """Steps one after another for a stacked LSTM: each layer waits for the one below only one token,
    so layer 2 reads token t while layer 1 reads token t + 1 (a pipeline): T + L - 1, not L x T."""
    return tokens + LSTM_LAYERS - 1


def in_parallel(model: model_zoo.Encoder, view: model_zoo.Encoding) -> None:
    """Steps in parallel: a Transformer's layers against an LSTM's steps, and where the road goes next."""
    assert view.attentions is not None
    st.header(t("tf.parallel_title"))
    n_layers = view.attentions.shape[0]
    a, b = st.columns(2)
    a.metric(t("tf.steps_transformer"), n_layers)
    b.metric(t("tf.steps_lstm"), lstm_steps(len(view.tokens)))
    st.write(t("tf.parallel_note", n=len(view.tokens), layers=n_layers, model=model.name))
    st.header(t("tf.encdec_title"))
    st.write(t("tf.encdec"))
    left, right = st.columns(2)
    left.page_link("pages/bert_inputs.py", label=t("tf.to_bert"), icon=":material/token:")
    right.page_link("pages/gpt.py", label=t("tf.to_gpt"), icon=":material/arrow_forward:")


def check_yourself(model: model_zoo.Encoder, layers: int) -> None:
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
    st.header(t("tf.reach_title"))
    view = reach(model)
    in_parallel(model, view)
    assert view.attentions is not None
    check_yourself(model, view.attentions.shape[0])


run()
