"""Lesson 2: static word embeddings (GloVe, word2vec): vectors, neighbours, analogies, a map, live training."""

import streamlit as st

import model_zoo
import serving
from components import embeddings_view as view
from components.charts import build_score_bars, build_vector_strip, build_word_map
from components.frame import ensure_app_frame
from components.guide import Step, begin_path
from components.i18n import md_escape, t, t_plain
from components.notices import render_error, with_fallback
from components.road import PLAYGROUND
from components.url import keep_in_url, key_from_url, number_from_url
from components.word2vec_view import render_word2vec_summary
from model_zoo.registry import VECTORS, models_where
from model_zoo.types import EpochReport, TrainSettings
from serving import lesson_vectors

MAX_STRIP = 12
MAX_MAP = 200
ANALOGIES = (("man", "king", "woman"), ("stockholm", "sweden", "cairo"), ("had", "has", "was"))
BANK = (  # the five "bank" sentences of the lecture notes
    "Have you paid that money to the bank yet?",
    "It is safest to deposit your money in the bank.",
    "The victim was found lying dead on the river bank.",
    "They stood on the river bank to fish.",
    "The hospital has its own blood bank.",
)
STICK = (  # "Let's stick to" is the Illustrated BERT's example; the others are ContextLab's
    "Let's stick to the plan.",
    "He threw a stick for the dog to fetch.",
    "Stick the label on the jar.",
    "The old man walked with a stick.",
)
STATIC_MODELS = models_where(capability=VECTORS)
PROJECTIONS = ["pca", "umap"]
SECTIONS = ("vectors", "analogy", "map", "axes", "train", "polysemy")  # the tabs (emb.tab.<section>), in order
STEPS = (*(Step(section, (section,)) for section in SECTIONS), Step("check", ("check",)))


def report_missing(model: model_zoo.StaticModel, missing: list[str]) -> None:
    if missing:
        hints = [f"{w} → {', '.join(serving.suggestions(model.name, w, 3)) or '-'}" for w in missing[:5]]
        st.info(t("emb.missing", words="; ".join(hints), n=len(missing)), icon=":material/info:")


@st.fragment  # a learner's words rerun this section alone, not the map, the training and the rest
def vectors(model: model_zoo.StaticModel) -> None:
    """Each word's vector as a strip of cells (how to read it under it: the strip is on the first screen), and
    its nearest neighbours."""
    strip_text = st.text_input(
        t("emb.strip_words"), value="king queen man woman water", key="words", bind="query-params"
    )
    read = lesson_vectors.known_words(model.name, strip_text, MAX_STRIP)
    strip = read.shown
    report_missing(model, read.missing)
    if strip:
        vectors = model.vectors(strip)
        with st.container(key="main_output"):  # the lesson's main output (scripts/first_screen.py)
            st.plotly_chart(
                build_vector_strip(strip, vectors, t_plain("emb.strip_title", name=model.name)), key="strip"
            )
        if (extremes := lesson_vectors.static_cosines(model.name, tuple(strip)).extremes()) is not None:
            (a, b, ab), (c, d, cd) = extremes  # the note names the learner's own words, from their cosines
            st.caption(t("emb.strip_note", a=a, b=b, ab=f"{ab:.2f}", c=c, d=d, cd=f"{cd:.2f}"))
        else:
            st.caption(t("emb.strip_note_few"))
    else:
        st.info(t("emb.no_words"), icon=":material/info:")
    st.write(t("emb.vectors_intro", dim=model.dim))
    st.subheader(t("emb.neighbours_title"))
    word = st.text_input(t("emb.word"), value="stick", key="word", bind="query-params")
    try:
        pairs = serving.neighbours(model.name, word, 10)
        st.plotly_chart(build_score_bars(pairs, t_plain("emb.neighbours_of", word=word), percent=False), key="nn")
        view.render_guess_nearest(model.name, view.NEAREST, serving.neighbours(model.name, view.NEAREST, 10))
    except model_zoo.ModelZooError as err:
        render_error(err)


def analogies(model: model_zoo.StaticModel) -> None:
    """The analogy solver: b - a + c."""
    st.write(t("emb.analogy_intro"))
    for key, default in zip("abc", ANALOGIES[0]):
        st.session_state.setdefault(key, default)

    def use(example: tuple[str, str, str]) -> None:
        st.session_state.a, st.session_state.b, st.session_state.c = example

    cols = st.columns(len(ANALOGIES))
    for col, example in zip(cols, ANALOGIES):
        a, b, c = example
        col.button(t("emb.example", a=a, b=b, c=c), on_click=use, args=(example,), key=f"ex_{a}", width="stretch")
    inputs = st.columns(3)
    a = inputs[0].text_input(t("emb.a"), key="a", bind="query-params")
    b = inputs[1].text_input(t("emb.b"), key="b", bind="query-params")
    c = inputs[2].text_input(t("emb.c"), key="c", bind="query-params")
    try:
        answers = serving.analogy(model.name, a, b, c, 5)
        st.markdown(t("emb.answer", a=a, b=b, c=c, d=answers[0][0], score=f"{answers[0][1]:.3f}"))
        st.plotly_chart(
            build_score_bars(answers, t_plain("emb.answers_title", b=b, a=a, c=c), percent=False), key="analogy"
        )
        st.caption(t("emb.analogy_note"))
    except model_zoo.ModelZooError as err:
        render_error(err)


