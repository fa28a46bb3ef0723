"""Lesson: using BERT for tasks. A small head on frozen vectors (one sentence -> one class from [CLS] or
the mean; a sentence pair -> one class), trained live, and fine-tuning the whole encoder beside it."""

from __future__ import annotations

import streamlit as st

import model_zoo
import serving
from components import using_bert_view as view
from components.charts import build_score_bars
from components.frame import ensure_app_frame
from components.i18n import t, t_plain
from components.notices import render_error, select_model, timed_label, when_asked, with_bar
from components.task_views import render_task_diagram
from components.training import render_reader_training
from components.url import keep_in_url, key_from_url, said_if_cut
from model_zoo.registry import ModelCard, models_where
from model_zoo.trained import reader_test
from model_zoo.types import TrainedHead
from serving import lesson_tasks
from serving.lesson_tasks import LECTURE_PASSAGE, POOLINGS  # POOLINGS: what a head reads, [CLS] and the mean

ENCODERS = models_where(family="BERT", without=("qa",))
READERS = models_where(kinds=("qa",))
SETS = ("sentiment", "spam")
MAX_CHARS = 500
MAX_PASSAGE_CHARS = 2000  # about 450 WordPiece tokens: within what BERT reads with a question
MULTILINGUAL = "bert-base-multilingual-cased"
PASSAGES, TRAIN_QUESTIONS, TEST_QUESTIONS = lesson_tasks.written_questions()  # every fifth passage held out
NER_EXAMPLE = "Barack Obama visited Paris in June 2009 with a delegation from the United Nations."


def trained(model: model_zoo.Encoder, task: str, pooling: str) -> TrainedHead:
    """The shared head of a task, trained once per server."""
    text = t_plain("using.training", task=t_plain(f"using.task_{task}"), pooling=pooling)
    head = with_bar(text, lambda progress: serving.task_head(model.name, task, pooling, progress))
    if head is None:
        st.stop()
    return head


# -- the sections ---------------------------------------------------------------------------------------
def one_sentence(model: model_zoo.Encoder) -> tuple[str, dict[str, TrainedHead]]:
    """1. One sentence -> one class; the task picked and its heads (one per pooling)."""
    st.header(t("using.sentence_title"))
    st.session_state.setdefault("task", key_from_url("task", list(SETS), SETS[0]))
    st.session_state.setdefault("pooling", key_from_url("pooling", list(POOLINGS), POOLINGS[0]))
    task = st.radio(
        t("using.task"), SETS, format_func=lambda k: t_plain(f"using.task_{k}"), key="task", horizontal=True
    )
    example, key = t_plain(f"using.example_{task}"), f"sentence_{task}"  # each task's sentence under its own name
    said_if_cut(**{key: MAX_CHARS})
    sentence = st.text_input(t("using.your_sentence"), example, key=key, bind="query-params", max_chars=MAX_CHARS)
    out = st.container(key="main_output")  # the lesson's main output (scripts/first_screen.py), the pooling below it
    pooling = st.radio(
        t("using.pooling"),
        POOLINGS,
        format_func=lambda k: t_plain(f"using.pooling_{k}"),
        key="pooling",
        horizontal=True,
    )
    keep_in_url("task", task)
    keep_in_url("pooling", pooling)
    heads = {p: trained(model, task, p) for p in POOLINGS}
    try:  # the verdict first, then how it was reached and each head's scores: the first screen's answer (issue 34)
        guesses = serving.classify(model.name, task, pooling, sentence)
        with out:
            view.render_verdict(guesses, pooling)
        view.render_sentence_diagram(pooling, serving.hidden_states(model.name, sentence))
    except model_zoo.ModelZooError as err:
        render_error(err)
    st.markdown(t("using.sentence_diagram"))
    view.render_heads(heads, model.name, pooling)
    return task, heads


