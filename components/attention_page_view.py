"""What the Attention lesson draws: one head's q·k worked out for a query token, every head's habits
(Clark et al. 2019) as heatmaps with their table as CSV, and the predict-first moments: whether the noun
a head ties "it" to moves when one word changes what "it" means, and where most attention goes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import streamlit as st

from components.charts import build_matrix, build_score_bars, build_vector_strip, sci_or_zero
from components.export import download_csv
from components.i18n import t, t_plain
from components.quiz import Question, Solved, render_predict, render_quiz
from components.tokens import readable
from model_zoo import WordNotInText
from model_zoo.lessons.attention import HeadSummary, QueryKey, shown_metrics

PNG = {"toImageButtonOptions": {"format": "png", "scale": 2, "filename": "contextlab-attention"}}


def render_query_key(qk: QueryKey, labels: list[str], query: int) -> None:
    """The query's scores and weights over the keys it sees, its q beside their k, and the head's matrix."""
    row = qk.row(query)
    shown = [labels[j] for j in row.keys]
    left, right = st.columns(2)
    left.plotly_chart(
        build_score_bars(list(zip(shown, row.scores)), t("attn.scores_title"), percent=False),
        key="qk_scores",
    )
    right.plotly_chart(build_score_bars(list(zip(shown, row.weights)), t("attn.weights_title")), key="qk_weights")
    st.caption(
        t(
            "attn.qk_check" if qk.max_difference else "attn.qk_check_same",  # "by at most 0" said plainly
            d=qk.queries.shape[1],
            scaling=f"{qk.scaling:.4f}",
            diff=sci_or_zero(qk.max_difference),
        )
        + (" " + t("attn.qk_causal") if qk.causal else "")
    )
    st.plotly_chart(
        build_vector_strip(
            [f"q · {labels[query]}"] + [f"k · {s}" for s in shown],
            row.vectors,
            t("attn.vectors_title"),
        ),
        key="qk_vectors",
    )
    st.plotly_chart(
        build_matrix(
            qk.weights,
            labels,
            labels,
            t_plain("attn.matrix_title", layer=qk.layer + 1, head=qk.head + 1),
            zmin=0,
            zmax=1,
            colorscale="Blues",
            hover="%{y} → %{x}<br>%{z:.3f}",
        ),
        key="qk_matrix",
        config=PNG,
    )


def render_summary(model_name: str, causal: bool, summary: HeadSummary) -> None:
    """One heatmap per measure (layers down, heads across), then the table as CSV."""
    rows = [str(i + 1) for i in range(summary.shape[0])]
    cols = [str(i + 1) for i in range(summary.shape[1])]
    grid = st.columns(2)
    for i, metric in enumerate(shown_metrics(causal)):
        entropy = metric == "entropy"
        fig = build_matrix(
            summary.metrics[metric],
            rows,
            cols,
            t(f"attn.metric_{metric}"),
            zmin=0,
            zmax=summary.ceiling(metric),
            colorscale="Viridis" if entropy else "Blues",
            hover=t("attn.metric_hover") + ("%{z:.2f}" if entropy else "%{z:.1%}"),
            height=120 + 24 * len(rows),
            axis_titles=(t("attn.head"), t("attn.layer")),
        )
        grid[i % 2].plotly_chart(fig, key=f"summary_{metric}", config=PNG)
    if causal:
        st.caption(t("attn.summary_causal"))
    st.caption(
        t("attn.summary_basis", sentences=summary.sentences, tokens=f"{summary.tokens:,}")
        + " "
        + t("attn.summary_entropy", uniform=f"{summary.uniform_entropy:.2f}")
    )
    download_csv(t("attn.download_csv"), summary.to_csv, f"contextlab-head-summary-{model_name}.csv", "download_csv")
    st.caption(t("attn.png_hint"))


class WordLink(Protocol):
    """serving.lesson_attention.WordLink as drawn here: the head that ties one word most to another."""

    @property
    def word(self) -> str: ...
    @property
    def layer(self) -> int: ...  # from 0
    @property
    def head(self) -> int: ...  # from 0
    @property
    def share(self) -> float: ...
    @property
    def tokens(self) -> tuple[str, ...]: ...
    @property
    def row(self) -> tuple[float, ...]: ...


def strongest(links: Sequence[WordLink]) -> WordLink:
    """The link with the largest share (the first of equals)."""
    return max(links, key=lambda link: link.share)


def _pct(share: float) -> str:
    return f"{share:.0%}"


def render_link_bars(link: WordLink, sentence: str, key: str) -> None:
    """The linking head's attention from "it" over every token of `sentence`."""
    labels = [f"{i}: {readable(token)}" for i, token in enumerate(link.tokens)]
    title = t_plain("attn.link_bars", layer=link.layer + 1, head=link.head + 1, last=sentence.split()[-1].rstrip("."))
    st.plotly_chart(build_score_bars(list(zip(labels, link.row)), title), key=key)


