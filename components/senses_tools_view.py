"""Word senses' two instruments (issue 38): axes the learner names (each pole a sense of the word or a word),
and the nearest uses of any use, or of the learner's own sentence, among every word of the shipped
sentences."""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from components.charts import build_axes_map, build_lines, build_score_bars
from components.export import csv_safe, csv_text, download_csv
from components.i18n import current_lang, md_escape, t, t_plain
from components.light_charts import COLORS
from components.quiz import Question, Solved, render_predict
from components.url import WORD_CHARS, keep_in_url, key_from_url, limited_box, number_from_url, said_if_cut
from model_zoo.lessons.axes import AxisView, PoleChoice, Separation
from model_zoo.lessons.sense_data import SenseModel, SenseSet, chinese_names
from model_zoo.lessons.uses import Found, Use, label_counts

WORD = "word"  # a pole option: a word the learner types, not a sense of the word
MINE = "mine"  # the nearest uses' query option: the learner's own sentence
LABELS = ("word", "sense", "pos", "dep")  # what the neighbours' histogram counts


# -- choosing ----------------------------------------------------------------------------------------
def pick_model(models: Sequence[SenseModel], key: str, contextual_only: bool) -> SenseModel | None:
    """One of the models shown (the deepest contextual one first); None where none fits (one line says so)."""
    fit = [m for m in models if not (contextual_only and m.static)]
    if not fit:
        st.info(t("senses.tools_need_contextual"), icon=":material/info:")
        return None
    fit.sort(key=lambda m: -m.depth)
    names = [m.name for m in fit]
    name = key_from_url(key, names, names[0])
    name = st.selectbox(t("senses.tools_model"), names, names.index(name), key=key)
    keep_in_url(key, name)
    return fit[names.index(name)]


def layer_slider(depth: int, key: str, default: int, widget: str) -> int:
    """A layer from 0 to `depth` on a slider (widget key `widget`), kept in the URL under `key`."""
    layer = number_from_url(key, 0, depth, min(default, depth))
    layer = st.slider(t("senses.layer"), 0, depth, layer, key=widget)
    keep_in_url(key, int(layer))
    return int(layer)


def pick_layer(model: SenseModel, key: str, default: int) -> int:
    """A layer of `model` (its slider, kept in the URL); 0 for a static model."""
    return layer_slider(model.depth, key, default, f"{key}_{model.name}") if model.depth else 0


def _pole(
    sense_set: SenseSet, name: str, default: str, label: str, column: st.delta_generator.DeltaGenerator
) -> PoleChoice:
    """One pole: a sense of the word (by its number in the legend) or a word typed below."""
    keys = sense_set.sense_keys
    options = [str(i + 1) for i in range(len(keys))] + [WORD]
    labels = sense_labels(sense_set)
    chosen = key_from_url(name, options, default)
    chosen = column.selectbox(
        label,
        options,
        options.index(chosen),
        format_func=lambda o: t_plain("senses.axes_a_word") if o == WORD else labels[keys[int(o) - 1]],
        key=f"{name}_{sense_set.word}",
    )
    keep_in_url(name, chosen)
    if chosen != WORD:
        return PoleChoice(sense=keys[int(chosen) - 1])
    said_if_cut(f"{name}_word", WORD_CHARS)
    typed = limited_box(
        column.text_input,
        t("senses.axes_word"),
        f"{name}_word_{sense_set.word}",
        WORD_CHARS,
        value=st.query_params.get(f"{name}_word", "")[:WORD_CHARS],
        placeholder=t_plain("senses.axes_word_placeholder"),
    )
    keep_in_url(f"{name}_word", typed)
    return PoleChoice(word=typed.strip())


def choose_axes(sense_set: SenseSet) -> tuple[tuple[PoleChoice, PoleChoice], tuple[PoleChoice, PoleChoice] | None]:
    """The x axis's two poles (the word's first two senses by default) and, if the learner wants one, the
    y axis's (else None: the page draws the largest spread left once x's direction is removed)."""
    two = "2" if len(sense_set.sense_keys) > 1 else WORD
    a, b = st.columns(2)
    x_ends = (
        _pole(sense_set, "axes_xa", "1", t_plain("senses.axes_x_from"), a),
        _pole(sense_set, "axes_xb", two, t_plain("senses.axes_x_to"), b),
    )
    own_y = st.toggle(t("senses.axes_own_y"), key="axes_own_y", bind="query-params")
    if not own_y:
        return x_ends, None
    c, d = st.columns(2)
    third = "3" if len(sense_set.sense_keys) > 2 else WORD
    y_ends = (
        _pole(sense_set, "axes_ya", "1", t_plain("senses.axes_y_from"), c),
        _pole(sense_set, "axes_yb", third, t_plain("senses.axes_y_to"), d),
    )
    return x_ends, y_ends


