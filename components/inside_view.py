"""What the Inside the model lesson draws: each layer's reading through the model's own head (the logit lens,
and the tuned lens beside it), one token's path through a block, and a part knocked out, with every head's
effect next to its attention weight. Builders are pure (data in, figure or CSV out); render_* draw."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from components.charts import (
    FOOT_LEGEND,
    _text,
    _texts,
    build_matrix,
    build_score_bars,
    chart_title,
    cut,
    plain_figure,
)
from components.export import csv_text
from components.i18n import Markdown, t, t_plain
from components.tables import arrow_rows
from components.tokens import readable
from model_zoo.lessons.inside import BlockPath, Knocked, Lens, WeightAndEffect, settles_at

COLOURS = ("#1f77b4", "#ff7f0e")  # the logit lens, the tuned lens: apart at a glance on a projector
PNG = {"toImageButtonOptions": {"format": "png", "scale": 2, "filename": "contextlab-inside"}}


def signed_pp(points: float) -> str:
    """A change in percentage points, one decimal, signed; one that rounds to nothing is 0.0 pp, not -0.0."""
    shown = f"{points:+.1f}"
    return f"{'0.0' if shown in ('+0.0', '-0.0') else shown} pp"


def word(token: str) -> str:
    """A predicted word as a sentence quotes it: without the space a tokenizer keeps before it."""
    shown = readable(token)
    return shown.strip() or shown.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥")


def layer_label(layer: int) -> str:
    """Row 0 is the embeddings; row l is the stream after block l."""
    return t_plain("inside.embeddings") if layer == 0 else str(layer)


GRID_WORD = 8  # characters of a word a lens grid's cell shows (the whole word on hover): plotly sizes every cell's
# text to fit the longest word in the narrowest cell, so one "Luxembourg" drew all 155 words at 6 px on a phone
# (cells 44 px wide); cut at 8, and with the colour scale under the grid (cells 56 px), they are 10 px there


def build_lens_grid(lens: Lens, title: str) -> go.Figure:
    """Layers down, the k words each layer's reading puts first across; colour: their probability."""
    rows = [layer_label(r.layer) for r in lens.rows]
    k = len(lens.rows[0].top)
    words = [[word(w) for w, _ in r.top] for r in lens.rows]
    probs = [[p for _, p in r.top] for r in lens.rows]
    heat = {
        "type": "heatmap",
        "z": probs,
        "x": [f"#{i + 1}" for i in range(k)],
        "y": _texts(rows),
        "text": [_texts([cut(w, GRID_WORD) for w in row]) for row in words],
        "customdata": [_texts(row) for row in words],
        "texttemplate": "%{text}",
        "zmin": 0,
        "zmax": 1,
        "colorscale": "Blues",
        "hovertemplate": "%{y} · %{x}: %{customdata}<br>%{z:.1%}<extra></extra>",
        "colorbar": {**FOOT_LEGEND, "tickformat": ".0%", "thickness": 10, "len": 0.6},  # placed as a legend at the foot
    }
    heading, extra = chart_title(title)
    layout = {
        "title": {"text": heading},
        "height": 150 + 19 * len(rows) + extra,
        "margin": {"l": 10, "r": 10, "t": 64 + extra, "b": 60},  # the title above the rank labels (x axis on top)
        "yaxis": {"autorange": "reversed", "type": "category"},
        "xaxis": {"type": "category", "side": "top"},
        # "layer" heads the row labels, level with the ranks' #1 ... #k, upright: as the axis's title it ran
        # sideways down the grid, and in Chinese its one character (层) lay on its side
        "annotations": [
            {
                "text": _text(t_plain("inside.layer")),
                "xref": "paper",
                "yref": "paper",
                "x": 0,
                "y": 1,
                "xanchor": "right",
                "yanchor": "bottom",
                "xshift": -4,
                "yshift": 13,  # level with the ranks' labels above the grid
                "showarrow": False,
                "font": {"color": "#555"},
            }
        ],
    }
    return plain_figure([heat], layout)


