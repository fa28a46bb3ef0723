"""Lesson: BERT's masked-LM pre-training, live: fill in [MASK], the 15% / 80-10-10 recipe, next-sentence prediction."""

import math

import pandas as pd
import streamlit as st

import model_zoo
import serving
from components.charts import build_lines, build_matrix, build_score_bars
from components.frame import ensure_app_frame
from components.i18n import md_escape, t, t_plain
from components.notices import render_error, render_lesson_miss, select_model, when_asked
from components.quiz import Question, Solved, render_quiz
from components.tokens import readable
from components.training import render_masked_lm_training
from model_zoo import why_mask
from model_zoo.lexicon import unique
from model_zoo.registry import FILL_MASK, models_where
from model_zoo.words import find_word, has_han, words_in

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


def use_example(example: str) -> None:
    st.session_state.text = example


def mask_word() -> None:
    """Hide the first use of the chosen word (read now, not when the button was drawn)."""
    text = st.session_state.text
    found = find_word(without_masks(text), st.session_state.mask_pick)
    if found is not None:
        st.session_state.text = text[: found.start()] + "[MASK]" + text[found.end() :]


def without_masks(text: str) -> str:
    """`text` with each [MASK] blanked out, same length: the words a learner could still hide."""
    return text.replace("[MASK]", " " * len("[MASK]"))


@st.fragment
def fill_in_the_blanks(model: model_zoo.MaskedLM) -> None:
    cols = st.columns(len(EXAMPLES))
    for i, (col, (example, source)) in enumerate(zip(cols, EXAMPLES)):
        col.button(
            example,
            key=f"ex{i}",
            on_click=use_example,
            args=(example,),
            width="stretch",
            help=t_plain(f"mlm.src_{source}"),
        )
    st.caption(t("mlm.sources", **{f"s{i + 1}": t_plain(f"mlm.src_{src}") for i, (_, src) in enumerate(EXAMPLES)}))
    text = st.text_area(t("mlm.text"), key="text", bind="query-params", max_chars=5000, help=t("mlm.text_help"))
    words = unique(words_in(without_masks(text)))
    if words:
        pick, go = st.columns([3, 1], vertical_alignment="bottom")
        pick.selectbox(t("mlm.pick_word"), words, key="mask_pick")
        go.button(t("mlm.mask_it"), on_click=mask_word, icon=":material/visibility_off:", width="stretch")
    top_k = st.slider(t("mlm.top_k"), 3, serving.GUESSES, 8, key="top_k")

    masks = text.count(model.mask_token)
    try:
        if masks > MAX_MASKS:
            st.info(t("mlm.too_many", n=masks, max=MAX_MASKS), icon=":material/info:")
            return
        # One model call a sentence, whatever top-k shows: the slider and the lesson check below share it
        predictions = [guesses[:top_k] for guesses in serving.fill_mask(model.name, text, serving.GUESSES)]
        if (limit := serving.over_limit(model.name, text)) is not None:  # tokenising only
            st.warning(t("mlm.truncated", n=limit), icon=":material/content_cut:")
        columns = st.columns(min(len(predictions), 3))
        for i, preds in enumerate(predictions):
            columns[i % len(columns)].plotly_chart(
                build_score_bars(preds, t_plain("mlm.mask_title", i=i + 1)), key=f"mask{i}"
            )
        classic = "bert-base-chinese" if has_han(text) else "bert-base-uncased"
        render_lesson_miss(serving.lesson_blank(model.name, text), model.name, classic)
        st.caption(t("mlm.fill_note"))
    except model_zoo.ModelZooError as err:
        render_error(err)


def recipe(model: model_zoo.MaskedLM) -> str:
    """2. The pre-training recipe (15%, 80-10-10) on a sentence; the sentence, which the rollout reads too."""
    st.header(t("mlm.recipe_title"))
    st.write(t("mlm.recipe_intro"))
    st.session_state.setdefault("recipe_seed", 0)
    if st.button(t("mlm.resample"), icon=":material/casino:", key="resample"):
        st.session_state.recipe_seed += 1
    clean = st.text_input(t("mlm.recipe_text"), value=t("mlm.recipe_default"), key="recipe_text", max_chars=2000)
    try:
        demo = serving.recipe_demo(model.name, clean, st.session_state.recipe_seed)
        actions = {1: t("mlm.action_mask"), 2: t("mlm.action_random"), 3: t("mlm.action_keep")}
        st.code(" ".join(readable(token) for token in demo.tokens), language=None, wrap_lines=True)
        st.table(
            {
                t("mlm.col_position"): demo.positions,
                t("mlm.col_original"): [md_escape(readable(token)) for token in demo.originals],
                t("mlm.col_action"): [actions[a] for a in demo.actions],
                t("mlm.col_input"): [md_escape(readable(token)) for token in demo.shown],
                t("mlm.col_guess"): [md_escape(readable(token)) for token in demo.guesses],
                t("mlm.col_p_true"): [f"{p:.1%}" for p in demo.p_original],
            }
        )
        st.metric(t("mlm.loss"), f"{demo.loss:.2f}", help=t("mlm.loss_help", ppl=f"{math.exp(demo.loss):.1f}"))
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
        t("mlm.why_train"),
        "why_train",
        t_plain("mlm.why_training"),
        lambda progress: serving.masking_race(0, progress),
    )
    if race is not None:
        names = {"copy": t_plain("mlm.why_copy"), "masked": t_plain("mlm.why_masked")}
        left, right = st.columns(2)
        left.plotly_chart(
            build_lines(
                race.steps,
                {names[k]: race.loss[k] for k in names},
                {},
                t_plain("mlm.why_loss_title"),
                t_plain("mlm.why_steps"),
            ),
            key="why_loss",
        )
        right.plotly_chart(
            build_lines(
                race.steps,
                {names[k]: race.masked_accuracy[k] for k in names},
                {t_plain("mlm.why_commonest", word=race.commonest_word): race.commonest},
                t_plain("mlm.why_accuracy_title"),
                t_plain("mlm.why_steps"),
                percent=True,
            ),
            key="why_accuracy",
        )
        st.write(
            t(
                "mlm.why_found",
                steps=race.steps[-1],
                copy_loss=f"{race.loss['copy'][-1]:.2f}",
                masked_loss=f"{race.loss['masked'][-1]:.2f}",
                copy_acc=f"{race.masked_accuracy['copy'][-1]:.1%}",
                masked_acc=f"{race.masked_accuracy['masked'][-1]:.1%}",
                commonest=f"{race.commonest:.1%}",
                word=race.commonest_word,
            )
        )
        st.caption(
            t(
                "mlm.why_caption",
                sentences=f"{race.train_sentences:,}",
                vocab=f"{race.vocab:,}",
                positions=f"{race.test_positions:,}",
                seconds=f"{race.seconds:.0f}",
            )
        )


