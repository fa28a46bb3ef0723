"""Lesson: what each layer knows. Probes on frozen models with learned scalar-mix weights (ELMo's weighted
sum of layers, as Tenney et al. 2019 read BERT), accuracy by layer with a control task, and BERT's
feature-extraction table on NER."""

from __future__ import annotations

import streamlit as st

import model_zoo
import serving
from components.frame import ensure_app_frame
from components.guide import Step, begin_path
from components.i18n import t, t_plain
from components.notices import render_error, render_unavailable
from components.probing_view import (
    render_check,
    render_curves,
    render_feature_table,
    render_numbers,
    render_weights,
    task_name,
)
from components.url import keep_in_url, key_from_url, keys_from_url, number_from_url
from model_zoo.registry import models_where
from model_zoo.types import ModelResults, TaskResult
from serving import lesson_tasks
from serving.lesson_tasks import TASKS

CONTEXTUAL = models_where(without=("static",))
DEFAULT_MODELS = ["elmo-mini", "minilm-l6"]
MAX_MODELS = 4
STEPS = (
    Step("weights", ("weights",)),
    Step("layers", ("curves", "numbers")),  # the curves after a guess: how well layer 0 tells senses apart
    Step("features", ("features",)),  # the table after a guess: which features make the best tagger
    Step("retrain", ("weights", "retrain")),  # the chart that a retrained probe redraws, above its button
    Step("check", ("check",)),
)


def pick() -> tuple[list[str], list[str]]:
    """The models and tasks picked (kept in the URL); while one of them is empty, a word of help."""
    st.session_state.setdefault(
        "models", keys_from_url("models", CONTEXTUAL, [m for m in DEFAULT_MODELS if m in CONTEXTUAL])
    )
    st.session_state.setdefault("tasks", keys_from_url("tasks", list(TASKS), list(TASKS)))
    left, right = st.columns([2, 3])
    models = left.multiselect(
        t("probing.models"),
        CONTEXTUAL,
        max_selections=MAX_MODELS,
        key="models",
        wrap=True,
        placeholder=t_plain("notice.choose_many"),
    )
    tasks = right.multiselect(
        t("probing.tasks"),
        list(TASKS),
        format_func=task_name,
        key="tasks",
        wrap=True,
        placeholder=t_plain("notice.choose_many"),
    )
    keep_in_url("models", models)
    keep_in_url("tasks", tasks)
    if not models or not tasks:
        st.info(t("probing.pick"), icon=":material/info:")
    tasks = [task for task in TASKS if task in tasks]  # the page's order, whatever order they were picked in
    return models, tasks


def gather(models: list[str], tasks: list[str]) -> dict[str, dict[str, TaskResult]]:
    """Each picked model's results for the picked tasks: retrained here in this session, else shipped."""
    retrained: dict[tuple[str, str], TaskResult] = st.session_state.setdefault("retrained", {})
    found = lesson_tasks.gather_results(models, tasks, retrained)
    for name in found.missing:
        st.info(t("probing.no_results", name=name), icon=":material/info:")
    live = sorted({f"{m} · {task_name(task)}" for m, task in found.live})
    if live:
        st.caption(t("probing.live_note", which=", ".join(live)))
    return found.results


def feature_table(results: dict[str, dict[str, TaskResult]]) -> None:
    """4. BERT's feature-extraction table, for the BERT-architecture models picked."""
    render_feature_table(lesson_tasks.bert_features(list(results)))


