"""Lesson: the same word in many sentences, senses pulling apart layer by layer; a static vector stays one point."""

import streamlit as st

import serving
from components import senses_forming_view as forming_view
from components import senses_tools_view as tools
from components import senses_view
from components.frame import ensure_app_frame
from components.guide import GuidedPath, Step, begin_path
from components.i18n import t, t_plain
from components.notices import render_error, render_unavailable
from components.url import keep_in_url, key_from_url, keys_from_url
from model_zoo import registry
from model_zoo.errors import ModelUnavailable, ModelZooError
from model_zoo.registry import HIDDEN_STATES, VECTORS
from model_zoo.types import MapView, OwnVectors, PoleChoice, SenseModel, SenseSet, SenseVectors
from serving import lesson_senses, lesson_uses
from serving.lesson_senses import CHINESE

# This page draws its default view from figures precomputed with the real model over the
# shipped set (serving.lesson_senses), before any model library is imported; `serving` (whose model
# calls import one) is called only for what is not precomputed: other models, UMAP settings, your sentence.
ensure_app_frame()

SETS = lesson_senses.sense_sets()
WORDS = lesson_senses.lesson_words()  # the lesson's own examples (bank, stick) lead
CARDS = {c.name: c for c in registry.list_models()}
MODELS = [n for n, c in CARDS.items() if {VECTORS, HIDDEN_STATES} & set(c.capabilities)]
DEFAULT_MODELS = ["glove-6b-50d", "elmo-mini", "minilm-l6"]
CHINESE_MODELS = ("bert-base-chinese", "bert-base-multilingual-cased")
FORMING = lesson_senses.forming() is not None  # a training run packed for the elmo-mini here: its slider is shown
STEPS = tuple(  # the maps and the learner's sentence share one fragment: it is in both of the first two steps
    step
    for step in (
        Step("maps", ("explore", "guess_pair")),
        Step("yours", ("explore", "guess_vote")),
        Step("axes", ("guess_axis", "axes")),
        Step("nearest", ("nearest",)),
        Step("forming", ("guess_forming", "forming")),
        Step("measures", ("measures",)),
        Step("chinese", ("chinese",)),
        Step("check", ("check",)),
    )
    if FORMING or step.key != "forming"
)


def encoded(name: str, sense_set: SenseSet) -> SenseVectors:
    """The word's vectors in every sentence at every layer of `name` (encoded once, then from disk)."""
    progress = st.empty()
    n = len(sense_set.sentences)
    vectors = serving.sense_vectors(
        name, sense_set.word, lambda share: progress.progress(share, t("senses.encoding", model=name, n=n))
    )
    progress.empty()
    return vectors


def shown_model(name: str, sense_set: SenseSet) -> SenseModel:
    """How `name` appears: from precomputed figures if it can, else loaded (or its fallback)."""
    card = CARDS[name]
    here = serving.availabilities()[name].ready  # cached for 30 s: no file-system walk per rerun
    if here and VECTORS in card.capabilities:
        return SenseModel(name, True, 0, None)  # one vector per word: nothing to load for the picture
    precomputed = lesson_senses.precomputed_model(name, sense_set.word) if here else None
    if precomputed is not None:
        return precomputed
    with st.spinner(t("playground.loading", name=name)):
        model, unavailable = serving.model_or_fallback(name)  # ModelUnavailable if there is no stand-in
    if unavailable is not None:
        render_unavailable(unavailable)
    if VECTORS in CARDS[model.name].capabilities:
        return SenseModel(model.name, True, 0, None)
    return SenseModel(model.name, False, encoded(model.name, sense_set).vectors.shape[1] - 1, None)


def shown_models(chosen: list[str], sense_set: SenseSet) -> list[SenseModel]:
    """The chosen models, each once (two may fall back to the same stand-in); stops the page if none."""
    models: list[SenseModel] = []
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


def read_own_sentence(word: str, models: list[SenseModel]) -> tuple[str, OwnVectors]:
    """The learner's sentence and, where it uses the word, its vector at every layer of each contextual model."""
    mine = senses_view.read_mine(word, [m.name for m in models if not m.static])
    own_vectors: OwnVectors = {}
    if not mine.strip():
        return mine, own_vectors
    if (near := lesson_senses.other_forms(mine, word)) is not None:
        st.info(
            t("senses.word_missing", word=word, forms=", ".join(near)) if near else t("senses.word_absent", word=word),
            icon=":material/info:",
        )
        return mine, own_vectors
    for m in models:
        if m.static:
            continue
        try:
            with st.spinner(t("senses.reading", model=m.name)):  # shown only if it takes over 0.5 s
                own_vectors[m.name] = serving.own_sentence_vector(m.name, mine, word)
        except ModelZooError as err:
            render_error(err)
        if (limit := serving.over_limit(m.name, mine)) is not None:
            st.warning(t("senses.truncated", model=m.name, n=limit), icon=":material/content_cut:")
    return mine, own_vectors


