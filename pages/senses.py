"""Lesson: the same word in many sentences, senses pulling apart layer by layer; a static vector stays one point."""

import html
import re

import numpy as np
import streamlit as st

import model_zoo
import serving
from components.charts import build_layer_lines, build_sense_map
from components.frame import ensure_app_frame
from components.i18n import t
from components.notices import render_error, render_unavailable
from model_zoo.senses import load_senses, vote

ensure_app_frame()

SETS = load_senses()
FIRST = ("bank", "stick")  # the lesson's own examples lead
WORDS = list(FIRST) + sorted(w for w in SETS if w not in FIRST)
MODELS = [
    c.name
    for c in model_zoo.list_models()
    if c.kind in ("static", "encoder", "causal_lm", "masked_lm", "elmo") and not c.head
]
DEFAULT_MODELS = ["glove-6b-50d", "minilm-l6"]
CHINESE_MODELS = ("bert-base-chinese", "bert-base-multilingual-cased")
CHINESE = (  # 长 as "length" (cháng) and as "grow" (zhǎng), from the lecture notes
    ("这条河的长度是多少？", "cháng"),
    ("桌子的长度是两米。", "cháng"),
    ("这件衣服太长了。", "cháng"),
    ("孩子今年长高了很多。", "zhǎng"),
    ("春天草长得很快。", "zhǎng"),
    ("他长大以后想当医生。", "zhǎng"),
)

st.title(t("lesson.senses.title"))
st.write(t("senses.intro"))

c1, c2 = st.columns([1, 2])
word = c1.selectbox(t("senses.word"), WORDS, key="word", bind="query-params")
chosen = c2.multiselect(t("senses.models"), MODELS, default=DEFAULT_MODELS, key="models", bind="query-params")
sense_set = SETS[word]
keys = sense_set.sense_keys
short = {k: f"{i + 1}. {sense_set.glosses[k].split(';')[0][:48]}" for i, k in enumerate(keys)}
if len(keys) < 2:
    st.info(t("senses.single_sense", word=word), icon=":material/info:")
st.caption(
    t(
        "senses.data_note",
        n=len(sense_set.sentences),
        senses=len(keys),
        words=len(SETS),
        total=sum(len(s.sentences) for s in SETS.values()),
    )
)

# Load each chosen model (or say why not); static ones collapse to a point.
models: list[tuple[str, bool]] = []  # (loaded name, is static)
for name in chosen:
    try:
        model, unavailable = serving.model_or_fallback(name)
    except model_zoo.ModelUnavailable as err:
        render_unavailable(err)
        continue
    if unavailable is not None:
        render_unavailable(unavailable)
    if model.name not in [m for m, _ in models]:
        models.append((model.name, isinstance(model, model_zoo.StaticModel)))
if not models:
    st.info(t("senses.no_model"), icon=":material/info:")
    st.stop()

encoded = {}
for name, _ in models:
    progress = st.empty()
    encoded[name] = serving.sense_vectors(
        name,
        word,
        lambda share, n=name, bar=progress: bar.progress(
            share, t("senses.encoding", model=n, n=len(sense_set.sentences))
        ),
    )
    progress.empty()

depth = {name: encoded[name].vectors.shape[1] - 1 for name, _ in models}
deepest = max(depth.values())
if deepest > 0:
    layer = st.slider(
        t("senses.layer"), 0, deepest, deepest // 2, key="layer", bind="query-params", help=t("senses.layer_help")
    )
else:
    layer = 0
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
    neighbours = a1.slider(t("senses.neighbours"), 2, 50, 15, key="neighbours")
    min_dist = a2.slider(t("senses.min_dist"), 0.0, 0.99, 0.1, key="min_dist")
    seed = int(a3.number_input(t("senses.seed"), 0, 9999, 0, key="seed"))
    st.caption(t("senses.umap_note"))

# The learner's own sentence ------------------------------------------------------------------------
mine = st.text_input(
    t("senses.mine"),
    key="mine",
    bind="query-params",
    max_chars=2000,
    placeholder=t("senses.mine_placeholder", word=word),
)
own_vectors: dict[str, np.ndarray] = {}
if mine.strip():
    found = re.findall(rf"(?<![\w-]){re.escape(word)}(?![\w-])", mine, flags=re.I)
    if not found:
        near = sorted(set(re.findall(rf"\b{re.escape(word)}\w*|\w+{re.escape(word)}\b", mine, flags=re.I)))
        st.info(
            t("senses.word_missing", word=word, forms=", ".join(near)) if near else t("senses.word_absent", word=word),
            icon=":material/info:",
        )
    else:
        for name, _ in models:
            try:
                own_vectors[name] = serving.own_sentence_vector(name, mine, word)
            except model_zoo.ModelZooError as err:
                render_error(err)
            model = serving.load_model(name)
            if isinstance(model, model_zoo.Encoder) and model.truncates(mine):
                st.warning(t("senses.truncated", model=name, n=model.max_length), icon=":material/content_cut:")


