"""How a model ContextLab trained was trained, and its measured scores, read from its metrics.json (written
by its training script): one place for the boxes the lessons show beside such a model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from components.charts import build_learning_curve
from components.i18n import t, t_plain
from model_zoo.registry import ModelCard, trained_metrics


def render_curve(
    m: dict[str, Any], names: Mapping[str, str], baselines: dict[str, float], caption: str, percent: bool = True
) -> None:
    """The training's learning curve from its metrics (`names`: curve key -> label), and what it shows."""
    st.plotly_chart(build_learning_curve(m["curve"], names, baselines, percent=percent), key="learning_curve")
    st.caption(t(caption))


def render_masked_lm_training(card: ModelCard) -> None:
    """A masked LM trained here: the recipe, the data, the held-out and cloze scores, the learning curve."""
    m: dict[str, Any] = trained_metrics(card)
    if "recipe" in m:  # a decoder made a masked LM (model_zoo.training.train_mntp)
        st.info(
            t(
                "mlm.trained_mntp",
                tokens=f"{m['tokens_seen'] / 1e6:.2f}M",
                minutes=f"{m['training_seconds'] / 60:.0f}",
                device=m["device"],
                script=m["script"],
                n=m["fresh"]["cloze_items"],
                f1=f"{m['fresh']['cloze_top1']:.0%}",
                f5=f"{m['fresh']['cloze_top5']:.0%}",
                copies=f"{m['fresh']['cloze_copies']:.0%}",
            ),
            icon=":material/model_training:",
        )
        if "continued_from" in m:  # the anti-copy stage, read off the curve where it began and where it ended
            began = next(p for p in m["curve"] if p["step"] == m["continued_from"]["steps"])
            stages = m["anti_copy_stages"]
            anti_copy_steps = sum(s["steps"] for s in stages)
            st.caption(
                t(
                    "mlm.mntp_unlikelihood",
                    steps=anti_copy_steps,
                    stages=len(stages),
                    weights=" → ".join(f"{s['config']['unlikelihood']:g}" for s in stages),
                    short=f"{sum(s['steps'] * s['config']['short'] for s in stages) / anti_copy_steps:.0%}",
                    n=m["fresh_dev"]["cloze_items"],
                    before=f"{began['fresh_dev_cloze_copies']:.1%}",
                    after=f"{m['fresh_dev']['cloze_copies']:.1%}",
                    top1_before=f"{began['fresh_dev_cloze_top1']:.1%}",
                    top1_after=f"{m['fresh_dev']['cloze_top1']:.1%}",
                )
            )
        with st.expander(t("mlm.curve_title")):
            st.write(
                t(
                    "mlm.mntp_scores",
                    held1=f"{m['held_top1']:.0%}",
                    held5=f"{m['held_top5']:.0%}",
                    t1=f"{m['test']['cloze_top1']:.0%}",
                    t5=f"{m['test']['cloze_top5']:.0%}",
                    tn=m["test"]["cloze_items"],
                )
            )
            names = {
                "held_top1": t("mlm.curve_held1"),
                "held_top5": t("mlm.curve_held5"),
                "dev_cloze_top1": t("mlm.curve_dev1"),
                "dev_cloze_top5": t("mlm.curve_dev5"),
            }
            render_curve(m, names, {}, "mlm.curve_caption_mntp")
    else:  # an encoder further pre-trained (model_zoo.training.train_mlm)
        st.info(
            t(
                "mlm.trained",
                tokens=f"{m['tokens_seen'] / 1e6:.1f}M",
                corpus=", ".join(m["corpus_sources"]),
                hours=f"{m['train_seconds'] / 3600:.1f}",
                device=m["device"],
                script=m["script"],
                top1=f"{m['held_top1']:.0%}",
                top5=f"{m['held_top5']:.0%}",
                base1=f"{m['unigram_top1']:.0%}",
                base5=f"{m['unigram_top5']:.0%}",
                items=m["cloze_items"],
                c1=f"{m['cloze_top1']:.0%}",
                c5=f"{m['cloze_top5']:.0%}",
            ),
            icon=":material/model_training:",
        )
        plain = [s["tokens"] for s in m.get("stages", []) if not s["config"].get("unlikelihood")]
        if plain and sum(plain) < m["tokens_seen"]:
            # The curve's point where the plain objective ended, against its last point.
            before = next(p for p in m["curve"] if p["tokens"] >= sum(plain))
            st.caption(
                t(
                    "mlm.trained_unlikelihood",
                    tokens=f"{(m['tokens_seen'] - sum(plain)) / 1e6:.1f}M",
                    before=f"{before['cloze_top1']:.0%}",
                    after=f"{m['cloze_top1']:.0%}",
                    held_before=f"{before['held_top1']:.1%}",
                    held_after=f"{m['held_top1']:.1%}",
                    item=f"{100 / m['cloze_items']:.1f}",
                )
            )
        with st.expander(t("mlm.curve_title")):
            names = {
                "held_top1": t("mlm.curve_held1"),
                "held_top5": t("mlm.curve_held5"),
                "cloze_top1": t("mlm.curve_cloze1"),
                "cloze_top5": t("mlm.curve_cloze5"),
            }
            render_curve(m, names, {t("mlm.curve_unigram5"): m["unigram_top5"]}, "mlm.curve_caption")


