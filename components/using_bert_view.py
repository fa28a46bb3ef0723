"""What the Using BERT lesson draws of its results: the heads' table, a head's verdict, the tagged words,
the pair head's record, a reader's answer and misses, the frozen QA head, the cross-lingual head, frozen
against fine-tuned, and the lesson's questions."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import plotly.graph_objects as go
import streamlit as st

from components.charts import build_score_bars
from components.i18n import md_escape, strings, t, t_plain
from components.notices import render_script_note, timed_label, when_asked
from components.quiz import Question, Solved, render_predict, render_quiz
from components.records import render_record
from components.task_views import render_answer, render_task_diagram
from components.tokens import readable
from components.url import keep_in_url, key_from_url, text_box
from model_zoo.contextual import Encoding, Guess
from model_zoo.lessons import tasks
from model_zoo.registry import HIDDEN_STATES, ModelCard
from model_zoo.trained import ReaderScores, reader_test


# -- callbacks: they read and write the session's widgets only ----------------------------------------
def swap() -> None:
    st.session_state.premise, st.session_state.hypothesis = st.session_state.hypothesis, st.session_state.premise


def pick_passage(passages: dict[str, list[tasks.Question]]) -> None:
    """A preset picked: its text in the passage box, its first question in the question box."""
    chosen = passages[st.session_state.qa_passage]
    st.session_state.passage, st.session_state.question = chosen[0].passage, chosen[0].question


def ask() -> None:
    """A suggested question picked: it goes into the question box (the pill does not stay selected)."""
    if st.session_state.qa_try:
        st.session_state.question = st.session_state.qa_try
    st.session_state.qa_try = None


# -- the inputs -----------------------------------------------------------------------------------------
def pick(label: str, options: Sequence[str], key: str, names: str) -> str:
    """A row of `options` (each shown as the string <names>_<option>) under `label`, kept in ?key=: a link's
    choice where it names one, else the first."""
    st.session_state.setdefault(key, key_from_url(key, list(options), options[0]))
    choice = st.radio(label, options, format_func=lambda k: t_plain(f"{names}_{k}"), key=key, horizontal=True)
    keep_in_url(key, choice)
    return choice


def read_pair(model_name: str, max_chars: int) -> tuple[str, str]:
    """The premise and the hypothesis side by side, a button that swaps them, and one line where their
    Chinese meets a model that learned English only."""
    st.session_state.setdefault("premise", "A woman in a red coat is walking her dog along the beach at sunset.")
    st.session_state.setdefault("hypothesis", "Someone is outside with an animal.")

    a, b = st.columns(2)
    premise = text_box(a.text_input, t("using.premise"), "premise", max_chars)
    hypothesis = text_box(b.text_input, t("using.hypothesis"), "hypothesis", max_chars)
    st.button(t("using.swap"), key="swap", on_click=swap, icon=":material/swap_horiz:")
    render_script_note(model_name, f"{premise} {hypothesis}", HIDDEN_STATES)
    return premise, hypothesis


def read_passage(
    passages: dict[str, list[tasks.Question]], default: str, max_passage: int, max_chars: int
) -> tuple[str, str]:
    """The passage picker (a preset, or the learner's own text), the passage and the question, and questions
    to try one click away; the passage and the question."""
    st.session_state.setdefault("qa_passage", key_from_url("qa_passage", list(passages), default))
    preset = st.selectbox(
        t("using.qa_passage_pick"),
        list(passages),
        format_func=lambda k: f"{passages[k][0].passage[:70]}…",
        key="qa_passage",
        on_change=pick_passage,
        args=(passages,),
    )
    keep_in_url("qa_passage", preset)
    st.session_state.setdefault("passage", passages[preset][0].passage)
    st.session_state.setdefault("question", passages[preset][0].question)
    passage = text_box(st.text_area, t("using.qa_passage"), "passage", max_passage, height=150)
    question = text_box(st.text_input, t("using.qa_question"), "question", max_chars)
    tries = [q.question for q in passages[preset]] + [t_plain("using.qa_unanswerable")]
    st.pills(t("using.qa_try"), tries, key="qa_try", on_change=ask)
    return passage, question


# -- the results ----------------------------------------------------------------------------------------
def pooling_found(heads: dict[str, tasks.TrainedHead]) -> str:
    """Which pooling the rows above put ahead, in words (first token or mean: the model's numbers decide)."""
    if len(heads) < 2:
        return ""
    ranked = sorted(heads.items(), key=lambda kv: -kv[1].head.accuracy)
    (best, top), (other, low) = ranked[0], ranked[-1]
    if f"{top.head.accuracy:.3f}" == f"{low.head.accuracy:.3f}":
        return t("using.pooling_tie", acc=f"{top.head.accuracy:.3f}")
    return t(
        "using.pooling_found",
        best=t_plain(f"using.pooling_{best}"),
        best_acc=f"{top.head.accuracy:.3f}",
        other=t_plain(f"using.pooling_{other}"),
        other_acc=f"{low.head.accuracy:.3f}",
    )


def render_heads(heads: dict[str, tasks.TrainedHead], model_name: str, pooling: str) -> None:
    """A row per pooling: the layer read, held-out accuracy against the last layer's and the majority class,
    the examples and the cost; the picked pooling's training time below; then, folded, what a downstream task is
    and the seeds' other one-sentence tasks."""
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
    st.caption(
        t("using.sentence_caption", model=model_name, seconds=f"{heads[pooling].head.seconds:.2f}")
        + " "
        + pooling_found(heads)
    )
    with st.expander(t("using.background_title")):
        st.markdown(t("story.downstream"))
        st.markdown(t("using.fact_check"))
        st.markdown(t("using.vgg"))


def render_sentence_diagram(pooling: str, encoding: Encoding) -> None:
    """The one-sentence diagram: [CLS]'s vector, or the mean of every token's, feeds the classifier."""
    kind = "sentence" if pooling == "cls" else "mean"
    render_task_diagram(kind, encoding.tokens, encoding.segment_ids.tolist(), "sentence_diagram")


def render_verdict(guesses: list[Guess], pooling: str) -> None:
    """The head's probabilities for the learner's sentence, and the class it gives."""
    label = t_plain(f"using.pooling_{pooling}")
    st.plotly_chart(class_bars(guesses, t_plain("using.probabilities", pooling=label)), key="sentence_bars")
    st.write(t("using.verdict", label=class_name(guesses[0][0]), p=f"{guesses[0][1]:.0%}"))


def class_name(label: str) -> str:
    """A task's class (the data's label: positive, spam, entailment) as the learner's language writes it: in
    Chinese the word with the data's label beside it ("正面（positive）"), in English the label itself."""
    key = f"using.class_{label}"
    return t_plain(key) if key in strings("en") else label


def class_bars(guesses: list[Guess], title: str) -> go.Figure:
    """A head's probabilities for each class, the classes named as class_name writes them."""
    return build_score_bars([(class_name(label), p) for label, p in guesses], title)


def render_tags(tagger: tasks.Tagger, tagged: list[tasks.TaggedWord], tag_model: str) -> None:
    """The sentence with each named entity in bold beside its tag, where the B-/I- rule changed a word's own
    top tag, and how good the tagger is."""
    st.markdown(" ".join(md_escape(w.word) if w.tag == "O" else f"**{md_escape(w.word)}** `{w.tag}`" for w in tagged))
    changes = [f"{w.word} {w.alone} → {w.tag}" for w in tagged if w.alone != w.tag]
    if changes:
        st.caption(t("using.token_decoded", changes="; ".join(changes)))
    else:
        st.caption(t("using.token_kept"))
    st.caption(
        t(
            "using.token_caption",
            accuracy=f"{tagger.accuracy:.2f}",
            majority=f"{tagger.majority:.2f}",
            f1=f"{tagger.f1:.2f}",
            f1_alone=f"{tagger.f1_word_by_word:.2f}",
            sentences=tagger.test_sentences,
            entities=tagger.test_entities,
            model=tag_model,
            layer=tagger.layer,
        )
    )


def render_pair_record(pairs: tasks.TrainedHead, pooling: str) -> None:
    """How the pair head scores, where it reads, and how often swapping A and B changes its answer."""
    st.caption(
        t(
            "using.pair_caption",
            accuracy=f"{pairs.head.accuracy:.2f}",
            majority=f"{pairs.head.majority:.2f}",
            train=pairs.train,
            test=pairs.test,
            pooling=t_plain(f"using.pooling_{pooling}"),
            layer=pairs.head.layer,
            layers=len(pairs.development) - 1,
            changed=pairs.swaps_changed,
            swaps=pairs.swaps,
        )
    )


def render_reading(got: tasks.Answer, reader: str, missed: str | None, lecture: bool) -> None:
    """A reader's answer and curves; on the lecture's passage (`lecture`), why its s and e are not the
    lecture's (a note about that passage alone: on a learner's own it spoke of words not there); what it reads
    for [CLS], the written answer it missed, the curves' limit."""
    render_answer(got, reader, "qa_curves")
    if lecture:
        st.caption(t("using.qa_positions"))
    if got.tokens[0] != "[CLS]":
        st.caption(t("using.qa_no_cls", model=reader, token=got.tokens[0]))
    if missed is not None:
        shown = f"“{got.text}”" if got.span is not None else t_plain("using.qa_miss_none")
        st.caption(t("using.qa_miss", model=reader, answer=missed, got=shown))
    st.caption(t("using.qa_curves_caption", max=tasks.MAX_ANSWER_TOKENS))


def render_frozen_head(
    model_name: str,
    questions: tuple[int, int],
    reader: ModelCard,
    measured: tuple[float, str] | None,
    work: Callable[[Callable[[float], object]], tuple[tasks.QAHead, tasks.Answer]],
) -> None:
    """The QA head on frozen vectors, trained on a click (`work`: the head and its answer to the learner's
    question; `measured`: how long that took on a server), beside the fine-tuned `reader`. `questions`: how
    many the head trains and is tested on."""
    st.write(t("using.qa_frozen_intro", model=model_name, train=questions[0]))
    frozen_qa = when_asked(
        timed_label(t("using.qa_frozen_train"), measured),
        "train_qa_head",
        t_plain("using.qa_frozen_training", model=model_name),
        work,
    )
    if frozen_qa:
        render_frozen_reading(*frozen_qa, model_name, questions[1], reader.name, reader_test(reader))


def render_frozen_reading(
    head: tasks.QAHead, frozen: tasks.Answer, model_name: str, tested: int, reader: str, trained: ReaderScores | None
) -> None:
    """The frozen-vector head's answer, and its held-out scores (beside the fine-tuned reader's, if trained here)."""
    render_answer(frozen, f"{model_name} (frozen)", "qa_frozen_curves")
    scores = {"test": tested, "exact": f"{head.exact:.0%}", "f1": f"{head.f1:.0%}"}
    if trained is None:
        st.caption(t("using.qa_frozen_score", **scores))
        return
    reader_scores = {"rexact": f"{trained.exact:.0%}", "rf1": f"{trained.f1:.0%}"}
    st.caption(t("using.qa_frozen_caption", reader=reader, **scores, **reader_scores))


def render_cross_lingual(cross: tasks.CrossLingual, english: int, multilingual: bool, ml_reader: str) -> None:
    """Both accuracies (`english`: how many held-out English sentences), each Chinese sentence's answer."""
    a, b = st.columns(2)
    a.metric(t("using.ml_english", n=english), f"{cross.english:.0%}")
    b.metric(t("using.ml_chinese", n=len(cross.guesses)), f"{cross.chinese:.0%}")
    columns = [t_plain(f"using.ml_col_{k}") for k in ("text", "gold", "given", "p")]
    rows = [
        dict(zip(columns, (x.text, class_name(x.label), class_name(given), f"{p:.0%}")))
        for x, given, p in cross.guesses
    ]
    st.dataframe(rows, hide_index=True, width="stretch", height=240)
    st.caption(t("using.ml_note" if multilingual else "using.ml_note_english", model=ml_reader))


def render_fine_tuning(frozen: tasks.TrainedHead, result: tasks.FineTuned) -> None:
    """The head on frozen [CLS] vectors against the whole model fine-tuned: accuracy and cost."""
    way, accuracy, cost = (t_plain(f"using.col_{k}") for k in ("way", "accuracy", "cost"))
    rows = [
        {
            way: t_plain("using.way_frozen"),
            accuracy: round(frozen.head.accuracy, 3),
            cost: f"{frozen.total_seconds:.1f} s",
        },
        {
            way: t_plain("using.way_finetuned", epochs=result.epochs),
            accuracy: round(result.accuracy, 3),
            cost: f"{result.seconds:.1f} s",
        },
    ]
    st.dataframe(rows, hide_index=True, width="stretch")
    st.caption(t("using.finetune_caption"))


def render_records() -> None:
    """What BERT achieved: the published tables."""
    st.header(t("records.bert_title"))
    st.write(t("records.bert_intro"))
    for record in ("glue", "qa_swag", "squad2_leaderboard"):
        render_record(record)
    with st.expander(t("using.try_title"), icon=":material/download:"):  # the released code and checkpoints
        st.markdown(t("using.try"))


def render_check(
    model_name: str, ml_reader: str, accuracy: Callable[[str], float], cross: Callable[[], tasks.CrossLingual]
) -> None:
    """The lesson's questions, answered by `accuracy` (the sentiment head's held-out accuracy on a pooling)
    and `cross` (the cross-lingual head on `ml_reader`)."""

    def solve_pooling() -> Solved:
        cls, mean = (accuracy(p) for p in tasks.POOLINGS)
        facts = {"model": model_name, "cls": f"{cls:.0%}", "mean": f"{mean:.0%}"}
        return Solved(tasks.better_pooling(cls, mean), facts)

    def solve_chinese() -> Solved:
        found = cross()
        facts = {"model": ml_reader, "zh": f"{found.chinese:.0%}", "en": f"{found.english:.0%}"}
        return Solved("yes" if found.chinese_beats_chance else "no", facts)

    render_quiz(
        (
            Question("using_pool", (*tasks.POOLINGS, "tie"), solve_pooling, translated=True),
            Question("using_zh", ("yes", "no"), solve_chinese, translated=True),
        )
    )


# -- predict, then see (issue 34) -----------------------------------------------------------------------
GUESS_SENTENCES = {  # a sentence per task whose words alone point the other way
    "sentiment": "The movie was not bad at all.",
    "spam": "Free pizza in the kitchen after the meeting today.",
}
UNANSWERABLE = "Who won the football World Cup in 1998?"  # the question the lesson asks of any passage


def render_guess_sentence(
    model_name: str, task: str, pooling: str, classes: Sequence[str], classify: Callable[[str], list[Guess]]
) -> None:
    """Predict, then see: the class the `task` head (on `pooling`) gives the task's guess sentence; `classify`
    runs the head on a sentence (already trained: the page trains its task's heads before this). Then its bars."""
    sentence, label = GUESS_SENTENCES[task], t_plain(f"using.pooling_{pooling}")
    found: list[list[Guess]] = []

    def solve() -> Solved:
        found.append(classify(sentence))
        return Solved(found[-1][0][0], {"sentence": sentence, "p": f"{found[-1][0][1]:.0%}", "model": model_name})

    about = {"task": t_plain(f"using.task_{task}"), "sentence": sentence, "pooling": label}
    question = Question("using_sentence", tuple(sorted(classes)), solve, shown=class_name, about=about)
    if render_predict(question, model_name) is not None:
        title = t_plain("using.probabilities", pooling=label)
        st.plotly_chart(class_bars(found[-1], title), key="guess_sentence_bars")


def render_guess_swap(
    model_name: str,
    premise: str,
    hypothesis: str,
    pairs: tasks.TrainedHead,
    classify: Callable[[str, str], list[Guess]],
) -> None:
    """Predict, then see: the class the pair head gives the learner's pair read the other way round
    (`classify(a, b)` runs the head on a pair); then that pair's bars."""
    found: list[list[Guess]] = []

    def solve() -> Solved:
        found.append(classify(hypothesis, premise))
        (answer, p), (orig, p0) = found[-1][0], classify(premise, hypothesis)[0]
        facts = {"p": f"{p:.0%}", "orig": class_name(orig), "p0": f"{p0:.0%}", "model": model_name}
        return Solved(answer, facts | {"changed": pairs.swaps_changed, "swaps": pairs.swaps})

    about = {"a": hypothesis, "b": premise}
    question = Question("using_swap", tuple(sorted(pairs.head.classes)), solve, shown=class_name, about=about)
    if render_predict(question, model_name) is not None:
        st.plotly_chart(class_bars(found[-1], t_plain("using.pair_probabilities")), key="swap_guess_bars")


def render_guess_qa(reader: str, read: Callable[[str], tasks.Answer]) -> None:
    """Predict, then see: does the reader mark a span of the learner's passage for a question it does not
    answer (`read(question)` runs the reader on the passage), or say there is none? Then its curves."""
    found: list[tasks.Answer] = []

    def solve() -> Solved:
        found.append(read(UNANSWERABLE))
        got = found[-1]
        shown = f"“{got.text}”" if got.span is not None else t_plain("using.qa_miss_none")
        start, end = (readable(got.tokens[i]) for i in (got.best_start, got.best_end))
        null = "–" if got.null_score is None else f"{got.null_score:.1f}"
        facts = {
            "model": reader,
            "got": shown,
            "start": start,
            "end": end,
            "score": f"{got.span_score:.1f}",
            "null": null,
        }
        return Solved("none" if got.span is None else "span", facts)

    question = Question(
        "using_qa", ("span", "none"), solve, translated=True, about={"question": UNANSWERABLE, "model": reader}
    )
    if render_predict(question, reader) is not None:
        render_answer(found[-1], reader, "guess_qa_curves")