def one_class_per_token(model: model_zoo.Encoder) -> None:
    """2. One class per token: a named-entity tagger, trained on a click."""
    st.header(t("using.token_title"))
    st.markdown(t("using.token_diagram"))
    said_if_cut(ner_text=MAX_CHARS)
    ner_text = st.text_input(
        t("using.token_text"), value=NER_EXAMPLE, key="ner_text", bind="query-params", max_chars=MAX_CHARS
    )
    try:
        render_task_diagram("token", serving.hidden_states(model.name, ner_text), "token_diagram")
    except model_zoo.ModelZooError as err:
        render_error(err)
    tag_model = serving.tagger_model(model.name)
    if tag_model != model.name:
        st.caption(t("using.token_other_model", model=model.name, other=tag_model))
    tagging = when_asked(
        timed_label(t("using.token_train"), serving.measured("tagger")),
        "train_tagger",
        t_plain("using.token_training", model=tag_model),
        lambda progress: (serving.ner_tagger(tag_model, progress), serving.tag_sentence(tag_model, ner_text)),
    )
    if tagging:
        view.render_tags(*tagging, tag_model)


def two_sentences(model: model_zoo.Encoder) -> None:
    """3. Two sentences -> one class (entailment), with a swap that should change the answer."""
    st.header(t("using.pair_title"))
    st.markdown(t("using.pair_diagram"))
    st.session_state.setdefault("premise", "A woman in a red coat is walking her dog along the beach at sunset.")
    st.session_state.setdefault("hypothesis", "Someone is outside with an animal.")
    said_if_cut(premise=MAX_CHARS, hypothesis=MAX_CHARS)
    a, b = st.columns(2)
    premise = a.text_input(t("using.premise"), key="premise", bind="query-params", max_chars=MAX_CHARS)
    hypothesis = b.text_input(t("using.hypothesis"), key="hypothesis", bind="query-params", max_chars=MAX_CHARS)
    st.button(t("using.swap"), key="swap", on_click=view.swap, icon=":material/swap_horiz:")
    trained(model, "nli", "cls")  # both poolings' heads, trained once per server under a progress bar
    pooling = serving.pair_pooling(model.name)
    pairs = trained(model, "nli", pooling)
    try:
        encoding = serving.pair_states(model.name, premise, hypothesis)
        render_task_diagram("pair", encoding, "pair_diagram")
        guesses = serving.classify(model.name, "nli", pooling, premise, hypothesis)
    except model_zoo.ModelZooError as err:
        render_error(err)
    else:
        st.plotly_chart(build_score_bars(guesses, t_plain("using.pair_probabilities")), key="pair_bars")
        if not serving.loaded(model.name, model_zoo.Encoder).has_segments:
            separator = lesson_tasks.pair_separator(encoding) or "·"
            st.caption(t("using.pair_no_segments", model=model.name, separator=separator))
    view.render_pair_record(pairs, pooling)


def question_answering(model: model_zoo.Encoder) -> None:
    """4. Extractive question answering: a fine-tuned reader, and the frozen-vector head beside it."""
    st.header(t("using.qa_title"))
    st.markdown(t("using.qa_diagram"))
    reader = select_model(
        t("using.qa_model"), READERS, serving.default_for("reader"), serving.model_or_fallback, key="reader"
    )
    card = model_zoo.get_card(reader.name)
    render_reader_training(card)  # a reader trained here: how, and its scores
    st.session_state.setdefault("qa_passage", key_from_url("qa_passage", list(PASSAGES), LECTURE_PASSAGE))
    preset = st.selectbox(
        t("using.qa_passage_pick"),
        list(PASSAGES),
        format_func=lambda k: f"{PASSAGES[k][0].passage[:70]}…",
        key="qa_passage",
        on_change=view.pick_passage,
        args=(PASSAGES,),
    )
    keep_in_url("qa_passage", preset)
    st.session_state.setdefault("passage", PASSAGES[preset][0].passage)
    st.session_state.setdefault("question", PASSAGES[preset][0].question)
    said_if_cut(passage=MAX_PASSAGE_CHARS, question=MAX_CHARS)
    passage = st.text_area(
        t("using.qa_passage"), key="passage", bind="query-params", max_chars=MAX_PASSAGE_CHARS, height=150
    )
    question = st.text_input(t("using.qa_question"), key="question", bind="query-params", max_chars=MAX_CHARS)
    tries = [q.question for q in PASSAGES[preset]] + [t_plain("using.qa_unanswerable")]
    st.pills(t("using.qa_try"), tries, key="qa_try", on_change=view.ask)
    try:
        render_task_diagram("qa", serving.pair_states(reader.name, question, passage), "qa_diagram")
        got, missed = lesson_tasks.read_question(reader.name, question, passage)
    except model_zoo.ModelZooError as err:
        render_error(err)
    else:
        view.render_reading(got, reader.name, missed)
    with st.expander(t("using.qa_frozen")):
        frozen_head(model, card, question, passage)