def rollout(model: model_zoo.MaskedLM, clean: str) -> None:
    """Where the top layer's vectors come from: attention rollout over the recipe's sentence."""
    st.subheader(t("mlm.rollout_title"))
    st.write(t("mlm.rollout_intro", model=model.name))
    try:
        view = serving.attention_view(model.name, clean, None)
        assert view.attentions is not None
        rolled = why_mask.attention_rollout(view.attentions)
        ticks = [f"{i}:{tok}" for i, tok in enumerate(view.tokens)]
        st.plotly_chart(
            build_matrix(
                rolled.tolist(),
                ticks,
                ticks,
                t_plain("mlm.rollout_chart", model=model.name),
                zmin=0,
                colorscale="Blues",
                hover="top %{y} ← input %{x}<br>%{z:.2f}",
            ),
            key="rollout",
        )
        own = why_mask.own_input_share(rolled)
        st.caption(
            t("mlm.rollout_found", own=f"{own:.0%}", even=f"{1 / len(view.tokens):.0%}", layers=len(view.attentions))
        )
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

        def loss(x: float | None) -> str:
            return "—" if x is None else f"{x:.2f}"

        st.dataframe(
            pd.DataFrame(
                {
                    t("mlm.both_col_b"): [p.text_b for p in pairs],
                    t("mlm.both_col_label"): [
                        t_plain("mlm.both_isnext" if p.is_next else "mlm.both_notnext") for p in pairs
                    ],
                    t("mlm.both_col_mlm"): [f"{p.mlm:.2f} ({t_plain('mlm.both_picked', n=p.picked)})" for p in pairs],
                    t("mlm.both_col_p"): ["—" if p.p_is_next is None else f"{p.p_is_next:.1%}" for p in pairs],
                    t("mlm.both_col_nsp"): [loss(p.nsp) for p in pairs],
                    t("mlm.both_col_total"): [loss(p.total) for p in pairs],
                }
            ),
            hide_index=True,
            width="stretch",
        )
        st.caption(t("mlm.both_masked", tokens=" ".join(pairs[0].tokens)))
        if pairs[0].nsp is None:
            st.caption(t("mlm.both_no_nsp", name=model.name))


def check_yourself(model: model_zoo.MaskedLM) -> None:
    def solve_paris() -> Solved:
        top = serving.fill_mask(model.name, PARIS, 3)[0]
        return Solved(
            top[0][0].strip().lower(), {"model": model.name, "top": ", ".join(f"{w.strip()} {p:.0%}" for w, p in top)}
        )

    def solve_copy() -> Solved:
        race = serving.masking_race(0)
        copy, masked = race.masked_accuracy["copy"][-1], race.masked_accuracy["masked"][-1]
        facts = {"loss": f"{race.loss['copy'][-1]:.2f}", "copy": f"{copy:.0%}", "masked": f"{masked:.0%}"}
        return Solved("copy" if copy < masked else "predict", facts)

    render_quiz(
        (
            Question("mlm_paris", ("france", "paris", "london"), solve_paris),
            Question("mlm_copy", ("copy", "predict"), solve_copy, translated=True),
        )
    )


def run() -> None:
    ensure_app_frame()
    st.title(t("lesson.masked_lm.title"))
    st.write(t("mlm.intro"))
    model = select_model(t("mlm.model"), MASKED_LMS, serving.default_for("masked_lm"), serving.model_or_fallback)
    assert isinstance(model, model_zoo.MaskedLM)
    card = model_zoo.get_card(model.name)
    if card.trained:
        render_masked_lm_training(card)
    # 1. Fill in the blanks: a fragment, so that typing a sentence, picking a word or moving top-k reruns this
    # section only, not the label, the learning curve, the recipe and NSP above and below.
    st.header(t("mlm.fill_title"))
    st.session_state.setdefault("text", EXAMPLES[0][0])
    fill_in_the_blanks(model)
    clean = recipe(model)
    why_mask_race()
    rollout(model, clean)
    next_sentence(model)
    check_yourself(model)


run()
