"""How a model ContextLab trained was trained, and its measured scores, read from its metrics.json (written
by its training script, typed by model_zoo.trained): one place for the boxes the lessons show beside such a model."""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from components.charts import build_learning_curve
from components.i18n import Markdown, t, t_plain
from model_zoo.registry import ModelCard
from model_zoo.trained import (
    Cloze,
    Curve,
    ElmoTraining,
    MlmTraining,
    MntpTraining,
    ReaderScores,
    ReaderTraining,
    causal_in_bf16,
    in_bf16,
    training_of,
)


def render_curve(
    curve: Curve, names: Mapping[str, str], baselines: dict[str, float], caption: str, percent: bool = True
) -> None:
    """The training's learning curve (`names`: curve key -> label), and what it shows."""
    st.plotly_chart(build_learning_curve(list(curve), names, baselines, percent=percent), key="learning_curve")
    st.caption(t(caption))


def render_masked_lm_training(card: ModelCard, bf16: bool = False) -> None:
    """A masked LM trained here: the recipe, the data, the held-out and cloze scores, the learning curve;
    where this server runs it with bf16 products (`bf16`), its scores measured again in bf16."""
    m = training_of(card)
    if isinstance(m, MntpTraining):  # a decoder made a masked LM (model_zoo.training.train_mntp)
        render_mntp_training(m, card if bf16 else None)
    else:
        assert isinstance(m, MlmTraining)  # an encoder further pre-trained (model_zoo.training.train_mlm)
        render_mlm_training(m)


def render_mntp_training(m: MntpTraining, bf16: ModelCard | None = None) -> None:
    """The decoder made a masked LM: how, its scores (measured again in bf16 under them, for `bf16`'s model
    where this server runs it so), what the anti-copy stages did, the learning curve."""
    st.info(
        t(
            "mlm.trained_mntp",
            tokens=f"{m.tokens_seen / 1e6:.2f}M",
            minutes=f"{m.seconds / 60:.0f}",
            device=m.device,
            script=m.script,
            n=m.fresh.items,
            f1=f"{m.fresh.top1:.0%}",
            f5=f"{m.fresh.top5:.0%}",
            copies=f"{m.fresh.copies:.0%}",
        ),
        icon=":material/model_training:",
    )
    if bf16 is not None:
        render_bf16(bf16)
    if m.anti_copy_from is not None:  # the anti-copy stage, read off the curve where it began and where it ended
        began = next(p for p in m.curve if p["step"] == m.anti_copy_from)
        steps = sum(s.steps for s in m.anti_copy)
        st.caption(
            t(
                "mlm.mntp_unlikelihood",
                steps=steps,
                stages=len(m.anti_copy),
                weights=" → ".join(f"{s.unlikelihood:g}" for s in m.anti_copy),
                short=f"{sum(s.steps * s.short for s in m.anti_copy) / steps:.0%}",
                n=m.fresh_dev.items,
                before=f"{began['fresh_dev_cloze_copies']:.1%}",
                after=f"{m.fresh_dev.copies:.1%}",
                top1_before=f"{began['fresh_dev_cloze_top1']:.1%}",
                top1_after=f"{m.fresh_dev.top1:.1%}",
            )
        )
    with st.expander(t("mlm.curve_title")):
        st.write(
            t(
                "mlm.mntp_scores",
                held1=f"{m.held_top1:.0%}",
                held5=f"{m.held_top5:.0%}",
                t1=f"{m.test.top1:.0%}",
                t5=f"{m.test.top5:.0%}",
                tn=m.test.items,
            )
        )
        names = {
            "held_top1": t("mlm.curve_held1"),
            "held_top5": t("mlm.curve_held5"),
            "dev_cloze_top1": t("mlm.curve_dev1"),
            "dev_cloze_top5": t("mlm.curve_dev5"),
        }
        render_curve(m.curve, names, {}, "mlm.curve_caption_mntp")