def word_map(model: model_zoo.StaticModel) -> None:
    """A map of a word list (PCA or UMAP), coloured by WordNet class."""
    st.write(t("emb.map_intro"))
    map_text = st.text_area(t("emb.map_words"), value=t("emb.map_default"), key="map", bind="query-params", height=100)
    method = st.radio(
        t("emb.projection"),
        PROJECTIONS,
        index=PROJECTIONS.index(key_from_url("proj", PROJECTIONS, "pca", {m: m for m in PROJECTIONS})),  # any case
        horizontal=True,
        key="proj",
        format_func=lambda m: m.upper(),
        help=t("emb.projection_help"),
    )
    keep_in_url("proj", method)
    read = lesson_vectors.known_words(model.name, map_text, MAX_MAP)
    on_map = read.shown
    report_missing(model, read.missing)
    if read.known > MAX_MAP:
        st.warning(t("emb.map_capped", shown=MAX_MAP, total=read.total), icon=":material/filter_list:")
    if len(on_map) < 3:
        st.info(t("emb.map_too_few"), icon=":material/info:")
    else:
        with st.spinner(t("emb.map_umap") if method == "umap" else t("emb.map_pca")):
            xy = serving.word_map(model.name, tuple(on_map), method)
        groups = lesson_vectors.classes_of(on_map, "—")
        st.plotly_chart(
            build_word_map(on_map, xy, groups, t_plain("emb.map_title", method=method.upper(), n=len(on_map))),
            key="map_fig",
        )
        st.caption(t("emb.map_note"))


@st.fragment  # the learner's poles and words rerun this section alone
def your_axes(model: model_zoo.StaticModel) -> None:
    """Words on axes the learner names (whatlies' projections): each axis from one word to another, and what
    removing the first axis's direction changes (Bolukbasi et al. 2016)."""
    st.write(t("emb.axes_intro"))
    text = st.text_area(t("emb.map_words"), t("emb.axes_default"), key="axes_words", bind="query-params", height=80)
    x = view.pole_pair("axes_x", ("man", "woman"), t("emb.axes_x"))
    y = view.pole_pair("axes_y", ("", ""), t("emb.axes_y"))
    read = lesson_vectors.known_words(model.name, text, MAX_MAP)
    report_missing(model, read.missing)
    if len(read.shown) < 3:
        st.info(t("emb.map_too_few"), icon=":material/info:")
        return
    if not all(x):
        st.info(t("emb.axes_need_x"), icon=":material/info:")
        return
    second = y if all(y) else None  # an up axis only when both its ends are typed
    if x[0] == x[1] or (second is not None and second[0] == second[1]):
        st.info(t("emb.axes_same"), icon=":material/info:")
        return
    try:
        placed = lesson_vectors.word_axes(model.name, tuple(read.shown), x, second)
    except model_zoo.ModelZooError as err:
        render_error(err)
        return
    view.render_word_axes(model.name, placed, x, second, lesson_vectors.classes_of(placed.words, "—"))


