"""Lesson: the same word in many sentences, senses pulling apart layer by layer; a static vector stays one point."""

from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st

import serving
from components.frame import ensure_app_frame
from components.i18n import t, t_plain
from components.light_charts import COLORS, Own, build_layer_lines, build_sense_map, render_light_chart
from components.notices import render_error, render_unavailable
from components.quiz import Question, Solved, render_quiz
from model_zoo import registry
from model_zoo.errors import ModelUnavailable
from model_zoo.registry import HIDDEN_STATES, VECTORS
from model_zoo.sense_data import UMAP_DEFAULTS, Precomputed, SenseSet, chance_accuracy, load_precomputed, load_senses
from model_zoo.words import find_word, forms_of

# This page draws its default view from figures precomputed with the real model over the
# shipped set (model_zoo.sense_data), without importing torch; `serving` (whose model calls
# import it) is called only for what is not precomputed: other models, UMAP settings, your sentence.
ensure_app_frame()

SETS = load_senses()
FIRST = ("bank", "stick")  # the lesson's own examples lead
WORDS = list(FIRST) + sorted(w for w in SETS if w not in FIRST)
CARDS = {c.name: c for c in registry.list_models()}
MODELS = [n for n, c in CARDS.items() if {VECTORS, HIDDEN_STATES} & set(c.capabilities)]
DEFAULT_MODELS = ["glove-6b-50d", "elmo-mini", "minilm-l6"]
CHINESE_MODELS = ("bert-base-chinese", "bert-base-multilingual-cased")
CHANG = (  # 长 as "length" (cháng) and as "grow" (zhǎng): the Chinese notes on The Illustrated BERT
    ("这条河的长度是多少？", "cháng"),
    ("桌子的长度是两米。", "cháng"),
    ("这件衣服太长了。", "cháng"),
    ("孩子今年长高了很多。", "zhǎng"),
    ("春天草长得很快。", "zhǎng"),
    ("他长大以后想当医生。", "zhǎng"),
)
APPLE = (  # 苹果 as a fruit and as the company: the blog post comparing word2vec, ELMo and BERT
    ("我每天早上吃一个苹果。", "水果 fruit"),
    ("这个苹果又红又甜。", "水果 fruit"),
    ("妈妈在市场买了三斤苹果。", "水果 fruit"),
    ("苹果发布了新款手机。", "公司 company"),
    ("苹果公司的股价今天上涨了。", "公司 company"),
    ("他在苹果做软件工程师。", "公司 company"),
)
CHINESE = {"长": CHANG, "苹果": APPLE}  # the word -> its six sentences, each with its sense


@dataclass
class Shown:
    """A model on this page: where its figures come from."""

    name: str
    static: bool
    depth: int  # layers above the embeddings (0 for a static model)
    pre: Precomputed | None  # figures precomputed for this word, if any


@dataclass(frozen=True)
class View:
    """How the maps are drawn: the layer (of the deepest model), the projection and UMAP's settings."""

    layer: int
    deepest: int
    method: str  # "pca" or "umap"
    neighbours: int
    min_dist: float
    seed: int

    @property
    def default_umap(self) -> bool:
        return (self.neighbours, self.min_dist, self.seed) == (
            UMAP_DEFAULTS.n_neighbors,
            UMAP_DEFAULTS.min_dist,
            UMAP_DEFAULTS.seed,
        )

    def layer_of(self, m: Shown) -> int:
        """The slider's layer on `m`'s own depth (a 6-layer and a 12-layer model side by side)."""
        return 0 if m.static else round(self.layer * m.depth / max(self.deepest, 1))


def sense_labels(sense_set: SenseSet) -> dict[str, str]:
    """Sense key -> "1. sloping land (especially the slope beside...": the legend's short names."""
    return {k: f"{i + 1}. {sense_set.glosses[k].split(';')[0][:48]}" for i, k in enumerate(sense_set.sense_keys)}


def describe_data(word: str, sense_set: SenseSet) -> None:
    if len(sense_set.sense_keys) < 2:
        st.info(t("senses.single_sense", word=word), icon=":material/info:")
    st.caption(
        t(
            "senses.data_note",
            n=len(sense_set.sentences),
            senses=len(sense_set.sense_keys),
            words=len(SETS),
            total=sum(len(s.sentences) for s in SETS.values()),
        )
    )


