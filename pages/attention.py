"""Lesson: where each token looks. bertviz's head and model views, one head's q·k worked out
from the weights, and every head's habits (Clark et al. 2019) as heatmaps."""

import streamlit as st

import model_zoo
import serving
from components import attention_page_view as moments
from components.attention_page_view import render_query_key, render_summary
from components.attention_view import bertviz_builder
from components.frame import ensure_app_frame
from components.guide import GuidedPath, Step, begin_path
from components.i18n import t, t_plain
from components.notices import render_error, render_script_note, select_model
from components.tokens import readable, render_tokens
from components.url import index_from_url, keep_in_url, key_from_url, number_from_url, text_box
from model_zoo.registry import ATTENTIONS, models_where
from serving import lesson_attention as lesson

# Every model with self-attention; a head ContextLab trained on an encoder adds nothing here.
MODELS = models_where(capability=ATTENTIONS)
EXAMPLES = (  # (sentence, second sentence or "")
    ("The animal didn't cross the street because it was too tired.", ""),
    ("The man went to the bank to deposit his money.", ""),
    ("The doctor asked the nurse a question. She said that she was busy.", ""),
    ("The man went to the store.", "He bought a gallon of milk."),
    ("我把钱存进了银行。", ""),
)
ANIMAL = EXAMPLES[0][0]
SOURCES = ("yours", "examples")
# Predict first (a Winograd pair: one word moves a reader's "it" from the trophy to the suitcase)
TROPHY = tuple(f"The trophy didn't fit in the suitcase because it was too {w}." for w in ("big", "small"))
NOUNS = ("trophy", "suitcase")
STEPS = (
    Step("look", ("views",)),
    Step("link", ("guess_switch",)),
    Step("qk", ("views",)),
    Step("habits", ("guess_sink",)),  # before the maps, which show the answer head by head
    Step("maps", ("views",)),
    Step("check", ("check",)),
)
TABS = {"look": "tab_head", "qk": "tab_qk", "maps": "tab_summary"}  # the tab a step opens on


def use_example(a: str, b: str) -> None:
    st.session_state.text, st.session_state.text_b = a, b


def pick_text(box: st.delta_generator.DeltaGenerator) -> tuple[str, str | None] | None:
    """The learner's text (in `box`) and second text (None when empty), an example one click away; None, with
    a word of help, while the text is empty."""
    st.session_state.setdefault("text", EXAMPLES[0][0])
    st.session_state.setdefault("text_b", "")
    text = text_box(box.text_input, t("attn.text"), "text", 5000)  # Enter applies it
    cols = st.columns(len(EXAMPLES))
    for i, (col, (a, b)) in enumerate(zip(cols, EXAMPLES)):
        label = f"{a} | {b}" if b else a
        col.button(label, key=f"ex{i}", on_click=use_example, args=(a, b), width="stretch", help=label)
    text_b = text_box(st.text_input, t("attn.text_b"), "text_b", 2000, help=t("attn.text_b_help"))
    if not text.strip():
        st.info(t("attn.empty"), icon=":material/info:")
        return None
    return text, text_b if text_b.strip() else None


def read_tokens(model: model_zoo.Encoder, text: str, pair: str | None) -> model_zoo.Encoding | None:
    """The text's tokens (and attentions), drawn; None, with the reason, if the model cannot read it."""
    try:
        encoding = serving.attention_view(model.name, text, pair)
    except model_zoo.ModelZooError as err:
        render_error(err)
        return None
    render_tokens(encoding.tokens, encoding.word_ids)
    render_script_note(model.name, text if pair is None else f"{text} {pair}", ATTENTIONS)
    if encoding.truncated:
        total = serving.token_count(model.name, text, pair)
        st.warning(
            t("attn.view_truncated", n=serving.VIEW_TOKENS, max=model.max_length, total=total),
            icon=":material/content_cut:",
        )
    return encoding


def render_bertviz(model: model_zoo.Encoder, text: str, pair: str | None, view: str) -> None:
    """bertviz's view in an iframe that fetches nothing, and the same page to download."""
    title = t_plain("attn.file_title", view=t_plain(f"attn.tab_{view}"), model=model.name)
    page = serving.attention_page(
        model.name,
        text,
        pair,
        "head" if view == "head" else "model",
        title,
        _build=bertviz_builder(),
    )
    # the head view is the lesson's main output (scripts/first_screen.py); how to read it, under it
    st.container(key="main_output" if view == "head" else None).iframe(page, height="content")
    st.caption(t(f"attn.{view}_help"))
    st.download_button(  # handed over on the click (deferred): not copied into each session's media on every run
        t("attn.download_html"),
        lambda: page,
        file_name=f"contextlab-{view}-view-{model.name}.html",
        mime="text/html",
        icon=":material/download:",
        key=f"download_{view}",
        on_click="ignore",
    )