def maps(
    sense_set: SenseSet, models: list[SenseModel], view: MapView, mine: str, own_vectors: OwnVectors, pick: bool
) -> None:
    """One map per model: every use of the word at the view's layer, coloured by sense; the learner's as a star.
    With `pick` (the nearest uses are on this page), a click on a contextual model's point looks from it."""
    # the lesson's main output (scripts/first_screen.py): a row of two maps per pair of models, so a phone, which
    # stacks columns, shows them in the road's order too (two columns for all stacked the first's maps first)
    with st.container(key="main_output"):
        grid = [cell for _ in range(0, len(models), 2) for cell in st.columns(2)]
    st.caption(t("senses.intro_how"))  # hover, tap, hide a sense, zoom
    for i, m in enumerate(models):
        at, extra = view.layer_of(m), own_vectors.get(m.name)
        xy, own = lesson_senses.ready_map(m, view, sense_set, extra is not None), None
        if xy is None:
            with st.spinner(t("emb.map_umap") if view.method == "umap" else t("emb.map_pca")):
                xy = lesson_senses.live_map(m.name, sense_set.word, at, view, extra)
            if extra is not None:
                xy, own = lesson_senses.place_own(xy, encoded(m.name, sense_set), sense_set, extra, at)
        with grid[i]:
            picked = senses_view.render_sense_map(sense_set, m, at, xy, own, mine, pick)
        if picked is not None and 0 <= picked < len(sense_set.sentences):  # a use of this word (a stale click: none)
            look_from(m.name, at, sense_set.word, picked)


def look_from(model_name: str, layer: int, word: str, use: int) -> None:
    """A point clicked on a map: the whole page again, its instrument the nearest uses of that use, at the map's
    model and layer (the instrument's controls set, and the URL with them)."""
    widgets: dict[str, str | int] = {
        "tool": "nearest",
        "near_model": model_name,
        f"near_layer_{model_name}": layer,
        f"near_use_{word}": str(use),
    }
    st.session_state.update(widgets)  # none of them is drawn in this run (the maps' fragment)
    linked: dict[str, str | int] = {"tool": "nearest", "near_model": model_name, "near_layer": layer, "near_use": use}
    for name, value in linked.items():
        keep_in_url(name, value)
    st.session_state["near_picked"] = True  # a toast says where its nearest uses are
    st.rerun(scope="app")


def votes(sense_set: SenseSet, models: list[SenseModel], own_vectors: OwnVectors) -> None:
    """What the learner's use votes for at every layer of each model: a row per model."""
    senses_view.render_votes(
        sense_set,
        {
            m.name: lesson_senses.own_votes(encoded(m.name, sense_set), sense_set, own_vectors[m.name], m.depth)
            for m in models
            if m.name in own_vectors
        },
    )


def measures(sense_set: SenseSet, models: list[SenseModel]) -> None:
    """Per-layer sense accuracy against chance, self- and intra-sentence similarity against the baseline."""
    st.header(t("senses.measures_title"))
    st.write(t("senses.measures_intro"))
    senses_view.render_measures(lesson_senses.measure_lines(models, sense_set))


def chinese_corner() -> None:
    """长 (length / grow) and 苹果 (fruit / company), once a model that reads Chinese is on this machine."""
    st.header(t("senses.zh_title"))
    st.write(t("senses.zh_intro"))
    reader = next((name for name in CHINESE_MODELS if serving.availabilities()[name].ready), None)
    if reader is None:
        senses_view.render_chinese_missing(CHINESE_MODELS)
        return
    key_from_url("zh_word", list(CHINESE), "长")  # before the control, which drops another word without one
    word = st.segmented_control(t("senses.zh_word"), list(CHINESE), default="长", key="zh_word", bind="query-params")
    word = word or "长"
    senses_view.render_chinese_map(word, CHINESE[word], lesson_senses.chinese_similarity(reader, word), reader)


