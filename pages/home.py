"""Home: the road from one-hot vectors to BERT and GPT, and the models panel."""

from components.i18n import t
from components.models_panel import render_models_panel
from components.road_map import render_road
import model_zoo
import serving
import streamlit as st

st.title(t("home.title"))
st.write(t("home.intro"))
cards = model_zoo.list_models()
states = serving.availabilities()
render_road(cards, states)
st.info(t("home.how"), icon=":material/school:")
render_models_panel(cards, states)
