"""Lesson: what each layer knows. Probes on frozen models with learned scalar-mix weights (ELMo's weighted
sum of layers, as Tenney et al. 2019 read BERT), accuracy by layer with a control task, and BERT's
feature-extraction table on NER."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

import model_zoo
import serving
from components.charts import build_probe_curves, build_probe_weights
from components.frame import ensure_app_frame
from components.i18n import t, t_plain
from components.notices import render_error, render_unavailable
from components.quiz import Question, Solved, render_quiz
from components.url import keep_in_url, keys_from_url
from model_zoo import probing
from model_zoo.probing import PAPER_BERT_LARGE, PAPER_FEATURE_F1, PAPER_LAYERS, TASKS, TaskResult
from model_zoo.registry import models_where

CONTEXTUAL = models_where(without=("static",))
DEFAULT_MODELS = ["elmo-mini", "minilm-l6"]
MAX_MODELS = 4


def task_name(task: str) -> str:
    return t_plain(f"probing.task_{task}")


depth = probing.normalised_depth


def pick() -> tuple[list[str], list[str]]:
    """The models and tasks picked (kept in the URL); the page stops until one of each is."""
    st.session_state.setdefault(
        "models", keys_from_url("models", CONTEXTUAL, [m for m in DEFAULT_MODELS if m in CONTEXTUAL])
    )
    st.session_state.setdefault("tasks", keys_from_url("tasks", list(TASKS), list(TASKS)))
    left, right = st.columns([2, 3])
    models = left.multiselect(t("probing.models"), CONTEXTUAL, max_selections=MAX_MODELS, key="models")
    tasks = right.multiselect(t("probing.tasks"), list(TASKS), format_func=task_name, key="tasks")
    keep_in_url("models", models)
    keep_in_url("tasks", tasks)
    if not models or not tasks:
        st.info(t("probing.pick"), icon=":material/info:")
        st.stop()
    tasks = [task for task in TASKS if task in tasks]  # the page's order, whatever order they were picked in
    return models, tasks


def gather(models: list[str], tasks: list[str]) -> dict[str, dict[str, TaskResult]]:
    """Each picked model's results for the picked tasks: retrained here in this session, else shipped."""
    retrained: dict[tuple[str, str], TaskResult] = st.session_state.setdefault("retrained", {})
    results: dict[str, dict[str, TaskResult]] = {}
    missing: list[str] = []
    for name in models:
        shipped = serving.probing_results(name)
        per_task = {
            task: retrained.get((name, task)) or (shipped.tasks.get(task) if shipped else None) for task in tasks
        }
        if all(per_task.values()):
            results[name] = {task: r for task, r in per_task.items() if r is not None}
        else:
            missing.append(name)
    for name in missing:
        st.info(t("probing.no_results", name=name), icon=":material/info:")
    live = sorted({f"{m} · {task_name(task)}" for (m, task) in retrained if m in results and task in tasks})
    if live:
        st.caption(t("probing.live_note", which=", ".join(live)))
    return results


def weights(results: dict[str, dict[str, TaskResult]], tasks: list[str]) -> None:
    """1. The scalar mix's weights per layer, and what they say."""
    st.header(t("probing.weights_title"))
    if results:
        weights = {m: [r[task].mix_weights for task in tasks] for m, r in results.items()}
        paper = [
            depth(PAPER_BERT_LARGE[task]["center_of_gravity"], PAPER_LAYERS + 1) if task in PAPER_BERT_LARGE else None
            for task in tasks
        ]
        labels = {k: t_plain(f"probing.label_{k}") for k in ("depth", "weight", "cog", "paper")}
        labels["title"] = t_plain("probing.weights_chart")
        st.plotly_chart(build_probe_weights([task_name(x) for x in tasks], weights, paper, labels), key="weights")
        st.caption(t("probing.weights_caption"))

        def order(name: str) -> list[str]:
            return sorted(
                tasks, key=lambda task: depth(results[name][task].center_of_gravity, results[name][task].layers)
            )

        lines = []
        for name, per_task in results.items():
            ranked = order(name)
            cogs = ", ".join(
                f"{task_name(x)} {depth(per_task[x].center_of_gravity, per_task[x].layers):.2f}" for x in ranked
            )
            lines.append(t("probing.finding_order", name=name, order=cogs))
            in_paper = [x for x in ranked if x in PAPER_BERT_LARGE]
            if len(in_paper) >= 2:
                theirs = sorted(in_paper, key=lambda x: PAPER_BERT_LARGE[x]["center_of_gravity"])
                verdict = "probing.finding_agrees" if in_paper == theirs else "probing.finding_differs"
                lines.append(
                    t(
                        verdict,
                        name=name,
                        ours=" < ".join(task_name(x) for x in in_paper),
                        theirs=" < ".join(task_name(x) for x in theirs),
                    )
                )
            elmo = model_zoo.get_card(name).kind == "elmo"
            top = max(tasks, key=lambda x: per_task[x].mix_weights[1] if elmo else -1.0)
            if elmo:  # which task leans most on ELMo's LSTM-1 (the ELMo paper's reading)
                lines.append(
                    t("probing.finding_elmo", name=name, task=task_name(top), s=f"{per_task[top].mix_weights[1]:.2f}")
                )
        st.markdown("\n".join(f"- {line}" for line in lines))


