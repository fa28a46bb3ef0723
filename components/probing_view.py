"""What the Probing lesson draws of probing results: the scalar-mix weights, accuracy by layer, the table of
numbers beside the paper's, BERT's feature-extraction table, each with what it shows in words, the
predict-first moments before the last two charts (how well layer 0 tells word senses apart, which features
make the best tagger), and the lesson's questions."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import streamlit as st

from components.charts import build_probe_curves, build_probe_weights
from components.i18n import t, t_plain
from components.quiz import Question, Solved, render_predict, render_quiz
from model_zoo.lessons import probing
from model_zoo.lessons.probing import PAPER_BERT_LARGE, PAPER_FEATURE_F1, PAPER_LAYERS, ModelResults, TaskResult

Results = dict[str, dict[str, TaskResult]]  # model -> task -> result
depth = probing.normalised_depth


def task_name(task: str) -> str:
    return t_plain(f"probing.task_{task}")


def distinct_places(values: list[float], least: int = 2, most: int = 4) -> int:
    """The fewest decimal places (from `least` to `most`) that write different values differently: an order
    "Subject number 0.57, Named entities 0.57" reads as a tie where 0.568 and 0.572 are not one."""
    places = least
    while places < most and len({f"{v:.{places}f}" for v in values}) < len(set(values)):
        places += 1
    return places


def render_weights(results: Results, tasks: list[str]) -> None:
    """1. The scalar mix's weights per layer, and what they say."""
    st.header(t("probing.weights_title"))
    if not results:
        return
    weights = {m: [r[task].mix_weights for task in tasks] for m, r in results.items()}
    labels = {k: t_plain(f"probing.label_{k}") for k in ("depth", "weight", "cog", "paper")}
    labels["title"] = t_plain("probing.weights_chart")
    figure = build_probe_weights([task_name(x) for x in tasks], weights, probing.paper_depths(tasks), labels)
    st.plotly_chart(figure, key="weights")
    st.caption(t("probing.weights_caption"))
    lines = []
    findings = {name: probing.weight_findings(name, per_task, tasks) for name, per_task in results.items()}
    # one precision for every model's line (the fewest places that keep each model's own values apart)
    places = max(distinct_places([d for _, d in found.order]) for found in findings.values())
    for name, found in findings.items():
        cogs = ", ".join(f"{task_name(x)} {d:.{places}f}" for x, d in found.order)
        lines.append(t("probing.finding_order", name=name, order=cogs))
        if found.ours:
            lines.append(
                t(
                    "probing.finding_agrees" if found.agrees else "probing.finding_differs",
                    name=name,
                    ours=" < ".join(task_name(x) for x in found.ours),
                    theirs=" < ".join(task_name(x) for x in found.theirs),
                )
            )
        if found.elmo_top is not None:  # which task leans most on ELMo's LSTM-1 (the ELMo paper's reading)
            top, weight = found.elmo_top
            lines.append(t("probing.finding_elmo", name=name, task=task_name(top), s=f"{weight:.2f}"))
    st.markdown("\n".join(f"- {line}" for line in lines))


def _pct(x: float) -> str:
    return f"{x:.0%}"


def render_guess_sense(name: str, sense: TaskResult) -> bool:
    """Predict, then see: how well `name`'s word-sense probe does on layer 0 (the embeddings, before any
    word has read another): near the majority guess, halfway to its best layer, or near its best layer (the
    nearest of the three). True once revealed: the curves come after the guess."""
    zero, majority, best = sense.by_layer[0], sense.majority, sense.best_layer
    top = sense.by_layer[best]
    anchors = {"chance": majority, "half": (majority + top) / 2, "top": top}
    answer = min(anchors, key=lambda k: abs(zero - anchors[k]))
    facts = {"zero": _pct(zero), "majority": _pct(majority), "one": _pct(sense.by_layer[1]), "best": best}
    question = Question(
        "probe_sense",
        tuple(anchors),
        lambda: Solved(answer, facts | {"top": _pct(top)}),
        translated=True,
        about={"model": name},
    )
    return render_predict(question, name) is not None


