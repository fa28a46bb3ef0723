"""Lesson: using BERT for tasks. A small head on frozen vectors (one sentence -> one class from [CLS] or
the mean; a sentence pair -> one class), trained live, and fine-tuning the whole encoder beside it."""

from __future__ import annotations

import streamlit as st

import model_zoo
import serving
from components.charts import build_score_bars, build_span_curves, build_task_diagram
from components.frame import ensure_app_frame
from components.i18n import md_escape, t, t_plain
from components.notices import render_error, select_model, when_asked, with_bar
from components.quiz import Question, Solved, render_quiz
from components.records import render_record
from components.tokens import readable
from components.url import keep_in_url, key_from_url
from model_zoo import tasks
from model_zoo.registry import models_where, trained_metrics

ensure_app_frame()

ENCODERS = models_where(family="BERT", without=("qa",))
SETS = ("sentiment", "spam")
POOLINGS = tasks.POOLINGS  # what model_zoo.tasks trains a head on: [CLS] and the mean
MAX_CHARS = 500
READERS = models_where(kinds=("qa",))
PASSAGES = tasks.written_passages()
QUESTIONS = tasks.load_questions()  # (train, test): every fifth passage held out
SEED_PASSAGE = tasks.LECTURE_PASSAGE
MULTILINGUAL = "bert-base-multilingual-cased"
MAX_PASSAGE_CHARS = 2000  # about 450 WordPiece tokens: within what BERT reads with a question


def trained(task: str, pooling: str) -> tasks.TrainedHead:
    """The shared head of a task, trained once per server."""
    text = t_plain("using.training", task=t_plain(f"using.task_{task}"), pooling=pooling)
    head = with_bar(text, lambda progress: serving.task_head(model.name, task, pooling, progress))
    if head is None:
        st.stop()
    return head


def draw(kind: str, encoding: model_zoo.Encoding, key: str) -> None:
    """Which output vector feeds which classifier, over the learner's own tokens."""
    labels = {k: t_plain(f"using.diagram_{k}") for k in ("bert", "linear", "class", "tag", "start", "end")}
    shown = tasks.abridged(encoding.tokens, encoding.segment_ids.tolist(), passage=kind == "qa")
    figure = build_task_diagram(kind, [readable(tok) for tok in shown.tokens], shown.segments, shown.positions, labels)
    st.plotly_chart(figure, key=key, config={"staticPlot": True})


def show_answer(got: tasks.Answer, model_name: str, key: str) -> None:
    """The span picked, highlighted in the passage (or why there is none), and both score curves. Places
    are counted as the lecture counts a passage's words, from 1 ([CLS], where a reader has it, is 0)."""
    base = 0 if got.framed else 1
    if got.span is not None:
        a, b = got.span
        st.success(
            t("using.qa_answer", answer=got.text, start=got.start + base, end=got.end + base), icon=":material/check:"
        )
        before, after = md_escape(got.passage[:a]), md_escape(got.passage[b:])
        st.markdown(f"{before}**:orange-background[{md_escape(got.passage[a:b])}]**{after}")
    else:
        st.warning(
            t(
                f"using.qa_none_{got.reason}",
                start=got.best_start + base,
                end=got.best_end + base,
                start_token=got.tokens[got.best_start],
                end_token=got.tokens[got.best_end],
            ),
            icon=":material/block:",
        )
        if got.inside:
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
    )
    st.plotly_chart(curves, key=key)


st.title(t("lesson.using_bert.title"))
st.write(t("using.intro"))
model = select_model(t("using.model"), ENCODERS, serving.default_for("task_encoder"), serving.model_or_fallback)

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
            t_plain("using.col_layer"): f"{h.head.layer} / {len(h.development) - 1}",
            t_plain("using.col_accuracy"): round(h.head.accuracy, 3),
            t_plain("using.col_last"): round(h.last_layer, 3),
            t_plain("using.col_majority"): round(h.head.majority, 3),
            t_plain("using.col_examples"): f"{h.train} / {h.test}",
            t_plain("using.col_cost"): f"{h.feature_seconds:.1f} s + {h.head.seconds:.2f} s",
        }
        for p, h in heads.items()
    ],
    hide_index=True,
    width="stretch",
)
st.caption(t("using.sentence_caption", model=model.name, seconds=f"{chosen.head.seconds:.2f}"))
sentence = st.text_input(
    t("using.your_sentence"),
    value=t_plain(f"using.example_{task}"),
    key=f"sentence_{task}",
    max_chars=MAX_CHARS,
)
try:
    draw("sentence" if pooling == "cls" else "mean", serving.hidden_states(model.name, sentence), "sentence_diagram")
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
try:
    draw("token", serving.hidden_states(model.name, ner_text), "token_diagram")
except model_zoo.ModelZooError as err:
    render_error(err)
tag_model = serving.tagger_model(model.name)
if tag_model != model.name:
    st.caption(t("using.token_other_model", model=model.name, other=tag_model))
