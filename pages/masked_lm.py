"""Lesson: BERT's masked-LM pre-training, live: fill in [MASK], the 15% / 80-10-10 recipe, next-sentence prediction."""

import streamlit as st

import model_zoo
import serving
from components import masked_lm_view as view
from components.frame import ensure_app_frame
from components.guide import GuidedPath, Step, begin_path
from components.i18n import t, t_plain
from components.notices import render_error, render_script_note, select_model, timed_label, under_bar, when_asked
from components.training import render_masked_lm_training
from components.url import keep_in_url, key_from_url, number_from_url, text_box
from model_zoo.registry import FILL_MASK, models_where
from serving import lesson_attention as lesson

MAX_MASKS = 10
EXAMPLES = (  # each with where it comes from (the i18n key mlm.src_*), shown on its button and below them
    ("The man went to the [MASK] to deposit his money.", "written"),
    ("Let's stick to [MASK].", "illustrated"),
    ("The victim was found lying dead on the river [MASK].", "lecture"),
    ("It is safest to deposit your [MASK] in the [MASK].", "lecture"),
    ("巴黎是法国的首[MASK]。", "written_zh"),
)
MASKED_LMS = models_where(capability=FILL_MASK)
PARIS = "Paris is the capital of [MASK]."
CUP = "She drank a cup of [MASK] with her breakfast."  # predict first: its options, and the model's own guess
DRINKS = ("coffee", "juice", "milk", "tea")
FISH = "The man went to the [MASK] to catch a fish."  # only the words after the blank differ from EXAMPLES[0]
STEPS = (
    Step("fill", ("fill", "guess_blank")),
    Step("context", ("guess_context",)),
    Step("recipe", ("recipe",)),
    Step("why", ("why",)),
    Step("nsp", ("nsp",)),
    Step("check", ("check",)),
)


def mask_word() -> None:
    """Hide the first use of the chosen word (read now, not when the button was drawn)."""
    st.session_state.text = lesson.mask_first(st.session_state.text, st.session_state.mask_pick)


@st.fragment
def fill_in_the_blanks(model: model_zoo.MaskedLM) -> None:
    """The learner's sentence, the guesses at once below it (the lesson's main output), then the examples and
    the other controls: on a projector and on a phone the first answer is on the first screen (issue 34)."""
    # one line: Enter applies it (a box of several lines takes Enter as a new line, and a class pressing Enter
    # saw nothing happen)
    text = text_box(st.text_input, t("mlm.text"), "text", 5000, "[MASK]", help=t("mlm.text_help"))
    out = st.container(key="main_output")  # the lesson's main output (scripts/first_screen.py)
    view.render_examples(EXAMPLES, sources=False)  # their sources: under "More about this lesson"
    words = lesson.maskable_words(text)
    if words:
        pick, go = st.columns([3, 1], vertical_alignment="bottom")
        key_from_url("mask_pick", words, words[0])  # before the picker, which drops another word without one
        pick.selectbox(t("mlm.pick_word"), words, key="mask_pick", bind="query-params")
        go.button(t("mlm.mask_it"), on_click=mask_word, icon=":material/visibility_off:", width="stretch")
    top_k = st.slider(t("mlm.top_k"), 3, serving.GUESSES, number_from_url("top_k", 3, serving.GUESSES, 8), key="top_k")
    keep_in_url("top_k", top_k)

    masks = text.count(model.mask_token)
    try:
        if masks > MAX_MASKS:
            out.info(t("mlm.too_many", n=masks, max=MAX_MASKS), icon=":material/info:")
            return
        # One model call a sentence, whatever top-k shows: the slider and the lesson check below share it
        predictions = [guesses[:top_k] for guesses in serving.fill_mask(model.name, text, serving.GUESSES)]
        with out:
            if (limit := serving.over_limit(model.name, text)) is not None:  # tokenising only
                st.warning(t("mlm.truncated", n=limit), icon=":material/content_cut:")
            view.render_mask_bars(predictions)
        render_script_note(model.name, text, FILL_MASK)
        view.render_lesson_miss(serving.lesson_blank(model.name, text), model.name, text)
        st.caption(t("mlm.fill_note"))
    except model_zoo.ModelZooError as err:
        render_error(err)


def predict_first(model: model_zoo.MaskedLM, path: GuidedPath) -> None:
    """The learner guesses before the model answers: the word for a blank, and whether the right side matters."""
    try:
        if path.shows("guess_blank"):
            view.render_guess_blank(model.name, CUP, serving.lesson_fill_mask(model.name, CUP, 5)[0], DRINKS)
        if path.shows("guess_context"):
            before, after = (serving.lesson_fill_mask(model.name, text, 5)[0] for text in (EXAMPLES[0][0], FISH))
            view.render_guess_context(model.name, FISH, before, after)
    except model_zoo.ModelZooError as err:
        render_error(err)