def render_curves(results: Results, tasks: list[str]) -> None:
    """2. Accuracy by layer, against the control task: when word senses are among the tasks, after the
    learner has guessed how well the first model's layer 0 tells them apart."""
    st.header(t("probing.curves_title"))
    if not results:
        return
    name = next(iter(results))
    if "sense" in tasks and not render_guess_sense(name, results[name]["sense"]):
        return
    scores = {m: [r[task].by_layer for task in tasks] for m, r in results.items()}
    control = {m: [r[task].control_by_layer for task in tasks] for m, r in results.items()}
    first = next(iter(results.values()))
    majority: list[float | None] = [first[task].majority for task in tasks]
    labels = {k: t_plain(f"probing.label_{k}") for k in ("depth", "score", "control", "majority")}
    labels["title"] = t_plain("probing.curves_chart")
    st.plotly_chart(build_probe_curves([task_name(x) for x in tasks], scores, control, majority, labels), key="curves")
    st.caption(t("probing.curves_caption"))
    lines = []
    for name, per_task in results.items():
        for task in tasks:
            r = per_task[task]
            best, control_best = r.best_layer, r.control_at_best
            lines.append(
                t(
                    "probing.finding_layer" if control_best is not None else "probing.finding_layer_sense",
                    name=name,
                    task=task_name(task),
                    layer=best,
                    depth=f"{depth(best, r.layers):.2f}",
                    score=f"{r.by_layer[best]:.3f}",
                    majority=f"{r.majority:.3f}",
                    control="–" if control_best is None else f"{control_best:.3f}",
                    selectivity="–" if control_best is None else f"{r.selectivity[best]:+.3f}",
                )
            )
    st.markdown("\n".join(f"- {line}" for line in lines))


def _row(name: str, task: str, r: TaskResult) -> dict[str, object]:
    """One model and task in the table of numbers, beside the paper's."""
    paper = PAPER_BERT_LARGE.get(task)
    control = r.control_at_best
    return {
        t_plain("probing.col_model"): name,
        t_plain("probing.col_task"): task_name(task),
        t_plain("probing.col_mix"): round(r.mix_score, 3),
        t_plain("probing.col_best"): round(r.by_layer[r.best_layer], 3),
        t_plain("probing.col_majority"): round(r.majority, 3),
        t_plain("probing.col_control"): None if control is None else round(control, 3),
        t_plain("probing.col_cog"): f"{r.center_of_gravity:.2f} / {r.layers - 1}",
        t_plain("probing.col_expected"): None
        if math.isnan(r.expected_layer)
        else f"{r.expected_layer:.2f} / {r.layers - 1}",
        t_plain("probing.col_paper"): None
        if paper is None
        else f"{paper['center_of_gravity']:.2f} · {paper['expected_layer']:.2f} / {PAPER_LAYERS}",
        t_plain("probing.col_examples"): f"{r.train:,} / {r.dev:,} / {r.test:,}",
    }


SHORT_HEADS = ("mix", "best", "majority", "control", "cog", "expected", "paper", "examples")


def number_columns() -> dict[str, Any]:
    """The table of numbers' headers, short enough that its ten columns fit a projector's 1440 px without
    scrolling: each column (named by its full header) shown under its short one, the full one on hover."""
    return {
        t_plain(f"probing.col_{k}"): st.column_config.Column(t_plain(f"probing.head_{k}"), help=t(f"probing.col_{k}"))
        for k in SHORT_HEADS
    }


def render_numbers(results: Results, tasks: list[str]) -> None:
    """3. The numbers, and the paper's."""
    st.header(t("probing.table_title"))
    if results:
        rows = [_row(name, task, per_task[task]) for name, per_task in results.items() for task in tasks]
        st.dataframe(rows, hide_index=True, width="stretch", column_config=number_columns(), placeholder="—")
        st.caption(t("probing.table_caption"))


