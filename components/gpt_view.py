"""What the GPT lesson draws: the written text and its steps, the causal mask beside BERT's, the
first-token heads, the blank read from the left and from both sides, a sentence's factors, the sizes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import streamlit as st

from components.charts import THIRD_TITLE_CHARS, build_matrix, build_score_bars, sci_or_zero
from components.i18n import t, t_plain
from components.quiz import Question, Solved, listed, render_predict, render_quiz
from components.records import render_record
from components.tables import arrow_rows
from components.tokens import readable, spaced
from model_zoo.contextual import Encoding
from model_zoo.lessons.architecture import Size
from model_zoo.lessons.attention import attention_to_later_tokens, layer_mean
from model_zoo.lessons.generation import (
    Candidate,
    Factors,
    FirstTokenSink,
    Rescored,
    Step,
    left_first,
    whole_first,
)
from model_zoo.words import BYTE_PIECE

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


def later_weights(largest: float) -> str:
    """The largest attention weight on a later token, as the lesson's answer says it: "exactly 0" where it is
    ("at most 0e+00" read as a riddle), else "at most 3e-08"."""
    return t_plain("gpt.later_at_most", largest=f"{largest:.0e}") if largest else t_plain("gpt.later_zero")


def seen(tokens: list[str]) -> list[str]:
    """Tokens as axis labels: a visible ␣ for a space, and a number so that repeats stay apart."""
    return [f"{readable(tok)} ·{i}" for i, tok in enumerate(tokens)]


def step_row(step: Step, n: int) -> dict[str, Any]:
    """Step `n` (from 1) as a row of the table of steps: the token, its probability, the candidates."""
    return {
        t_plain("gpt.col_step"): n,
        t_plain("gpt.col_token"): spaced(step.token),
        t_plain("gpt.col_p"): round(step.probability, 3),
        t_plain("gpt.col_candidates"): "  ".join(f"{spaced(c)} {p:.2f}" for c, p in step.candidates),
    }


def render_progress(written: dict[str, Any], shown: Any, table: Any) -> None:
    """The text written so far and its table of steps, in the placeholders `shown` and `table`: drawn again
    at every token while the model writes. The rows go as an Arrow table (components.tables): a class of
    thirty writing at once spent a tenth of the server's time turning the growing lists into pandas."""
    shown.code(written["text"], language=None, wrap_lines=True)
    wide = {t_plain("gpt.col_candidates"): st.column_config.TextColumn(width="large")}  # five words, not cut off
    table.dataframe(arrow_rows(written["steps"]), hide_index=True, width="stretch", column_config=wide)


def render_written(written: dict[str, Any] | None, shown: Any, table: Any, model_name: str) -> None:
    """The text written so far and its steps (in the placeholders `shown` and `table`), and whether the
    prompt was cut or a Stop ended the run early."""
    if not written or not written.get("steps"):
        return
    render_progress(written, shown, table)
    if written["cut"]:
        st.warning(t("gpt.cut"), icon=":material/content_cut:")
    if not written["done"]:
        st.info(t("gpt.stopped", n=len(written["steps"])), icon=":material/stop_circle:")
    if written.get("ended"):
        st.caption(t("gpt.ended", token=written["ended"], n=len(written["steps"])))
    tokens = (
        row[column] for row in written["steps"] for column in (t_plain("gpt.col_token"), t_plain("gpt.col_candidates"))
    )
    if any(BYTE_PIECE.search(str(cell)) for cell in tokens):  # Chinese text: pieces of characters as their bytes
        st.caption(t("gpt.byte_pieces"))
    st.caption(t("gpt.write_caption", name=model_name))


def render_masks(model_name: str, encoder_name: str, causal: Encoding, full: Encoding) -> None:
    """The first layer's attention (heads averaged) of the causal model beside the encoder's, and the
    largest weight the causal model gives any later token."""
    assert causal.attentions is not None and full.attentions is not None
    left, right = st.columns(2)
    left.plotly_chart(
        build_matrix(
            layer_mean(causal.attentions),
            seen(causal.tokens),
            seen(causal.tokens),
            t_plain("gpt.mask_causal", name=model_name),
            0,
            1,
            "Blues",
        ),
        key="causal_mask",
    )
    right.plotly_chart(
        build_matrix(
            layer_mean(full.attentions),
            seen(full.tokens),
            seen(full.tokens),
            t_plain("gpt.mask_full", name=encoder_name),
            0,
            1,
            "Blues",
        ),
        key="full_mask",
    )
    above = attention_to_later_tokens(causal.attentions)
    st.caption(t("gpt.mask_caption", zero=sci_or_zero(above)))
    st.caption(t("gpt.marks"))