def recipe(model: model_zoo.MaskedLM) -> str:
    """2. The pre-training recipe (15%, 80-10-10) on a sentence; the sentence, which the rollout reads too."""
    st.header(t("mlm.recipe_title"))
    st.write(t("mlm.recipe_intro"))
    st.session_state.setdefault("recipe_seed", 0)
    if st.button(t("mlm.resample"), icon=":material/casino:", key="resample"):
        st.session_state.recipe_seed += 1
    clean = text_box(st.text_input, t("mlm.recipe_text"), "recipe_text", 2000, value=t("mlm.recipe_default"))
    try:
        view.render_recipe(serving.recipe_demo(model.name, clean, st.session_state.recipe_seed))
    except model_zoo.EmptyInput:
        st.info(t("mlm.recipe_empty"), icon=":material/info:")
    except model_zoo.ModelZooError as err:
        render_error(err)
    return clean


def why_mask_race() -> None:
    """3. Why hide the words at all: two tiny Transformers, one that may copy, one that must predict."""
    st.header(t("mlm.why_title"))
    st.write(t("mlm.why_intro"))
    race = when_asked(
        timed_label(t("mlm.why_train"), serving.measured("why_mask")),
        "why_train",
        t_plain("mlm.why_training"),
        lambda progress: serving.masking_race(0, progress),
    )
    if race is not None:
        view.render_race(race)


def rollout(model: model_zoo.MaskedLM, clean: str) -> None:
    """Where the top layer's vectors come from: attention rollout over the recipe's sentence."""
    st.subheader(t("mlm.rollout_title"))
    st.write(t("mlm.rollout_intro", model=model.name))
    try:
        tokens, rolled = lesson.rollout(model.name, clean)
        view.render_rollout(tokens, rolled, model.name)
    except model_zoo.EmptyInput:
        st.info(t("mlm.recipe_empty"), icon=":material/info:")
    except model_zoo.ModelZooError as err:
        render_error(err)


def next_sentence(model: model_zoo.MaskedLM) -> None:
    """4. Next-sentence prediction, and both pre-training losses on one pair."""
    st.header(t("mlm.nsp_title"))
    st.write(t("mlm.nsp_intro"))
    a_col, b_col = st.columns(2)
    sentence_a = a_col.text_input(
        t("mlm.sentence_a"), value="The man went to the store.", key="nsp_a", bind="query-params"
    )
    sentence_b = b_col.text_input(
        t("mlm.sentence_b"), value="He bought a gallon of milk.", key="nsp_b", bind="query-params"
    )
    if model.has_nsp:
        try:
            st.metric(t("mlm.isnext"), f"{serving.next_sentence(model.name, sentence_a, sentence_b):.1%}")
        except model_zoo.ModelZooError as err:
            render_error(err)
    else:
        st.info(t("mlm.no_nsp", name=model.name), icon=":material/info:")

    st.subheader(t("mlm.both_title"))
    st.write(t("mlm.both_intro"))
    st.button(
        t("mlm.both_redraw"),
        key="both_redraw",
        icon=":material/casino:",
        on_click=lambda: st.session_state.update(both_seed=st.session_state.get("both_seed", 0) + 1),
    )
    try:
        pairs = serving.pretraining_pair(model.name, sentence_a, sentence_b, st.session_state.get("both_seed", 0))
    except model_zoo.ModelZooError as err:
        render_error(err)
    else:
        view.render_pair_losses(pairs, model.name)


def check_yourself(model: model_zoo.MaskedLM) -> None:
    # The copy question is answered by step 3's race, trained the first time anyone on the server asks (half a
    # minute or more): under a bar that says so and how long it took when measured, not a bare spinner.
    training = timed_label(t_plain("mlm.why_training_check"), serving.measured("why_mask"))
    view.render_check(
        model.name,
        lambda: serving.fill_mask(model.name, PARIS, 3)[0],
        lambda: under_bar(training, lambda progress: serving.masking_race(0, progress)),
    )


def run() -> None:
    ensure_app_frame()
    st.title(t("lesson.masked_lm.title"))
    st.write(t("mlm.intro"))
    picker, about = st.columns(2, vertical_alignment="bottom")
    with picker:
        model = select_model(t("mlm.model"), MASKED_LMS, serving.default_for("masked_lm"), serving.model_or_fallback)
    assert isinstance(model, model_zoo.MaskedLM)
    card = model_zoo.get_card(model.name)
    if card.trained:  # how it was made and its scores: one click away, beside the picker
        with about.expander(t("mlm.trained_title", model=model.name), icon=":material/model_training:"):
            render_masked_lm_training(card, bf16=model.runs_bf16)
    with st.expander(t("lesson.more")):
        st.write(t("mlm.intro_more"))
        st.caption(t("mlm.cloze"))  # where filling in blanks comes from
        view.render_sources(EXAMPLES)
    path = begin_path("masked_lm", STEPS)
    # 1. Fill in the blanks: a fragment, so that typing a sentence, picking a word or moving top-k reruns this
    # section only, not the label, the learning curve, the recipe and NSP above and below.
    if path.shows("fill"):
        st.header(t("mlm.fill_title"))
        st.session_state.setdefault("text", EXAMPLES[0][0])
        fill_in_the_blanks(model)
    predict_first(model, path)
    if path.shows("recipe"):
        rollout(model, recipe(model))
    if path.shows("why"):
        why_mask_race()
    if path.shows("nsp"):
        next_sentence(model)
    if path.shows("check"):
        check_yourself(model)
    path.end()


run()
