"""Lesson: GPT next to BERT. A Transformer decoder that predicts the next word and only looks left:
writing one token at a time, the causal mask, left-only against both sides, a sentence's probability
as a product of next-word probabilities, sizes, and GPT-1's input formats next to BERT's."""

from __future__ import annotations

from contextlib import closing

import streamlit as st

import model_zoo
import serving
from components import gpt_view as view
from components.attention_view import bertviz_builder
from components.frame import ensure_app_frame
from components.guide import Step, begin_path
from components.i18n import t, t_plain
from components.notices import render_error, render_script_note, select_model
from components.training import render_causal_bf16
from components.url import keep_in_url, key_from_url, number_from_url, text_box
from model_zoo.registry import ATTENTIONS, NEXT_WORDS, models_where
from model_zoo.types import Strategy
from serving import lesson_attention as lesson
from serving.lesson_attention import BLANK, LESSON_BLANKS, MAX_NEW_TOKENS, STRATEGIES, STRATEGY_ALIASES

CAUSAL = models_where(kinds=("causal_lm",))
MASKED = serving.default_for("masked_lm")  # BERT's answer for the same blank
ENCODER = serving.default_for("attention")  # BERT's full attention
MAX_CHARS = 2000
# A sentence with a blank: its dozen candidates are each read as a whole sentence, so a paragraph here costs
# the class's shared passes a dozen paragraphs (2,000 characters: 18 s of both cores, everyone's blank waiting)
BLANK_CHARS = 300
BLANKS = LESSON_BLANKS
DEPOSIT = BLANKS[0]
STEPS = (
    Step("write", ("write", "guess_next")),
    Step("mask", ("mask", "guess_prefix")),
    Step("blank", ("blank",)),
    Step("product", ("product", "guess_product")),
    Step("sizes", ("sizes",)),
    Step("check", ("check",)),
)


def use_prompt(key: str) -> None:
    st.session_state.prompt = view.PROMPTS[key]
    st.session_state.pop("written", None)


def ask_to_write() -> None:
    st.session_state.to_write = True


def writing(model: model_zoo.CausalLM) -> None:  # not a fragment: only a whole-page rerun (Stop) interrupts a run
    """1. Writing, one token at a time, with the candidates at each step."""
    st.header(t("gpt.write_title"))
    st.session_state.setdefault("prompt", view.PROMPTS["prompt_unicorn"])
    prompt = text_box(st.text_area, t("gpt.prompt"), "prompt", MAX_CHARS, height=110)
    render_script_note(model.name, prompt, NEXT_WORDS, family="GPT")
    # Write and its text first, prompts and settings below (read before it writes): the first screen's answer (issue 34)
    out = st.container(key="main_output")  # the lesson's main output, with its buttons (scripts/first_screen.py)
    go, stop = out.columns([1, 1])
    go.button(
        t("gpt.write"),
        key="write",
        type="primary",
        icon=":material/play_arrow:",
        width="stretch",
        on_click=ask_to_write,
    )
    stop.button(t("gpt.stop"), key="stop", icon=":material/stop:", width="stretch")  # any click ends a run
    shown, table = out.empty(), out.empty()
    st.write(t("gpt.write_intro"))  # under the button: the way to it is short on a phone's first screen
    for col, key in zip(st.columns(len(view.PROMPTS)), view.PROMPTS):
        col.button(t_plain(f"gpt.{key}"), key=key, on_click=use_prompt, args=(key,), width="stretch")
    st.caption(t("gpt.write_intro_more"))  # the ways of choosing the next token
    c1, c2, c3, c4, c5 = st.columns([2, 1, 1, 1, 1])
    kinds = list(STRATEGIES)
    st.session_state.setdefault("strategy", key_from_url("strategy", kinds, "greedy", STRATEGY_ALIASES))
    kind = c1.radio(
        t("gpt.strategy"), kinds, format_func=lambda k: t_plain(f"gpt.strategy_{k}"), key="strategy", horizontal=True
    )
    assert kind is not None  # the radio starts on a choice and cannot be cleared
    keep_in_url("strategy", kind)
    temperature = number_from_url("temperature", 0.1, 2.0, 1.0)  # each a link's value, else its default
    top_k, top_p = number_from_url("top_k", 1, 200, 40), number_from_url("top_p", 0.05, 1.0, 0.9)
    seed, tokens = number_from_url("gen_seed", 0, 9999, 0), number_from_url("max_tokens", 1, MAX_NEW_TOKENS, 30)
    temperature = c2.slider(
        t("gpt.temperature"), 0.1, 2.0, temperature, 0.1, key="temperature", disabled=kind == "greedy"
    )
    top_k = c3.number_input("k", 1, 200, top_k, key="top_k", disabled=kind != "top_k")
    top_p = c4.slider("p", 0.05, 1.0, top_p, 0.05, key="top_p", disabled=kind != "top_p")
    seed = c5.number_input(t("gpt.seed"), 0, 9999, seed, key="gen_seed", disabled=kind == "greedy")
    tokens = st.slider(t("gpt.max_tokens"), 1, MAX_NEW_TOKENS, tokens, key="max_tokens")
    strategy = Strategy(kind, int(top_k), float(top_p), float(temperature), int(seed), int(tokens))
    kept = {"temperature": temperature, "top_k": top_k, "top_p": top_p, "gen_seed": seed, "max_tokens": tokens}
    for name, value in kept.items():
        keep_in_url(name, value)
    if st.session_state.pop("to_write", False):
        st.session_state.written = {"prompt": prompt, "steps": [], "done": False, "cut": False}
        written = st.session_state.written
        try:
            # closing: a Stop or a rerun mid-text takes the text out of the worker's shared batch at once
            with closing(serving.generate(model.name, prompt, strategy)) as steps:
                for step in steps:
                    written["steps"].append(view.step_row(step, len(written["steps"]) + 1))
                    written["text"], written["cut"] = step.text, step.cut
                    written["ended"] = step.token if step.ended else ""
                    view.render_progress(written, shown, table)
            written["done"] = True
        except model_zoo.ModelZooError as err:
            with out:  # under the button pressed, not under the settings a screen below it
                render_error(err)
            return
    with out:
        view.render_written(st.session_state.get("written"), shown, table, model.name)