def render_sink(model_name: str, sink: FirstTokenSink, first: str) -> None:
    """Each head's share of attention on the first token (`first`), and how many park it there."""
    layers, heads = sink.shares.shape
    st.subheader(t("gpt.sink_title"))
    st.plotly_chart(
        build_matrix(
            sink.shares,
            [str(i + 1) for i in range(layers)],
            [str(h + 1) for h in range(heads)],
            t_plain("gpt.sink_chart", name=model_name),
            0,
            1,
            "Blues",
            hover="layer %{y} · head %{x}<br>%{z:.2f}",
            axis_titles=(t_plain("attn.head"), t_plain("attn.layer")),  # as the Attention page's head summary
        ),
        key="sink",
    )
    st.write(
        t(
            "gpt.sink_finding",
            name=model_name,
            many=sink.parked,
            heads=sink.heads,
            mean=f"{sink.mean:.2f}",
            first=readable(first),
            even=f"{sink.even:.2f}",
        )
    )


def blank_table(rows: list[Candidate]) -> list[dict[str, Any]]:
    """The candidates' table: ranked with the whole sentence once those scores are in, from the left until then;
    the two ranks next to the word (a phone shows a table's first columns), their scores after them. Who proposed
    a word is its left rank: none (—) for the masked LM's, which the caption under the table says (a column of
    its own, "Proposed by", was cut off beside the chart on a wide screen)."""
    whole = [r for r in rows if isinstance(r, Rescored)]
    order = sorted(whole, key=lambda r: r.whole_rank) if len(whole) == len(rows) else rows
    return [
        {
            t_plain("gpt.col_candidate"): r.candidate,
            t_plain("gpt.col_left_rank"): r.left_rank or None,
            t_plain("gpt.col_whole_rank"): r.whole_rank if isinstance(r, Rescored) else None,
            t_plain("gpt.col_left_p"): round(r.left_probability, 3) if r.left_rank else None,
            t_plain("gpt.col_whole"): round(r.whole_logprob, 2) if isinstance(r, Rescored) else None,
        }
        for r in order
    ]


class BlankSlots(NamedTuple):
    table: Any  # st.empty(): the candidates' table, redrawn when the whole-sentence scores are in
    masked: Any  # st.empty(): the masked LM's guesses, drawn when its pass is in
    finding: Any  # st.empty(): what is being scored, then what each reading picked


def render_blank_left(masked_name: str, candidates: list[Candidate]) -> BlankSlots:
    """What one pass of the causal LM gives: the left context's candidates, drawn at once. The masked LM's
    guesses (render_blank_masked) and the whole-sentence scores (a dozen sentences each, in passes the class
    shares: render_blank) fill the slots as they come."""
    left, right = st.columns([2, 1])  # the table's five columns in view beside the chart
    slots = BlankSlots(left.empty(), right.empty(), st.empty())
    show_blank_table(slots, candidates, masked_name)
    slots.finding.caption(t("gpt.blank_scoring", n=len(candidates)))
    return slots


def show_blank_table(slots: BlankSlots, rows: list[Candidate], masked_name: str) -> None:
    """The blank's table in its slot: the left context's candidates first, then each with its whole-sentence
    score (a cell with no figure yet or none at all reads —)."""
    with slots.table.container():
        # drawn two or three times a blank (the left guesses, then the whole sentences): as an Arrow table, not
        # through pandas (1.3 -> 0.13 ms a draw on one thread)
        # as wide as its longest word ("windowpiano" was cut short), no wider: the scores beside it stay in view
        longest = max((len(r.candidate) for r in rows), default=0)
        words = {t_plain("gpt.col_candidate"): st.column_config.TextColumn(width=min(200, max(80, 8 * longest + 24)))}
        st.dataframe(
            arrow_rows(blank_table(rows)),
            hide_index=True,
            width="stretch",
            placeholder="—",
            column_config=words,
        )
        if any(not r.left_rank for r in rows):  # its "Proposed by" column is off a narrow screen: said here too
            st.caption(t("gpt.from_masked_note", name=masked_name))


def render_blank_masked(slots: BlankSlots, masked_name: str, masked_lm: list[tuple[str, float]]) -> None:
    """The masked LM's guesses for the same blank, beside the candidates."""
    # beside the table, in a third of the main column on a wide screen
    chart = build_score_bars(masked_lm, t_plain("gpt.masked_title", name=masked_name), title_chars=THIRD_TITLE_CHARS)
    slots.masked.plotly_chart(chart, key="masked")


