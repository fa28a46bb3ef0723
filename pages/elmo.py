"""Lesson: ELMo, a biLM whose three layers give each word token its own vector; next words both ways, the
weighted sum of the layers, and the same word in two sentences."""

import zlib

import streamlit as st

import model_zoo
import serving
from components import elmo_view as view
from components.charts import build_layer_cosines
from components.frame import ensure_app_frame
from components.guide import Step, begin_path
from components.i18n import t, t_plain
from components.notices import render_error, render_lesson_miss, render_script_note, render_unavailable, select_model
from components.training import render_elmo_training
from components.url import index_from_url, keep_in_url, key_from_url, number_from_url, text_box
from model_zoo.registry import HIDDEN_STATES, NEXT_WORDS, ROLES, VECTORS, models_where
from serving import lesson_vectors

LM = models_where(family="ELMo", capability=NEXT_WORDS)[0]  # the one with its softmax (AllenNLP released none)
ELMOS = models_where(family="ELMo")
MAX_CHARS = 2000
STRIP_DIMS = 64  # dimensions drawn per layer: enough to see patterns, few enough to read
LM_EXAMPLES = ("Let's stick to", "After work we like to hang", "The man went to the bank to")
PAIRS = (  # (sentence A, sentence B, the word in both): from the lesson notes, same and different senses
    ("Let's stick to the plan.", "He cut a stick of wood for the fire.", "stick"),
    ("We sat on the bank of the river.", "The boat drifted toward the bank of the river.", "bank"),
    ("We sat on the bank of the river.", "I went to the bank to deposit my money.", "bank"),
)
PRESETS = {  # weights before the softmax: token, LSTM-1, LSTM-2
    "preset_equal": (0.0, 0.0, 0.0),
    "preset_lstm1": (0.0, 2.0, 0.0),
    "preset_top": (-4.0, -4.0, 4.0),
    "preset_token": (4.0, -4.0, -4.0),
}
LAYER_KEYS = ("layer_token", "layer_lstm1", "layer_lstm2")
RIVER, MONEY = "He sat on the bank of the river.", "He deposited his money at the bank."
BANKS = {"river": PAIRS[1][:2], "money": PAIRS[2][:2]}  # predict first: the same sense of "bank", two senses
STEPS = (
    Step("lm", ("lm", "guess_hang")),
    Step("layers", ("layers",)),
    Step("context", ("context",)),  # its predict-first moment included
    Step("check", ("check",)),
)


@st.fragment
def next_words(model: model_zoo.ElmoModel) -> None:
    """1. A language model, both ways: the forward LM's next words and the backward LM's previous ones."""
    card = model_zoo.get_card(model.name)
    if NEXT_WORDS not in card.capabilities:
        st.caption(t("elmo.released"))
    lm_name = model.name if NEXT_WORDS in card.capabilities else LM
    if not serving.availabilities()[lm_name].ready:
        st.info(t("elmo.no_softmax", name=model.name), icon=":material/info:")
        return
    text = text_box(st.text_input, t("elmo.lm_text"), "lm_text", MAX_CHARS, help=t("elmo.lm_help"))
    render_script_note(lm_name, text, NEXT_WORDS, family="ELMo")  # Chinese: no biLM of the zoo reads it
    # The guesses at once under the text, the examples below them: the first answer is on the first screen (issue 34)
    out = st.container(key="main_output")  # the lesson's main output (scripts/first_screen.py)
    for col, example in zip(st.columns(len(LM_EXAMPLES)), LM_EXAMPLES):
        col.button(example, key=f"lm_ex_{example}", on_click=view.use_lm_example, args=(example,), width="stretch")
    try:
        forward, backward, vocab = serving.elmo_next_words(lm_name, text, 10)
    except model_zoo.ModelZooError as err:
        with out:
            render_error(err)
        return
    view.render_both_ways(out, text, forward, backward)
    check = serving.lesson_next_word(lm_name, text)
    # the offline pack's GPT, trained on far more text: asked only where ELMo misses
    smollm = ROLES["causal_lm"].offline
    missed = check is not None and not check.shows and serving.availabilities()[smollm].ready
    render_lesson_miss(check, lm_name, "gpt2", serving.lesson_next_word(smollm, text) if missed else None, smollm)
    st.caption(t("elmo.lm_note", n=f"{vocab:,}"))
    view.render_markers((forward, backward), vocab)