def run() -> None:
    st.title(t("lesson.senses.title"))
    st.write(t("senses.intro"))
    key_from_url("word", WORDS, WORDS[0])  # before the picker, which drops another word without one
    st.session_state.setdefault("models", keys_from_url("models", MODELS, DEFAULT_MODELS))
    c1, c2 = st.columns([1, 2])
    word = c1.selectbox(t("senses.word"), WORDS, key="word", bind="query-params")
    chosen = c2.multiselect(
        t("senses.models"), MODELS, key="models", wrap=True, placeholder=t_plain("notice.choose_many")
    )
    keep_in_url("models", chosen)
    with st.expander(t("lesson.more")):
        st.write(t("senses.intro_more"))
    path = begin_path("senses", STEPS)
    sense_set = SETS[word]
    models = shown_models(chosen, sense_set)
    if path.shows("explore"):
        explore(word, sense_set, models, path.shows("nearest"))
        senses_view.render_data_note(word, sense_set, len(SETS), lesson_senses.total_uses())  # under the maps
    predict_first(word, models, path)
    instruments(sense_set, models, path)
    if path.shows("measures"):
        measures(sense_set, models)
    if path.shows("chinese"):
        chinese_corner()
    if path.shows("check"):
        senses_view.render_check(
            lambda: serving.sense_measures("minilm-l6", "bank"),
            lambda: lesson_senses.static_points("glove-6b-50d", "bank"),  # the vector it gives in each sentence
            len(SETS["bank"].sentences),
        )
    path.end()


def predict_first(word: str, models: list[SenseModel], path: GuidedPath) -> None:
    """The learner guesses before the model answers: which use of the word is nearer at the top layer, and
    which sense the nearest uses give the lecture's blood bank (both asked of the deepest model shown)."""
    name = senses_view.deepest(models)
    if path.shows("guess_pair") and (uses := lesson_senses.pair_uses(word)) is not None:
        senses_view.render_guess_pair(word, name, uses, lambda: lesson_senses.pair_cosines(name, word))
    if path.shows("guess_axis") and len(SETS[word].sense_keys) > 1:
        first, second = SETS[word].sense_keys[:2]
        pair = (PoleChoice(sense=first), PoleChoice(sense=second))
        tools.render_guess_axis(
            SETS[word], name, lambda: lesson_uses.axis_view(name, False, word, 0, pair, None).separation
        )
    if path.shows("guess_vote"):
        blood = senses_view.BLOOD_BANK
        senses_view.render_guess_vote(SETS["bank"], name, blood, lambda: lesson_senses.vote_shares(name, blood, "bank"))
    if path.shows("guess_forming") and (run := lesson_senses.forming()) is not None:
        forming_view.render_guess_forming(run)


def instruments(sense_set: SenseSet, models: list[SenseModel], path: GuidedPath) -> None:
    """Axes of the learner's own and the nearest uses: one at a time, on the learner's pick (nothing is
    computed before it: the page's first view loads no model), or the guided step's one."""
    shown = [(section, draw) for section, draw in TOOLS if path.shows(section)]
    if not shown:
        return
    st.header(t("senses.tools_title"))
    if len(shown) > 1:
        names = [section for section, _ in shown]
        linked = key_from_url("tool", names, "")  # by its key in a link, in either language
        picked = st.segmented_control(
            t("senses.tools_pick"),
            names,
            default=linked or None,
            format_func=lambda s: t_plain(f"senses.{s}_tab"),
            key="tool",
        )
        if picked:
            keep_in_url("tool", picked)
        elif "tool" in st.query_params:
            del st.query_params["tool"]
        shown = [(section, draw) for section, draw in shown if section == picked]
        if not shown:
            st.caption(t("senses.tools_hint_forming" if FORMING else "senses.tools_hint"))
    for _, draw in shown:
        draw(sense_set, models)