def sense_labels(sense_set: SenseSet) -> dict[str, str]:
    """The legend's name of each sense of `sense_set` (SenseSet.labels): in Chinese, each sense's Chinese name
    before WordNet's English gloss ("1. 河岸 · sloping land …"), which has no Chinese of its own."""
    return sense_set.labels_named(chinese_names() if current_lang() == "zh" else {})


def pole_name(sense_set: SenseSet, end: PoleChoice) -> str:
    """A pole as a label: its sense's number and short gloss, or the word in quotes."""
    return short_label(sense_labels(sense_set)[end.sense]) if end.sense else f"“{end.word}”"


def short_label(label: str) -> str:
    """A sense's legend label cut to its head: "1. sloping land" (the legend has the whole gloss)."""
    return textwrap.shorten(label.split(" (")[0], 32, placeholder="…")


# -- the axes ------------------------------------------------------------------------------------------
def render_axes(
    sense_set: SenseSet,
    model: SenseModel,
    layer: int,
    view: AxisView,
    x_ends: tuple[PoleChoice, PoleChoice],
    y_ends: tuple[PoleChoice, PoleChoice] | None,
) -> int | None:
    """The uses on the learner's axes, how the x axis separates two senses at every layer, and what removing
    its direction does to the nearest-use sense accuracy. Returns the use clicked on the map, if any."""
    labels = sense_labels(sense_set)
    x_from, x_to = pole_name(sense_set, x_ends[0]), pole_name(sense_set, x_ends[1])
    x_title = t_plain("senses.axes_x_title", a=x_from, b=x_to)
    if y_ends is None:
        y_title = t_plain("senses.axes_y_pca")
    else:
        y_title = t_plain("senses.axes_x_title", a=pole_name(sense_set, y_ends[0]), b=pole_name(sense_set, y_ends[1]))
    hover = [f"{labels[k]} · {s}" for k, s in zip(sense_set.senses, sense_set.sentences)]
    names = [labels[k] for k in sense_set.sense_keys]
    title = t_plain("senses.axes_title", model=model.name, layer=layer, word=sense_set.word)
    if np.isnan(view.x).all():
        if x_ends[0] == x_ends[1]:
            st.info(t("senses.axes_same_ends"), icon=":material/info:")
        else:
            st.info(t("senses.axes_flat", model=model.name, word=sense_set.word, layer=layer), icon=":material/info:")
    x = np.nan_to_num(view.x, nan=0.5)
    chart = build_axes_map(x, view.y, sense_set.sense_numbers, names, hover, (x_title, y_title), title, COLORS)
    event = st.plotly_chart(chart, key="axes_map", on_select="rerun", selection_mode="points")
    clicked = _clicked(event)
    sep = view.separation
    first, second = labels[view.first].split(".")[0], labels[view.second].split(".")[0]
    if not sep.flat:
        st.write(
            t(
                "senses.axes_finding",
                a=x_from,
                b=x_to,
                model=model.name,
                first=first,
                second=second,
                auc=f"{sep.auc[sep.best_layer]:.2f}",
                best=sep.best_layer,
                auc0=f"{sep.auc[0]:.2f}",
                here=f"{sep.auc[min(layer, len(sep.auc) - 1)]:.2f}",
                layer=layer,
            )
        )
    left, right = st.columns(2)
    depth = list(range(len(sep.auc)))
    layer_axis = t_plain("senses.layer_axis")
    left.plotly_chart(auc_chart(sep.auc, first, second), key="axes_auc")
    right.plotly_chart(
        build_lines(
            depth,
            {
                t_plain("senses.axes_as_is"): list(view.accuracy),
                t_plain("senses.axes_removed"): list(view.removed),
            },
            {},
            t_plain("senses.axes_removed_title"),
            layer_axis,
            percent=True,
        ),
        key="axes_removed",
    )
    at = min(layer, len(view.accuracy) - 1)
    kept = view.removed[at] > view.chance + 0.1  # still well above chance: the senses differ along other directions
    st.caption(
        t("senses.axes_removed_finding", layer=at, before=f"{view.accuracy[at]:.0%}", after=f"{view.removed[at]:.0%}")
        + " "
        + t("senses.axes_removed_left" if kept else "senses.axes_removed_gone", chance=f"{view.chance:.0%}")
    )
    name = f"axes-{sense_set.word}-{model.name}-layer{layer}.csv"
    download_csv(t("senses.axes_csv"), partial(axes_csv, sense_set, view), name, "axes_csv")
    return clicked