def query_key(model: model_zoo.Encoder, text: str, pair: str | None, encoding: model_zoo.Encoding) -> None:
    """One head's attention worked out from its weights: q · k for a query token, the softmax, the matrix."""
    start = lesson.query_start(encoding, model.kind == "causal_lm")
    st.write(t("attn.qk_intro"))
    st.latex(  # two lines: one ran off a phone's screen
        r"\begin{gathered} a_{ij} = \mathrm{softmax}_j\!\left(\frac{q_i \cdot k_j}{\sqrt{d}}\right) \\"
        r" q_i = W_Q h_i,\quad k_j = W_K h_j \end{gathered}"
    )
    c1, c2, c3 = st.columns(3)
    layer = number_from_url("layer", 1, start.layers, min(3, start.layers))  # each a link's value, else its default
    layer = c1.slider(t("attn.layer"), 1, start.layers, layer, key="layer")
    head = c2.slider(t("attn.head"), 1, start.heads, number_from_url("head", 1, start.heads, 1), key="head")
    words = [readable(tok) for tok in encoding.tokens]
    labels = [f"{i}: {word}" for i, word in enumerate(words)]
    index = index_from_url("query", words, start.query)
    query = c3.selectbox(t("attn.query"), range(len(labels)), index=index, format_func=lambda i: labels[i], key="query")
    query = min(query or 0, len(labels) - 1)  # a choice kept from a longer text
    for name, value in (("layer", layer), ("head", head), ("query", words[query])):
        keep_in_url(name, value)
    layer, head = layer - 1, head - 1
    try:
        qk = serving.query_key(model.name, text, pair, layer, head)
    except model_zoo.ModelZooError as err:
        render_error(err)
    else:
        render_query_key(qk, labels, query)


def head_summary(model: model_zoo.Encoder, text: str, pair: str | None) -> None:
    """Every head's habits over the learner's text or the example sentences (Clark et al. 2019)."""
    st.write(t("attn.summary_intro"))
    source = st.radio(
        t("attn.summary_source"),
        SOURCES,
        SOURCES.index(key_from_url("summary_source", SOURCES, SOURCES[0])),  # by key: a link reads in either language
        format_func=lambda s: t(f"attn.source_{s}", n=len(lesson.example_sentences())),
        horizontal=True,
        key="summary_source",
    )
    keep_in_url("summary_source", source)
    texts: tuple = ((text, pair) if pair else text,) if source == "yours" else lesson.example_sentences()
    progress = st.empty()
    try:
        summary = serving.head_summary(
            model.name, texts, lambda share: progress.progress(share, t("attn.summary_running", n=len(texts)))
        )
    except model_zoo.ModelZooError as err:
        render_error(err)
    else:
        render_summary(model.name, model.kind == "causal_lm", summary)
    finally:  # a half-drawn bar must not stay above an error
        progress.empty()


def views(model: model_zoo.Encoder, text: str, pair: str | None, encoding: model_zoo.Encoding) -> None:
    """Lazy tabs: only the open one runs (each is a model pass or a 100 kB view of its own); a class
    typing sentences would otherwise pay for all four on every rerun."""
    head_tab, model_tab, qk_tab, summary_tab = st.tabs(
        [t("attn.tab_head"), t("attn.tab_model"), t("attn.tab_qk"), t("attn.tab_summary")],
        key="view",
        on_change="rerun",
    )
    if head_tab.open:
        with head_tab:
            render_bertviz(model, text, pair, "head")
    if model_tab.open:
        with model_tab:
            render_bertviz(model, text, pair, "model")
    if qk_tab.open:
        with qk_tab:
            query_key(model, text, pair, encoding)
    if summary_tab.open:
        with summary_tab:
            head_summary(model, text, pair)


def check_yourself(model: model_zoo.Encoder) -> None:
    moments.render_check(
        model.name,
        model.config.num_hidden_layers * model.config.num_attention_heads,
        (ANIMAL, lesson.spelled_tokens(model.name, ANIMAL)),  # as most_attended spells them
        lambda: lesson.most_attended(model.name, ANIMAL, "it"),
        lambda: lesson.heads_grid(model.name, ANIMAL),
    )


def predict_first(model: model_zoo.Encoder, path: GuidedPath) -> None:
    """The learner guesses before the model answers: whether one word that changes what "it" means moves the
    model's strongest link from "it", and where most attention goes over every head."""
    heads = model.config.num_hidden_layers * model.config.num_attention_heads
    causal = model.kind == "causal_lm"

    def links(sentence: str) -> tuple[lesson.WordLink, ...]:
        return lesson.word_links(model.name, sentence, "it", NOUNS)

    try:
        if path.shows("guess_switch"):
            moments.render_guess_switch(model.name, (TROPHY[0], TROPHY[1]), NOUNS[1], links, causal)
        if path.shows("guess_sink"):
            texts = tuple((a, b) if b else a for a, b in EXAMPLES)
            habits = lambda: lesson.head_habits(model.name, texts)  # noqa: E731
            moments.render_guess_sink(model.name, heads, len(texts), causal, habits)
    except model_zoo.ModelZooError as err:
        render_error(err)


def open_steps_tab(path: GuidedPath) -> None:
    """A step that is about one of the views opens on its tab, once, when the learner arrives at it."""
    step = None if path.at is None else path.steps[path.at].key
    if st.session_state.get("attn_step") != step and step in TABS:
        st.session_state["view"] = t_plain(f"attn.{TABS[step]}")
    st.session_state["attn_step"] = step


def run() -> None:
    ensure_app_frame()
    st.title(t("lesson.attention.title"))
    st.write(t("attn.intro"))
    picker, more = st.columns(2, vertical_alignment="bottom")
    with picker:
        model = select_model(t("attn.model"), MODELS, serving.default_for("attention"), serving.model_or_fallback)
    assert isinstance(model, model_zoo.Encoder)
    with more.expander(t("lesson.more")):
        st.write(t("attn.intro_more"))
    path = begin_path("attention", STEPS)
    open_steps_tab(path)
    if path.shows("views"):
        # The text, then at once the views (the head view first): on a projector and on a phone the first answer
        # is on the first screen (issue 34); the examples, the second sentence and the tokens below them.
        text_box, views_box = st.container(), st.container()
        picked = pick_text(text_box)
        encoding = None if picked is None else read_tokens(model, *picked)
        if picked is not None and encoding is not None:
            with views_box:
                views(model, *picked, encoding)
    predict_first(model, path)
    if path.shows("check"):
        check_yourself(model)
    path.end()


run()