def frozen_head(model: model_zoo.Encoder, reader: ModelCard, question: str, passage: str) -> None:
    st.write(t("using.qa_frozen_intro", model=model.name, train=TRAIN_QUESTIONS))
    frozen_qa = when_asked(
        timed_label(t("using.qa_frozen_train"), serving.measured("qa_frozen")),
        "train_qa_head",
        t_plain("using.qa_frozen_training", model=model.name),
        lambda bar: (serving.qa_head(model.name, bar), serving.answer_question(model.name, question, passage)),
    )
    if frozen_qa:
        view.render_frozen_reading(*frozen_qa, model.name, TEST_QUESTIONS, reader.name, reader_test(reader))


def many_languages() -> str:
    """5. One model, many languages: an English-trained head reads Chinese; the model it runs on."""
    st.header(t("using.ml_title"))
    st.write(t("using.ml_intro"))
    multilingual = serving.availabilities()[MULTILINGUAL].ready
    ml_reader = MULTILINGUAL if multilingual else "minilm-l6"
    if not multilingual:
        command = f"python -m model_zoo prefetch {MULTILINGUAL}"
        st.info(t("using.ml_missing", model=MULTILINGUAL, command=command), icon=":material/cloud_off:")
    cross = when_asked(
        t("using.ml_train", model=ml_reader),
        "ml_train",
        t_plain("using.ml_training", model=ml_reader),
        lambda progress: serving.cross_lingual(ml_reader, progress),
    )
    if cross is None:
        return ml_reader
    view.render_cross_lingual(cross, lesson_tasks.held_out_sentences("sentiment"), multilingual, ml_reader)
    said_if_cut(ml_own=MAX_CHARS)
    own = st.text_input(t("using.ml_own"), key="ml_own", bind="query-params", max_chars=MAX_CHARS)
    if own.strip():
        try:
            st.plotly_chart(build_score_bars(serving.classify(ml_reader, "sentiment", "mean", own)), key="ml_own_bars")
        except model_zoo.ModelZooError as err:
            render_error(err)
    return ml_reader


def fine_tuning(model: model_zoo.Encoder, task: str, heads: dict[str, TrainedHead]) -> None:
    """6. Fine-tuning the whole encoder against the head on frozen features."""
    st.header(t("using.finetune_title"))
    st.write(t("using.finetune_intro", model=model.name, task=t_plain(f"using.task_{task}")))
    result = when_asked(
        timed_label(t("using.finetune"), serving.measured("finetune")),
        "finetune",
        t_plain("using.finetuning", model=model.name),
        lambda progress: serving.fine_tuned(model.name, task, progress),
        once=True,
    )
    if result:
        view.render_fine_tuning(heads["cls"], result)
    st.caption(t("using.data_note", questions=TRAIN_QUESTIONS + TEST_QUESTIONS, passages=len(PASSAGES)))


def check_yourself(model: model_zoo.Encoder, ml_reader: str) -> None:
    def accuracy(pooling: str) -> float:
        return serving.task_head(model.name, "sentiment", pooling).head.accuracy

    view.render_check(model.name, ml_reader, accuracy, lambda: serving.cross_lingual(ml_reader))


def run() -> None:
    ensure_app_frame()
    st.title(t("lesson.using_bert.title"))
    st.write(t("using.intro"))
    model = select_model(t("using.model"), ENCODERS, serving.default_for("task_encoder"), serving.model_or_fallback)
    assert isinstance(model, model_zoo.Encoder)  # every BERT-family model is one
    st.expander(t("lesson.more")).write(t("using.intro_more"))
    task, heads = one_sentence(model)
    one_class_per_token(model)
    two_sentences(model)
    question_answering(model)
    ml_reader = many_languages()
    fine_tuning(model, task, heads)
    view.render_records()  # 7. What BERT achieved
    check_yourself(model, ml_reader)


run()