def auc_chart(auc: np.ndarray, first: str, second: str) -> go.Figure:
    """The AUC of sense `second` against sense `first` along an axis, at every layer, beside chance."""
    return build_lines(
        list(range(len(auc))),
        {t_plain("senses.axes_auc", first=first, second=second): list(auc)},
        {t_plain("senses.axes_chance"): 0.5},
        t_plain("senses.axes_auc_title"),
        t_plain("senses.layer_axis"),
    )


def _clicked(event: object) -> int | None:
    """The use a click picked on the axes map (its customdata), if any."""
    points = getattr(getattr(event, "selection", None), "points", None) or []
    for point in points:
        data = point.get("customdata") if isinstance(point, dict) else None
        if isinstance(data, int | float):
            return int(data)
        if isinstance(data, list) and data:
            return int(data[0])
    return None


def axes_csv(sense_set: SenseSet, view: AxisView) -> str:
    """Every use's place on the axes, with its sense and sentence (a cell never starts a formula)."""
    rows = zip(sense_set.sentences, sense_set.senses, view.x, view.y)
    return csv_text(["sentence", "sense", "x", "y"], ([csv_safe(s), k, f"{x:.6f}", f"{y:.6f}"] for s, k, x, y in rows))


def nearest_csv(found: Found, sentences: Sequence[Sequence[str]]) -> str:
    """The nearest uses as listed: rank, cosine, word, labels and sentence (a cell never starts a formula)."""
    return csv_text(
        ["rank", "cosine", "word", "pos", "dep", "sense", "sentence"],
        (
            [
                rank,
                f"{cosine:.4f}",
                csv_safe(use.word),
                use.pos or "",
                use.dep or "",
                use.sense or "",
                csv_safe(" ".join(sentences[use.sentence])),
            ]
            for rank, (use, cosine) in enumerate(found.neighbours, 1)
        ),
    )


# -- nearest uses ----------------------------------------------------------------------------------------
def pick_query(sense_set: SenseSet, mine: str, clicked: int | None) -> str:
    """The use to look from: the learner's sentence (where it uses the word), or one of the word's uses; a
    click on the axes map picks one. Returns MINE or the use's number."""
    options = ([MINE] if mine.strip() else []) + [str(i) for i in range(len(sense_set.sentences))]
    if clicked is not None and str(clicked) in options:
        st.session_state[f"near_use_{sense_set.word}"] = str(clicked)
    default = key_from_url("near_use", options, options[0])
    labels = sense_labels(sense_set)
    chosen = st.selectbox(
        t("senses.near_from"),
        options,
        options.index(default),
        format_func=lambda o: (
            t_plain("senses.near_mine", sentence=mine[:80])
            if o == MINE
            else f"{labels[sense_set.senses[int(o)]].split('.')[0]}. {sense_set.sentences[int(o)]}"
        ),
        key=f"near_use_{sense_set.word}",
    )
    keep_in_url("near_use", chosen)
    return chosen


def marked(use: Use, words: Sequence[str]) -> str:
    """The use's sentence as Markdown that shows it as written, the word itself in bold."""
    before = md_escape(" ".join(words[: use.position]))
    after = md_escape(" ".join(words[use.position + 1 :]))
    return f"{before} **{md_escape(use.word)}** {after}".strip()


