"""Lesson: the same word in many sentences, senses pulling apart layer by layer; a static vector stays one point."""

import streamlit as st

import serving
from components import senses_view
from components.frame import ensure_app_frame
from components.guide import GuidedPath, Step, begin_path
from components.i18n import t
from components.notices import render_error, render_unavailable
from components.url import keep_in_url, key_from_url, keys_from_url
from model_zoo import registry
from model_zoo.errors import ModelUnavailable, ModelZooError
from model_zoo.registry import HIDDEN_STATES, VECTORS
from model_zoo.types import MapView, OwnVectors, SenseModel, SenseSet, SenseVectors
from serving import lesson_senses
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
STEPS = (  # the maps and the learner's sentence share one fragment: it is in both of the first two steps
    Step("maps", ("explore", "guess_pair")),
    Step("yours", ("explore", "guess_vote")),
    Step("measures", ("measures",)),
    Step("chinese", ("chinese",)),
    Step("check", ("check",)),
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


def maps(sense_set: SenseSet, models: list[SenseModel], view: MapView, mine: str, own_vectors: OwnVectors) -> None:
    """One map per model: every use of the word at the view's layer, coloured by sense; the learner's as a star."""
    grid = st.container(key="main_output").columns(2)  # the lesson's main output (scripts/first_screen.py)
    st.caption(t("senses.intro_how"))  # hover, tap, hide a sense, zoom
    for i, m in enumerate(models):
        at, extra = view.layer_of(m), own_vectors.get(m.name)
        xy, own = lesson_senses.ready_map(m, view, sense_set, extra is not None), None
        if xy is None:
            with st.spinner(t("emb.map_umap") if view.method == "umap" else t("emb.map_pca")):
                xy = lesson_senses.live_map(m.name, sense_set.word, at, view, extra)
            if extra is not None:
                xy, own = lesson_senses.place_own(xy, encoded(m.name, sense_set), sense_set, extra, at)
        with grid[i % 2]:
            senses_view.render_sense_map(sense_set, m, at, xy, own, mine)


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
    chosen = c2.multiselect(t("senses.models"), MODELS, key="models", wrap=True)
    keep_in_url("models", chosen)
    with st.expander(t("lesson.more")):
        st.write(t("senses.intro_more"))
    path = begin_path("senses", STEPS)
    sense_set = SETS[word]
    models = shown_models(chosen, sense_set)
    if path.shows("explore"):
        explore(word, sense_set, models)
        senses_view.render_data_note(word, sense_set, len(SETS), lesson_senses.total_uses())  # under the maps
    predict_first(word, models, path)
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
    if path.shows("guess_vote"):
        blood = senses_view.BLOOD_BANK
        senses_view.render_guess_vote(SETS["bank"], name, blood, lambda: lesson_senses.vote_shares(name, blood, "bank"))


@st.fragment
def explore(word: str, sense_set: SenseSet, models: list[SenseModel]) -> None:
    """The maps, their controls, the learner's sentence and the votes: a fragment, so moving the
    layer slider or typing a sentence reruns this alone, not the title, data and measures."""
    # The layer slider and the maps first, the other controls and the learner's sentence below: on the first screen
    layer_box, maps_box = st.container(), st.container()
    view = senses_view.choose_view(models, layer_box)
    mine, own_vectors = read_own_sentence(word, models)
    with maps_box:
        maps(sense_set, models, view, mine, own_vectors)
    votes(sense_set, models, own_vectors)


run()