def retrain(models: list[str], tasks: list[str]) -> None:
    """5. Retrain a probe live, one at a time per server."""
    retrained: dict[tuple[str, str], TaskResult] = st.session_state.setdefault("retrained", {})
    st.header(t("probing.retrain_title"))
    st.write(t("probing.retrain_intro"))
    c1, c2, c3 = st.columns([2, 2, 1])
    if "retrain_model" not in st.session_state:  # a link's, once: later the picked models decide
        st.session_state.retrain_model = key_from_url("retrain_model", models, models[0])
        st.session_state.retrain_task = key_from_url("retrain_task", tasks, tasks[0])
    retrain_model = c1.selectbox(t("probing.retrain_model"), models, key="retrain_model")
    retrain_task = c2.selectbox(t("probing.retrain_task"), tasks, format_func=task_name, key="retrain_task")
    seed = int(c3.number_input(t("probing.seed"), 0, 99, number_from_url("seed", 0, 99, 0), key="seed"))
    keep_in_url("retrain_model", retrain_model)
    keep_in_url("retrain_task", retrain_task)
    keep_in_url("seed", seed)
    serving.warm_trainer()  # the first press waits for no process start
    message = st.session_state.pop("retrain_message", None)
    if message:
        st.success(message, icon=":material/check_circle:")
    if st.button(t("probing.retrain"), key="retrain", type="primary", icon=":material/model_training:"):
        state = serving.availabilities()[retrain_model]
        if not state.ready:
            render_unavailable(model_zoo.ModelUnavailable(retrain_model, state.reason, status=state.status))
            st.stop()
        bar = st.progress(0.0, text=t_plain("probing.progress_features", name=retrain_model))
        try:
            serving.probing_features(
                retrain_model, lambda f: bar.progress(f, text=t_plain("probing.progress_features", name=retrain_model))
            )
            result = serving.retrain_probe(
                retrain_model,
                retrain_task,
                seed,
                lambda f: bar.progress(f, text=t_plain("probing.progress_probe", task=task_name(retrain_task))),
                lambda ahead: bar.progress(0.0, text=t_plain("probing.waiting_place", n=ahead)),
            )
        except model_zoo.ModelZooError as err:
            render_error(err)
            st.stop()
        retrained[(retrain_model, retrain_task)] = result
        shipped = serving.probing_results(retrain_model)
        before = shipped.tasks.get(retrain_task) if shipped else None
        st.session_state.retrain_message = t(
            "probing.retrained",
            name=retrain_model,
            task=task_name(retrain_task),
            seed=seed,
            seconds=f"{result.seconds:.1f}",
            score=f"{result.mix_score:.3f}",
            # in layers out of the deepest, as the table above writes it ("1.80 / 2"): a bare 1.80 beside the
            # summary's normalised depth (0.900) read as another figure
            cog=f"{result.center_of_gravity:.2f} / {result.layers - 1}",
            shipped=f"{before.mix_score:.3f}" if before else "–",
            shipped_cog=f"{before.center_of_gravity:.2f} / {before.layers - 1}" if before else "–",
        )
        st.rerun()  # the charts above now draw the new probe
    st.caption(t("probing.data_note", script=lesson_tasks.PROBING_SCRIPT))


def check_yourself() -> None:
    def quiz_results() -> ModelResults:
        results = serving.probing_results("minilm-l6")
        if results is None:
            raise model_zoo.ModelUnavailable(
                "minilm-l6", "its probing results are not shipped: python -m model_zoo.probing"
            )
        return results

    render_check(quiz_results)


def run() -> None:
    ensure_app_frame()
    st.title(t("lesson.probing.title"))
    st.write(t("probing.intro"))
    with st.expander(t("probing.how_title")):
        st.write(t("probing.intro_more"))
        st.write(t("probing.how"))
        st.latex(  # two lines: one ran off a phone's screen
            r"\begin{gathered} \mathrm{vector}_k = \gamma \sum_{j=0}^{L} s_j\, h_{k,j} \\ s = \mathrm{softmax}(w) \end{gathered}"
        )
        st.write(t("probing.how_more"))
        st.write(t("story.downstream"))
    path = begin_path("probing", STEPS)
    # The weights (the lesson's main output, scripts/first_screen.py) come first, the models and tasks they are
    # drawn for under them: on a phone the chart starts on the first screen (issue 34)
    out = st.container(key="main_output") if path.shows("weights") else None
    models, tasks = pick()  # every step's charts read the models and tasks picked here
    if models and tasks:
        results = gather(models, tasks)
        if out is not None:
            with out:
                render_weights(results, tasks)
        if path.shows("curves"):
            render_curves(results, tasks)
        if path.shows("numbers"):
            render_numbers(results, tasks)
        if path.shows("features"):
            feature_table(results)
        if path.shows("retrain"):
            retrain(models, tasks)
    if path.shows("check"):
        check_yourself()
    path.end()


run()
