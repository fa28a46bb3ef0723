"""Lesson: what BERT reads: WordPiece tokens, [CLS]/[SEP], segments, positions, and three embeddings summed."""

import functools

import pandas as pd
import streamlit as st

import model_zoo
import serving
from components import bert_inputs_view as view
from components.charts import build_vector_strip
from components.frame import ensure_app_frame
from components.guide import Step, begin_path
from components.i18n import t
from components.notices import render_error, render_script_note, select_model
from components.quiz import Question, Solved, render_quiz
from components.tokens import render_tokens
from model_zoo.registry import HIDDEN_STATES, models_where

MAX_ROWS = 24  # token rows an embedding strip can show legibly
ENCODERS = models_where(family="BERT", without=("qa",))
DOG = "My dog loves word embeddings."
STEPS = (
    Step("tokens", ("pair", "tokens")),
    Step("sum", ("pair", "sum")),
    Step("order", ("pair", "order")),
    Step("sizes", ("sizes",)),
    Step("check", ("check",)),
)


def read_pair(model: model_zoo.Encoder) -> tuple[str, str | None, model_zoo.Encoding]:
    """The learner's sentence A and B (None when empty) and what the model reads of them; the page stops
    with the reason if it cannot."""
    left, right = st.columns(2)
    text_a = left.text_input(
        t("inputs.sentence_a"), value="My dog loves word embeddings.", key="a", bind="query-params"
    )
    text_b = right.text_input(
        t("inputs.sentence_b"),
        value="He plays fetch by the river bank.",
        key="b",
        bind="query-params",
        help=t("inputs.sentence_b_help"),
    )

    if not text_a.strip():  # the pair's first sentence: said by its name (B may still hold text)
        render_error(model_zoo.EmptyInput("sentence A"))
        st.stop()
    try:
        encoding = (
            serving.hidden_states(model.name, text_a)
            if not text_b.strip()
            else serving.pair_states(model.name, text_a, text_b)
        )
    except model_zoo.ModelZooError as err:
        render_error(err)
        st.stop()
    return text_a, text_b if text_b.strip() else None, encoding


def tokens(model: model_zoo.Encoder, encoding: model_zoo.Encoding) -> None:
    """The tokens, their ids, segments and positions."""
    st.header(t("inputs.tokens_title", n=len(encoding.tokens)))
    with st.container(key="main_output"):  # the lesson's main output (scripts/first_screen.py)
        render_tokens(encoding.tokens, encoding.word_ids)
    if encoding.truncated:
        st.warning(t("inputs.truncated", n=len(encoding.tokens)), icon=":material/content_cut:")
    unk = model.tokenizer.unk_token
    split = serving.multi_piece_words(model.name, tuple(encoding.words))
    if split:
        st.caption(t("inputs.split", words=", ".join(split[:8])))
    if unk in encoding.tokens:
        st.caption(t("inputs.unknown", unk=unk))
    render_script_note(model.name, encoding.text, HIDDEN_STATES)
    with st.expander(t("inputs.background_title")):  # BERT's name, Chinese characters, ERNIE
        st.markdown(t("inputs.background"))
    st.dataframe(
        pd.DataFrame(
            {
                t("inputs.col_token"): encoding.tokens,
                t("inputs.col_id"): encoding.token_ids,
                t("inputs.col_segment"): encoding.segment_ids,
                t("inputs.col_position"): range(len(encoding.tokens)),
                t("inputs.col_word"): [
                    encoding.words[w] if w is not None and w < len(encoding.words) else "" for w in encoding.word_ids
                ],
            }
        ),
        hide_index=True,
        width="stretch",
    )
    word = view.PIECES_WORD
    view.render_guess_pieces(model.name, word, serving.lesson_word_pieces(model.name, word), len(model.tokenizer))


def embeddings_summed(model: model_zoo.Encoder, text_a: str, text_b: str | None, encoding: model_zoo.Encoding) -> None:
    """Token, segment and position embeddings, and their (normalised) sum."""
    st.header(t("inputs.sum_title"))
    st.write(t("inputs.sum_intro"))
    parts = serving.input_embeddings(model.name, text_a, text_b)
    rows = encoding.tokens[:MAX_ROWS]
    if len(encoding.tokens) > MAX_ROWS:
        st.caption(t("inputs.rows_capped", shown=MAX_ROWS, total=len(encoding.tokens)))
    # lazy tabs: only the open one's chart is built and sent (four per run were a third of a class's time)
    tabs = st.tabs(
        [t("inputs.tab_token"), t("inputs.tab_segment"), t("inputs.tab_position"), t("inputs.tab_sum")],
        key="sum_tab",
        on_change="rerun",
    )
    for tab, matrix, key in zip(
        tabs, (parts.token, parts.segment, parts.position, parts.normalised), ("token", "segment", "position", "sum")
    ):
        if tab.open is False:
            continue
        with tab:
            labels = [f"{i}:{tok}" for i, tok in enumerate(rows)]
            st.plotly_chart(build_vector_strip(labels, matrix[:MAX_ROWS], t(f"inputs.strip_{key}")), key=f"strip_{key}")
    st.caption(t("inputs.sum_note"))


