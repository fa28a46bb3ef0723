"""Lesson: GPT next to BERT. A Transformer decoder that predicts the next word and only looks left:
writing one token at a time, the causal mask, left-only against both sides, a sentence's probability
as a product of next-word probabilities, sizes, and GPT-1's input formats next to BERT's."""

from __future__ import annotations

import numpy as np
import streamlit as st

import model_zoo
import serving
from components.attention_view import build_bertviz_html
from components.charts import build_matrix, build_score_bars
from components.frame import ensure_app_frame
from components.i18n import t, t_plain
from components.notices import render_error, select_model
from components.quiz import Question, Solved, render_quiz
from components.records import render_record
from components.tokens import readable
from components.url import keep_in_url, key_from_url
from model_zoo.attention import attention_to_later_tokens, uniform_first_token_share
from model_zoo.generation import BLANK, MAX_NEW_TOKENS, STRATEGIES, Strategy
from model_zoo.registry import models_where

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
    "prompt_qa": "Q: What is the capital of France?\nA: Paris\nQ: What is the largest planet in the solar system?\nA:",
    "prompt_translate": "sea otter = loutre de mer\npeppermint = menthe poivrée\nplush giraffe = girafe "
    "peluche\ncheese =",
}
BLANKS = ("The man went to the ___ to deposit his money.", "She sat on the ___ of the river and fished all day.")

DEPOSIT = BLANKS[0]


def seen(tokens: list[str]) -> list[str]:
    """Tokens as axis labels: a visible ␣ for a space, and a number so that repeats stay apart."""
    return [f"{readable(tok)} ·{i}" for i, tok in enumerate(tokens)]


def use_prompt(key: str) -> None:
    st.session_state.prompt = PROMPTS[key]
    st.session_state.pop("written", None)


def ask_to_write() -> None:
    st.session_state.to_write = True


