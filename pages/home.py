"""Home: the road from one-hot vectors to BERT and GPT, and the models panel."""

import streamlit as st

import model_zoo
import serving
from components.frame import ensure_app_frame
from components.guide import STEP
from components.i18n import t
from components.models_panel import render_models_panel
from components.road import ready_lessons
from components.road_map import render_road


def run() -> None:
    ensure_app_frame()  # before anything is drawn

    st.title(t("home.title"))
    st.write(t("home.intro"))
    first = ready_lessons()[0]  # the guided path, from the first lesson of the road to the last, by Next alone
    st.page_link(
        first.file,
        label=t("home.path", n=len(ready_lessons())),
        icon=":material/route:",
        query_params={STEP: "1", "lang": st.session_state.get("lang", "en")},
    )
    cards = model_zoo.list_models()
    states = serving.availabilities()
    render_road(cards, states)
    with st.expander(t("home.thread_title"), icon=":material/timeline:"):  # seed 002's one-line summary of the road
        st.markdown(t("home.thread"))
    st.info(t("home.how"), icon=":material/school:")
    render_models_panel(cards, states)


run()