@st.fragment
def weighted_sum(model: model_zoo.ElmoModel) -> None:
    """2. Three vectors per word, and ELMo's weighted sum of them with weights a learner sets."""
    sentence = text_box(st.text_input, t("elmo.sentence"), "sentence", MAX_CHARS)
    render_script_note(model.name, sentence, HIDDEN_STATES, family="ELMo")
    try:
        encoding = serving.hidden_states(model.name, sentence)
    except model_zoo.ModelZooError as err:
        render_error(err)
        return
    if encoding.truncated:
        st.warning(t("elmo.truncated", n=len(encoding.tokens)), icon=":material/content_cut:")
    tokens = encoding.tokens
    lesson_word = [i for i, token in enumerate(tokens) if token.lower() == PAIRS[0][2]]  # "stick", as the notes
    # The picker belongs to this sentence: its key names it, so a pick remembered for another sentence
    # (past the end of a shorter one, or a value a browser sent back as text) is never offered here.
    key = f"position-{zlib.crc32(' '.join(tokens).encode())}"
    for old in [k for k in st.session_state if str(k).startswith("position-") and k != key]:
        del st.session_state[old]
    at = st.selectbox(
        t("elmo.word"),
        range(len(tokens)),
        index=index_from_url("word", tokens, lesson_word[0] if lesson_word else 0),  # a link's word, else "stick"
        format_func=lambda i: f"{i + 1}. {tokens[i]}",
        key=key,
    )
    keep_in_url("word", tokens[at])
    st.write(t("elmo.presets"))
    for col, (key, weights) in zip(st.columns(len(PRESETS)), PRESETS.items()):
        col.button(t_plain(f"elmo.{key}"), key=key, on_click=view.use_preset, args=(weights,), width="stretch")
    st.caption(t("elmo.preset_note"))
    st.page_link("pages/probing.py", label=t_plain("elmo.to_probing"), icon=":material/stacked_bar_chart:")
    cols = st.columns(4)
    raw = [
        cols[i].slider(t_plain(f"elmo.w_{name}"), -4.0, 4.0, step=0.1, key=f"w{i}")
        for i, name in enumerate(("token", "lstm1", "lstm2"))
    ]
    gamma = cols[3].slider(t_plain("elmo.gamma"), 0.1, 3.0, step=0.1, key="gamma")
    for name, value in zip(("w0", "w1", "w2", "gamma"), (*raw, gamma)):
        keep_in_url(name, value)
    mixed = lesson_vectors.mixed_word(model.name, sentence, at, tuple(raw), gamma, STRIP_DIMS)  # 3 layers, and the mix
    view.render_strip(mixed, [t_plain(f"elmo.{k}") for k in LAYER_KEYS], tokens[at], gamma)


@st.fragment
def context_matters(model: model_zoo.ElmoModel) -> None:
    """3. Context matters: one word in two sentences, layer by layer, against its one GloVe vector."""
    for i, (col, (a, b, word)) in enumerate(zip(st.columns(len(PAIRS)), PAIRS)):
        col.button(f"{word}: {a} / {b}", key=f"pair{i}", on_click=view.use_pair, args=(a, b, word), width="stretch")
    left, right = st.columns(2)
    a = text_box(left.text_input, t("elmo.sentence_a"), "a", MAX_CHARS)
    b = text_box(right.text_input, t("elmo.sentence_b"), "b", MAX_CHARS)
    render_script_note(model.name, f"{a} {b}", HIDDEN_STATES, family="ELMo")
    shared = lesson_vectors.shared_words(a, b)
    if not shared:
        st.info(t("elmo.pick_word"), icon=":material/info:")
        return
    longest = max(shared, key=len)  # rarely "the" or "of"
    if "pair_word" not in st.session_state:  # a link's word, else the lesson's
        st.session_state.pair_word = key_from_url(
            "pair_word", shared, PAIRS[0][2] if PAIRS[0][2] in shared else longest
        )
    if st.session_state.pair_word not in shared:
        st.session_state.pair_word = longest
    word = st.selectbox(t("elmo.context_word"), shared, key="pair_word")
    keep_in_url("pair_word", word)
    st.write(t("elmo.context_intro", word=word))
    try:
        cosines = lesson_vectors.context_cosines(model.name, a, b, word)  # at each of the 3 layers
    except model_zoo.ModelZooError as err:
        render_error(err)
        return
    glove, unavailable = serving.static_model("glove-6b-50d")
    bars = {t_plain(f"elmo.{k}"): float(c) for k, c in zip(LAYER_KEYS, cosines.layers)}
    if unavailable is not None:
        render_unavailable(unavailable)
    elif word.lower() in glove:  # GloVe reads the shared word too (its 400k words hold some Chinese ones)
        bars = {t_plain("elmo.cos_glove"): 1.0, **bars}
        render_script_note(glove.name, word, VECTORS)
    else:
        st.caption(t("elmo.cos_glove_missing", word=word))
    st.plotly_chart(build_layer_cosines(bars, t_plain("elmo.cos_title", word=word)), key="cosines")
    st.caption(t("elmo.cos_note"))
    st.caption(t("elmo.not_context_free", word=word, cos=f"{cosines.lowest_lstm:.2f}"))


