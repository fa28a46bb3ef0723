"""What the Masked LM lesson draws: the example buttons, a chart per [MASK], the recipe's table, the
copy-or-predict race, the rollout, both pre-training losses on a pair, and the lesson's questions."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd
import streamlit as st

from components.charts import build_lines, build_matrix, build_score_bars
from components.i18n import md_escape, t, t_plain
from components.notices import render_lesson_miss as render_miss
from components.quiz import Question, Solved, listed, render_predict, render_quiz
from components.tokens import readable
from model_zoo.lessons import cloze
from model_zoo.lessons.masking import PairLoss, RecipeDemo
from model_zoo.lessons.why_mask import Race, Rollout


def use_example(example: str) -> None:
    st.session_state.text = example


def render_examples(examples: Sequence[tuple[str, str]], sources: bool = True) -> None:
    """A button per example sentence (its source, the i18n key mlm.src_*, on hover), then every source
    (unless `sources` is False: the page shows them elsewhere with render_sources)."""
    cols = st.columns(len(examples))
    for i, (col, (example, source)) in enumerate(zip(cols, examples)):
        col.button(
            example,
            key=f"ex{i}",
            on_click=use_example,
            args=(example,),
            width="stretch",
            help=t_plain(f"mlm.src_{source}"),
        )
    if sources:
        render_sources(examples)


def render_sources(examples: Sequence[tuple[str, str]]) -> None:
    """Where each example sentence comes from, in one line."""
    st.caption(t("mlm.sources", **{f"s{i + 1}": t_plain(f"mlm.src_{src}") for i, (_, src) in enumerate(examples)}))


def render_mask_bars(predictions: list[list[tuple[str, float]]], key: str = "mask") -> None:
    """A chart of the guesses (word, probability) for each [MASK], three to a row."""
    columns = st.columns(min(len(predictions), 3))
    for i, preds in enumerate(predictions):
        columns[i % len(columns)].plotly_chart(
            build_score_bars(preds, t_plain("mlm.mask_title", i=i + 1)), key=f"{key}{i}"
        )


def render_guess_blank(model_name: str, sentence: str, guesses: list[tuple[str, float]], words: Sequence[str]) -> None:
    """Predict, then see: which word the model puts first in `sentence`'s blank. The options are `words` and
    the model's own first guess, in alphabetical order (the order says nothing); the bars come after the pick."""
    first = cloze.top_word(guesses)
    top = listed(guesses)
    question = Question(
        "mlm_cup",
        tuple(sorted({*words, first}, key=str.lower)),
        lambda: Solved(first, {"model": model_name, "top": top}),
        about={"sentence": sentence, "model": model_name},
    )
    if render_predict(question, model_name) is not None:
        render_mask_bars([guesses], key="cup")


def render_guess_context(
    model_name: str, sentence: str, before: list[tuple[str, float]], after: list[tuple[str, float]]
) -> None:
    """Predict, then see: does the blank's first guess change when only the words after it change?"""
    first, then = cloze.top_word(before), cloze.top_word(after)
    question = Question(
        "mlm_context",
        ("same", "other"),
        lambda: Solved("same" if first == then else "other", {"before": listed(before), "after": listed(after)}),
        translated=True,
        about={"sentence": sentence, "model": model_name, "first": first},
    )
    if render_predict(question, model_name) is not None:
        render_mask_bars([after], key="context")


def render_lesson_miss(check: cloze.LessonCheck | None, model_name: str, text: str) -> None:
    """Where the model misses the word the lesson names for `text`, the line that says so, naming the
    original BERT that shows the point (the Chinese one for Chinese text)."""
    render_miss(check, model_name, cloze.classic_bert(text))


def render_recipe(demo: RecipeDemo) -> None:
    """The corrupted sentence, what happened at each picked position and what the model guessed, the loss."""
    actions = {1: t("mlm.action_mask"), 2: t("mlm.action_random"), 3: t("mlm.action_keep")}
    st.code(" ".join(readable(token) for token in demo.tokens), language=None, wrap_lines=True)
    st.table(
        {
            t("mlm.col_position"): demo.positions,
            t("mlm.col_original"): [md_escape(readable(token)) for token in demo.originals],
            t("mlm.col_action"): [actions[a] for a in demo.actions],
            t("mlm.col_input"): [md_escape(readable(token)) for token in demo.shown],
            t("mlm.col_guess"): [md_escape(readable(token)) for token in demo.guesses],
            t("mlm.col_p_true"): [f"{p:.1%}" for p in demo.p_original],
        }
    )
    st.metric(t("mlm.loss"), f"{demo.loss:.2f}", help=t("mlm.loss_help", ppl=f"{demo.perplexity:.1f}"))