def by_layer(results: dict[str, dict[str, TaskResult]], tasks: list[str]) -> None:
    """2. Accuracy by layer, against the control task."""
    st.header(t("probing.curves_title"))
    if results:
        scores = {m: [r[task].by_layer for task in tasks] for m, r in results.items()}
        control = {m: [r[task].control_by_layer for task in tasks] for m, r in results.items()}
        first = next(iter(results.values()))
        majority: list[float | None] = [first[task].majority for task in tasks]
        labels = {k: t_plain(f"probing.label_{k}") for k in ("depth", "score", "control", "majority")}
        labels["title"] = t_plain("probing.curves_chart")
        st.plotly_chart(
            build_probe_curves([task_name(x) for x in tasks], scores, control, majority, labels), key="curves"
        )
        st.caption(t("probing.curves_caption"))
        lines = []
        for name, per_task in results.items():
            for task in tasks:
                r = per_task[task]
                best = max(range(r.layers), key=lambda j: r.by_layer[j])
                key = "probing.finding_layer" if r.control_by_layer else "probing.finding_layer_sense"
                lines.append(
                    t(
                        key,
                        name=name,
                        task=task_name(task),
                        layer=best,
                        depth=f"{depth(best, r.layers):.2f}",
                        score=f"{r.by_layer[best]:.3f}",
                        majority=f"{r.majority:.3f}",
                        control=f"{r.control_by_layer[best]:.3f}" if r.control_by_layer else "–",
                        selectivity=f"{r.selectivity[best]:+.3f}" if r.control_by_layer else "–",
                    )
                )
        st.markdown("\n".join(f"- {line}" for line in lines))


def numbers(results: dict[str, dict[str, TaskResult]], tasks: list[str]) -> None:
    """3. The numbers, and the paper's."""
    st.header(t("probing.table_title"))
    if results:
        rows = []
        for name, per_task in results.items():
            for task in tasks:
                r = per_task[task]
                paper_row = PAPER_BERT_LARGE.get(task)
                rows.append(
                    {
                        t_plain("probing.col_model"): name,
                        t_plain("probing.col_task"): task_name(task),
                        t_plain("probing.col_mix"): round(r.mix_score, 3),
                        t_plain("probing.col_best"): round(max(r.by_layer), 3),
                        t_plain("probing.col_majority"): round(r.majority, 3),
                        t_plain("probing.col_control"): round(r.control_by_layer[int(np.argmax(r.by_layer))], 3)
                        if r.control_by_layer
                        else None,
                        t_plain("probing.col_cog"): f"{r.center_of_gravity:.2f} / {r.layers - 1}",
                        t_plain("probing.col_expected"): None
                        if math.isnan(r.expected_layer)
                        else f"{r.expected_layer:.2f} / {r.layers - 1}",
                        t_plain("probing.col_paper"): None
                        if paper_row is None
                        else f"{paper_row['center_of_gravity']:.2f} · {paper_row['expected_layer']:.2f} / {PAPER_LAYERS}",
                        t_plain("probing.col_examples"): f"{r.train:,} / {r.dev:,} / {r.test:,}",
                    }
                )
        st.dataframe(rows, hide_index=True, width="stretch")
        st.caption(t("probing.table_caption"))