def hover_text(sentence: str, sense: str) -> str:
    """The sentence with the word in bold, and the sense's gloss; everything escaped first."""
    safe = html.escape(sentence)
    bold = re.sub(rf"(?<![\w-])({re.escape(word)})(?![\w-])", r"<b>\1</b>", safe, count=1, flags=re.I)
    wrapped = re.sub(r"(.{1,70})(\s|$)", r"\1<br>", bold).removesuffix("<br>")
    return f"{wrapped}<br><i>{html.escape(sense)}</i>"


hovers = [hover_text(s, short[k]) for s, k in zip(sense_set.sentences, sense_set.senses)]
labels = [short[k] for k in sense_set.senses]
grid = st.columns(2)
for i, (name, static) in enumerate(models):
    at = 0 if static else round(layer * depth[name] / max(deepest, 1))
    extra = own_vectors.get(name)
    point = None
    if extra is not None and not static:
        point = tuple(float(v) for v in extra[at])
    if static:  # one vector for every use: one point, drawn as such (a projection would only show rounding noise)
        xy = np.zeros((len(sense_set.sentences), 2))
    else:
        xy = serving.sense_map(name, word, at, method, point, seed, neighbours, min_dist)
    own = None
    if point is not None:
        sense, share = vote(encoded[name].vectors[:, at], sense_set.senses, extra[at])
        own = (xy[-1], hover_text(mine, t("senses.vote", sense=short[sense], share=f"{share:.0%}")))
        xy = xy[:-1]
    title = (
        t("senses.map_static", model=name)
        if static
        else t("senses.map_title", model=name, layer=at, layers=depth[name])
    )
    with grid[i % 2]:
        st.plotly_chart(build_sense_map(xy, labels, hovers, title, own, t("senses.yours")), key=f"map_{name}")
        if static:
            st.caption(t("senses.static_note", word=word))

if own_vectors:
    st.subheader(t("senses.votes_title"))
    table = {}
    for name, static in models:
        if name in own_vectors and not static:
            vectors = encoded[name].vectors
            table[name] = [
                short[vote(vectors[:, k], sense_set.senses, own_vectors[name][k])[0]].split(".")[0]
                for k in range(depth[name] + 1)
            ]
    if table:
        width = max(len(v) for v in table.values())
        st.dataframe(
            {
                t("senses.col_model"): list(table),
                **{str(k): [v[k] if k < len(v) else "" for v in table.values()] for k in range(width)},
            },
            hide_index=True,
        )
        st.caption(t("senses.votes_note", senses="; ".join(short.values())))

# Per-layer measures ----------------------------------------------------------------------------------
st.header(t("senses.measures_title"))
st.write(t("senses.measures_intro"))
chance = None
accuracy, self_sim, intra, baseline = {}, {}, {}, {}
for name, static in models:
    m = serving.sense_measures(name, word)
    chance = m.chance
    accuracy[name] = m.accuracy
    if static:  # the same at every depth: drawn across the chart
        accuracy[name] = np.full(deepest + 1, m.accuracy[0])
    if not static:
        self_sim[name] = m.self_similarity
        intra[name] = m.intra_similarity
        baseline[f"{name} · {t('senses.baseline')}"] = m.baseline
if chance is not None:
    accuracy[t("senses.chance")] = np.full(max(len(v) for v in accuracy.values()), chance)
m1, m2, m3 = st.columns(3)
m1.plotly_chart(
    build_layer_lines(accuracy, t("senses.acc_title"), t("senses.acc_axis"), dashed=(t("senses.chance"),)), key="acc"
)
if self_sim:
    m2.plotly_chart(
        build_layer_lines({**self_sim, **baseline}, t("senses.self_title"), "cos", dashed=tuple(baseline)), key="self"
    )
    m3.plotly_chart(
        build_layer_lines({**intra, **baseline}, t("senses.intra_title"), "cos", dashed=tuple(baseline)), key="intra"
    )
st.caption(t("senses.measures_note"))

# A Chinese corner ------------------------------------------------------------------------------------
st.header(t("senses.zh_title"))
st.write(t("senses.zh_intro"))
states = serving.availabilities()
reader = next((name for name in CHINESE_MODELS if states[name].ready), None)
if reader is None:
    st.info(
        t(
            "senses.zh_missing",
            models=" / ".join(CHINESE_MODELS),
            command=f"python -m model_zoo prefetch {CHINESE_MODELS[0]}",
        ),
        icon=":material/cloud_off:",
    )
else:
    from components.charts import build_similarity_heatmap
    from model_zoo.onehot import cosine_matrix

    model = serving.load_model(reader)
    assert isinstance(model, model_zoo.Encoder)
    vectors = model.word_vectors([s for s, _ in CHINESE], "长")[:, -1]
    names = [f"{s} ({p})" for s, p in CHINESE]
    st.plotly_chart(
        build_similarity_heatmap(names, cosine_matrix(vectors), t("senses.zh_map", model=reader), number=False),
        key="zh",
    )
