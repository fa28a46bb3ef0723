"""Lesson: using BERT for tasks. A small head on frozen vectors (one sentence -> one class from [CLS] or
the mean; a sentence pair -> one class), trained live, and fine-tuning the whole encoder beside it."""

from __future__ import annotations

import streamlit as st

import model_zoo
import serving
from components import using_bert_view as view
from components.frame import ensure_app_frame
from components.guide import Step, begin_path
from components.i18n import t, t_plain
from components.notices import render_error, render_script_note, select_model, timed_label, when_asked, with_bar
from components.task_views import render_task_diagram
from components.training import render_reader_training
from components.url import key_from_url, text_box
from model_zoo.registry import ANSWER_SPAN, HIDDEN_STATES, models_where
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
STEPS = (
    Step("sentence", ("sentence",)),
    Step("token", ("token",)),
    Step("pair", ("pair",)),
    Step("qa", ("qa",)),
    Step("languages", ("languages",)),
    Step("finetune", ("finetune", "records")),
    Step("check", ("check",)),
)


def trained(model: model_zoo.Encoder, task: str, pooling: str) -> TrainedHead:
    """The shared head of a task, trained once per server."""
    text = t_plain("using.training", task=t_plain(f"using.task_{task}"), pooling=pooling)
    head = with_bar(text, lambda progress: serving.task_head(model.name, task, pooling, progress))
    if head is None:
        st.stop()
    return head


# -- the sections ---------------------------------------------------------------------------------------
def one_sentence(model: model_zoo.Encoder) -> None:
    """1. One sentence -> one class, and a guess at a sentence whose words alone point the other way."""
    st.header(t("using.sentence_title"))
    task = view.pick(t("using.task"), SETS, "task", "using.task")
    example, key = t_plain(f"using.example_{task}"), f"sentence_{task}"  # each task's sentence under its own name
    sentence = text_box(st.text_input, t("using.your_sentence"), key, MAX_CHARS, value=example)
    render_script_note(model.name, sentence, HIDDEN_STATES)
    out = st.container(key="main_output")  # the lesson's main output (scripts/first_screen.py), the pooling below it
    pooling = view.pick(t("using.pooling"), POOLINGS, "pooling", "using.pooling")
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
    classify = lambda text: serving.classify(model.name, task, pooling, text)  # noqa: E731 (the head trained above)
    view.render_guess_sentence(model.name, task, pooling, heads[pooling].head.classes, classify)


def one_class_per_token(model: model_zoo.Encoder) -> None:
    """2. One class per token: a named-entity tagger, trained on a click."""
    st.header(t("using.token_title"))
    st.markdown(t("using.token_diagram"))
    ner_text = text_box(st.text_input, t("using.token_text"), "ner_text", MAX_CHARS, value=NER_EXAMPLE)
    tag_model = serving.tagger_model(model.name)
    try:  # the tokens the tagger reads, which may be another model's than the page's
        render_task_diagram("token", *serving.read_texts(tag_model, ner_text), "token_diagram")
    except model_zoo.ModelZooError as err:
        render_error(err)
    if tag_model != model.name:
        st.caption(t("using.token_other_model", model=model.name, other=tag_model))
    render_script_note((model.name, tag_model), ner_text, HIDDEN_STATES)
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
    premise, hypothesis = view.read_pair(model.name, MAX_CHARS)
    trained(model, "nli", "cls")  # both poolings' heads, trained once per server under a progress bar
    pooling = serving.pair_pooling(model.name)
    pairs = trained(model, "nli", pooling)
    try:
        encoding = serving.pair_states(model.name, premise, hypothesis)
        render_task_diagram("pair", encoding.tokens, encoding.segment_ids.tolist(), "pair_diagram")
        guesses = serving.classify(model.name, "nli", pooling, premise, hypothesis)
    except model_zoo.ModelZooError as err:
        render_error(err)
    else:
        st.plotly_chart(view.class_bars(guesses, t_plain("using.pair_probabilities")), key="pair_bars")
        if not serving.loaded(model.name, model_zoo.Encoder).has_segments:
            separator = lesson_tasks.pair_separator(encoding) or "·"
            st.caption(t("using.pair_no_segments", model=model.name, separator=separator))
    view.render_pair_record(pairs, pooling)
    classify = lambda a, b: serving.classify(model.name, "nli", pooling, a, b)  # noqa: E731 (the head trained above)
    view.render_guess_swap(model.name, premise, hypothesis, pairs, classify)