def guess_hang() -> None:
    """Predict, then see: the word elmo-mini's forward LM puts first after "...like to hang" (whatever it is)."""
    text = LM_EXAMPLES[1]
    try:
        forward, _, vocab = serving.elmo_next_words(LM, text, 10)
        view.render_guess_hang(LM, text, forward, vocab, lambda: serving.lesson_next_ranks(LM, text, view.NAMED))
    except model_zoo.ModelZooError as err:
        render_error(err)


def guess_pairs(model: model_zoo.ElmoModel) -> None:
    """Predict, then see: does "bank" keep closer vectors in two river sentences than in a river and a money one?"""
    try:
        cosines = lesson_vectors.context_cosines
        layers = [t_plain(f"elmo.{k}") for k in LAYER_KEYS]
        view.render_guess_pairs(model.name, BANKS, lambda a, b: cosines(model.name, a, b, "bank").layers, layers)
    except model_zoo.ModelZooError as err:
        render_error(err)


def run() -> None:
    ensure_app_frame()
    st.title(t("lesson.elmo.title"))
    st.write(t("elmo.intro"))
    picker, about = st.columns(2, vertical_alignment="bottom")
    with picker:
        model = select_model(t("elmo.model"), ELMOS, serving.default_for("elmo"), serving.model_or_fallback)
    assert isinstance(model, model_zoo.ElmoModel)
    if serving.availabilities()[LM].ready:  # how it was made and its scores: one click away, beside the picker
        with about.expander(t("elmo.trained_title", model=LM), icon=":material/model_training:"):
            render_elmo_training(model_zoo.get_card(LM))
    with st.expander(t("lesson.more")):
        st.write(t("elmo.intro_more"))
    path = begin_path("elmo", STEPS)
    if path.shows("lm"):
        st.header(t("elmo.lm_title"))
        st.session_state.setdefault("lm_text", LM_EXAMPLES[0])
        next_words(model)
        st.write(t("elmo.lm_intro"))  # under the guesses: they are on the first screen (issue 34)
        st.caption(t("elmo.lm_intro_more"))  # the lesson's example: after "hang", "out"
    if path.shows("guess_hang") and serving.availabilities()[LM].ready:
        guess_hang()
    if path.shows("layers"):
        st.header(t("elmo.layers_title"))
        st.write(t("elmo.layers_intro"))
        st.caption(t("story.downstream"))  # what "a task" means here, and on the Probing and Using BERT pages
        st.session_state.setdefault("sentence", PAIRS[0][0])
        for name, value in zip(("w0", "w1", "w2"), PRESETS["preset_equal"]):
            st.session_state.setdefault(name, number_from_url(name, -4.0, 4.0, value))  # a link's weights, else equal
        st.session_state.setdefault("gamma", number_from_url("gamma", 0.1, 3.0, 1.0))
        weighted_sum(model)
    if path.shows("context"):
        st.header(t("elmo.context_title"))
        guess_pairs(model)  # before the pairs below, whose "bank" buttons draw the answer
        st.session_state.setdefault("a", PAIRS[0][0])
        st.session_state.setdefault("b", PAIRS[0][1])
        context_matters(model)
    if path.shows("check"):
        bank = lesson_vectors.context_cosines  # "bank" in the river and the money sentence; "stick" in PAIRS[0]
        view.render_check(
            model.name, lambda: bank(model.name, RIVER, MONEY, "bank").top, lambda: bank(model.name, *PAIRS[0]).layers
        )
    path.end()


run()