def render_blank(
    slots: BlankSlots, model_name: str, masked_name: str, rows: list[Rescored], masked_lm: list[tuple[str, float]]
) -> None:
    """The candidates ranked from the left alone and with the whole sentence, and what each reading picked."""
    show_blank_table(slots, list(rows), masked_name)
    left, whole = left_first(rows).candidate, whole_first(rows).candidate
    slots.finding.write(
        t(
            "gpt.blank_finding" if left != whole else "gpt.blank_finding_same",  # the seeds' point only where shown
            name=model_name,
            left=left,
            whole=whole,
            masked=masked_name,
            bert=masked_lm[0][0],
        )
    )


def render_factors(model_name: str, factors: Factors) -> None:
    """One bar per next-token factor, and their product as the sentence's probability."""
    # "12 · ." rather than "12..": the token stays apart from its number
    bars = [(f"{i + 1} · {token}", p) for i, (token, p) in enumerate(zip(factors.tokens, factors.probabilities))]
    st.plotly_chart(build_score_bars(bars, t_plain("gpt.product_chart", name=model_name)), key="factors")
    mantissa, exponent = f"{factors.probability:.1e}".split("e")  # 7.9e-34 typeset as 7.9 × 10⁻³⁴
    st.latex(  # two lines, so that the number stays on a phone's screen
        r"\begin{aligned} P(w_1 \dots w_n) &= \prod_{t=1}^{n} P(w_t \mid \langle s \rangle, w_1 \dots w_{t-1}) \\"
        + rf" &= e^{{{factors.total:.1f}}} \approx {mantissa} \times 10^{{{int(exponent)}}} \end{{aligned}}"
    )
    st.caption(t("gpt.product_caption", start=factors.start, n=len(factors.tokens)))


def render_sizes(sizes: list[Size]) -> None:
    """GPT-1, GPT-2, GPT-3 and the models shown, one row each: the size next to the name (a phone shows the
    table's first columns)."""
    st.dataframe(
        [
            {
                t_plain("gpt.col_model"): s.name,
                t_plain("gpt.col_params"): s.short,  # as the quiz below names them: 124M, 1.56B, 175B
                t_plain("gpt.col_layers"): s.layers,
                t_plain("gpt.col_hidden"): s.hidden,
                t_plain("gpt.col_heads"): s.heads,
                t_plain("gpt.col_context"): s.context,
                t_plain("gpt.col_vocab"): s.vocab,
                t_plain("gpt.col_count"): f"{s.parameters:,}",
            }
            for s in sizes
        ],
        hide_index=True,
        width="stretch",
    )
    st.caption(t("gpt.sizes_caption"))


def render_sizes_and_formats(sizes: list[Size]) -> None:
    """5. Sizes; 6. GPT-1's inputs for tasks next to BERT's; what GPT-2 achieved."""
    st.header(t("gpt.sizes_title"))
    render_sizes(sizes)
    st.caption(t("gpt.release"))  # GPT-2's staged release

    # 6. GPT-1's inputs for tasks, next to BERT's ----------------------------------------------------------
    st.header(t("gpt.formats_title"))
    st.markdown(t("gpt.formats"))
    st.caption(t("gpt.formats_caption"))

    st.header(t("records.gpt_title"))
    st.write(t("records.gpt_intro"))
    render_record("coqa")


# -- predict, then see (issue 34) -----------------------------------------------------------------------
HANG = "After work we like to hang"  # The Illustrated BERT's next-word example
HANG_WORDS = ("around", "on", "out", "up")  # plausible next words; the model's own first is added to them
MASK_TEXT = "The cat sat on the mat because it was tired."  # the causal mask's sentence, and its last word changed
MASK_CHANGED = "The cat sat on the mat because it was hungry."
SHORT, LONGER = "The cat sat on the mat.", "The cat sat on the mat and purred."  # a sentence, and the same one longer
UNCHANGED = 1e-4  # a change no larger than this is rounding


def token_word(token: str) -> str:
    """A next token as an option is written: without its space (a token that is only spaces, as ␣ or ↵)."""
    return token.strip() or spaced(token)


