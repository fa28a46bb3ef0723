"""ContextLab: from one-hot vectors to BERT, with real models. A server runs it through asgi.py (`make run`)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

# pandas whole, before any page runs: plotly reads pandas from sys.modules without importing it
# (_plotly_utils.optional_imports), so on a fresh server a figure built while another session's
# thread was still importing pandas met a half-made module (AttributeError: no pandas.Series).
import pandas  # noqa: F401
import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

import serving
from components import classroom_view
from components.frame import app_frame, app_style
from components.i18n import DEFAULT_LANG, LANGS, shortened, t
from components.road import CLASSROOM, HOME, PLAYGROUND, Lesson, ready_lessons
from components.url import key_from_url
from model_zoo import ModelZooError

FAVICON = Path(__file__).resolve().parent / "assets" / "favicon.png"  # local: nothing fetched from outside


def page(lesson: Lesson, default: bool = False) -> st.Page:
    title = t(f"lesson.{lesson.key}.title")
    return st.Page(lesson.file, title=title, icon=lesson.icon, url_path=lesson.key, default=default)


ASKED = "_unknown_page"  # the page a link asked for that the app lacks, said atop the road it opened


def unknown_page(pages: list[st.Page]) -> str:
    """The page a URL asks for that the app does not have ("/home": "home"), else "". The road opens instead,
    with one line in the learner's language saying so: left to st.navigation, Streamlit covers the road with
    its own English box ("Page not found ... no corresponding file was found in the app's pages/ directory").
    Streamlit has no hook for an unknown path, so this reads and clears the page its run was asked for. A
    fresh server's first visitor is sent to the road without the box, the path left only in the URL."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return ""
    known = [p.url_path for p in pages]  # read in a run only: a bare process's st.Page has none
    manager = ctx.pages_manager
    asked = manager.intended_page_name or ""
    if asked and not manager.intended_page_script_hash and asked not in known:
        manager.set_script_intent("", "")  # no page asked for: st.navigation opens the default one, the road
        return asked
    path = unquote(urlparse(st.context.url or "").path).strip("/")  # the browser's, a known page's trimmed
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    if base and (path == base or path.startswith(f"{base}/")):
        path = path[len(base) :].strip("/")
    return path if path and path not in known else ""


def class_mode_on(url_path: str) -> None:
    """On every page but the Class page itself: a student's current question atop the page (pushed by the
    server when the class changes), and a teacher's class box in the sidebar. The store is opened only in a
    tab that has joined or started a class."""
    classroom_view.install(class_store, push_on_change)
    classroom_view.keep_teaching_tab()  # a reload of a teacher's tab keeps its class (the Class page's too)
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
    if asked := unknown_page([p for pages in sections.values() for p in pages]):
        st.session_state[ASKED] = asked
    try:
        # expanded: every lesson stays in view (by default Streamlit folds all but ten under "View more").
        chosen = st.navigation({name: pages for name, pages in sections.items() if pages}, expanded=True)
        class_mode_on(chosen.url_path)
        with app_frame(chosen.url_path):
            if chosen.url_path != "":  # on another page than the road, said no more
                st.session_state.pop(ASKED, None)
            elif asked := st.session_state.get(ASKED, ""):  # on the road's runs until the learner moves on
                st.info(t("url.no_page", value=shortened(asked)), icon=":material/signpost:")
            chosen.run()
    finally:  # after the first page run, also when it stops or reruns itself; once per server
        serving.warm_up()


run()