def encoded(name: str, sense_set: SenseSet) -> Any:
    """The word's vectors in every sentence at every layer of `name` (encoded once, then from disk)."""
    progress = st.empty()
    n = len(sense_set.sentences)
    vectors = serving.sense_vectors(
        name, sense_set.word, lambda share: progress.progress(share, t("senses.encoding", model=name, n=n))
    )
    progress.empty()
    return vectors


def shown_model(name: str, sense_set: SenseSet) -> Shown:
    """How `name` appears: from precomputed figures if it can, else loaded (or its fallback)."""
    card = CARDS[name]
    here = serving.availabilities()[name].ready  # cached for 30 s: no file-system walk per rerun
    if here and VECTORS in card.capabilities:
        return Shown(name, True, 0, None)  # one vector per word: nothing to load for the picture
    pre = (load_precomputed(name) or {}).get(sense_set.word) if here else None
    if pre is not None:
        return Shown(name, False, pre.pca.shape[1] - 1, pre)
    with st.spinner(t("playground.loading", name=name)):
        model, unavailable = serving.model_or_fallback(name)  # ModelUnavailable if there is no stand-in
    if unavailable is not None:
        render_unavailable(unavailable)
    if VECTORS in CARDS[model.name].capabilities:
        return Shown(model.name, True, 0, None)
    return Shown(model.name, False, encoded(model.name, sense_set).vectors.shape[1] - 1, None)


def shown_models(chosen: list[str], sense_set: SenseSet) -> list[Shown]:
    """The chosen models, each once (two may fall back to the same stand-in); stops the page if none."""
    models: list[Shown] = []
    for name in chosen:
        try:
            shown = shown_model(name, sense_set)
        except ModelUnavailable as err:  # a model with no stand-in
            render_unavailable(err)
            continue
        if shown.name not in [m.name for m in models]:
            models.append(shown)
    if not models:
        st.info(t("senses.no_model"), icon=":material/info:")
        st.stop()
    return models


def choose_view(models: list[Shown]) -> View:
    deepest = max(m.depth for m in models)
    layer = 0
    if deepest > 0:
        layer = st.slider(
            t("senses.layer"), 0, deepest, deepest // 2, key="layer", bind="query-params", help=t("senses.layer_help")
        )
    method = st.radio(
        t("senses.method"),
        ["pca", "umap"],
        format_func=lambda m: m.upper(),
        horizontal=True,
        key="method",
        bind="query-params",
    )
    with st.expander(t("senses.advanced")):
        a1, a2, a3 = st.columns(3)
        neighbours = a1.slider(t("senses.neighbours"), 2, 50, UMAP_DEFAULTS.n_neighbors, key="neighbours")
        min_dist = a2.slider(t("senses.min_dist"), 0.0, 0.99, UMAP_DEFAULTS.min_dist, key="min_dist")
        seed = int(a3.number_input(t("senses.seed"), 0, 9999, UMAP_DEFAULTS.seed, key="seed"))
        st.caption(t("senses.umap_note"))
    return View(layer, deepest, method, neighbours, min_dist, seed)


BLOOD_BANK = "The hospital has its own blood bank."  # the lecture notes' fifth bank: a third sense or not?


def read_own_sentence(word: str, models: list[Shown]) -> tuple[str, dict[str, np.ndarray]]:
    """The learner's sentence and, where it uses the word, its vector at every layer of each contextual model."""
    if word == "bank":
        st.button(
            t("senses.blood_bank"),
            key="blood_bank",
            icon=":material/bloodtype:",
            on_click=lambda: st.session_state.update(mine=BLOOD_BANK),
        )
        st.caption(t("senses.blood_bank_note"))
    mine = st.text_input(
        t("senses.mine"),
        key="mine",
        bind="query-params",
        max_chars=2000,
        placeholder=t_plain("senses.mine_placeholder", word=word),
    )
    own_vectors: dict[str, np.ndarray] = {}
    if not mine.strip():
        return mine, own_vectors
    if find_word(mine, word) is None:
        near = forms_of(mine, word)
        st.info(
            t("senses.word_missing", word=word, forms=", ".join(near)) if near else t("senses.word_absent", word=word),
            icon=":material/info:",
        )
        return mine, own_vectors
    import model_zoo

    for m in models:
        if m.static:
            continue
        try:
            with st.spinner(t("senses.reading", model=m.name)):  # shown only if it takes over 0.5 s
                own_vectors[m.name] = serving.own_sentence_vector(m.name, mine, word)
        except model_zoo.ModelZooError as err:
            render_error(err)
        if (limit := serving.over_limit(m.name, mine)) is not None:
            st.warning(t("senses.truncated", model=m.name, n=limit), icon=":material/content_cut:")
    return mine, own_vectors