tagging = when_asked(
    t("using.token_train"),
    "train_tagger",
    t_plain("using.token_training", model=tag_model),
    lambda progress: (serving.ner_tagger(tag_model, progress), serving.tag_sentence(tag_model, ner_text)),
)
if tagging:
    tagger, tagged = tagging
    st.markdown(" ".join(md_escape(w) if tag == "O" else f"**{md_escape(w)}** `{tag}`" for w, tag, _ in tagged))
    st.caption(
        t(
            "using.token_caption",
            accuracy=f"{tagger.accuracy:.2f}",
            majority=f"{tagger.majority:.2f}",
            model=tag_model,
            layer=tagger.layer,
        )
    )

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
trained("nli", "cls")  # both poolings' heads, trained once per server under a progress bar
pair_pooling = serving.pair_pooling(model.name)
pairs = trained("nli", pair_pooling)
try:
    pair_encoding = serving.pair_states(model.name, premise, hypothesis)
    draw("pair", pair_encoding, "pair_diagram")
    guesses = serving.classify(model.name, "nli", pair_pooling, premise, hypothesis)
except model_zoo.ModelZooError as err:
    render_error(err)
else:
    st.plotly_chart(build_score_bars(guesses, t_plain("using.pair_probabilities")), key="pair_bars")
    if not serving.loaded(model.name, model_zoo.Encoder).has_segments:
        separators = [tok for tok, w in zip(pair_encoding.tokens, pair_encoding.word_ids) if w is None][1:2]
        st.caption(t("using.pair_no_segments", model=model.name, separator=" ".join(separators) or "·"))
st.caption(
    t(
        "using.pair_caption",
        accuracy=f"{pairs.head.accuracy:.2f}",
        majority=f"{pairs.head.majority:.2f}",
        train=pairs.train,
        test=pairs.test,
        pooling=t_plain(f"using.pooling_{pair_pooling}"),
        layer=pairs.head.layer,
        layers=len(pairs.development) - 1,
        changed=pairs.swaps_changed,
        swaps=pairs.swaps,
    )
)