def render_mlm_training(m: MlmTraining) -> None:
    st.info(
        t(
            "mlm.trained",
            tokens=f"{m.tokens_seen / 1e6:.1f}M",
            corpus=", ".join(m.corpus_sources),
            hours=f"{m.seconds / 3600:.1f}",
            device=m.device,
            script=m.script,
            top1=f"{m.held_top1:.0%}",
            top5=f"{m.held_top5:.0%}",
            base1=f"{m.unigram_top1:.0%}",
            base5=f"{m.unigram_top5:.0%}",
            items=m.cloze.items,
            c1=f"{m.cloze.top1:.0%}",
            c5=f"{m.cloze.top5:.0%}",
        ),
        icon=":material/model_training:",
    )
    if m.plain_tokens < m.tokens_seen:
        # The curve's point where the plain objective ended, against its last point.
        before = next(p for p in m.curve if p["tokens"] >= m.plain_tokens)
        st.caption(
            t(
                "mlm.trained_unlikelihood",
                tokens=f"{(m.tokens_seen - m.plain_tokens) / 1e6:.1f}M",
                before=f"{before['cloze_top1']:.0%}",
                after=f"{m.cloze.top1:.0%}",
                held_before=f"{before['held_top1']:.1%}",
                held_after=f"{m.held_top1:.1%}",
                item=f"{100 / m.cloze.items:.1f}",
            )
        )
    with st.expander(t("mlm.curve_title")):
        names = {
            "held_top1": t("mlm.curve_held1"),
            "held_top5": t("mlm.curve_held5"),
            "cloze_top1": t("mlm.curve_cloze1"),
            "cloze_top5": t("mlm.curve_cloze5"),
        }
        render_curve(m.curve, names, {t("mlm.curve_unigram5"): m.unigram_top5}, "mlm.curve_caption")


def render_elmo_training(card: ModelCard) -> None:
    """elmo-mini: the corpus, the time, held-out perplexity both ways against the unigram model, the curve."""
    m = training_of(card)
    assert isinstance(m, ElmoTraining)
    st.info(
        t(
            "elmo.trained",
            params=f"{m.parameters / 1e6:.1f}M",
            tokens=f"{m.tokens_seen / 1e6:.1f}M",
            corpus=", ".join(m.corpus_sources),
            minutes=f"{m.seconds / 60:.0f}",
            device=m.device,
            script=m.script,
            fwd=f"{m.held_forward_perplexity:.0f}",
            bwd=f"{m.held_backward_perplexity:.0f}",
            uni=f"{m.unigram_perplexity:.0f}",
        ),
        icon=":material/model_training:",
    )
    with st.expander(t("elmo.curve_title")):
        names = {"forward_perplexity": t_plain("elmo.curve_fwd"), "backward_perplexity": t_plain("elmo.curve_bwd")}
        baselines = {t_plain("elmo.curve_unigram"): m.unigram_perplexity}
        render_curve(m.curve, names, baselines, "elmo.curve_caption", percent=False)


def render_bf16(card: ModelCard) -> None:
    """One line under a model's training box where this server runs it with bf16 products: its scores
    measured again in bf16 beside fp32's (bf16.json, model_zoo.training.measure_bf16), or that they were not."""
    check = in_bf16(card)
    key = "using.qa_bf16" if card.kind == "qa" else "mlm.bf16"
    if check is None:
        st.caption(t(f"{key}_unmeasured"))
        return
    # the placeholders of the line, each in bf16 and (name_32) in fp32
    shares = {"exact": "exact", "f1": "f1"} if isinstance(check.bf16, ReaderScores) else {"t1": "top1", "t5": "top5"}
    figures = {name: f"{getattr(check.bf16, field):.0%}" for name, field in shares.items()}
    figures |= {f"{name}_32": f"{getattr(check.fp32, field):.0%}" for name, field in shares.items()}
    if isinstance(check.bf16, Cloze) and isinstance(check.fp32, Cloze):
        figures |= {"copies": f"{check.bf16.copies or 0:.1%}", "copies_32": f"{check.fp32.copies or 0:.1%}"}
        figures |= {"bf16": f"{check.seconds_bf16:.2f}", "fp32": f"{check.seconds_fp32:.2f}"}
    st.caption(t(key, script=check.script, n=check.items, same=check.same, **figures))


