"""ContextLab: from one-hot vectors to BERT, with real models. `streamlit run app.py`."""

from __future__ import annotations

from pathlib import Path

# pandas whole, before any page runs: plotly reads pandas from sys.modules without importing it
# (_plotly_utils.optional_imports), so on a fresh server a figure built while another session's
# thread was still importing pandas met a half-made module (AttributeError: no pandas.Series).
import pandas  # noqa: F401
import streamlit as st

import serving
from components.i18n import DEFAULT_LANG, LANGS, t
from components.road import HOME, PLAYGROUND, Lesson, ready_lessons
from components.url import key_from_url

FAVICON = Path(__file__).resolve().parent / "assets" / "favicon.png"  # local: nothing fetched from outside


def page(lesson: Lesson, default: bool = False) -> st.Page:
    title = t(f"lesson.{lesson.key}.title")
    return st.Page(lesson.file, title=title, icon=lesson.icon, url_path=lesson.key, default=default)


def run() -> None:
    st.set_page_config(page_title="ContextLab", page_icon=str(FAVICON), layout="wide")
    # ?lang= is kept by hand rather than bound: a bound segmented control would put its
    # label (简体中文) in the URL, and a shared link should read ?lang=zh.
    if "lang" not in st.session_state:  # another language than the two is said in one sentence
        st.session_state.lang = key_from_url("lang", list(LANGS), DEFAULT_LANG)
    with st.sidebar:
        st.radio("Language · 语言", options=list(LANGS), format_func=LANGS.__getitem__, key="lang", horizontal=True)
    st.query_params["lang"] = st.session_state.lang
    sections = {
        t("app.nav.start"): [page(HOME, default=True)],
        t("app.nav.lessons"): [page(lesson) for lesson in ready_lessons()],
        t("app.nav.tools"): [page(PLAYGROUND)],
    }
    try:
        # expanded: every lesson stays in view (by default Streamlit folds all but ten under "View more").
        st.navigation({name: pages for name, pages in sections.items() if pages}, expanded=True).run()
    finally:  # after the first page run, also when it stops or reruns itself; once per server
        serving.warm_up()


run()
