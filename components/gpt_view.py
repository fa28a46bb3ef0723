"""What the GPT lesson draws: the written text and its steps, the causal mask beside BERT's, the
first-token heads, the blank read from the left and from both sides, a sentence's factors, the sizes."""

from __future__ import annotations

from typing import Any

import streamlit as st

from components.charts import build_matrix, build_score_bars
from components.i18n import t, t_plain
from components.tokens import readable
from model_zoo.contextual import Encoding
from model_zoo.lessons.architecture import Size
from model_zoo.lessons.attention import attention_to_later_tokens, layer_mean
from model_zoo.lessons.generation import Factors, FirstTokenSink, Rescored, Step, left_first, whole_first


def seen(tokens: list[str]) -> list[str]:
    """Tokens as axis labels: a visible ␣ for a space, and a number so that repeats stay apart."""
    return [f"{readable(tok)} ·{i}" for i, tok in enumerate(tokens)]


def step_row(step: Step, n: int) -> dict[str, Any]:
    """Step `n` (from 1) as a row of the table of steps: the token, its probability, the candidates."""
    return {
        t_plain("gpt.col_step"): n,
        t_plain("gpt.col_token"): repr(step.token),
        t_plain("gpt.col_p"): round(step.probability, 3),
        t_plain("gpt.col_candidates"): "  ".join(f"{c!r} {p:.2f}" for c, p in step.candidates),
    }


def render_written(written: dict[str, Any] | None, shown: Any, table: Any, model_name: str) -> None:
    """The text written so far and its steps (in the placeholders `shown` and `table`), and whether the
    prompt was cut or a Stop ended the run early."""
    if not written or not written.get("steps"):
        return
    shown.code(written["text"], language=None, wrap_lines=True)
    table.dataframe(written["steps"], hide_index=True, width="stretch")
    if written["cut"]:
        st.warning(t("gpt.cut"), icon=":material/content_cut:")
    if not written["done"]:
        st.info(t("gpt.stopped", n=len(written["steps"])), icon=":material/stop_circle:")
    if written.get("ended"):
        st.caption(t("gpt.ended", token=written["ended"], n=len(written["steps"])))
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
    st.caption(t("gpt.mask_caption", zero=f"{attention_to_later_tokens(causal.attentions):.1e}"))
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


def render_blank(model_name: str, masked_name: str, rows: list[Rescored], masked_lm: list[tuple[str, float]]) -> None:
    """The candidates ranked from the left alone and with the whole sentence, the masked LM's guesses
    beside them, and what each reading picked."""
    table = [
        {
            t_plain("gpt.col_candidate"): r.candidate,
            t_plain("gpt.col_left_p"): round(r.left_probability, 3) if r.left_rank else None,
            t_plain("gpt.col_left_rank"): r.left_rank or None,
            t_plain("gpt.col_whole"): round(r.whole_logprob, 2),
            t_plain("gpt.col_whole_rank"): r.whole_rank,
            t_plain("gpt.col_from"): t_plain("gpt.from_left" if r.left_rank else "gpt.from_masked", name=masked_name),
        }
        for r in sorted(rows, key=lambda r: r.whole_rank)
    ]
    left, right = st.columns([3, 2])
    left.dataframe(table, hide_index=True, width="stretch")
    right.plotly_chart(build_score_bars(masked_lm, t_plain("gpt.masked_title", name=masked_name)), key="masked")
    st.write(
        t(
            "gpt.blank_finding",
            name=model_name,
            left=left_first(rows).candidate,
            whole=whole_first(rows).candidate,
            masked=masked_name,
            bert=masked_lm[0][0],
        )
    )


def render_factors(model_name: str, factors: Factors) -> None:
    """One bar per next-token factor, and their product as the sentence's probability."""
    bars = [(f"{i + 1}. {token}", p) for i, (token, p) in enumerate(zip(factors.tokens, factors.probabilities))]
    st.plotly_chart(build_score_bars(bars, t_plain("gpt.product_chart", name=model_name)), key="factors")
    st.latex(
        r"P(w_1 \dots w_n) = \prod_{t=1}^{n} P(w_t \mid \langle s \rangle, w_1 \dots w_{t-1})"
        + rf" = e^{{{factors.total:.1f}}} \approx {factors.probability:.1e}"
    )
    st.caption(t("gpt.product_caption", start=factors.start, n=len(factors.tokens)))


def render_sizes(sizes: list[Size]) -> None:
    """GPT-1, GPT-2, GPT-3 and the models shown, one row each."""
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