@st.fragment
def your_axes(sense_set: SenseSet, models: list[SenseModel]) -> None:
    """Two poles per axis (senses of the word, or words), every use placed by its projection, the AUC of
    two senses along x at every layer, and what removing x's direction does."""
    st.write(t("senses.axes_intro", word=sense_set.word))
    model = tools.pick_model(models, "axes_model", contextual_only=False)
    if model is None:
        return
    x_ends, y_ends = tools.choose_axes(sense_set)
    layer = tools.pick_layer(model, "axes_layer", model.depth)
    ends = [e for pair in (x_ends, y_ends or ()) for e in pair]
    if any(not e.sense and not e.word for e in ends):
        st.info(t("senses.axes_type_word"), icon=":material/info:")
        return
    if len(sense_set.sense_keys) < 2:
        st.info(t("senses.single_sense", word=sense_set.word), icon=":material/info:")
        return
    try:
        with st.spinner(t("senses.axes_reading", model=model.name)):
            view = lesson_uses.axis_view(model.name, model.static, sense_set.word, layer, x_ends, y_ends)
    except ModelZooError as err:
        render_error(err)
        return
    clicked = tools.render_axes(sense_set, model, layer, view, x_ends, y_ends)
    if clicked is not None:
        st.session_state["near_clicked"] = clicked
        st.caption(t("senses.axes_clicked", sentence=sense_set.sentences[clicked]))


@st.fragment
def nearest_uses(sense_set: SenseSet, models: list[SenseModel]) -> None:
    """The nearest uses of one use (or the learner's sentence) among every word of the shipped sentences."""
    st.write(t("senses.near_intro", uses=len(lesson_uses.shipped_uses())))
    model = tools.pick_model(models, "near_model", contextual_only=True)
    if model is None:
        return
    word = sense_set.word
    mine = st.session_state.get("mine", "")
    if mine.strip() and lesson_senses.other_forms(mine, word) is not None:
        mine = ""  # a sentence without the word: nothing of it to look from
    chosen = tools.pick_query(sense_set, mine, st.session_state.pop("near_clicked", None))
    if st.session_state.pop("near_picked", False):
        st.toast(t("senses.near_picked", model=model.name), icon=":material/arrow_downward:")
    layer = tools.pick_layer(model, "near_layer", model.depth)
    progress = st.empty()
    try:
        lesson_uses.use_index(
            model.name, lambda share: progress.progress(share, t("senses.near_indexing", model=model.name))
        )
        progress.empty()
        use = None if chosen == tools.MINE else int(chosen)
        query = lesson_uses.look_from(model.name, sense_set, use, mine)
        found = lesson_uses.nearest_uses(model.name, query, layer)
    except ModelZooError as err:
        progress.empty()
        render_error(err)
        return
    sentences = [s.words for s in lesson_uses.shipped_uses().sentences]
    names = {k: tools.short_label(label) for s in SETS.values() for k, label in tools.sense_labels(s).items()}
    tools.render_nearest(found, sentences, word, layer, model.name, names)
    class_wide(model.name)


def class_wide(model_name: str) -> None:
    """Coenen et al.'s curve over all 990 labelled uses: on a click (about 20 s once per server), or at once
    when this server has it."""
    if lesson_uses.class_shares_ready(model_name) or st.button(
        t("senses.near_class_button"), key="near_class_go", icon=":material/monitoring:"
    ):
        with st.spinner(t("senses.near_class_working", model=model_name)):
            word_share, sense_share = lesson_uses.class_shares(model_name)
        tools.render_class_shares(word_share, sense_share, model_name, lesson_uses.NEIGHBOURS)


@st.fragment
def senses_forming(sense_set: SenseSet, models: list[SenseModel]) -> None:
    """elmo-mini's training run read at points from random weights to the weights here: a slider redraws the
    map, the sense accuracy and self-similarity by layer, beside the held-out perplexity."""
    run = lesson_senses.forming()
    if run is None:  # offered only where a run is packed for the weights here (FORMING)
        return
    if sense_set.word not in run.words:
        st.info(t("senses.forming_other_words", words=", ".join(run.words)), icon=":material/info:")
        return
    forming_view.render_forming(sense_set, run)


TOOLS = tuple(
    (section, draw)
    for section, draw in (("axes", your_axes), ("nearest", nearest_uses), ("forming", senses_forming))
    if FORMING or section != "forming"  # as STEPS: the slider only where a run is packed
)


@st.fragment
def explore(word: str, sense_set: SenseSet, models: list[SenseModel], pick: bool) -> None:
    """The maps, their controls, the learner's sentence and the votes: a fragment, so moving the
    layer slider or typing a sentence reruns this alone, not the title, data and measures."""
    # The layer slider and the maps first, the other controls and the learner's sentence below: on the first screen
    layer_box, maps_box = st.container(), st.container()
    view = senses_view.choose_view(models, layer_box)
    mine, own_vectors = read_own_sentence(word, models)
    with maps_box:
        maps(sense_set, models, view, mine, own_vectors, pick)
    votes(sense_set, models, own_vectors)


run()
