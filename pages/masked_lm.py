"""Lesson: BERT's masked-LM pre-training, live: fill in [MASK], the 15% / 80-10-10 recipe, next-sentence prediction."""

import math

import streamlit as st
import torch

import model_zoo
import serving
from components.charts import build_score_bars
from components.frame import ensure_app_frame
from components.i18n import t
from components.notices import render_error, select_model
from model_zoo.masking import bert_masking
from model_zoo.registry import head_metrics

ensure_app_frame()

MAX_MASKS = 10
EXAMPLES = (  # from the lesson notes, and one for a Chinese model
    "The man went to the [MASK] to deposit his money.",
    "Let's stick to [MASK].",
    "The victim was found lying dead on the river [MASK].",
    "It is safest to deposit your [MASK] in the [MASK].",
    "巴黎是法国的首[MASK]。",
)
MASKED_LMS = [c.name for c in model_zoo.list_models() if c.kind == "masked_lm"]

st.title(t("lesson.masked_lm.title"))
st.write(t("mlm.intro"))
model = select_model(
    t("mlm.model"), MASKED_LMS, serving.ready_or("bert-base-uncased", "minilm-l6-mlm"), serving.model_or_fallback
)
assert isinstance(model, model_zoo.MaskedLM)
card = model_zoo.get_card(model.name)
if card.head:
    m = head_metrics(card)
    st.info(
        t(
            "mlm.trained_head",
            top1=f"{m['top1']:.1%}",
            top5=f"{m['top5']:.1%}",
            base1=f"{m['unigram_top1']:.1%}",
            base5=f"{m['unigram_top5']:.1%}",
            tokens=f"{m['eval_tokens']:,}",
            script=m["script"],
            minutes=f"{int(m['train_seconds']) / 60:.0f}",
        ),
        icon=":material/model_training:",
    )

# 1. Fill in the blanks ----------------------------------------------------------------------
st.header(t("mlm.fill_title"))
st.session_state.setdefault("text", EXAMPLES[0])


def use_example(example: str) -> None:
    st.session_state.text = example


cols = st.columns(len(EXAMPLES))
for i, (col, example) in enumerate(zip(cols, EXAMPLES)):
    col.button(example, key=f"ex{i}", on_click=use_example, args=(example,), width="stretch")
text = st.text_area(t("mlm.text"), key="text", bind="query-params", max_chars=5000, help=t("mlm.text_help"))


def mask_word() -> None:
    """Hide the first occurrence of the chosen word (read now, not when the button was drawn)."""
    word = st.session_state.mask_pick
    words = st.session_state.text.split()
    for i, w in enumerate(words):
        if w.strip(".,;:!?") == word:
            words[i] = w.replace(word, "[MASK]", 1)  # keeps the punctuation around it
            break
    st.session_state.text = " ".join(words)


words = [w.strip(".,;:!?") for w in text.split() if w.strip(".,;:!?") and "[MASK]" not in w]
if words:
    pick, go = st.columns([3, 1], vertical_alignment="bottom")
    pick.selectbox(t("mlm.pick_word"), words, key="mask_pick")
    go.button(t("mlm.mask_it"), on_click=mask_word, icon=":material/visibility_off:", width="stretch")
top_k = st.slider(t("mlm.top_k"), 3, 15, 8, key="top_k")

masks = text.count(model.mask_token)
try:
    if masks > MAX_MASKS:
        st.info(t("mlm.too_many", n=masks, max=MAX_MASKS), icon=":material/info:")
    else:
        predictions = serving.fill_mask(model.name, text, top_k)
        if model.truncates(text):  # checked by tokenising only: fill_mask made the one forward pass
            st.warning(t("mlm.truncated", n=model.max_length), icon=":material/content_cut:")
        columns = st.columns(min(len(predictions), 3))
        for i, preds in enumerate(predictions):
            columns[i % len(columns)].plotly_chart(
                build_score_bars(preds, t("mlm.mask_title", i=i + 1)), key=f"mask{i}"
            )
        st.caption(t("mlm.fill_note"))
except model_zoo.ModelZooError as err:
    render_error(err)

# 2. The pre-training recipe -------------------------------------------------------------------
st.header(t("mlm.recipe_title"))
st.write(t("mlm.recipe_intro"))
st.session_state.setdefault("recipe_seed", 0)
if st.button(t("mlm.resample"), icon=":material/casino:", key="resample"):
    st.session_state.recipe_seed += 1
clean = st.text_input(t("mlm.recipe_text"), value=t("mlm.recipe_default"), key="recipe_text", max_chars=2000)
if clean.strip():
    batch = model.tokenize(clean, return_special_tokens_mask=True)
    special = batch.pop("special_tokens_mask").bool()
    ids = batch["input_ids"]
    for attempt in range(50):  # a short sentence may draw no token at 15%: draw again
        generator = torch.Generator().manual_seed(st.session_state.recipe_seed * 1000 + attempt)
        corrupted = bert_masking(ids, special, model.tokenizer.mask_token_id, len(model.tokenizer), generator)
        if corrupted.picked.any():
            break
    positions = corrupted.picked[0].nonzero().flatten()
    batch["input_ids"] = corrupted.input_ids
    probs = model.logits_at(batch, positions).softmax(-1)
    originals = ids[0, positions]
    shown_in = model.token_strings(corrupted.input_ids[0, positions].tolist())
    original_tokens = model.token_strings(originals.tolist())
    best = model.decode_each(probs.argmax(-1).tolist())
    p_true = probs[torch.arange(len(positions)), originals]
    actions = {1: t("mlm.action_mask"), 2: t("mlm.action_random"), 3: t("mlm.action_keep")}
    st.code(" ".join(model.token_strings(corrupted.input_ids[0].tolist())), language=None, wrap_lines=True)
    st.table(
        {
            t("mlm.col_position"): positions.tolist(),
            t("mlm.col_original"): original_tokens,
            t("mlm.col_action"): [actions[int(a)] for a in corrupted.action[0, positions]],
            t("mlm.col_input"): shown_in,
            t("mlm.col_guess"): best,
            t("mlm.col_p_true"): [f"{p:.1%}" for p in p_true.tolist()],
        }
    )
    loss = float(-p_true.clamp_min(1e-12).log().mean())
    st.metric(t("mlm.loss"), f"{loss:.2f}", help=t("mlm.loss_help", ppl=f"{math.exp(loss):.1f}"))
else:
    st.info(t("mlm.recipe_empty"), icon=":material/info:")

# 3. Next-sentence prediction -------------------------------------------------------------------
st.header(t("mlm.nsp_title"))
st.write(t("mlm.nsp_intro"))
a_col, b_col = st.columns(2)
sentence_a = a_col.text_input(t("mlm.sentence_a"), value="The man went to the store.", key="nsp_a", bind="query-params")
sentence_b = b_col.text_input(
    t("mlm.sentence_b"), value="He bought a gallon of milk.", key="nsp_b", bind="query-params"
)
if model.has_nsp:
    try:
        st.metric(t("mlm.isnext"), f"{model.next_sentence(sentence_a, sentence_b):.1%}")
    except model_zoo.ModelZooError as err:
        render_error(err)
else:
    st.info(t("mlm.no_nsp", name=model.name), icon=":material/info:")