def render_guess_switch(
    model_name: str, sentences: tuple[str, str], meant: str, links: Callable[[str], Sequence[WordLink]], causal: bool
) -> None:
    """Predict, then see: `links(sentence)` gives, for each noun, the head that ties "it" to it hardest. In
    the first sentence the strongest of them ties "it" to one noun (said in the question); one word changes
    and a reader's "it" moves to the noun `meant`: does the model's strongest link move too? Both heads'
    attention from "it" is drawn after the pick."""
    first = strongest(links(sentences[0]))

    def solve() -> Solved:
        after = strongest(links(sentences[1]))
        facts = {"n1": first.word, "l1": first.layer + 1, "h1": first.head + 1, "s1": _pct(first.share)}
        facts |= {"n2": after.word, "l2": after.layer + 1, "h2": after.head + 1, "s2": _pct(after.share)}
        facts["note"] = t_plain("attn.switch_causal") if causal else ""
        return Solved("same" if first.word == after.word else "other", facts)

    about = {"model": model_name, "before": sentences[0], "first": first.word, "sentence": sentences[1], "noun": meant}
    question = Question("attn_switch", ("same", "other"), solve, translated=True, about=about)
    if render_predict(question, model_name) is not None:
        for i, (column, sentence) in enumerate(zip(st.columns(2), sentences)):
            with column:
                render_link_bars(strongest(links(sentence)), sentence, f"switch_bars_{i}")


def render_guess_sink(
    model_name: str, heads: int, texts: int, causal: bool, habits: Callable[[], dict[str, float]]
) -> None:
    """Predict, then see: where a token's attention goes most, averaged over every head and the example
    texts (Clark et al.'s measures). `habits()` asks the model after the pick; the bars come after it."""
    options = tuple(m for m in shown_metrics(causal) if m != "entropy")

    def shares() -> list[tuple[str, float]]:
        found = habits()
        return [(t_plain(f"quiz.attn_sink.opt_{m}"), found[m]) for m in options]

    def solve() -> Solved:
        found = habits()
        listed = ", ".join(f"{label} {_pct(share)}" for label, share in shares())
        return Solved(max(options, key=lambda m: found[m]), {"shares": listed})

    about = {"model": model_name, "heads": heads, "n": texts}
    question = Question("attn_sink", options, solve, translated=True, about=about)
    if render_predict(question, model_name) is not None:
        st.plotly_chart(build_score_bars(shares(), t_plain("attn.sink_bars", model=model_name)), key="sink_bars")


def heads_options(own: int) -> tuple[str, ...]:
    """The one-layer BERT-base count (12), MiniLM-L6's (72) and BERT-base's (144), and `own`, this model's
    count from its config (no forward pass), so that its live answer is always among them."""
    return tuple(str(n) for n in sorted({12, 72, 144, own}))


def render_check(
    model_name: str,
    heads: int,
    sentence: tuple[str, Sequence[str]],
    most_attended: Callable[[], tuple[str, float] | None],
    grid: Callable[[], tuple[int, int]],
) -> None:
    """The lesson's questions: where "it" looks in `sentence` (its text and its tokens, spelled as
    `most_attended` spells its answer), and how many heads the model has (`heads`, from its config)."""
    text, tokens = sentence

    def solve_it() -> Solved:
        found = most_attended()
        if found is None:
            raise WordNotInText("it", text, 0)
        token, share = found
        return Solved(token, {"model": model_name, "share": f"{share:.0%}"})

    def solve_heads() -> Solved:
        layers, per_layer = grid()
        return Solved(str(layers * per_layer), {"model": model_name, "layers": layers, "heads": per_layer})

    # The sentence's own ends are options too: a head that parks its attention on [CLS] or [SEP] (or the
    # full stop) is an answer a model gives, and the live answer is always one a learner can pick.
    it_options = tuple(dict.fromkeys(("animal", "street", "it", tokens[0], *tokens[-2:])))
    render_quiz(
        (
            Question("attn_it", it_options, solve_it),
            Question("attn_heads", heads_options(heads), solve_heads),
        )
    )