def _lines_by_layer(
    lines: Sequence[tuple[str, str, Sequence[float], dict]], title: str, height: int, yaxis: dict
) -> go.Figure:
    """One line a series over the layers (embeddings, 1, 2, ...): (label, colour, a value per layer, more of the
    trace). One plain spec (components.charts says why): drawn on every sentence a class types."""
    traces = [
        {
            "type": "scatter",
            "x": [layer_label(i) for i in range(len(ys))],
            "y": list(ys),
            "mode": "lines+markers",
            "name": _text(label),
            "line": {"color": colour},
            **more,
        }
        for label, colour, ys, more in lines
    ]
    heading, extra = chart_title(title)
    layout = {
        "title": {"text": heading},
        "height": height + extra,
        "margin": {"l": 10, "r": 10, "t": 40 + extra, "b": 10},
        "yaxis": yaxis,
        "xaxis": {"type": "category", "title": {"text": _text(t_plain("inside.layer"))}},
        "legend": FOOT_LEGEND,
    }
    return plain_figure(traces, layout)


def build_answer_curve(lenses: dict[str, Lens], answer: str) -> go.Figure:
    """P(the final answer) at every layer, one line per lens (label -> Lens), on a log axis that reaches the
    smallest of them (a layer that gives the answer 1e-14 is drawn there, not raised to a floor); a probability
    that underflows to 0 is drawn at that bottom, its hover saying 0."""
    hover = {"hovertemplate": "%{x}: %{customdata[1]} (#%{customdata[0]})<extra></extra>"}
    shown = [r.answer_probability for lens in lenses.values() for r in lens.rows if r.answer_probability > 0]
    low = max(min(shown, default=1.0), 1e-30)
    lines = [
        (
            label,
            colour,
            [max(r.answer_probability, low) for r in lens.rows],
            {"customdata": [[r.answer_rank, probability_text(r.answer_probability)] for r in lens.rows], **hover},
        )
        for colour, (label, lens) in zip(COLOURS, lenses.items())
    ]
    bottom = min(int(np.floor(np.log10(low))), -2)  # at least down to 1%
    step = max(1, -bottom // 5)  # five ticks or so
    ticks = [10.0**e for e in range(0, bottom - 1, -step)][::-1]
    yaxis = {
        "type": "log",
        "range": [bottom - 0.2, 0.1],
        "tickvals": ticks,
        # one notation down the axis (100% and 1% above 10⁻⁸ read as if the last were a percentage too)
        "ticktext": [power_of_ten(round(np.log10(v))) for v in ticks],
        "title": {"text": _text(t_plain("inside.probability"))},
    }
    return _lines_by_layer(lines, t_plain("inside.curve_title", answer=word(answer)), 300, yaxis)


SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten(exponent: int) -> str:
    """10 to the `exponent` as the curve writes it: 1, 10⁻², 10⁻¹²."""
    return "1" if exponent == 0 else "10" + str(exponent).translate(SUPERSCRIPT)


def probability_text(p: float) -> str:
    """A probability as the curve writes it: 100%, 1%, 0.05%, then powers of ten (10⁻⁸, 3.2·10⁻¹²), or 0."""
    if p <= 0:
        return "0"
    if p >= 1e-4:
        return f"{p:.2%}".replace(".00%", "%")
    mantissa, exponent = f"{p:.1e}".split("e")
    power = power_of_ten(int(exponent))
    return power if mantissa == "1.0" else f"{mantissa}·{power}"


def lens_csv(lenses: dict[str, Lens]) -> str:
    """One row per lens and layer: the words it puts first with their probabilities, the answer's rank."""
    k = len(next(iter(lenses.values())).rows[0].top)
    header = ["lens", "layer", "answer", "answer_rank", "answer_probability"]
    header += [f"{part}_{i + 1}" for i in range(k) for part in ("word", "p")]
    return csv_text(
        header,
        (
            [label, r.layer, readable(lens.answer), r.answer_rank, f"{r.answer_probability:.6f}"]
            + [x for w, p in r.top for x in (readable(w), f"{p:.6f}")]
            for label, lens in lenses.items()
            for r in lens.rows
        ),
    )


def build_kl_curve(logit_bits: Sequence[float], tuned_bits: Sequence[float]) -> go.Figure:
    """The shipped tuned lens's measured quality: KL (bits) to the final distribution, every layer."""
    lines: list[tuple[str, str, Sequence[float], dict]] = [
        (t_plain("inside.logit_lens"), COLOURS[0], logit_bits, {}),
        (t_plain("inside.tuned_lens"), COLOURS[1], tuned_bits, {}),
    ]
    yaxis = {"title": {"text": _text(t_plain("inside.kl_axis"))}, "type": "log"}  # the last layer's 0 has no point
    return _lines_by_layer(lines, t_plain("inside.kl_title"), 280, yaxis)


def build_block_sizes(path: BlockPath) -> go.Figure:
    """The sizes of what enters the block, what attention and the MLP add, and what leaves it (norms), with
    each one's cosine with the stream entering, in the hover and as text."""
    parts = (
        (t_plain("inside.part_in"), path.stream_in),
        (t_plain("inside.part_attention"), path.attention),
        (t_plain("inside.part_mlp"), path.mlp),
        (t_plain("inside.part_out"), path.stream_out),
    )
    names = [name for name, _ in parts]
    norms = [float(np.linalg.norm(v)) for _, v in parts]
    cosines = [BlockPath.cosine(v, path.stream_in) for _, v in parts]
    bars = {
        "type": "bar",
        "x": _texts(names),
        "y": norms,
        # two short lines over each bar: on one line plotly shrank it to the bar's width (7 px on a phone's four bars)
        "text": [f"‖·‖ {n:.1f}<br>cos {c:+.2f}" for n, c in zip(norms, cosines)],
        "textposition": "outside",
        "cliponaxis": False,
        "marker": {"color": ["#7f7f7f", "#1f77b4", "#ff7f0e", "#2ca02c"]},
    }
    heading, extra = chart_title(
        t_plain("inside.sizes_title", layer=path.layer + 1, token=readable(path.tokens[path.token]))
    )
    layout = {
        "title": {"text": heading},
        "height": 320 + extra,
        "margin": {"l": 10, "r": 10, "t": 40 + extra, "b": 10},
        "yaxis": {"title": {"text": _text(t_plain("inside.norm"))}, "range": [0, max(norms) * 1.35]},
    }
    return plain_figure([bars], layout)


def render_neurons(path: BlockPath) -> None:
    """The most active MLP neurons at the token, each with the words its output vector promotes."""
    rows = [
        {
            t_plain("inside.neuron"): n.index,
            t_plain("inside.activation"): round(n.activation, 3),
            t_plain("inside.promotes"): ", ".join(readable(w) for w in n.promotes),
        }
        for n in path.neurons
    ]
    st.dataframe(arrow_rows(rows), hide_index=True, width="stretch")


def block_csv(path: BlockPath) -> str:
    parts = (path.stream_in, path.attention, path.mlp, path.stream_out)
    return csv_text(
        ["dimension", "stream_in", "attention_adds", "mlp_adds", "stream_out"],
        ([i, *(f"{float(v[i]):.6f}" for v in parts)] for i in range(path.width)),
    )


def render_knocked(knocked: Knocked, what: str) -> None:
    """The answer's probability and loss with and without the part, and the new top words."""
    a, b, c = st.columns(3)
    a.metric(t("inside.p_intact", answer=word(knocked.answer)), f"{knocked.before:.1%}")
    b.metric(
        t("inside.p_knocked", answer=word(knocked.answer)),
        f"{knocked.after:.1%}",
        delta=signed_pp((knocked.after - knocked.before) * 100),
    )
    c.metric(
        t("inside.loss"),
        f"{knocked.loss_after:.2f}",
        delta=f"{knocked.loss_after - knocked.loss_before:+.2f}",
        delta_color="inverse",
    )
    st.plotly_chart(
        build_score_bars([(readable(w), p) for w, p in knocked.top], t_plain("inside.knocked_top", what=what)),
        key="knocked_top",
        config=PNG,
    )


def build_head_grid(values: np.ndarray, title: str, diverging: bool) -> go.Figure:
    """A (L, H) grid of heads: layers down, heads across."""
    rows = [str(i + 1) for i in range(values.shape[0])]
    cols = [str(i + 1) for i in range(values.shape[1])]
    bound = float(np.abs(values).max()) or 1.0
    return build_matrix(
        values,
        rows,
        cols,
        title,
        zmin=-bound if diverging else 0,
        zmax=bound if diverging else 1,
        colorscale="RdBu" if diverging else "Blues",
        hover=t_plain("inside.head_hover") + ("%{z:+.3f}" if diverging else "%{z:.1%}"),
        height=120 + 20 * len(rows),
        axis_titles=(_text(t_plain("inside.head")), _text(t_plain("inside.layer"))),
    )


def heads_csv(effects: np.ndarray, weights: np.ndarray) -> str:
    return csv_text(
        ["layer", "head", "change_in_log_p_answer", "largest_weight_from_answer_position"],
        (
            [layer + 1, head + 1, f"{effects[layer, head]:.6f}", f"{weights[layer, head]:.6f}"]
            for layer in range(effects.shape[0])
            for head in range(effects.shape[1])
        ),
    )


def part_name(part: str, layer: int, head: int) -> str:
    """The knocked-out part in words (layer and head from 1)."""
    return t_plain(f"inside.what_{part}", layer=layer, head=head)


def knock_finding(knocked: Knocked, what: str) -> str:
    """One sentence on what the learner's own knock-out did, from its numbers."""
    new = word(knocked.top[0][0])
    ratio = knocked.after / max(knocked.before, 1e-12)
    key = "same" if new == word(knocked.answer) else "changed"
    size = "little" if abs(ratio - 1) < 0.1 else "down" if ratio < 1 else "up"
    return t(
        f"inside.finding_{key}_{size}",
        what=what,
        answer=word(knocked.answer),
        new=new,
        before=f"{knocked.before:.1%}",
        after=f"{knocked.after:.1%}",
    )


def heads_finding(both: WeightAndEffect) -> str:
    """What the two heatmaps show, from their numbers: how many heads can go, and whether weight tracks effect."""
    rho = both.spearman
    agreement = "none" if rho != rho else "weak" if abs(rho) < 0.3 else "some" if abs(rho) < 0.6 else "strong"
    strongest = np.unravel_index(int(np.argmax(both.effect)), both.effect.shape)
    heaviest = np.unravel_index(int(np.argmax(both.weight)), both.weight.shape)
    return t(
        f"inside.heads_{agreement}",
        small=both.small,
        heads=both.heads,
        share=f"{both.small / both.heads:.1%}",
        rho=f"{rho:+.2f}" if rho == rho else "—",
        effect_head=f"{strongest[0] + 1}.{strongest[1] + 1}",
        weight_head=f"{heaviest[0] + 1}.{heaviest[1] + 1}",
    )


def width_options(own: int) -> tuple[str, ...]:
    """MiniLM's MLM width (1,536), SmolLM2-135M's (1,536), BERT-base's and GPT-2's (3,072), BERT-large's
    (4,096), and `own`, this model's from its config, so that its live answer is always an option."""
    return tuple(str(n) for n in sorted({768, 1536, 3072, 4096, own}))


def settles_finding(model_name: str, logit: Lens, tuned: Lens | None) -> str:
    """Where the answer settles through each lens (from the grids), and the token it is read at."""
    said = [t("inside.settles", answer=word(logit.answer), where=settles_where(logit), model=model_name)]
    if tuned is not None:
        said.append(t("inside.settles_tuned", where=settles_where(tuned)))
    said.append(t(read_at_key(logit), n=logit.at, token=readable(logit.tokens[logit.at]), model=model_name))
    return " ".join(said)


def settles_where(lens: Lens) -> Markdown:
    """From which layer the lens's first guess is the final answer for good, said for its three cases: from the
    input embeddings (the grid's row "emb", layer 0), only at the last layer, or from a layer between."""
    layer, layers = settles_at(lens), len(lens.rows) - 1
    key = "inside.settles_emb" if layer == 0 else "inside.settles_last" if layer == layers else "inside.settles_from"
    return t(key, layer=layer, layers=layers)


def read_at_key(lens: Lens) -> str:
    """Which sentence says where the answer is read, from where it is read and the position it fills: at the
    [MASK] itself (a BERT), at the token before it (a decoder made a masked LM: each position predicts the next
    token), or at the last token read (a causal LM, whose answer fills the position after its tokens)."""
    if lens.answered == lens.at:
        return "inside.read_at"
    return "inside.read_at_before" if lens.answered < len(lens.tokens) else "inside.read_at_last"


def top_five_finding(logit: Lens, tuned: Lens | None) -> str:
    """At how many layers the final answer is among the first five words, through each lens (from the grids)."""

    def count(lens: Lens) -> int:
        return sum(r.answer_rank <= 5 for r in lens.rows[:-1])

    layers = len(logit.rows) - 1
    more = t_plain("inside.top_five_tuned", n=count(tuned)) if tuned is not None else ""
    return t("inside.top_five", answer=word(logit.answer), n=count(logit), layers=layers, tuned=more)
