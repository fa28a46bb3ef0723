"""ContextLab: from one-hot vectors to BERT, with real models. `streamlit run app.py`."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

# pandas whole, before any page runs: plotly reads pandas from sys.modules without importing it
# (_plotly_utils.optional_imports), so on a fresh server a figure built while another session's
# thread was still importing pandas met a half-made module (AttributeError: no pandas.Series).
import pandas  # noqa: F401
import streamlit as st

import serving
from components import classroom_view
from components.frame import app_frame, app_style
from components.i18n import DEFAULT_LANG, LANGS, t
from components.road import CLASSROOM, HOME, PLAYGROUND, Lesson, ready_lessons
from components.url import key_from_url
from model_zoo import ModelZooError

FAVICON = Path(__file__).resolve().parent / "assets" / "favicon.png"  # local: nothing fetched from outside


def page(lesson: Lesson, default: bool = False) -> st.Page:
    title = t(f"lesson.{lesson.key}.title")
    return st.Page(lesson.file, title=title, icon=lesson.icon, url_path=lesson.key, default=default)


def class_mode_on(url_path: str) -> None:
    """On every page but the Class page itself: a student's current question atop the page (pushed by the
    server when the class changes), and a teacher's class box in the sidebar. The store is opened only in a
    tab that has joined or started a class."""
    classroom_view.install(class_store, push_on_change)
    if url_path == CLASSROOM.key:
        return
    if classroom_view.STUDENT not in st.session_state and (followed := st.query_params.get(classroom_view.JOINED)):
        try:  # a followed student's tab that reconnected (a restarted worker, a reload) rejoins its class
            st.session_state[classroom_view.STUDENT] = class_store().join(followed).code
        except ModelZooError:
            del st.query_params[classroom_view.JOINED]  # an ended class: the lesson goes on alone
    if code := st.session_state.get(classroom_view.STUDENT):
        classroom_view.render_student(code, uses_word, big=False)
    classroom_view.render_teacher_sidebar()


def class_store() -> classroom_view.Store:
    from serving import class_mode

    return class_mode.store()


def push_on_change(code: str, shown: Hashable, key: Callable[[Any], Hashable]) -> bool:
    from serving import class_mode

    return class_mode.push_on_change(code, shown, key)


def uses_word(sentence: str, word: str) -> bool:
    from serving import class_mode

    return class_mode.uses_word(sentence, word)


def run() -> None:
    st.set_page_config(page_title="ContextLab", page_icon=str(FAVICON), layout="wide")
    app_style()
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
        t("app.nav.tools"): [page(PLAYGROUND), page(CLASSROOM)],
    }
    try:
        # expanded: every lesson stays in view (by default Streamlit folds all but ten under "View more").
        chosen = st.navigation({name: pages for name, pages in sections.items() if pages}, expanded=True)
        class_mode_on(chosen.url_path)
        with app_frame(chosen.url_path):
            chosen.run()
    finally:  # after the first page run, also when it stops or reruns itself; once per server
        serving.warm_up()


run()
