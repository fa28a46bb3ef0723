"""Lesson: using BERT for tasks. A small head on frozen vectors (one sentence -> one class from [CLS] or
the mean; a sentence pair -> one class), trained live, and fine-tuning the whole encoder beside it."""

from __future__ import annotations

import streamlit as st

import model_zoo
import serving
from components.charts import build_score_bars
from components.frame import ensure_app_frame
from components.i18n import md_escape, t, t_plain
from components.notices import render_error, select_model
from components.url import keep_in_url, key_from_url

ensure_app_frame()

ENCODERS = [c.name for c in model_zoo.list_models() if c.family == "BERT"]
SETS = ("sentiment", "spam")
POOLINGS = ("cls", "mean")
MAX_CHARS = 500


def trained(task: str, pooling: str) -> serving.TrainedHead:
    """The shared head, trained with a progress bar the first time anyone on the server asks."""
    bar = st.progress(0.0, text=t_plain("using.training", task=t_plain(f"using.task_{task}"), pooling=pooling))
    head = serving.task_head(model.name, task, pooling, lambda f: bar.progress(f))
    bar.empty()
    return head


st.title(t("lesson.using_bert.title"))
st.write(t("using.intro"))
model = select_model(
    t("using.model"), ENCODERS, serving.ready_or("bert-base-uncased", "minilm-l6"), serving.model_or_fallback
)

# 1. One sentence -> one class -------------------------------------------------------------------
st.header(t("using.sentence_title"))
st.markdown(t("using.sentence_diagram"))
st.session_state.setdefault("task", key_from_url("task", list(SETS), SETS[0]))
st.session_state.setdefault("pooling", key_from_url("pooling", list(POOLINGS), POOLINGS[0]))
left, right = st.columns(2)
task = left.radio(
    t("using.task"),
    SETS,
    format_func=lambda k: t_plain(f"using.task_{k}"),
    key="task",
    horizontal=True,
)
pooling = right.radio(
    t("using.pooling"),
    POOLINGS,
    format_func=lambda k: t_plain(f"using.pooling_{k}"),
    key="pooling",
    horizontal=True,
)
keep_in_url("task", task)
keep_in_url("pooling", pooling)
heads = {p: trained(task, p) for p in POOLINGS}
chosen = heads[pooling]
st.dataframe(
    [
        {
            t_plain("using.col_pooling"): t_plain(f"using.pooling_{p}"),
            t_plain("using.col_accuracy"): round(h.head.accuracy, 3),
            t_plain("using.col_majority"): round(h.head.majority, 3),
            t_plain("using.col_examples"): f"{h.train} / {h.test}",
            t_plain("using.col_cost"): f"{h.feature_seconds:.1f} s + {h.head.seconds:.2f} s",
        }
        for p, h in heads.items()
    ],
    hide_index=True,
    width="stretch",
)
st.caption(t("using.sentence_caption", model=model.name))
sentence = st.text_input(
    t("using.your_sentence"),
    value=t_plain(f"using.example_{task}"),
    key=f"sentence_{task}",
    max_chars=MAX_CHARS,
)
try:
    guesses = serving.classify(model.name, task, pooling, sentence)
except model_zoo.ModelZooError as err:
    render_error(err)
else:
    label = t_plain(f"using.pooling_{pooling}")
    st.plotly_chart(build_score_bars(guesses, t_plain("using.probabilities", pooling=label)), key="sentence_bars")
    st.write(t("using.verdict", label=guesses[0][0], p=f"{guesses[0][1]:.0%}"))

# 2. One class per token ------------------------------------------------------------------------
st.header(t("using.token_title"))
st.markdown(t("using.token_diagram"))
ner_text = st.text_input(
    t("using.token_text"),
    value="Barack Obama visited Paris in June 2009 with a delegation from the United Nations.",
    key="ner_text",
    bind="query-params",
    max_chars=MAX_CHARS,
)
st.button(
    t("using.token_train"),
    key="train_tagger",
    icon=":material/model_training:",
    on_click=lambda: st.session_state.update(tagger=True),
)
if st.session_state.get("tagger"):
    bar = st.progress(0.0, text=t_plain("using.token_training", model=model.name))
    try:
        tagger = serving.ner_tagger(model.name, lambda f: bar.progress(f))
        tagged = serving.tag_sentence(model.name, ner_text)
    except model_zoo.ModelZooError as err:
        bar.empty()
        render_error(err)
    else:
        bar.empty()
        st.markdown(" ".join(md_escape(w) if tag == "O" else f"**{md_escape(w)}** `{tag}`" for w, tag, _ in tagged))
        st.caption(t("using.token_caption", accuracy=f"{tagger.accuracy:.2f}", majority=f"{tagger.majority:.2f}"))

# 3. Two sentences -> one class --------------------------------------------------------------------
st.header(t("using.pair_title"))
st.markdown(t("using.pair_diagram"))
st.session_state.setdefault("premise", "A woman in a red coat is walking her dog along the beach at sunset.")
st.session_state.setdefault("hypothesis", "Someone is outside with an animal.")


def swap() -> None:
    st.session_state.premise, st.session_state.hypothesis = st.session_state.hypothesis, st.session_state.premise


a, b = st.columns(2)
premise = a.text_input(t("using.premise"), key="premise", bind="query-params", max_chars=MAX_CHARS)
hypothesis = b.text_input(t("using.hypothesis"), key="hypothesis", bind="query-params", max_chars=MAX_CHARS)
st.button(t("using.swap"), key="swap", on_click=swap, icon=":material/swap_horiz:")
pairs = trained("nli", "cls")
try:
    guesses = serving.classify(model.name, "nli", "cls", premise, hypothesis)
except model_zoo.ModelZooError as err:
    render_error(err)
else:
    st.plotly_chart(build_score_bars(guesses, t_plain("using.pair_probabilities")), key="pair_bars")
st.caption(
    t(
        "using.pair_caption",
        accuracy=f"{pairs.head.accuracy:.2f}",
        majority=f"{pairs.head.majority:.2f}",
        train=pairs.train,
        test=pairs.test,
    )
)

# 4. Fine-tuning against frozen features -----------------------------------------------------------
st.header(t("using.finetune_title"))
st.write(t("using.finetune_intro", model=model.name, task=t_plain(f"using.task_{task}")))
st.button(
    t("using.finetune"),
    key="finetune",
    icon=":material/model_training:",
    on_click=lambda: st.session_state.update(to_finetune=True),  # a flag: AppTest and fragments keep it
)
if st.session_state.pop("to_finetune", False):
    bar = st.progress(0.0, text=t_plain("using.finetuning", model=model.name))
    try:
        result = serving.fine_tuned(model.name, task, lambda f: bar.progress(f))
    except model_zoo.ModelZooError as err:
        render_error(err)
    else:
        bar.empty()
        frozen = heads["cls"]
        st.dataframe(
            [
                {
                    t_plain("using.col_way"): t_plain("using.way_frozen"),
                    t_plain("using.col_accuracy"): round(frozen.head.accuracy, 3),
                    t_plain("using.col_cost"): f"{frozen.feature_seconds + frozen.head.seconds:.1f} s",
                },
                {
                    t_plain("using.col_way"): t_plain("using.way_finetuned", epochs=result.epochs),
                    t_plain("using.col_accuracy"): round(result.accuracy, 3),
                    t_plain("using.col_cost"): f"{result.seconds:.1f} s",
                },
            ],
            hide_index=True,
            width="stretch",
        )
        st.caption(t("using.finetune_caption"))
st.caption(t("using.data_note"))