def render_maps(
    sense_set: SenseSet, models: list[Shown], view: View, mine: str, own_vectors: dict[str, np.ndarray]
) -> None:
    """One map per model: every use of the word at the view's layer, coloured by sense; the learner's as a star."""
    word, labels = sense_set.word, sense_labels(sense_set)
    sense_index = [sense_set.sense_keys.index(k) for k in sense_set.senses]
    glosses = [sense_set.glosses[k] for k in sense_set.senses]
    grid = st.columns(2)
    for i, m in enumerate(models):
        at = view.layer_of(m)
        extra = own_vectors.get(m.name)
        own = None
        if m.static:  # one vector for every use: one point (a projection would only show rounding noise)
            xy = np.zeros((len(sense_set.sentences), 2))
        elif m.pre is not None and extra is None and (view.method == "pca" or view.default_umap):
            xy = (m.pre.pca if view.method == "pca" else m.pre.umap)[:, at]
        else:
            from model_zoo.senses import vote

            point = None if extra is None else tuple(float(v) for v in extra[at])
            with st.spinner(t("emb.map_umap") if view.method == "umap" else t("emb.map_pca")):
                xy = serving.sense_map(m.name, word, at, view.method, point, view.seed, view.neighbours, view.min_dist)
            if extra is not None:
                sense, share = vote(encoded(m.name, sense_set).vectors[:, at], sense_set.senses, extra[at])
                note = t_plain("senses.vote", sense=labels[sense], share=f"{share:.0%}")
                own = Own(float(xy[-1, 0]), float(xy[-1, 1]), mine, note)
                xy = xy[:-1]
        title = (
            t_plain("senses.map_static", model=m.name)
            if m.static
            else t_plain("senses.map_title", model=m.name, layer=at, layers=m.depth)
        )
        with grid[i % 2]:
            chart = build_sense_map(
                xy,
                sense_index,
                [labels[k] for k in sense_set.sense_keys],
                sense_set.sentences,
                glosses,
                word,
                title,
                own,
                t("senses.yours"),
                map_labels(),
            )
            render_light_chart(chart, key=f"map_{m.name}")
            if m.static:
                st.caption(t("senses.static_note", word=word))


def render_votes(sense_set: SenseSet, models: list[Shown], own_vectors: dict[str, np.ndarray]) -> None:
    """What the learner's use votes for at every layer of each model: a row per model."""
    from model_zoo.senses import votes_by_layer

    labels = sense_labels(sense_set)
    table = {}
    for m in models:
        if m.name in own_vectors:
            uses = encoded(m.name, sense_set).vectors
            votes = votes_by_layer(uses, sense_set.senses, own_vectors[m.name][: m.depth + 1])
            table[m.name] = [labels[sense].split(".")[0] for sense in votes]
    if not table:
        return
    st.subheader(t("senses.votes_title"))
    width = max(len(v) for v in table.values())
    st.dataframe(
        {
            t("senses.col_model"): list(table),
            **{str(k): [v[k] if k < len(v) else "" for v in table.values()] for k in range(width)},
        },
        hide_index=True,
    )
    st.caption(t("senses.votes_note", senses="; ".join(labels.values())))


def render_measures(sense_set: SenseSet, models: list[Shown], deepest: int) -> None:
    """Per-layer sense accuracy against chance, self- and intra-sentence similarity against the baseline."""
    st.header(t("senses.measures_title"))
    st.write(t("senses.measures_intro"))
    chance = chance_accuracy(sense_set.senses)
    accuracy, self_sim, intra, baseline = {}, {}, {}, {}
    for m in models:
        measures = m.pre if m.pre is not None else None if m.static else serving.sense_measures(m.name, sense_set.word)
        if measures is None:  # static: one vector for every use scores exactly chance, at every depth
            accuracy[m.name] = np.full(deepest + 1, chance)
            continue
        accuracy[m.name] = measures.accuracy
        self_sim[m.name] = measures.self_similarity
        intra[m.name] = measures.intra_similarity
        baseline[f"{m.name} · {t('senses.baseline')}"] = measures.baseline
    accuracy[t("senses.chance")] = np.full(deepest + 1, chance)
    colors = {m.name: COLORS[i % len(COLORS)] for i, m in enumerate(models)}  # a model keeps its colour

    def lines(
        column: Any,
        series: dict[str, np.ndarray],
        title: str,
        y_title: str,
        dashed: tuple[str, ...],
        key: str,
        y_range: tuple[float, float] | None = None,
    ) -> None:
        with column:
            axis = t("senses.layer_axis")
            chart = build_layer_lines(series, title, y_title, dashed, axis, map_labels(), colors, y_range)
            render_light_chart(chart, key=key)

    m1, m2, m3 = st.columns(3)
    lines(m1, accuracy, t("senses.acc_title"), t("senses.acc_axis"), (t("senses.chance"),), "acc", (0.0, 1.02))
    if self_sim:
        lines(m2, {**self_sim, **baseline}, t("senses.self_title"), "cos", tuple(baseline), "self")
        lines(m3, {**intra, **baseline}, t("senses.intra_title"), "cos", tuple(baseline), "intra")
    st.caption(t("senses.measures_note"))


