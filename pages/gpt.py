"""Lesson: GPT next to BERT. A Transformer decoder that predicts the next word and only looks left:
writing one token at a time, the causal mask, left-only against both sides, a sentence's probability
as a product of next-word probabilities, sizes, and GPT-1's input formats next to BERT's."""

from __future__ import annotations

import streamlit as st

import model_zoo
import serving
from components.attention_view import build_bertviz_html
from components.frame import ensure_app_frame
from components.gpt_view import (
    render_blank,
    render_factors,
    render_masks,
    render_sink,
    render_sizes,
    render_written,
    step_row,
)
from components.i18n import t, t_plain
from components.notices import render_error, select_model
from components.quiz import Question, Solved, render_quiz
from components.records import render_record
from components.url import keep_in_url, key_from_url, number_from_url, said_if_cut
from model_zoo.registry import models_where
from model_zoo.types import Strategy
from serving import lesson_attention as lesson
from serving.lesson_attention import BLANK, MAX_NEW_TOKENS, STRATEGIES, STRATEGY_ALIASES

CAUSAL = models_where(kinds=("causal_lm",))
MASKED = serving.default_for("masked_lm")  # BERT's answer for the same blank
ENCODER = serving.default_for("attention")  # BERT's full attention
MAX_CHARS = 2000
PROMPTS = {  # the seeds' zero-shot prompts and GPT-2's unicorn, one click away
    "prompt_unicorn": "In a shocking finding, scientist discovered a herd of unicorns living in a remote, "
    "previously unexplored valley, in the Andes Mountains. Even more surprising to the researchers was the "
    "fact that the unicorns spoke perfect English.",
    "prompt_tldr": "The city council met on Tuesday to discuss the new bus routes. After three hours of "
    "debate, members agreed to add two lines to the north of the city and to lower fares for students.\nTL;DR:",
    "prompt_qa": "In meteorology, precipitation is any product of the condensation of atmospheric water vapor that "
    "falls under gravity. The main forms of precipitation include drizzle, rain, sleet, snow, graupel and hail.\n"
    "Q: What causes precipitation to fall?\nA:",  # the lecture's reading comprehension: passage, "Q:", question, "A:"
    "prompt_translate": "sea otter = loutre de mer\npeppermint = menthe poivrée\nplush giraffe = girafe "
    "peluche\ncheese =",
}
BLANKS = ("The man went to the ___ to deposit his money.", "She sat on the ___ of the river and fished all day.")

DEPOSIT = BLANKS[0]


def use_prompt(key: str) -> None:
    st.session_state.prompt = PROMPTS[key]
    st.session_state.pop("written", None)


def ask_to_write() -> None:
    st.session_state.to_write = True


def writing(model: model_zoo.CausalLM) -> None:  # not a fragment: only a whole-page rerun (Stop) interrupts a run
    """1. Writing, one token at a time, with the candidates at each step."""
    st.header(t("gpt.write_title"))
    st.session_state.setdefault("prompt", PROMPTS["prompt_unicorn"])
    said_if_cut(prompt=MAX_CHARS)
    prompt = st.text_area(t("gpt.prompt"), key="prompt", bind="query-params", max_chars=MAX_CHARS, height=110)
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
    for col, key in zip(st.columns(len(PROMPTS)), PROMPTS):
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
            for step in serving.generate(model.name, prompt, strategy):
                written["steps"].append(step_row(step, len(written["steps"]) + 1))
                written["text"], written["cut"] = step.text, step.cut
                written["ended"] = step.token if step.ended else ""
                shown.code(step.text, language=None, wrap_lines=True)
                table.dataframe(written["steps"], hide_index=True, width="stretch")
            written["done"] = True
        except model_zoo.ModelZooError as err:
            render_error(err)
            return
    with out:
        render_written(st.session_state.get("written"), shown, table, model.name)


def only_left(model: model_zoo.CausalLM) -> None:
    """2. Only looks left: the causal mask, against BERT's full attention."""
    st.header(t("gpt.mask_title"))
    st.write(t("gpt.mask_intro"))
    mask_text = st.text_input(
        t("gpt.mask_text"), value="The cat sat on the mat because it was tired.", key="mask_text", bind="query-params"
    )
    try:
        causal = serving.attention_view(model.name, mask_text, None)
        full = serving.attention_view(ENCODER, mask_text, None)
    except model_zoo.ModelZooError as err:
        render_error(err)
    else:
        render_masks(model.name, ENCODER, causal, full)
        sink = lesson.first_token_sink(model.name, mask_text, len(causal.tokens))
        render_sink(model.name, sink, causal.tokens[0])
        with st.expander(t("gpt.view_title")):
            page = serving.attention_page(
                model.name, mask_text, None, "head", t_plain("gpt.view_title"), _build=build_bertviz_html
            )
            st.iframe(page, height="content")