def render_causal_bf16(model_name: str, lens: bool = False) -> None:
    """One line where this server runs a causal LM with bf16 products: its figures measured beside fp32's
    (model_zoo.trained.causal_in_bf16): its next words and perplexity, or with `lens` (Inside the model) the
    lenses' test KL; for a model never measured, that it was not."""
    check = causal_in_bf16(model_name)
    if check is None:
        st.caption(t("gpt.bf16_unmeasured", model=model_name))
        return
    if lens:
        bits = {name: f"{value:.2f}" for name, value in check.lens_bits.items()}
        st.caption(t("inside.tuned_bf16", script=check.script, **bits))
        return
    st.caption(
        t(
            "gpt.bf16",
            model=model_name,
            script=check.script,
            n=check.sentences,
            same=f"{check.same_next:,}",
            positions=f"{check.positions:,}",
            ppl=f"{check.perplexity_bf16:.1f}",
            ppl_32=f"{check.perplexity_fp32:.1f}",
            bf16=f"{check.seconds_bf16:.1f}",
            fp32=f"{check.seconds_fp32:.1f}",
        )
    )


def render_reader_training(card: ModelCard, bf16: bool = False) -> None:
    """A reader fine-tuned here: how, and its held-out exact match and F1 (nothing for a reader from elsewhere);
    where this server runs it with bf16 products (`bf16`), its scores measured again in bf16."""
    if not card.trained:
        return
    m = training_of(card)
    assert isinstance(m, ReaderTraining)
    then = Markdown("")
    if m.by_lecture_rule is not None:  # answers given by SQuAD 2.0's rule; the lecture's rule's scores beside
        then = t("using.qa_rule", exact=f"{m.by_lecture_rule.exact:.0%}", f1=f"{m.by_lecture_rule.f1:.0%}")
    if m.by_squad2_rule is not None:  # and the question's answer type (tasks.pick_answer); without it, beside
        then = Markdown(
            then + t("using.qa_typed_rule", exact=f"{m.by_squad2_rule.exact:.0%}", f1=f"{m.by_squad2_rule.f1:.0%}")
        )
    if m.went_on is not None:
        then = Markdown(
            t(
                "using.qa_went_on",
                script=m.went_on.script,
                written=m.went_on.written_questions,
                cloze=m.went_on.cloze_questions,
                causes=t("using.qa_causes", n=m.went_on.cause_questions) if m.went_on.cause_questions else "",
                minutes=round(m.went_on.minutes, 1),
                device=m.went_on.device,
                runs=m.went_on.runs,
            )
            + then
        )
    figures = {"exact": f"{m.written_test.exact:.0%}", "f1": f"{m.written_test.f1:.0%}"}
    # on the projector, two lines: who trained it and how well it reads; the whole record folded under them
    st.info(
        t("using.qa_summary", model=card.name, test=m.written_test.answerable, **figures),
        icon=":material/model_training:",
    )
    with st.expander(t("using.qa_how")):
        st.markdown(
            t(
                "using.qa_trained_adapters" if card.builds_on else "using.qa_trained",
                then=then,
                model=card.name,
                base=card.builds_on,
                runs=m.runs,
                script=m.script,
                examples=f"{m.examples:,}",
                seen=f"{round(m.epochs * m.examples):,}",
                minutes=round(m.minutes, 1),
                device=m.device,
                written=m.written_questions,
                test=m.written_test.answerable,
                said_none=f"{m.written_test.answerable_said_none:.0%}",
                cexact=f"{m.cloze_test.exact:.0%}",
                cf1=f"{m.cloze_test.f1:.0%}",
                none=f"{m.cloze_test.unanswerable_said_none:.0%}",
                **figures,
            )
        )
    if bf16:
        render_bf16(card)