def render_nearest(
    found: Found, sentences: Sequence[Sequence[str]], word: str, layer: int, model: str, senses: dict[str, str]
) -> None:
    """The nearest uses at this layer (sentence, labels, cosine), their labels counted, and the shares by layer
    with one computed sentence. `senses`: each sense key's short name ("1. sloping land")."""
    st.markdown(t("senses.near_title", k=len(found.neighbours), model=model, layer=layer))
    lines = []
    for rank, (use, cosine) in enumerate(found.neighbours, 1):
        tags = " · ".join(md_escape(x) for x in (use.pos, use.dep) if x)
        sense = f" · {md_escape(senses.get(use.sense, use.sense))}" if use.sense else ""
        lines.append(f"{rank}. `{cosine:.3f}` {marked(use, sentences[use.sentence])} — {tags}{sense}")
    st.markdown("\n".join(lines))
    name = f"nearest-{word}-{model}-layer{layer}.csv"
    download_csv(t("senses.near_csv"), partial(nearest_csv, found, sentences), name, "near_csv")
    label = (
        st.segmented_control(
            t("senses.near_count"),
            LABELS,
            default="pos",
            format_func=lambda k: t_plain(f"senses.near_label_{k}"),
            key="near_label",
        )
        or "pos"
    )
    counts: Counter[str] = label_counts([u for u, _ in found.neighbours], label)
    if label == "sense":
        counts = Counter({senses.get(k, k): n for k, n in counts.items()})
    total = len(found.neighbours)
    left, right = st.columns(2)
    left.plotly_chart(
        build_score_bars(
            [(k, n / total) for k, n in counts.most_common(8)], t_plain("senses.near_counts_title", layer=layer)
        ),
        key="near_counts",
    )
    shares = found.shares
    series = {t_plain("senses.near_same_word", word=word): list(shares.same_word)}
    if not np.isnan(shares.same_sense).all():
        series[t_plain("senses.near_same_sense", word=word)] = list(shares.same_sense)
    if not np.isnan(shares.same_pos).all():
        series[t_plain("senses.near_same_pos")] = list(shares.same_pos)
    right.plotly_chart(
        build_lines(
            list(range(len(shares.same_word))),
            series,
            {},
            t_plain("senses.near_shares_title", k=total),
            t_plain("senses.layer_axis"),
            percent=True,
        ),
        key="near_shares",
    )
    if not np.isnan(shares.same_sense).all():
        top = len(shares.same_sense) - 1
        st.write(
            t(
                "senses.near_finding",
                word=word,
                first=round(shares.same_sense[0] * total),
                last=round(shares.same_sense[top] * total),
                top=top,
                k=total,
                form=round(shares.same_word[0] * total),
            )
        )


def render_class_shares(word_share: np.ndarray, sense_share: np.ndarray, model: str, k: int) -> None:
    """Over all sense-labelled uses: the share of their nearest uses that are the same word, and the same word
    in the same sense, at every layer; one computed sentence on whether it rises as Coenen et al. report."""
    depth = list(range(len(sense_share)))
    st.plotly_chart(
        build_lines(
            depth,
            {
                t_plain("senses.near_class_word"): list(word_share),
                t_plain("senses.near_class_sense"): list(sense_share),
            },
            {},
            t_plain("senses.near_class_title", k=k, model=model),
            t_plain("senses.layer_axis"),
            percent=True,
        ),
        key="near_class",
    )
    top = int(np.argmax(sense_share))
    rises = sense_share[-1] > sense_share[0] + 0.05
    said = [
        t(
            "senses.near_class_rises" if rises else "senses.near_class_flat",
            model=model,
            first=f"{sense_share[0]:.0%}",
            last=f"{sense_share[-1]:.0%}",
            top=top,
            best=f"{sense_share[top]:.0%}",
        )
    ]
    if word_share.min() >= 0.9:  # the neighbours stay the word's own uses at every layer
        said.append(t("senses.near_class_form", word=f"{word_share.min():.1%}"))
    st.write(" ".join(said))


# -- predict, then see ---------------------------------------------------------------------------------
SEPARATES = 0.9  # an AUC this high: the axis tells the two senses apart


def depth_bucket(first: int | None, depth: int) -> str:
    """Where in the depth a first layer falls: "embeddings" (0), "lower" or "upper" half, or "never"."""
    if first is None:
        return "never"
    return "embeddings" if first == 0 else "lower" if first <= depth / 2 else "upper"


def render_guess_axis(sense_set: SenseSet, model_name: str, separation: Callable[[], Separation]) -> None:
    """Predict, then see: along the axis from the word's first sense to its second, where in the depth does the
    model first tell them apart (AUC at least 0.9)? After the pick, the AUC at every layer."""
    labels = sense_labels(sense_set)
    a, b = short_label(labels[sense_set.sense_keys[0]]), short_label(labels[sense_set.sense_keys[1]])
    found: list[Separation] = []

    def solve() -> Solved:
        found.append(separation())
        auc = found[-1].auc
        first = next((i for i, v in enumerate(auc) if v >= SEPARATES), None)
        facts = {"layer": first if first is not None else "-", "auc0": f"{auc[0]:.2f}", "depth": len(auc) - 1}
        return Solved(depth_bucket(first, len(auc) - 1), facts | {"best": f"{auc.max():.2f}", "top": int(auc.argmax())})

    question = Question(
        "senses_axis",
        ("embeddings", "lower", "upper", "never"),
        solve,
        translated=True,
        about={"word": sense_set.word, "model": model_name, "a": a, "b": b},
    )
    if render_predict(question, model_name) is not None:
        st.plotly_chart(auc_chart(found[-1].auc, a.split(".")[0], b.split(".")[0]), key="guess_axis_auc")