def use_blank(text: str) -> None:
    st.session_state.blank_text = text


def left_against_both(model: model_zoo.CausalLM) -> None:
    """3. Left-only against both sides: the same blank, scored from the left and from both sides."""
    st.header(t("gpt.blank_title"))
    st.write(t("gpt.blank_intro", blank=BLANK))
    st.session_state.setdefault("blank_text", BLANKS[0])

    for col, example in zip(st.columns(len(BLANKS)), BLANKS):
        col.button(example, key=f"blank_{example[:12]}", on_click=use_blank, args=(example,), width="stretch")
    said_if_cut(blank_text=MAX_CHARS)
    blank_text = st.text_input(t("gpt.blank_text"), key="blank_text", bind="query-params", max_chars=MAX_CHARS)
    try:
        if BLANK not in blank_text:
            raise model_zoo.NoMaskToken(BLANK)
        masked_lm = serving.fill_mask(MASKED, blank_text.replace(BLANK, "[MASK]", 1), 5)[0]
        rows = serving.left_vs_whole(model.name, blank_text, tuple(w for w, _ in masked_lm[:3]))
    except model_zoo.ModelZooError as err:
        render_error(err)
    else:
        render_blank(model.name, MASKED, rows, masked_lm)


def sentence_probability(model: model_zoo.CausalLM) -> None:
    """4. A sentence's probability, one factor per word."""
    st.header(t("gpt.product_title"))
    st.write(t("gpt.product_intro"))
    said_if_cut(product_text=MAX_CHARS)
    product_text = st.text_input(
        t("gpt.product_text"),
        value="The tide went out and we saw who was swimming naked.",
        key="product_text",
        bind="query-params",
        max_chars=MAX_CHARS,
    )
    try:
        factors = serving.sentence_factors(model.name, product_text)
    except model_zoo.ModelZooError as err:
        render_error(err)
    else:
        render_factors(model.name, factors)


def sizes_and_formats(model: model_zoo.CausalLM) -> None:
    """5. Sizes; 6. GPT-1's inputs for tasks next to BERT's; what GPT-2 achieved."""
    st.header(t("gpt.sizes_title"))
    render_sizes(serving.gpt_sizes((model.name,)))
    st.caption(t("gpt.release"))  # GPT-2's staged release

    # 6. GPT-1's inputs for tasks, next to BERT's ----------------------------------------------------------
    st.header(t("gpt.formats_title"))
    st.markdown(t("gpt.formats"))
    st.caption(t("gpt.formats_caption"))

    st.header(t("records.gpt_title"))
    st.write(t("records.gpt_intro"))
    render_record("coqa")


def check_yourself(model: model_zoo.CausalLM) -> None:
    def solve_blank() -> Solved:
        left = lesson.left_first(model.name, DEPOSIT)
        bert = serving.fill_mask(MASKED, DEPOSIT.replace(BLANK, "[MASK]", 1), 1)[0][0][0].strip()
        later = lesson.later_tokens(model.name, DEPOSIT.replace(BLANK, "bank"))
        return Solved(
            "after" if later.only_left else "vocab",
            {"model": model.name, "left": left, "bert": bert, "masked": MASKED, "zero": f"{later.largest:.0e}"},
        )

    sizes = {s.name.split(" (")[0]: s for s in serving.gpt_sizes(())}  # counted from configs: no weights
    xl = sizes["GPT-2 XL"]

    def solve_xl() -> Solved:
        return Solved(xl.short, {"params": f"{xl.parameters:,}", "layers": xl.layers, "hidden": xl.hidden})

    render_quiz(
        (
            Question("gpt_blank", ("after", "vocab", "small"), solve_blank, translated=True),
            # the options are counts of the same kind, so the live answer is always one of them
            Question("gpt_xl", tuple(sizes[n].short for n in ("GPT-2 small", "GPT-2 XL", "GPT-3 175B")), solve_xl),
        )
    )


def run() -> None:
    ensure_app_frame()
    st.title(t("lesson.gpt.title"))
    st.write(t("gpt.intro"))
    model = select_model(t("gpt.model"), CAUSAL, serving.default_for("causal_lm"), serving.model_or_fallback)
    assert isinstance(model, model_zoo.CausalLM)
    st.expander(t("lesson.more")).write(t("gpt.intro_more"))
    writing(model)
    only_left(model)
    left_against_both(model)
    sentence_probability(model)
    sizes_and_formats(model)
    check_yourself(model)


run()