def render_race(race: Race) -> None:
    """Both tiny models' loss and accuracy at hidden words, step by step, and what they came to."""
    names = {"copy": t_plain("mlm.why_copy"), "masked": t_plain("mlm.why_masked")}
    left, right = st.columns(2)
    left.plotly_chart(
        build_lines(
            race.steps,
            {names[k]: race.loss[k] for k in names},
            {},
            t_plain("mlm.why_loss_title"),
            t_plain("mlm.why_steps"),
        ),
        key="why_loss",
    )
    right.plotly_chart(
        build_lines(
            race.steps,
            {names[k]: race.masked_accuracy[k] for k in names},
            {t_plain("mlm.why_commonest", word=race.commonest_word): race.commonest},
            t_plain("mlm.why_accuracy_title"),
            t_plain("mlm.why_steps"),
            percent=True,
        ),
        key="why_accuracy",
    )
    (copy_loss, copy_acc), (masked_loss, masked_acc) = race.final("copy"), race.final("masked")
    st.write(
        t(
            "mlm.why_found",
            steps=race.steps[-1],
            copy_loss=f"{copy_loss:.2f}",
            masked_loss=f"{masked_loss:.2f}",
            copy_acc=f"{copy_acc:.1%}",
            masked_acc=f"{masked_acc:.1%}",
            commonest=f"{race.commonest:.1%}",
            word=race.commonest_word,
        )
    )
    st.caption(
        t(
            "mlm.why_caption",
            sentences=f"{race.train_sentences:,}",
            vocab=f"{race.vocab:,}",
            positions=f"{race.test_positions:,}",
            seconds=f"{race.seconds:.0f}",
        )
    )


def render_rollout(tokens: Sequence[str], rollout: Rollout, model_name: str) -> None:
    """The rollout as a matrix over the sentence's tokens, and how much each position draws on itself."""
    ticks = [f"{i}:{readable(tok)}" for i, tok in enumerate(tokens)]
    st.plotly_chart(
        build_matrix(
            rollout.rolled,
            ticks,
            ticks,
            t_plain("mlm.rollout_chart", model=model_name),
            zmin=0,
            colorscale="Blues",
            hover="top %{y} ← input %{x}<br>%{z:.2f}",
        ),
        key="rollout",
    )
    column, share = rollout.brightest
    st.caption(
        t("mlm.rollout_found", own=f"{rollout.own:.0%}", even=f"{rollout.even:.0%}", layers=rollout.layers)
        + " "
        + t("mlm.rollout_stripes", token=readable(tokens[column]), i=column, share=f"{share:.0%}")
    )


def _loss(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def render_pair_losses(pairs: Sequence[PairLoss], model_name: str) -> None:
    """The learner's pair and a drawn one: each label, its MLM and NSP losses and their sum."""
    st.dataframe(
        pd.DataFrame(
            {
                t("mlm.both_col_label"): [  # before the sentence, which takes a phone's width
                    t_plain("mlm.both_isnext" if p.is_next else "mlm.both_notnext") for p in pairs
                ],
                t("mlm.both_col_b"): [p.text_b for p in pairs],
                t("mlm.both_col_mlm"): [f"{p.mlm:.2f} ({t_plain('mlm.both_picked', n=p.picked)})" for p in pairs],
                t("mlm.both_col_p"): ["—" if p.p_is_next is None else f"{p.p_is_next:.1%}" for p in pairs],
                t("mlm.both_col_nsp"): [_loss(p.nsp) for p in pairs],
                t("mlm.both_col_total"): [_loss(p.total) for p in pairs],
            }
        ),
        hide_index=True,
        width="stretch",
    )
    st.caption(t("mlm.both_masked", tokens=" ".join(readable(tok) for tok in pairs[0].tokens)))
    if pairs[0].nsp is None:
        st.caption(t("mlm.both_no_nsp", name=model_name))


def render_check(model_name: str, paris: Callable[[], Sequence[tuple[str, float]]], race: Callable[[], Race]) -> None:
    """The lesson's questions, answered by `paris` (the model's top guesses for the Paris blank) and `race`."""

    def solve_paris() -> Solved:
        top = paris()
        return Solved(cloze.top_word(top), {"model": model_name, "top": listed(top, len(top))})

    def solve_copy() -> Solved:
        ran = race()
        (loss, copy), masked = ran.final("copy"), ran.final("masked")[1]
        facts = {"loss": f"{loss:.2f}", "copy": f"{copy:.0%}", "masked": f"{masked:.0%}"}
        return Solved("copy" if ran.copier_copies else "predict", facts)

    render_quiz(
        (
            # compared lower case (top_word), written as the sentence writes them
            Question("mlm_paris", ("france", "paris", "london"), solve_paris, shown=str.capitalize),
            Question("mlm_copy", ("copy", "predict"), solve_copy, translated=True),
        )
    )
