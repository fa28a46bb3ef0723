"""Lesson: inside one forward pass (issue 37). What each layer would predict (the logit lens, and a tuned lens
ContextLab trained), one token's path through a block (attention and the MLP added to the stream, the MLP's
most active neurons), and a part knocked out, with every head's effect next to its attention weight."""

from collections.abc import Sequence
from functools import partial
from typing import Any

import streamlit as st

import model_zoo
import serving
from components import inside_questions as questions
from components import inside_view as view
from components.export import download_csv
from components.frame import ensure_app_frame
from components.guide import GuidedPath, Step, begin_path
from components.i18n import t, t_plain
from components.notices import render_error, select_model, with_bar
from components.tokens import readable
from components.training import render_causal_bf16
from components.url import index_from_url, keep_in_url, key_from_url, number_from_url, text_box
from model_zoo.registry import FILL_MASK, NEXT_WORDS, models_where
from model_zoo.types import Knocked
from serving import lesson_inside as lesson

# Every model of the zoo with an output head whose parts the lesson maps (a BERT with its MLM head, a decoder
# made a masked LM, GPT-2, SmolLM2); ELMo predicts words too, with LSTMs: nothing here to open.
MODELS = models_where(capability=FILL_MASK) + models_where(capability=NEXT_WORDS, without=("elmo",))
MAX_CHARS = 300  # the lens reads every layer at one position; the head map runs the sentence 1 + heads times
PARIS = "Paris is the capital of [MASK]."
JAPAN = "The capital of Japan is [MASK]."  # the predict-first sentence: not the page's default, whose grid is on top
EXAMPLES = (
    PARIS,
    "We sat on the river [MASK] and watched the boats.",
    "She poured milk into her [MASK].",
    "The keys to the cabinet [MASK] on the table.",
)
PARTS = ("head", "heads", "mlp", "layer")
MODES = ("zero", "mean")
STEPS = (
    Step("lens", ("lens", "guess_settle")),
    Step("block", ("block",)),
    Step("knock", ("guess_mlp", "knock")),
    Step("heads", ("heads",)),
    Step("check", ("check",)),
)


def use_example(text: str) -> None:
    st.session_state.text = text


def pick_text() -> str | None:
    st.session_state.setdefault("text", PARIS)
    text = text_box(st.text_input, t("inside.text"), "text", MAX_CHARS, "[MASK]", help=t("inside.text_help"))
    return text if text.strip() else None


def examples() -> None:
    for i, (col, example) in enumerate(zip(st.columns(len(EXAMPLES)), EXAMPLES)):
        col.button(example, key=f"ex{i}", on_click=use_example, args=(example,), width="stretch", help=example)


def what_layers_predict(model: model_zoo.Encoder, text: str, out: st.delta_generator.DeltaGenerator) -> None:
    """The lesson's main output: the logit lens (and the tuned lens beside it), then the answer's curve."""
    logit, tuned = lesson.lenses(model.name, text)
    lenses = {t_plain("inside.logit_lens"): logit} | ({t_plain("inside.tuned_lens"): tuned} if tuned else {})
    with out:
        columns = st.columns(len(lenses))
        for column, (label, lens) in zip(columns, lenses.items()):
            column.plotly_chart(view.build_lens_grid(lens, label), key=f"grid_{label}", config=view.PNG)
        st.markdown(view.settles_finding(model.name, logit, tuned))
    st.plotly_chart(view.build_answer_curve(lenses, logit.answer), key="answer_curve", config=view.PNG)
    st.caption(view.top_five_finding(logit, tuned))
    download_csv(
        t("inside.download_csv"), partial(view.lens_csv, lenses), f"contextlab-lens-{model.name}.csv", "lens_csv"
    )
    found = lesson.shipped_lens(model.name)
    if found is None:
        st.caption(t("inside.no_tuned", model=model.name, command=f"{lesson.LENS_SCRIPT} --model {model.name}"))
        return
    quality = found[1]
    with st.expander(t("inside.tuned_about")):
        st.write(
            t(
                "inside.tuned_how",
                texts=f"{quality.texts['train']:,}",
                positions=f"{quality.positions:,}",
                test=f"{quality.texts['test']:,}",
            )
        )
        st.plotly_chart(view.build_kl_curve(quality.logit_bits, quality.tuned_bits), key="kl_curve", config=view.PNG)
        st.caption(
            t(
                "inside.tuned_quality",
                better=quality.better_layers,
                layers=len(quality.logit_bits) - 1,
                command=quality.command,
                minutes=f"{quality.seconds / 60:.0f}",
            )
        )
        if model.runs_bf16:  # a class's server (scripts/serve.py): the lenses read again in bf16
            render_causal_bf16(model.name, lens=True)
    if lesson.post_norm(model.name):  # a BERT: each layer's output normalised by its own LayerNorm
        st.caption(t("inside.bert_early"))