@st.fragment  # a learner's passage or question reruns this section alone, not the lesson's other six
def question_answering(model: model_zoo.Encoder) -> None:
    """4. Extractive question answering: a fine-tuned reader, and the frozen-vector head beside it."""
    st.header(t("using.qa_title"))
    st.markdown(t("using.qa_diagram"))
    reader = select_model(
        t("using.qa_model"), READERS, serving.default_for("reader"), serving.model_or_fallback, key="reader"
    )
    card = model_zoo.get_card(reader.name)
    bf16 = isinstance(reader, model_zoo.Encoder) and reader.runs_bf16  # a class's server (scripts/serve.py)
    render_reader_training(card, bf16=bf16)  # a reader trained here: how, and its scores
    passage, question = view.read_passage(PASSAGES, LECTURE_PASSAGE, MAX_PASSAGE_CHARS, MAX_CHARS)
    render_script_note(reader.name, f"{question} {passage}", ANSWER_SPAN)
    try:
        # the reader's tokens without a pass of its own: its one pass is the reading below
        render_task_diagram("qa", *serving.read_texts(reader.name, question, passage), "qa_diagram")
        got, missed = lesson_tasks.read_question(reader.name, question, passage)
    except model_zoo.ModelZooError as err:
        render_error(err)
    else:
        view.render_reading(got, reader.name, missed, passage == PASSAGES[LECTURE_PASSAGE][0].passage)
    with st.expander(t("using.qa_frozen")):  # start and end vectors learned on frozen vectors, on a click
        view.render_frozen_head(
            model.name,
            (TRAIN_QUESTIONS, TEST_QUESTIONS),
            card,
            serving.measured("qa_frozen"),
            lambda bar: (serving.qa_head(model.name, bar), serving.answer_question(model.name, question, passage)),
        )
    view.render_guess_qa(reader.name, lambda asked: serving.read_question(reader.name, asked, passage))


def multilingual_reader() -> str:
    """The model the cross-lingual head runs on: multilingual BERT once prefetched, else English-only minilm-l6."""
    return MULTILINGUAL if serving.availabilities()[MULTILINGUAL].ready else "minilm-l6"


def many_languages() -> None:
    """5. One model, many languages: an English-trained head reads Chinese."""
    st.header(t("using.ml_title"))
    st.write(t("using.ml_intro"))
    ml_reader = multilingual_reader()
    multilingual = ml_reader == MULTILINGUAL
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
        return
    view.render_cross_lingual(cross, lesson_tasks.held_out_sentences("sentiment"), multilingual, ml_reader)
    own = text_box(st.text_input, t("using.ml_own"), "ml_own", MAX_CHARS)
    render_script_note(ml_reader, own, HIDDEN_STATES)  # minilm-l6, standing in for the multilingual model
    if own.strip():
        try:
            st.plotly_chart(
                view.class_bars(serving.classify(ml_reader, "sentiment", "mean", own), ""), key="ml_own_bars"
            )
        except model_zoo.ModelZooError as err:
            render_error(err)


def fine_tuning(model: model_zoo.Encoder) -> None:
    """6. Fine-tuning the whole encoder on the task picked in 1. (read from the URL) against its head on frozen
    [CLS] vectors."""
    task = key_from_url("task", list(SETS), SETS[0])
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
        view.render_fine_tuning(trained(model, task, "cls"), result)
    st.caption(t("using.data_note", questions=TRAIN_QUESTIONS + TEST_QUESTIONS, passages=len(PASSAGES)))


def check_yourself(model: model_zoo.Encoder) -> None:
    ml_reader = multilingual_reader()

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
    path = begin_path("using_bert", STEPS)
    sections = {
        "sentence": one_sentence,
        "token": one_class_per_token,
        "pair": two_sentences,
        "qa": question_answering,
        "languages": lambda _: many_languages(),
        "finetune": fine_tuning,
        "records": lambda _: view.render_records(),  # 7. What BERT achieved
        "check": check_yourself,
    }
    for section, draw in sections.items():
        if path.shows(section):
            draw(model)
    path.end()


run()