def writing(model: model_zoo.CausalLM) -> None:  # not a fragment: only a whole-page rerun (Stop) interrupts a run
    """1. Writing, one token at a time, with the candidates at each step."""
    st.header(t("gpt.write_title"))
    st.write(t("gpt.write_intro"))
    st.session_state.setdefault("prompt", PROMPTS["prompt_unicorn"])
    for col, key in zip(st.columns(len(PROMPTS)), PROMPTS):
        col.button(t_plain(f"gpt.{key}"), key=key, on_click=use_prompt, args=(key,), width="stretch")
    prompt = st.text_area(t("gpt.prompt"), key="prompt", bind="query-params", max_chars=MAX_CHARS, height=110)
    c1, c2, c3, c4, c5 = st.columns([2, 1, 1, 1, 1])
    kinds = list(STRATEGIES)
    st.session_state.setdefault("strategy", key_from_url("strategy", kinds, "greedy"))
    kind = c1.radio(
        t("gpt.strategy"), kinds, format_func=lambda k: t_plain(f"gpt.strategy_{k}"), key="strategy", horizontal=True
    )
    assert kind is not None  # the radio starts on a choice and cannot be cleared
    keep_in_url("strategy", kind)
    temperature = c2.slider(
        t("gpt.temperature"), 0.1, 2.0, 1.0, 0.1, key="temperature", bind="query-params", disabled=kind == "greedy"
    )
    top_k = c3.number_input("k", 1, 200, 40, key="top_k", bind="query-params", disabled=kind != "top_k")
    top_p = c4.slider("p", 0.05, 1.0, 0.9, 0.05, key="top_p", bind="query-params", disabled=kind != "top_p")
    seed = c5.number_input(t("gpt.seed"), 0, 9999, 0, key="gen_seed", bind="query-params", disabled=kind == "greedy")
    tokens = st.slider(t("gpt.max_tokens"), 1, MAX_NEW_TOKENS, 30, key="max_tokens", bind="query-params")
    strategy = Strategy(kind, int(top_k), float(top_p), float(temperature), int(seed), int(tokens))
    go, stop = st.columns([1, 1])
    go.button(
        t("gpt.write"),
        key="write",
        type="primary",
        icon=":material/play_arrow:",
        width="stretch",
        on_click=ask_to_write,
    )
    stop.button(t("gpt.stop"), key="stop", icon=":material/stop:", width="stretch")  # any click ends a run
    shown = st.empty()
    table = st.empty()
    if st.session_state.pop("to_write", False):
        st.session_state.written = {"prompt": prompt, "steps": [], "done": False, "cut": False}
        written = st.session_state.written
        try:
            for step in serving.generate(model.name, prompt, strategy):
                written["steps"].append(
                    {
                        t_plain("gpt.col_step"): len(written["steps"]) + 1,
                        t_plain("gpt.col_token"): repr(step.token),
                        t_plain("gpt.col_p"): round(step.probability, 3),
                        t_plain("gpt.col_candidates"): "  ".join(f"{c!r} {p:.2f}" for c, p in step.candidates),
                    }
                )
                written["text"], written["cut"] = step.text, step.cut
                shown.code(step.text, language=None, wrap_lines=True)
                table.dataframe(written["steps"], hide_index=True, width="stretch")
            written["done"] = True
        except model_zoo.ModelZooError as err:
            render_error(err)
            return
    written = st.session_state.get("written")
    if written and written.get("steps"):
        shown.code(written["text"], language=None, wrap_lines=True)
        table.dataframe(written["steps"], hide_index=True, width="stretch")
        if written["cut"]:
            st.warning(t("gpt.cut"), icon=":material/content_cut:")
        if not written["done"]:
            st.info(t("gpt.stopped", n=len(written["steps"])), icon=":material/stop_circle:")
        st.caption(t("gpt.write_caption", name=model.name))


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
        assert causal.attentions is not None and full.attentions is not None
        left, right = st.columns(2)
        left.plotly_chart(
            build_matrix(
                causal.attentions[0].mean(0),
                causal.tokens,
                causal.tokens,
                t_plain("gpt.mask_causal", name=model.name),
                0,
                1,
                "Blues",
            ),
            key="causal_mask",
        )
        right.plotly_chart(
            build_matrix(
                full.attentions[0].mean(0),
                seen(full.tokens),
                seen(full.tokens),
                t_plain("gpt.mask_full", name=ENCODER),
                0,
                1,
                "Blues",
            ),
            key="full_mask",
        )
        st.caption(t("gpt.mask_caption", zero=f"{attention_to_later_tokens(causal.attentions):.1e}"))
        shares = serving.first_token_shares(model.name, mask_text)
        layers, heads = shares.shape
        st.subheader(t("gpt.sink_title"))
        st.plotly_chart(
            build_matrix(
                shares,
                [str(i + 1) for i in range(layers)],
                [str(h + 1) for h in range(heads)],
                t_plain("gpt.sink_chart", name=model.name),
                0,
                1,
                "Blues",
                hover="layer %{y} · head %{x}<br>%{z:.2f}",
            ),
            key="sink",
        )
        st.write(
            t(
                "gpt.sink_finding",
                name=model.name,
                many=int((shares > 0.5).sum()),
                heads=shares.size,
                mean=f"{shares.mean():.2f}",
                first=readable(causal.tokens[0]),
                even=f"{uniform_first_token_share(len(causal.tokens)):.2f}",
            )
        )
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
    blank_text = st.text_input(t("gpt.blank_text"), key="blank_text", bind="query-params", max_chars=MAX_CHARS)
    try:
        if BLANK not in blank_text:
            raise model_zoo.NoMaskToken(BLANK)
        masked_lm = serving.fill_mask(MASKED, blank_text.replace(BLANK, "[MASK]", 1), 5)[0]
        rows = serving.left_vs_whole(model.name, blank_text, tuple(w for w, _ in masked_lm[:3]))
    except model_zoo.ModelZooError as err:
        render_error(err)
    else:
        table = [
            {
                t_plain("gpt.col_candidate"): r.candidate,
                t_plain("gpt.col_left_p"): round(r.left_probability, 3) if r.left_rank else None,
                t_plain("gpt.col_left_rank"): r.left_rank or None,
                t_plain("gpt.col_whole"): round(r.whole_logprob, 2),
                t_plain("gpt.col_whole_rank"): r.whole_rank,
                t_plain("gpt.col_from"): t_plain("gpt.from_left" if r.left_rank else "gpt.from_masked", name=MASKED),
            }
            for r in sorted(rows, key=lambda r: r.whole_rank)
        ]
        left, right = st.columns([3, 2])
        left.dataframe(table, hide_index=True, width="stretch")
        right.plotly_chart(build_score_bars(masked_lm, t_plain("gpt.masked_title", name=MASKED)), key="masked")
        first_left = min((r for r in rows if r.left_rank), key=lambda r: r.left_rank)
        best_whole = min(rows, key=lambda r: r.whole_rank)
        st.write(
            t(
                "gpt.blank_finding",
                name=model.name,
                left=first_left.candidate,
                whole=best_whole.candidate,
                masked=MASKED,
                bert=masked_lm[0][0],
            )
        )