def render_guess_features(name: str, table: dict[str, float]) -> bool:
    """Predict, then see: which of BERT's feature choices gives `name`'s best tagger. True once revealed."""
    ours, theirs = probing.best_features(table)
    facts = {"f1": f"{100 * table[ours]:.1f}", "last": f"{100 * table['last']:.1f}"}
    facts |= {"embeddings": f"{100 * table['embeddings']:.1f}", "theirs": t_plain(f"probing.choice_{theirs}")}
    question = Question(
        "probe_features",
        tuple(table),  # every choice, in the table's order
        lambda: Solved(ours, facts | {"paper": PAPER_FEATURE_F1[theirs]}),
        shown=lambda choice: t_plain(f"probing.choice_{choice}"),
        about={"model": name},
    )
    return render_predict(question, name) is not None


def render_feature_table(features: dict[str, dict[str, float]]) -> None:
    """4. BERT's feature-extraction table: `features` is model -> {choice: F1} for the BERT models picked;
    drawn after the learner has guessed which choice wins for the first of them."""
    st.header(t("probing.features_title"))
    st.write(t("probing.features_intro"))
    if not features:
        st.info(t("probing.features_pick"), icon=":material/info:")
        return
    if not render_guess_features(*next(iter(features.items()))):
        return
    rows = []
    for choice, paper_f1 in PAPER_FEATURE_F1.items():
        row: dict[str, object] = {
            t_plain("probing.col_choice"): t_plain(f"probing.choice_{choice}"),
            t_plain("probing.col_paper_f1"): paper_f1,
        }
        for name, table in features.items():
            value = table.get(choice)
            row[name] = None if value is None else round(100 * value, 1)
        rows.append(row)
    st.dataframe(rows, hide_index=True, width="stretch")
    for name, table in features.items():
        ours, theirs = probing.best_features(table)
        st.markdown(
            "- "
            + t(
                "probing.finding_features" if ours == theirs else "probing.finding_features_differ",
                name=name,
                ours=t_plain(f"probing.choice_{ours}"),
                f1=f"{100 * table[ours]:.1f}",
                theirs=t_plain(f"probing.choice_{theirs}"),
                last=f"{100 * table['last']:.1f}",
                embeddings=f"{100 * table['embeddings']:.1f}",
            )
        )
    st.caption(t("probing.features_caption"))


def render_check(results: Callable[[], ModelResults]) -> None:
    """The lesson's questions, answered by `results` (minilm-l6's shipped probing results): the layer the
    part-of-speech probe weighs most, and the task whose weights sit highest."""

    deepest = 6  # minilm-l6's layers after the embeddings: the chart's depth is layer / deepest

    def at_depth(layer: str) -> str:  # an option as the chart places it
        return f"{layer} ({probing.normalised_depth(int(layer), deepest + 1):.2f})"

    def solve_pos() -> Solved:
        pos = results().tasks["pos"]
        layer = probing.best_layer(pos.mix_weights)
        return Solved(str(layer), {"weight": f"{pos.mix_weights[layer]:.0%}", "score": f"{pos.mix_score:.0%}"})

    def solve_highest() -> Solved:
        tasks = results().tasks
        high, low = probing.extreme_tasks(tasks)
        facts = {
            "high": f"{probing.normalised_depth(tasks[high].center_of_gravity, len(tasks[high].mix_weights)):.2f}",
            "low": task_name(low),
            "low_cog": f"{probing.normalised_depth(tasks[low].center_of_gravity, len(tasks[low].mix_weights)):.2f}",
        }
        return Solved(high, facts)

    render_quiz(
        (
            Question("probe_pos", tuple(str(k) for k in range(deepest + 1)), solve_pos, shown=at_depth),
            Question("probe_high", ("pos", "ner", "dep", "sense", "agreement"), solve_highest, shown=task_name),
        )
    )
