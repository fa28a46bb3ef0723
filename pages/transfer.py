"""Lesson: transfer learning (ULMFiT, 2018): pre-train a language model on plain text, then fine-tune it on
a task, as vision had done with ImageNet. Live: the same network fine-tuned from pre-trained and from
random weights on a few labelled sentences."""

import streamlit as st

import model_zoo
import serving
from components import transfer_view as view
from components.frame import ensure_app_frame
from components.guide import Step, begin_path
from components.i18n import t, t_plain
from components.notices import machine_words, render_error, select_name, when_asked
from components.quiz import Question, Solved, render_quiz
from model_zoo.registry import get_card, models_where
from model_zoo.types import KnownCurve, TransferCurve

# Networks a copy of which can be fine-tuned whole here: an ELMo biLM (elmo-mini, pre-trained here on plain
# text only: ULMFiT's own kind of model), or a BERT-like encoder (MiniLM as released, BERT once prefetched).
MODELS = models_where(family="ELMo") + models_where(family="BERT", kinds=("encoder", "masked_lm"))
DEFAULT = "elmo-mini"
STEPS = (Step("race", ("race",)), Step("words", ("words",)), Step("next", ("next",)), Step("check", ("check",)))


def race(name: str) -> None:
    """What pre-training buys: the same network fine-tuned from pre-trained and from random weights. A run
    of the same code is drawn at once (shipped, or this server's last); the button runs it live."""
    try:
        known: KnownCurve | None = serving.transfer_known(name)
    except model_zoo.NotRunYet:
        known = None
    measured = known.shipped if known is not None else None
    drawn = st.container()  # the race, above its button: the curve is on the first screen, the button after it
    live = when_asked(
        t("transfer.train"),
        "transfer_train",
        t_plain(
            "transfer.training_measured",
            model=name,
            seconds=f"{measured.curve.seconds:.0f}",
            machine=machine_words(measured.machine),
        )
        if measured is not None
        else t_plain("transfer.training", model=name),
        lambda progress: serving.transfer_curve(name, progress),
    )
    curve = live if live is not None else known.curve if known is not None else None
    if curve is None:
        st.info(t("transfer.not_run", model=name), icon=":material/info:")
        st.write(t("transfer.race_intro"))
    else:
        with drawn:
            view.render_race(name, curve, serving.transfer_recipe(name), lambda: serving.transfer_known(name).curve)
        if live is None and measured is not None:
            st.caption(
                t(
                    "transfer.shipped",
                    command=measured.command,
                    date=measured.date,
                    seconds=f"{measured.curve.seconds:.0f}",
                    machine=machine_words(measured.machine),
                )
            )
        else:
            st.caption(t("transfer.live", seconds=f"{curve.seconds:.0f}"))
        if how := get_card(name).labelled_pretraining:  # the race credits plain text: say where it differs
            clean = [m for m in MODELS if not get_card(m).labelled_pretraining]
            here = [m for m in clean if serving.availabilities()[m].ready]
            if here:
                st.caption(t("transfer.confound_here", model=name, how=how, clean=here[0]))
            else:
                st.caption(t("transfer.confound", model=name, how=how, clean=clean[0]))


def words_seen(name: str) -> None:
    """Why few labels are enough for a pre-trained network: the held-out words each learner has met."""
    try:
        seen = serving.transfer_words_seen(name)
    except model_zoo.ModelZooError as err:
        render_error(err)
    else:
        view.render_guess_words(name, seen.sizes, seen.labelled, seen.vocabulary, seen.words, seen.test)


def next_stop() -> None:
    st.header(t("transfer.next_title"))
    st.write(t("transfer.next"))
    st.page_link("pages/using_bert.py", label=t("lesson.using_bert.title"), icon=":material/build:")


def check_yourself(name: str) -> None:
    # From the curve on the page: a question never starts the minutes of training
    # "on the chart": the sizes it draws now (its first point waits for the learner's guess at it, above)
    def drawn(curve: TransferCurve) -> int:
        return 0 if view.first_point_shown(curve) else 1

    def solve_ahead() -> Solved:
        curve = serving.transfer_known(name).curve
        start = drawn(curve)
        sizes, pre, rand = curve.sizes[start:], curve.accuracy["pretrained"][start:], curve.accuracy["random"][start:]
        ahead = [i for i in range(len(pre)) if all(p > r for p, r in zip(pre[i:], rand[i:]))]
        facts = {"model": name, "pairs": ", ".join(f"{n}: {p:.0%} / {r:.0%}" for n, p, r in zip(sizes, pre, rand))}
        return Solved(str(sizes[ahead[0]]) if ahead else "never", facts)

    def solve_best() -> Solved:
        curve = serving.transfer_known(name).curve
        best = max(curve.accuracy, key=lambda s: curve.accuracy[s][-1])
        facts = {s: f"{curve.accuracy[s][-1]:.0%}" for s in curve.accuracy} | {"n": curve.sizes[-1]}
        return Solved(best, facts)

    try:
        known = serving.transfer_known(name).curve
        sizes = tuple(str(n) for n in known.sizes[drawn(known) :])
    except model_zoo.NotRunYet:
        sizes = ()  # no curve yet: the question says so when asked

    def said(option: str) -> str:
        return t_plain("quiz.transfer_ahead.opt_never") if option == "never" else option

    render_quiz(
        (
            Question("transfer_ahead", (*sizes, "never"), solve_ahead, shown=said),
            Question("transfer_best", ("pretrained", "random", "onehot"), solve_best, translated=True),
        )
    )


def run() -> None:
    ensure_app_frame()
    st.title(t("lesson.transfer.title"))
    st.write(t("transfer.intro"))
    picker, more = st.columns(2, vertical_alignment="bottom")
    with picker:
        # The name only: the shipped curve is drawn without loading the network (a fresh server's first
        # visitor saw it a second later for torch and the weights); it loads for the race and the words seen
        name = select_name(
            t("transfer.model"), MODELS, DEFAULT, lambda m: serving.availabilities()[m].ready, serving.model_or_fallback
        )
    with more.expander(t("lesson.more")):
        st.write(t("transfer.intro_more"))
        st.write(t("transfer.imagenet"))
    path = begin_path("transfer", STEPS)
    if path.shows("race"):
        st.header(t("transfer.race_title"))
        race(name)
    if path.shows("words"):
        words_seen(name)
    if path.shows("next"):
        next_stop()
    if path.shows("check"):
        check_yourself(name)
    path.end()


run()