def token_path(model: model_zoo.Encoder, text: str) -> None:
    """One token's path through a block: the stream in, what attention and the MLP add, the neurons."""
    st.header(t("inside.block_title"))
    st.write(t("inside.block_intro"))
    read, at = lesson.reading(model.name, text)  # a causal LM's tokens stop at the [MASK]
    tokens = [readable(tok) for tok in read]
    layers = int(model.config.num_hidden_layers)
    left, right = st.columns(2)
    layer = left.slider(
        t("inside.layer"), 1, layers, number_from_url("block_layer", 1, layers, layers // 2), key="block_layer"
    )
    labels = [f"{i}: {tok}" for i, tok in enumerate(tokens)]
    start = index_from_url("block_token", tokens, at)
    read_now = [model.name, text]
    new_text = st.session_state.setdefault("block_read", read_now) != read_now
    if new_text:  # a new sentence (or model): its path starts at its answer. A token number of the old one meant
        # another word, and the answer's path is read from the pass the lenses made (no pass of its own: a class
        # typing sentences pays one pass each).
        st.session_state.block_read, st.session_state.block_token = read_now, at
    token = right.selectbox(  # index 0 (no default of its own) where the state was just set: Streamlit warns of both
        t("inside.token"),
        range(len(labels)),
        index=0 if new_text else start,
        format_func=lambda i: labels[i],
        key="block_token",
    )
    token = min(token or 0, len(labels) - 1)
    keep_in_url("block_layer", layer)
    keep_in_url("block_token", tokens[token])
    path = lesson.block_path(model.name, text, layer - 1, token)
    st.plotly_chart(view.build_block_sizes(path), key="block_sizes", config=view.PNG)
    st.markdown(t("inside.expansion", width=f"{path.width:,}", hidden=f"{path.expansion:,}", model=model.name))
    view.render_neurons(path)
    st.caption(t("inside.neurons_note"))
    download_csv(
        t("inside.download_csv"), partial(view.block_csv, path), f"contextlab-block-{model.name}.csv", "block_csv"
    )


def chosen(widget: Any, key: str, options: tuple[str, ...], default: str, label: str, shown: str, **more: Any) -> str:
    """A choice among `options` kept in the URL under `key`, each option written as the i18n key `shown`
    filled with it (a link's option is read in either language)."""
    index = options.index(key_from_url(key, options, default))
    return widget(t(label), options, index=index, format_func=lambda o: t_plain(shown.format(o)), key=key, **more)


def knock_it_out(model: model_zoo.Encoder, text: str) -> None:
    """Knock one part out and see the answer change."""
    st.header(t("inside.knock_title"))
    st.write(t("inside.knock_intro"))
    layers, heads = int(model.config.num_hidden_layers), int(model.config.num_attention_heads)
    a, b, c, d = st.columns(4)
    part = chosen(a.selectbox, "part", PARTS, "mlp", "inside.part", "inside.part_{}_name")
    layer = b.number_input(
        t("inside.layer"), 1, layers, number_from_url("knock_layer", 1, layers, 1), key="knock_layer"
    )
    head = c.number_input(
        t("inside.head"),
        1,
        heads,
        number_from_url("knock_head", 1, heads, 1),
        key="knock_head",
        disabled=part != "head",
    )
    mode = chosen(d.radio, "mode", MODES, "zero", "inside.mode", "inside.mode_{}", horizontal=True)
    for name, value in (("part", part), ("knock_layer", layer), ("knock_head", head), ("mode", mode)):
        keep_in_url(name, value)
    what = view.part_name(part, int(layer), int(head))
    knocked = lesson.knock_out(model.name, text, part, int(layer) - 1, int(head) - 1, mode)
    view.render_knocked(knocked, what)
    st.markdown(view.knock_finding(knocked, what))


def every_head(model: model_zoo.Encoder, text: str) -> None:
    """Every head knocked out alone (batched passes, once per server for a sentence) next to its weights."""
    st.header(t("inside.heads_title"))
    st.write(t("inside.heads_intro"))
    mode = st.session_state.get("mode", "zero")
    heads = int(model.config.num_hidden_layers) * int(model.config.num_attention_heads)
    found = lesson.cached_head_effects(model.name, text, mode)
    if found is None and not st.button(t("inside.heads_run", n=heads), key="heads_run", icon=":material/grid_on:"):
        st.caption(t("inside.heads_wait", n=heads))
        return
    if found is None:
        found = with_bar(
            t_plain("inside.heads_running", n=heads), lambda bar: lesson.head_effects(model.name, text, mode, bar)
        )
        if found is None:
            return
    effects = found[0]
    both = lesson.weight_and_effect(model.name, text, effects)
    left, right = st.columns(2)
    left.plotly_chart(
        view.build_head_grid(effects, t_plain("inside.effect_title", answer=view.word(found[1])), True),
        key="effects",
        config=view.PNG,
    )
    right.plotly_chart(
        view.build_head_grid(both.weight, t_plain("inside.weight_title"), False), key="weights", config=view.PNG
    )
    st.markdown(view.heads_finding(both))
    download_csv(
        t("inside.download_csv"),
        partial(view.heads_csv, effects, both.weight),
        f"contextlab-heads-{model.name}.csv",
        "heads_csv",
    )


def predict_first(model: model_zoo.Encoder, path: GuidedPath) -> None:
    """Guess before the model answers: where in the depth the answer settles, and which knock-out hurts more."""
    try:
        if path.shows("guess_settle"):
            lens = lambda: lesson.logit_lens(model.name, JAPAN)  # noqa: E731
            questions.render_guess_settle(model.name, JAPAN, int(model.config.num_hidden_layers), lens)
        if path.shows("guess_mlp"):
            questions.render_guess_mlp(model.name, JAPAN, lambda part, layer: knock(model, JAPAN, part, layer))
    except model_zoo.ModelZooError as err:
        render_error(err)


def knock(model: model_zoo.Encoder, text: str, part: str, layer: int) -> Knocked:
    """`part` of `layer` (from 0) zeroed on a lesson's sentence."""
    return lesson.knock_out(model.name, text, part, layer, 0, "zero")


def check_yourself(model: model_zoo.Encoder) -> None:
    width, layers = int(model.config.hidden_size), int(model.config.num_hidden_layers)
    hidden = lesson.mlp_width(model.name)
    questions.render_check(
        model.name, PARIS, width, hidden, layers, lambda part, layer: knock(model, PARIS, part, layer)
    )


def views(model: model_zoo.Encoder, text: str, path: GuidedPath) -> None:
    """The token's path, the knock-out and every head: lazy tabs on the whole page (only the open one runs a
    pass: a class typing sentences would otherwise pay for all three on every rerun); a step's one view alone."""
    shown = [(section, draw) for section, draw in VIEWS if path.shows(section)]
    tabs: Sequence[Any]
    if len(shown) <= 1:
        tabs = [st.container()] * len(shown)
    else:
        labels = [t(f"inside.{section}_title") for section, _ in shown]
        tabs = st.tabs(labels, key="inside_view", on_change="rerun")
    for tab, (_, draw) in zip(tabs, shown):
        if getattr(tab, "open", True):
            with tab:
                try:
                    draw(model, text)
                except model_zoo.ModelZooError as err:
                    render_error(err)


VIEWS = (("block", token_path), ("knock", knock_it_out), ("heads", every_head))


def run() -> None:
    ensure_app_frame()
    st.title(t("lesson.inside.title"))
    st.write(t("inside.intro"))
    picker, more = st.columns(2, vertical_alignment="bottom")
    with picker:
        model = select_model(t("inside.model"), MODELS, serving.default_for("masked_lm"), serving.model_or_fallback)
    assert isinstance(model, model_zoo.Encoder)
    with more.expander(t("lesson.more")):
        st.write(t("inside.intro_more"))
    path = begin_path("inside", STEPS)
    text = pick_text() if any(path.shows(s) for s in ("lens", "block", "knock", "heads")) else None
    out = st.container(key="main_output")  # the lesson's main output (scripts/first_screen.py)
    if path.shows("lens"):
        examples()
    try:
        if text is not None:
            lesson.reading(model.name, text)  # the learner's mistake (no [MASK]...) said once, for every view
    except model_zoo.ModelZooError as err:
        with out:
            render_error(err)
        text = None
    if path.shows("lens") and text is not None:
        try:
            what_layers_predict(model, text, out)
        except model_zoo.ModelZooError as err:
            render_error(err)
    elif path.shows("lens") and not st.session_state.get("text", "").strip():
        out.info(t("inside.empty"), icon=":material/info:")
    predict_first(model, path)
    if text is not None:
        views(model, text, path)
    if path.shows("check"):
        check_yourself(model)
    path.end()


run()