def train_word2vec(model: model_zoo.StaticModel) -> None:
    """word2vec trained live on the shipped corpus, the watched word's neighbours after each epoch."""
    st.write(t("emb.train_intro", script=lesson_vectors.BUILD_SCRIPT))
    defaults = TrainSettings()
    knobs = st.columns(5)
    dims = (25, 50, 100, 200)
    dim = int(key_from_url("w2v_dim", [str(d) for d in dims], str(defaults.dim)))  # a link's, else the default
    dim = knobs[0].select_slider(t("emb.dim"), dims, value=dim, key="w2v_dim")
    window = number_from_url("w2v_window", 1, 10, defaults.window)
    window = knobs[1].slider(t("emb.window"), 1, 10, window, key="w2v_window")
    negative = number_from_url("w2v_negative", 1, 20, defaults.negative)
    negative = knobs[2].slider(t("emb.negative"), 1, 20, negative, key="w2v_negative", help=t("emb.negative_help"))
    epochs = number_from_url("w2v_epochs", 1, 10, defaults.epochs)
    epochs = knobs[3].slider(t("emb.epochs"), 1, 10, epochs, key="w2v_epochs")
    watch = knobs[4].text_input(t("emb.watch"), value="water", key="w2v_watch", bind="query-params").strip().lower()
    settings = TrainSettings(dim=dim, window=window, negative=negative, epochs=epochs)
    for name, value in (("w2v_dim", dim), ("w2v_window", window), ("w2v_negative", negative), ("w2v_epochs", epochs)):
        keep_in_url(name, value)
    if st.button(t("emb.train"), type="primary", icon=":material/model_training:", key="w2v_train"):
        bar = st.progress(0.0, text=t("emb.waiting"))
        live = st.empty()

        def show(report: EpochReport) -> None:
            bar.progress(
                report.epoch / report.epochs,
                text=t("emb.epoch", epoch=report.epoch, epochs=report.epochs, seconds=f"{report.seconds:.0f}"),
            )
            live.table(
                {
                    t("emb.epoch_col"): [report.epoch] * len(report.neighbours),
                    t("emb.nearest_col", word=watch): [md_escape(w) for w, _ in report.neighbours],
                    t("emb.cos_col"): [f"{s:.3f}" for _, s in report.neighbours],
                }
            )

        try:
            st.session_state.w2v = serving.train_word2vec(
                settings, watch, show, lambda ahead: bar.progress(0.0, text=t_plain("emb.waiting_place", n=ahead))
            )
        except model_zoo.ModelZooError as err:
            render_error(err)
    trained = st.session_state.get("w2v")
    if trained is not None:
        render_word2vec_summary(trained.seconds, len(trained.model), trained.settings, trained.quality)
        probe = st.text_input(t("emb.try_trained"), value=trained.watch, key="w2v_probe", bind="query-params")
        try:
            st.plotly_chart(
                build_score_bars(
                    trained.model.most_similar(probe, 10), t_plain("emb.neighbours_trained", word=probe), percent=False
                ),
                key="w2v_nn",
            )
        except model_zoo.ModelZooError as err:
            render_error(err)


def polysemy(model: model_zoo.StaticModel) -> None:
    """The polysemy problem: every use of "bank" or "stick" gets one identical vector, drawn once the learner
    has guessed whether the river bank and the money bank share one."""
    if "bank" in model:
        cosine = float(lesson_vectors.repeated_word(model.name, "bank", len(BANK)).cosines[2])
        if not view.render_guess_one_vector(model.name, "bank", BANK[0], BANK[2], cosine):
            return
    st.write(t("emb.polysemy_intro"))
    for target, sentences in (("bank", BANK), ("stick", STICK)):
        st.subheader(t("emb.polysemy_word", word=target))
        if target not in model:
            report_missing(model, [target])
            continue
        same = lesson_vectors.repeated_word(model.name, target, len(sentences))
        st.table({t("emb.sentence"): list(sentences), t("emb.cos_first"): [f"{s:.3f}" for s in same.cosines]})
        st.plotly_chart(
            build_vector_strip(
                [f"{i + 1}" for i in range(len(sentences))], same.vectors, t_plain("emb.polysemy_strip", word=target)
            ),
            key=f"poly_{target}",
        )
    st.markdown(t("emb.polysemy_note"))
    st.page_link(
        PLAYGROUND.file,
        label=t("emb.polysemy_next"),
        icon=":material/arrow_forward:",
        query_params={"model": "minilm-l6", "text": " ".join(BANK)},
    )


def check_yourself(model: model_zoo.StaticModel) -> None:
    view.render_check(model.name, lambda: serving.analogy(model.name, "man", "king", "woman", 1)[0], model.similarity)


def run() -> None:
    ensure_app_frame()
    st.title(t("lesson.embeddings.title"))
    st.write(t("emb.intro"))
    key_from_url("model", STATIC_MODELS, STATIC_MODELS[0])  # before the picker, which drops another without a word
    name = st.selectbox(t("emb.model"), STATIC_MODELS, key="model", bind="query-params", help=t("emb.model_help"))
    model = with_fallback(name, serving.static_model)
    path = begin_path("embeddings", STEPS)
    drawn = dict(zip(SECTIONS, (vectors, analogies, word_map, your_axes, train_word2vec, polysemy)))
    if path.at is None:  # the whole page: a tab per section
        for tab, section in zip(st.tabs([t(f"emb.tab.{s}") for s in SECTIONS]), SECTIONS):
            with tab:
                drawn[section](model)
    else:  # a step of the guided path: its section under its tab's name
        for section in (s for s in SECTIONS if path.shows(s)):
            st.header(t(f"emb.tab.{section}"))
            drawn[section](model)
    if path.shows("check"):
        check_yourself(model)
    path.end()


run()
