"""What the Using BERT lesson draws of a task: the diagram of which vector feeds which classifier, a
reader's answer with its start and end curves, and how a reader ContextLab trained was trained."""

from __future__ import annotations

import streamlit as st

from components.charts import build_span_curves, build_task_diagram
from components.i18n import md_escape, t, t_plain
from components.tokens import readable
from model_zoo.lessons import tasks

# The most token boxes a diagram draws: ten keep a token's text at 11 px in boxes a phone (350 px) can read; a
# question and its passage drawn five and a …, and the last, each (fourteen) were 25 px boxes of 9 px text. A
# segment shows at most PER_SEGMENT tokens before its "…" (one sentence: seven boxes, a word's room each).
DIAGRAM_BOXES = 10
PER_SEGMENT = 5


def render_task_diagram(kind: str, tokens: list[str], segments: list[int], key: str) -> None:
    """Which output vector feeds which classifier, over the learner's own tokens (and their segments), each
    segment abridged to its first tokens, a "…" and its last, DIAGRAM_BOXES in all."""
    labels = {k: t_plain(f"using.diagram_{k}") for k in ("bert", "linear", "class", "tag", "start", "end")}
    per_segment = min(PER_SEGMENT, DIAGRAM_BOXES // max(1, len(set(segments))) - 2)  # room for "…" and the last
    shown = tasks.abridged(tokens, segments, passage=kind == "qa", per_segment=per_segment)
    figure = build_task_diagram(kind, [readable(tok) for tok in shown.tokens], shown.segments, shown.positions, labels)
    st.plotly_chart(figure, key=key, config={"staticPlot": True})


def render_answer(got: tasks.Answer, model_name: str, key: str) -> None:
    """The span picked, highlighted in the passage (or why there is none), and both score curves. Places
    are counted as the lecture counts a passage's words, from 1 ([CLS], where a reader has it, is 0). For a
    reader, the two scores that decided (its best span's and "no answer"'s), the span its scores alone preferred
    where the question's answer type ruled it out, and where the lecture's rule of thumb on the best start and
    end alone would have said otherwise."""
    base = 0 if got.framed else 1
    places = {
        "start": got.best_start + base,
        "end": got.best_end + base,
        "start_token": got.tokens[got.best_start].strip(),  # in prose: SmolLM2's " within" as "within"
        "end_token": got.tokens[got.best_end].strip(),
    }
    if got.span is not None:
        a, b = got.span
        st.success(
            t("using.qa_answer", answer=got.text, start=got.start + base, end=got.end + base), icon=":material/check:"
        )
        before, after = md_escape(got.passage[:a]), md_escape(got.passage[b:])
        st.markdown(f"{before}**:orange-background[{md_escape(got.passage[a:b])}]**{after}")
        if got.passed_over:
            st.caption(t("using.qa_passed_over", span=got.passed_over))
    else:
        st.warning(t(f"using.qa_none_{got.reason}", **places), icon=":material/block:")
    if got.null_score is not None and got.inside:
        st.caption(t("using.qa_scores", span=got.inside, score=f"{got.span_score:.1f}", null=f"{got.null_score:.1f}"))
        if got.lecture and got.span is not None:
            st.caption(t(f"using.qa_lecture_{got.lecture}", **places))
    elif got.inside:
        st.caption(t("using.qa_inside", span=got.inside))
    if got.cut:
        st.caption(t("using.qa_cut"))
    curves = build_span_curves(
        got.tokens,
        got.start_probabilities,
        got.end_probabilities,
        None if got.span is None else (got.start + base, got.end + base),
        (t_plain("using.qa_start"), t_plain("using.qa_end"), t_plain("using.qa_span")),
        t_plain("using.qa_curves", model=model_name),
        first=base,
        answer=got.text if got.span is not None else "",
    )
    st.plotly_chart(curves, key=key)