def sentence_probability(model: model_zoo.CausalLM) -> None:
    """4. A sentence's probability, one factor per word."""
    st.header(t("gpt.product_title"))
    st.write(t("gpt.product_intro"))
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
        before = [factors.start, *factors.tokens]
        bars = [
            (f"{i + 1}. {token}", float(np.exp(lp)))
            for i, (token, lp) in enumerate(zip(factors.tokens, factors.logprobs))
        ]
        st.plotly_chart(build_score_bars(bars, t_plain("gpt.product_chart", name=model.name)), key="factors")
        st.latex(
            r"P(w_1 \dots w_n) = \prod_{t=1}^{n} P(w_t \mid \langle s \rangle, w_1 \dots w_{t-1})"
            + rf" = e^{{{factors.total:.1f}}} \approx {np.exp(factors.total):.1e}"
        )
        st.caption(t("gpt.product_caption", start=before[0], n=len(factors.tokens)))


def sizes_and_formats(model: model_zoo.CausalLM) -> None:
    """5. Sizes; 6. GPT-1's inputs for tasks next to BERT's; what GPT-2 achieved."""
    st.header(t("gpt.sizes_title"))
    sizes = serving.gpt_sizes((model.name,))
    st.dataframe(
        [
            {
                t_plain("gpt.col_model"): s.name,
                t_plain("gpt.col_layers"): s.layers,
                t_plain("gpt.col_hidden"): s.hidden,
                t_plain("gpt.col_heads"): s.heads,
                t_plain("gpt.col_context"): s.context,
                t_plain("gpt.col_vocab"): s.vocab,
                t_plain("gpt.col_params"): f"{s.parameters / 1e6:,.0f}M",
            }
            for s in sizes
        ],
        hide_index=True,
        width="stretch",
    )
    st.caption(t("gpt.sizes_caption"))

    # 6. GPT-1's inputs for tasks, next to BERT's ----------------------------------------------------------
    st.header(t("gpt.formats_title"))
    st.markdown(t("gpt.formats"))
    st.caption(t("gpt.formats_caption"))

    st.header(t("records.gpt_title"))
    st.write(t("records.gpt_intro"))
    render_record("coqa")


def check_yourself(model: model_zoo.CausalLM) -> None:
    def solve_blank() -> Solved:
        rows = serving.left_vs_whole(model.name, DEPOSIT, ())
        left = min((r for r in rows if r.left_rank), key=lambda r: r.left_rank).candidate
        bert = serving.fill_mask(MASKED, DEPOSIT.replace(BLANK, "[MASK]", 1), 1)[0][0][0].strip()
        causal = serving.attention_view(model.name, DEPOSIT.replace(BLANK, "bank"), None)
        assert causal.attentions is not None  # attention_view always asks for them
        zero = attention_to_later_tokens(causal.attentions)
        return Solved(
            "after" if zero < 1e-6 else "vocab",
            {"model": model.name, "left": left, "bert": bert, "masked": MASKED, "zero": f"{zero:.0e}"},
        )

    def solve_xl() -> Solved:
        xl = next(s for s in serving.gpt_sizes(()) if s.name.startswith("GPT-2 XL"))
        billions = xl.parameters / 1e9
        return Solved(f"{billions:.1f}B", {"params": f"{xl.parameters:,}", "layers": xl.layers, "hidden": xl.hidden})

    render_quiz(
        (
            Question("gpt_blank", ("after", "vocab", "small"), solve_blank, translated=True),
            Question("gpt_xl", ("124M", "1.5B", "175B"), solve_xl),
        )
    )


def run() -> None:
    ensure_app_frame()
    st.title(t("lesson.gpt.title"))
    st.write(t("gpt.intro"))
    model = select_model(t("gpt.model"), CAUSAL, serving.default_for("causal_lm"), serving.model_or_fallback)
    assert isinstance(model, model_zoo.CausalLM)
    writing(model)
    only_left(model)
    left_against_both(model)
    sentence_probability(model)
    sizes_and_formats(model)
    check_yourself(model)


run()