# 4. Extractive question answering -------------------------------------------------------------------
st.header(t("using.qa_title"))
st.markdown(t("using.qa_diagram"))
reader = select_model(
    t("using.qa_model"),
    READERS,
    serving.default_for("reader"),
    serving.model_or_fallback,
    key="reader",
)
reader_card = model_zoo.get_card(reader.name)
reader_metrics = trained_metrics(reader_card) if reader_card.trained else None
if reader_metrics is not None:
    m = reader_metrics
    st.info(
        t(
            "using.qa_trained_adapters" if reader_card.builds_on else "using.qa_trained",
            model=reader.name,
            base=reader_card.builds_on,
            runs=len(m.get("chosen_from", [])),
            script=m["script"],
            examples=f"{m['run']['examples']:,}",
            minutes=round(m["run"]["minutes"] + (m["written_stage"]["minutes"] if reader_card.builds_on else 0), 1),
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


def pick_passage() -> None:
    """A preset picked: its text in the passage box, its first question in the question box."""
    chosen = PASSAGES[st.session_state.qa_passage]
    st.session_state.passage, st.session_state.question = chosen[0].passage, chosen[0].question


st.session_state.setdefault("qa_passage", key_from_url("qa_passage", list(PASSAGES), SEED_PASSAGE))
preset = st.selectbox(
    t("using.qa_passage_pick"),
    list(PASSAGES),
    format_func=lambda k: f"{PASSAGES[k][0].passage[:70]}…",
    key="qa_passage",
    on_change=pick_passage,
)
keep_in_url("qa_passage", preset)
st.session_state.setdefault("passage", PASSAGES[preset][0].passage)
st.session_state.setdefault("question", PASSAGES[preset][0].question)
passage = st.text_area(
    t("using.qa_passage"), key="passage", bind="query-params", max_chars=MAX_PASSAGE_CHARS, height=150
)
question = st.text_input(t("using.qa_question"), key="question", bind="query-params", max_chars=MAX_CHARS)
tries = [q.question for q in PASSAGES[preset]] + [t_plain("using.qa_unanswerable")]


def ask() -> None:
    """A suggested question picked: it goes into the question box (the pill does not stay selected)."""
    if st.session_state.qa_try:
        st.session_state.question = st.session_state.qa_try
    st.session_state.qa_try = None


st.pills(t("using.qa_try"), tries, key="qa_try", on_change=ask)
try:
    draw("qa", serving.pair_states(reader.name, question, passage), "qa_diagram")
    got = serving.read_question(reader.name, question, passage)
except model_zoo.ModelZooError as err:
    render_error(err)
else:
    show_answer(got, reader.name, "qa_curves")
    if got.tokens[0] != "[CLS]":
        st.caption(t("using.qa_no_cls", model=reader.name, token=got.tokens[0]))
    gold = tasks.written_answer(question, passage)
    if gold is not None and not (got.span is not None and tasks.exact_match(got.text, gold)):
        missed = f"“{got.text}”" if got.span is not None else t_plain("using.qa_miss_none")
        st.caption(t("using.qa_miss", model=reader.name, answer=gold, got=missed))
    st.caption(t("using.qa_curves_caption", max=tasks.MAX_ANSWER_TOKENS))

with st.expander(t("using.qa_frozen")):
    st.write(t("using.qa_frozen_intro", model=model.name, train=len(QUESTIONS[0])))
    frozen_qa = when_asked(
        t("using.qa_frozen_train"),
        "train_qa_head",
        t_plain("using.qa_frozen_training", model=model.name),
        lambda progress: (
            serving.qa_head(model.name, progress),
            serving.answer_question(model.name, question, passage),
        ),
    )
    if frozen_qa:
        head, frozen = frozen_qa
        show_answer(frozen, f"{model.name} (frozen)", "qa_frozen_curves")
        if reader_metrics is not None:
            m = reader_metrics
            st.caption(
                t(
                    "using.qa_frozen_caption",
                    test=len(QUESTIONS[1]),
                    exact=f"{head.exact:.0%}",
                    f1=f"{head.f1:.0%}",
                    reader=reader.name,
                    rexact=f"{m['written_test']['exact']:.0%}",
                    rf1=f"{m['written_test']['f1']:.0%}",
                )
            )
        else:
            st.caption(
                t("using.qa_frozen_score", test=len(QUESTIONS[1]), exact=f"{head.exact:.0%}", f1=f"{head.f1:.0%}")
            )

# 5. One model, many languages ----------------------------------------------------------------------
st.header(t("using.ml_title"))
st.write(t("using.ml_intro"))
multilingual = serving.availabilities()[MULTILINGUAL].ready
ml_reader = MULTILINGUAL if multilingual else "minilm-l6"
if not multilingual:
    st.info(
        t("using.ml_missing", model=MULTILINGUAL, command=f"python -m model_zoo prefetch {MULTILINGUAL}"),
        icon=":material/cloud_off:",
    )
cross = when_asked(
    t("using.ml_train", model=ml_reader),
    "ml_train",
    t_plain("using.ml_training", model=ml_reader),
    lambda progress: serving.cross_lingual(ml_reader, progress),
)
if cross is not None:
    a, b = st.columns(2)
    a.metric(t("using.ml_english", n=len(tasks.load_sentences("sentiment").test)), f"{cross.english:.0%}")
    b.metric(t("using.ml_chinese", n=len(cross.guesses)), f"{cross.chinese:.0%}")
    st.dataframe(
        [
            {
                t_plain("using.ml_col_text"): x.text,
                t_plain("using.ml_col_gold"): x.label,
                t_plain("using.ml_col_given"): given,
                t_plain("using.ml_col_p"): f"{p:.0%}",
            }
            for x, given, p in cross.guesses
        ],
        hide_index=True,
        width="stretch",
        height=240,
    )
    st.caption(t("using.ml_note" if multilingual else "using.ml_note_english", model=ml_reader))
    own = st.text_input(t("using.ml_own"), key="ml_own", max_chars=MAX_CHARS)
    if own.strip():
        try:
            st.plotly_chart(build_score_bars(serving.classify(ml_reader, "sentiment", "mean", own)), key="ml_own_bars")
        except model_zoo.ModelZooError as err:
            render_error(err)

# 6. Fine-tuning against frozen features -----------------------------------------------------------
st.header(t("using.finetune_title"))
st.write(t("using.finetune_intro", model=model.name, task=t_plain(f"using.task_{task}")))
result = when_asked(
    t("using.finetune"),
    "finetune",
    t_plain("using.finetuning", model=model.name),
    lambda progress: serving.fine_tuned(model.name, task, progress),
    once=True,
)
if result:
    frozen_head = heads["cls"]
    st.dataframe(
        [
            {
                t_plain("using.col_way"): t_plain("using.way_frozen"),
                t_plain("using.col_accuracy"): round(frozen_head.head.accuracy, 3),
                t_plain("using.col_cost"): f"{frozen_head.feature_seconds + frozen_head.head.seconds:.1f} s",
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
st.caption(t("using.data_note", questions=sum(map(len, QUESTIONS)), passages=len(PASSAGES)))

# 7. What BERT achieved ------------------------------------------------------------------------------
st.header(t("records.bert_title"))
st.write(t("records.bert_intro"))
for record in ("glue", "qa_swag", "squad2_leaderboard"):
    render_record(record)


# Check yourself -------------------------------------------------------------------------------------
def solve_pooling() -> Solved:
    cls, mean = (serving.task_head(model.name, "sentiment", p).head.accuracy for p in POOLINGS)
    facts = {"model": model.name, "cls": f"{cls:.0%}", "mean": f"{mean:.0%}"}
    return Solved("cls" if cls > mean else "mean" if mean > cls else "tie", facts)


def solve_chinese() -> Solved:
    cross = serving.cross_lingual(ml_reader)
    facts = {"model": ml_reader, "zh": f"{cross.chinese:.0%}", "en": f"{cross.english:.0%}"}
    return Solved("yes" if cross.chinese_beats_chance else "no", facts)


render_quiz(
    (
        Question("using_pool", POOLINGS, solve_pooling, translated=True),
        Question("using_zh", ("yes", "no"), solve_chinese, translated=True),
    )
)