def render_guess_next(model_name: str, guesses: list[tuple[str, float]]) -> None:
    """Predict, then see: which token the model puts first after HANG (`guesses`: its next tokens, best
    first, computed but not shown). The options are HANG_WORDS and the model's own first, in alphabetical
    order; the bars come after the pick."""
    first = token_word(guesses[0][0])
    top = listed(guesses, 3, word=token_word)
    options = tuple(sorted({*HANG_WORDS, first}, key=str.lower))
    question = Question(
        "gpt_next",
        options,
        lambda: Solved(first, {"model": model_name, "top": top}),
        about={"text": HANG, "model": model_name},
    )
    if render_predict(question, model_name) is not None:
        bars = [(readable(w), p) for w, p in guesses]
        st.plotly_chart(build_score_bars(bars, t_plain("gpt.next_chart", name=model_name, text=HANG)), key="next_bars")


def render_guess_prefix(model_name: str, encoder_name: str, change: Callable[[str], list[float]]) -> None:
    """Predict, then see: does only the last word of MASK_TEXT changing move the model's vectors of "cat"
    (`change(model)`: the largest change of one of its numbers at each layer)? Then both models' changes."""
    found: dict[str, float] = {}

    def solve() -> Solved:
        found.update({name: max(change(name)) for name in (model_name, encoder_name)})
        facts = {"model": model_name, "change": f"{found[model_name]:.3f}", "encoder": encoder_name}
        return Solved(
            "same" if found[model_name] <= UNCHANGED else "changed", facts | {"both": f"{found[encoder_name]:.3f}"}
        )

    about = {"text": MASK_TEXT, "changed": MASK_CHANGED, "model": model_name}
    question = Question("gpt_prefix", ("same", "changed"), solve, translated=True, about=about)
    if render_predict(question, model_name) is not None:
        column = t_plain("gpt.col_change")
        st.dataframe(
            [{t_plain("gpt.col_model"): name, column: round(value, 4)} for name, value in found.items()],
            hide_index=True,
        )


def render_guess_product(model_name: str, factors: Callable[[str], Factors]) -> None:
    """Predict, then see: which of SHORT and LONGER the model gives the higher probability (`factors`: a
    sentence's next-token factors)? Then both sentences' factors."""
    found: dict[str, Factors] = {}

    def solve() -> Solved:
        found.update({text: factors(text) for text in (SHORT, LONGER)})
        short, longer = found[SHORT], found[LONGER]
        facts = {
            "model": model_name,
            "short": SHORT,
            "longer": LONGER,
            "na": len(short.tokens),
            "nb": len(longer.tokens),
        }
        facts |= {"pa": f"{short.probability:.1e}", "pb": f"{longer.probability:.1e}"}
        return Solved(SHORT if short.total >= longer.total else LONGER, facts)

    question = Question("gpt_product", tuple(sorted((SHORT, LONGER))), solve, about={"model": model_name})
    if render_predict(question, model_name) is not None:
        for column, (text, found_factors) in zip(st.columns(2), found.items()):
            bars = [
                (f"{i + 1}. {tok}", p)
                for i, (tok, p) in enumerate(zip(found_factors.tokens, found_factors.probabilities))
            ]
            column.plotly_chart(
                build_score_bars(bars, text), key="product_short" if text == SHORT else "product_longer"
            )


# -- check yourself ---------------------------------------------------------------------------------------
class LaterTokens(Protocol):
    """What the model's attention gives the tokens after the one attending (serving.lesson_attention)."""

    @property
    def largest(self) -> float: ...  # the largest weight any head gives a later token

    @property
    def only_left(self) -> bool: ...  # no more than rounding: a causal mask


def render_check(
    model_name: str, masked_name: str, blank: Callable[[], tuple[str, str, LaterTokens]], sizes: list[Size]
) -> None:
    """The lesson's questions: why GPT cannot use "deposit" (`blank`: its first guess from the left, the masked
    LM's first, and the attention it gives later tokens) and GPT-2 XL's size, from `sizes` (counted from configs)."""

    def solve_blank() -> Solved:
        left, bert, later = blank()
        return Solved(
            "after" if later.only_left else "vocab",
            {
                "model": model_name,
                "left": left,
                "bert": bert,
                "masked": masked_name,
                "zero": later_weights(later.largest),
            },
        )

    named = {s.name.split(" (")[0]: s for s in sizes}
    xl = named["GPT-2 XL"]

    def solve_xl() -> Solved:
        return Solved(xl.short, {"params": f"{xl.parameters:,}", "layers": xl.layers, "hidden": xl.hidden})

    render_quiz(
        (
            Question("gpt_blank", ("after", "vocab", "small"), solve_blank, translated=True),
            # the options are counts of the same kind, so the live answer is always one of them
            Question("gpt_xl", tuple(named[n].short for n in ("GPT-2 small", "GPT-2 XL", "GPT-3 175B")), solve_xl),
        )
    )