def only_left(model: model_zoo.CausalLM) -> None:
    """2. Only looks left: the causal mask, against BERT's full attention."""
    st.header(t("gpt.mask_title"))
    st.write(t("gpt.mask_intro"))
    mask_text = st.text_input(
        t("gpt.mask_text"), value="The cat sat on the mat because it was tired.", key="mask_text", bind="query-params"
    )
    render_script_note((model.name, ENCODER), mask_text, ATTENTIONS, family="GPT")  # the causal mask is GPT's
    try:
        causal = serving.attention_view(model.name, mask_text, None)
        full = serving.attention_view(ENCODER, mask_text, None)
    except model_zoo.ModelZooError as err:
        render_error(err)
    else:
        view.render_masks(model.name, ENCODER, causal, full)
        sink = lesson.first_token_sink(model.name, mask_text, len(causal.tokens))
        view.render_sink(model.name, sink, causal.tokens[0])
        with st.expander(t("gpt.view_title")):
            page = serving.attention_page(
                model.name,
                mask_text,
                None,
                "head",
                t_plain("gpt.view_title"),
                _build=bertviz_builder(),
            )
            st.iframe(page, height="content")


def use_blank(text: str) -> None:
    st.session_state.blank_text = text


@st.fragment  # a learner's blank reruns this section alone, not the whole lesson
def left_against_both(model: model_zoo.CausalLM) -> None:
    """3. Left-only against both sides: the same blank, scored from the left and from both sides."""
    st.header(t("gpt.blank_title"))
    st.write(t("gpt.blank_intro", blank=BLANK))
    st.session_state.setdefault("blank_text", BLANKS[0])

    for col, example in zip(st.columns(len(BLANKS)), BLANKS):
        col.button(example, key=f"blank_{example[:12]}", on_click=use_blank, args=(example,), width="stretch")
    blank_text = text_box(st.text_input, t("gpt.blank_text"), "blank_text", BLANK_CHARS, BLANK)
    render_script_note((model.name, MASKED), blank_text, NEXT_WORDS, family="GPT")
    slots = None
    if blank_text.count(BLANK) > 1:  # one blank is filled and scored: a second would be read as the text "___"
        st.info(t("gpt.one_blank", blank=BLANK, n=blank_text.count(BLANK)), icon=":material/info:")
        return
    try:
        if not blank_text.strip():  # an emptied box is said as Masked LM says it, not as a missing ___
            raise model_zoo.EmptyInput("text")
        if BLANK not in blank_text:
            raise model_zoo.NoMaskToken(BLANK)
        # Drawn as they come: the left context's candidates (one pass, and a step or two more for the tokens
        # that start a longer word), the masked LM's guesses (one pass),
        # then the dozen whole sentences, which wait for the class's shared passes (seconds when thirty
        # blanks arrive together).
        slots = view.render_blank_left(MASKED, serving.blank_candidates(model.name, blank_text, ()))
        masked_lm = serving.fill_mask(MASKED, blank_text.replace(BLANK, "[MASK]", 1), 5)[0]
        view.render_blank_masked(slots, MASKED, masked_lm)
        extra = tuple(w for w, _ in masked_lm[:3])
        rows = serving.left_vs_whole(model.name, blank_text, extra)
    except model_zoo.ModelZooError as err:
        if slots is not None:
            slots.finding.empty()  # no longer "scoring…": the sentence below says why
        render_error(err)
    else:
        view.render_blank(slots, model.name, MASKED, rows, masked_lm)