def render_elmo_training(card: ModelCard) -> None:
    """elmo-mini: the corpus, the time, held-out perplexity both ways against the unigram model, the curve."""
    m: dict[str, Any] = trained_metrics(card)
    st.info(
        t(
            "elmo.trained",
            params=f"{m['parameters'] / 1e6:.1f}M",
            tokens=f"{m['tokens_seen'] / 1e6:.1f}M",
            corpus=", ".join(m["corpus_sources"]),
            minutes=f"{m['train_seconds'] / 60:.0f}",
            device=m["device"],
            script=m["script"],
            fwd=f"{m['held_forward_perplexity']:.0f}",
            bwd=f"{m['held_backward_perplexity']:.0f}",
            uni=f"{m['unigram_perplexity']:.0f}",
        ),
        icon=":material/model_training:",
    )
    with st.expander(t("elmo.curve_title")):
        names = {"forward_perplexity": t_plain("elmo.curve_fwd"), "backward_perplexity": t_plain("elmo.curve_bwd")}
        baselines = {t_plain("elmo.curve_unigram"): m["unigram_perplexity"]}
        render_curve(m, names, baselines, "elmo.curve_caption", percent=False)


def render_reader_training(card: ModelCard) -> None:
    """A reader fine-tuned here: how, and its held-out exact match and F1."""
    m: dict[str, Any] = trained_metrics(card)
    minutes = m["run"]["minutes"] + (m["written_stage"]["minutes"] if card.builds_on else 0)
    st.info(
        t(
            "using.qa_trained_adapters" if card.builds_on else "using.qa_trained",
            model=card.name,
            base=card.builds_on,
            runs=len(m.get("chosen_from", [])),
            script=m["script"],
            examples=f"{m['run']['examples']:,}",
            seen=f"{round(m['run']['epochs'] * m['run']['examples']):,}",
            minutes=round(minutes, 1),
            device=m["device"],
            written=m["written_stage"]["written_questions"],
            test=m["written_test"]["answerable"],
            exact=f"{m['written_test']['exact']:.0%}",
            f1=f"{m['written_test']['f1']:.0%}",
            said_none=f"{m['written_test']['answerable_said_none']:.0%}",
            cexact=f"{m['cloze_test']['exact']:.0%}",
            cf1=f"{m['cloze_test']['f1']:.0%}",
            none=f"{m['cloze_test']['unanswerable_said_none']:.0%}",
        ),
        icon=":material/model_training:",
    )