def word_order(model: model_zoo.Encoder, text_a: str) -> None:
    """What position embeddings change: the same words in other orders."""
    st.header(t("inputs.order_title"))
    st.write(t("inputs.order_intro"))
    read = functools.cache(lambda: serving.reorderings(model.name, text_a))  # one read a run: answer and table
    if not view.render_guess_order(model.name, text_a, read):
        return  # the table once the learner has guessed (the model's passes run then, not before)
    try:
        moves = read()
    except model_zoo.ModelZooError as err:
        render_error(err)
    else:
        st.dataframe(
            pd.DataFrame(
                {  # the cosine (the section's point) before the long token column, so that it never leaves the screen
                    t("inputs.col_arrangement"): [t(f"inputs.order_{m.key}") for m in moves],
                    t("inputs.col_cosine"): [round(m.cosine, 3) for m in moves],
                    t("inputs.col_fed"): [
                        " ".join(f"{tok}·{p}" for tok, p in zip(m.tokens, m.positions)) for m in moves
                    ],
                }
            ),
            hide_index=True,
            width="stretch",
            column_config={t("inputs.col_cosine"): st.column_config.NumberColumn(format="%.3f")},
        )
        st.caption(t("inputs.order_note", model=model.name))


def sizes() -> None:
    """BERT's sizes, from the checkpoints' configs."""
    st.header(t("inputs.sizes_title"))
    known = serving.model_sizes()
    st.dataframe(
        pd.DataFrame(
            {
                t("inputs.col_model"): [s.name for s in known],
                # next to the name, where a phone shows it: base against large is the table's point
                t("inputs.col_params"): [f"{s.parameters / 1e6:,.1f}M" for s in known],
                t("inputs.col_layers"): [s.layers for s in known],
                t("inputs.col_hidden"): [s.hidden for s in known],
                t("inputs.col_heads"): [s.heads for s in known],
                t("inputs.col_ff"): [s.feed_forward for s in known],
                t("inputs.col_vocab"): [s.vocab for s in known],
            }
        ),
        hide_index=True,
        width="stretch",
    )
    st.caption(t("inputs.sizes_note"))
    bert = {s.name: s for s in known}
    if {"bert-base-uncased", "bert-large-uncased"} <= bert.keys():
        base, large = bert["bert-base-uncased"], bert["bert-large-uncased"]
        st.caption(
            t(
                "inputs.ff_correction",
                base_d=base.hidden,
                large_d=large.hidden,
                base_ff=f"{base.feed_forward:,}",
                large_ff=f"{large.feed_forward:,}",
            )
        )


def check_yourself(model: model_zoo.Encoder) -> None:
    def solve_tokens() -> Solved:
        tokens = serving.hidden_states(model.name, DOG).tokens
        pieces = [tok for tok in tokens if tok.startswith("##")]
        return Solved(str(len(tokens)), {"model": model.name, "tokens": " ".join(tokens), "pieces": len(pieces) + 1})

    def solve_cls() -> Solved:
        kept = next(m for m in serving.reorderings(model.name, DOG) if m.key == "cls_kept")
        answer = "none" if kept.cosine > 0.9995 else "little" if kept.cosine > 0.9 else "lot"
        return Solved(answer, {"model": model.name, "cos": f"{kept.cosine:.4f}"})

    render_quiz(
        (
            Question("inputs_tokens", ("5", "7", "11"), solve_tokens),
            Question("inputs_cls", ("none", "little", "lot"), solve_cls, translated=True),
        )
    )


def run() -> None:
    ensure_app_frame()
    st.title(t("lesson.bert_inputs.title"))
    st.write(t("inputs.intro"))
    picker, more = st.columns(2, vertical_alignment="bottom")
    with picker:
        model = select_model(t("inputs.model"), ENCODERS, ENCODERS[0], serving.model_or_fallback)
    assert isinstance(model, model_zoo.Encoder)
    with more.expander(t("lesson.more")):
        st.write(t("inputs.intro_more"))
    path = begin_path("bert_inputs", STEPS)
    if path.shows("pair"):  # the sentences, read by the tokens, the sum and the reorderings
        text_a, text_b, encoding = read_pair(model)
        if path.shows("tokens"):
            tokens(model, encoding)
        if path.shows("sum"):
            embeddings_summed(model, text_a, text_b, encoding)
        if path.shows("order"):
            word_order(model, text_a)
    if path.shows("sizes"):
        sizes()
    if path.shows("check"):
        check_yourself(model)
    path.end()


run()