def sentence_probability(model: model_zoo.CausalLM) -> None:
    """4. A sentence's probability, one factor per word."""
    st.header(t("gpt.product_title"))
    st.write(t("gpt.product_intro"))
    tide = "The tide went out and we saw who was swimming naked."
    product_text = text_box(st.text_input, t("gpt.product_text"), "product_text", MAX_CHARS, value=tide)
    render_script_note(model.name, product_text, NEXT_WORDS, family="GPT")
    try:
        factors = serving.sentence_factors(model.name, product_text)
    except model_zoo.ModelZooError as err:
        render_error(err)
    else:
        view.render_factors(model.name, factors)


def check_yourself(model: model_zoo.CausalLM) -> None:
    def blank() -> tuple[str, str, lesson.LaterTokens]:
        bert = serving.fill_mask(MASKED, DEPOSIT.replace(BLANK, "[MASK]", 1), 1)[0][0][0].strip()
        return (
            lesson.left_first(model.name, DEPOSIT),
            bert,
            lesson.later_tokens(model.name, DEPOSIT.replace(BLANK, "bank")),
        )

    view.render_check(model.name, MASKED, blank, serving.gpt_sizes(()))  # sizes counted from configs: no weights


def predict_first(model: model_zoo.CausalLM, section: str) -> None:
    """The learner guesses before the model answers: the next token after "hang", whether a later word moves
    an earlier one's vectors, and which of two sentences is the more probable."""
    try:
        if section == "guess_next":
            view.render_guess_next(model.name, serving.next_words(model.name, view.HANG, 8))
        elif section == "guess_prefix":
            change = lambda name: lesson.later_word_change(name, view.MASK_TEXT, view.MASK_CHANGED, 1)  # noqa: E731
            view.render_guess_prefix(model.name, ENCODER, change)  # "cat" is word 1
        else:
            view.render_guess_product(model.name, lambda text: serving.sentence_factors(model.name, text))
    except model_zoo.ModelZooError as err:
        render_error(err)


def run() -> None:
    ensure_app_frame()
    st.title(t("lesson.gpt.title"))
    st.write(t("gpt.intro"))
    model = select_model(t("gpt.model"), CAUSAL, serving.default_for("causal_lm"), serving.model_or_fallback)
    assert isinstance(model, model_zoo.CausalLM)
    if model.runs_bf16:  # a class's server (scripts/serve.py): what bf16 changes, measured
        render_causal_bf16(model.name)
    st.expander(t("lesson.more")).write(t("gpt.intro_more"))
    path = begin_path("gpt", STEPS)
    sections = {
        "write": writing,
        "guess_next": lambda m: predict_first(m, "guess_next"),
        "mask": only_left,
        "guess_prefix": lambda m: predict_first(m, "guess_prefix"),
        "blank": left_against_both,
        "product": sentence_probability,
        "guess_product": lambda m: predict_first(m, "guess_product"),
        "sizes": lambda m: view.render_sizes_and_formats(serving.gpt_sizes((m.name,))),  # 5.-6. and GPT-2's record
        "check": check_yourself,
    }
    for section, draw in sections.items():
        if path.shows(section):
            draw(model)
    path.end()


run()