def feature_table(results: dict[str, dict[str, TaskResult]]) -> None:
    """4. BERT's feature-extraction table, for the BERT-architecture models picked."""
    st.header(t("probing.features_title"))
    st.write(t("probing.features_intro"))
    table_models = [  # BERT's table is about BERT's layers: the BERT-architecture models of the page
        m
        for m in results
        if model_zoo.get_card(m).family == "BERT"
        and (shipped := serving.probing_results(m)) is not None
        and shipped.features
    ]
    if table_models:
        rows = []
        for choice, paper_f1 in PAPER_FEATURE_F1.items():
            row = {
                t_plain("probing.col_choice"): t_plain(f"probing.choice_{choice}"),
                t_plain("probing.col_paper_f1"): paper_f1,
            }
            for name in table_models:
                shipped = serving.probing_results(name)
                value = shipped.features.get(choice) if shipped else None
                row[name] = None if value is None else round(100 * value, 1)
            rows.append(row)
        st.dataframe(rows, hide_index=True, width="stretch")
        for name in table_models:
            shipped = serving.probing_results(name)
            assert shipped is not None
            ours = max(shipped.features, key=lambda k: shipped.features[k])
            theirs = max((k for k in PAPER_FEATURE_F1 if k != "fine_tuned"), key=PAPER_FEATURE_F1.__getitem__)
            st.markdown(
                "- "
                + t(
                    "probing.finding_features" if ours == theirs else "probing.finding_features_differ",
                    name=name,
                    ours=t_plain(f"probing.choice_{ours}"),
                    f1=f"{100 * shipped.features[ours]:.1f}",
                    theirs=t_plain(f"probing.choice_{theirs}"),
                    last=f"{100 * shipped.features['last']:.1f}",
                    embeddings=f"{100 * shipped.features['embeddings']:.1f}",
                )
            )
        st.caption(t("probing.features_caption"))
    else:
        st.info(t("probing.features_pick"), icon=":material/info:")


def retrain(models: list[str], tasks: list[str]) -> None:
    """5. Retrain a probe live, one at a time per server."""
    retrained: dict[tuple[str, str], TaskResult] = st.session_state.setdefault("retrained", {})
    st.header(t("probing.retrain_title"))
    st.write(t("probing.retrain_intro"))
    c1, c2, c3 = st.columns([2, 2, 1])
    retrain_model = c1.selectbox(t("probing.retrain_model"), models, key="retrain_model")
    retrain_task = c2.selectbox(t("probing.retrain_task"), tasks, format_func=task_name, key="retrain_task")
    seed = int(c3.number_input(t("probing.seed"), 0, 99, 0, key="seed", bind="query-params"))
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
            cog=f"{result.center_of_gravity:.2f}",
            shipped=f"{before.mix_score:.3f}" if before else "–",
            shipped_cog=f"{before.center_of_gravity:.2f}" if before else "–",
        )
        st.rerun()  # the charts above now draw the new probe
    st.caption(t("probing.data_note", script=probing.SCRIPT))


def check_yourself() -> None:
    def quiz_results() -> probing.ModelResults:
        results = serving.probing_results("minilm-l6")
        if results is None:
            raise model_zoo.ModelUnavailable(
                "minilm-l6", "its probing results are not shipped: python -m model_zoo.probing"
            )
        return results

    def solve_pos() -> Solved:
        pos = quiz_results().tasks["pos"]
        layer = int(np.argmax(pos.mix_weights))
        return Solved(str(layer), {"weight": f"{pos.mix_weights[layer]:.0%}", "score": f"{pos.mix_score:.0%}"})

    def solve_highest() -> Solved:
        tasks = quiz_results().tasks
        high = max(tasks, key=lambda k: tasks[k].center_of_gravity)
        low = min(tasks, key=lambda k: tasks[k].center_of_gravity)
        facts = {
            "high": f"{tasks[high].center_of_gravity:.1f}",
            "low": low,
            "low_cog": f"{tasks[low].center_of_gravity:.1f}",
        }
        return Solved(high, facts)

    render_quiz(
        (
            Question("probe_pos", tuple(str(k) for k in range(7)), solve_pos),
            Question("probe_high", ("pos", "ner", "dep", "sense", "agreement"), solve_highest),
        )
    )


def run() -> None:
    ensure_app_frame()
    st.title(t("lesson.probing.title"))
    st.write(t("probing.intro"))
    with st.expander(t("probing.how_title")):
        st.write(t("probing.how"))
        st.latex(r"\mathrm{vector}_k = \gamma \sum_{j=0}^{L} s_j\, h_{k,j}, \qquad s = \mathrm{softmax}(w)")
        st.write(t("probing.how_more"))
    models, tasks = pick()
    results = gather(models, tasks)
    weights(results, tasks)
    by_layer(results, tasks)
    numbers(results, tasks)
    feature_table(results)
    retrain(models, tasks)
    check_yourself()


run()