def render_chinese_corner() -> None:
    """长 (length / grow) and 苹果 (fruit / company), once a model that reads Chinese is on this machine."""
    st.header(t("senses.zh_title"))
    st.write(t("senses.zh_intro"))
    reader = next((name for name in CHINESE_MODELS if serving.availabilities()[name].ready), None)
    if reader is None:
        st.info(
            t(
                "senses.zh_missing",
                models=" / ".join(CHINESE_MODELS),
                command=f"python -m model_zoo prefetch {CHINESE_MODELS[0]}",
            ),
            icon=":material/cloud_off:",
        )
        return
    from components.charts import build_similarity_heatmap
    from model_zoo.onehot import cosine_matrix

    word = st.segmented_control(t("senses.zh_word"), list(CHINESE), default="长", key="zh_word") or "长"
    sentences = CHINESE[word]
    vectors = serving.word_vectors(reader, tuple(s for s, _ in sentences), word)[:, -1]
    names = [f"{s} ({sense})" for s, sense in sentences]
    st.plotly_chart(
        build_similarity_heatmap(
            names, cosine_matrix(vectors), t_plain("senses.zh_map", word=word, model=reader), number=False
        ),
        key="zh",
    )


def map_labels() -> dict[str, str]:
    """The charts' buttons, in the learner's language."""
    return {"reset": t("senses.map_reset"), "png": t("senses.map_png")}


def run() -> None:
    st.title(t("lesson.senses.title"))
    st.write(t("senses.intro"))
    c1, c2 = st.columns([1, 2])
    word = c1.selectbox(t("senses.word"), WORDS, key="word", bind="query-params")
    chosen = c2.multiselect(t("senses.models"), MODELS, default=DEFAULT_MODELS, key="models", bind="query-params")
    sense_set = SETS[word]
    describe_data(word, sense_set)
    models = shown_models(chosen, sense_set)
    explore(word, sense_set, models)
    render_measures(sense_set, models, max(m.depth for m in models))
    render_chinese_corner()


@st.fragment
def explore(word: str, sense_set: SenseSet, models: list[Shown]) -> None:
    """The maps, their controls, the learner's sentence and the votes: a fragment, so moving the
    layer slider or typing a sentence reruns this alone, not the title, data and measures."""
    view = choose_view(models)
    mine, own_vectors = read_own_sentence(word, models)
    render_maps(sense_set, models, view, mine, own_vectors)
    render_votes(sense_set, models, own_vectors)


# Check yourself -------------------------------------------------------------------------------------
def solve_layer() -> Solved:
    measures = serving.sense_measures("minilm-l6", "bank")
    best = int(measures.accuracy.argmax())
    facts = {"acc": f"{measures.accuracy[best]:.0%}", "acc0": f"{measures.accuracy[0]:.0%}"}
    return Solved(str(best), facts | {"chance": f"{measures.chance:.0%}"})


def solve_glove() -> Solved:
    glove, unavailable = serving.static_model("glove-6b-50d")
    if unavailable is not None:
        raise unavailable
    sentences = SETS["bank"].sentences
    points = len({glove.vector("bank").tobytes() for _ in sentences})  # the vector it gives in each sentence
    return Solved(str(points), {"n": len(sentences)})


QUIZ = (
    Question("senses_layer", tuple(str(k) for k in range(7)), solve_layer),
    Question("senses_glove", ("1", "2", "3"), solve_glove),
)


run()
render_quiz(QUIZ)
