"""Make sure every page runs inside app.py's frame (language switch, navigation, class mode)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
from streamlit.runtime.state.session_state_proxy import get_session_state

# On a phone (Streamlit stacks columns under 640 px), where nothing hovers, toolbars are shown at all times:
# plotly's would lie over a chart's title (the charts' PNG stays a camera click away on a wider screen), and a
# table's (download, search, full screen), drawn above the table, over the line before it: a table gets room.
# The models' tables keep their columns a readable width and scroll sideways: squeezed into 360 px, a column of
# Chinese text broke after every second character and stood each row 150 px high. (The lessons' small tables fit.)
# A heading's link icon (Streamlit's, shown on hover) is hidden where nothing hovers: a title that filled the
# phone's line ("Word embeddings") pushed the unseen icon onto a second line, 50 px of blank under the title.
HEADING_LINK = "[data-testid='stHeaderActionElements']"
#
# A table wider than its room (the models' tables and GPT's blank table on a phone) scrolls sideways with no
# scrollbar a finger sees: its right edge fades to grey while columns lie beyond it, and clears at the end. The
# scroll position drives the fade (a scroll timeline, CSS only; the fade's grey reads on a light or a dark
# theme); a table that fits has no scroll timeline, so no fade. A browser without scroll timelines shows none.
WIDE = "[data-testid='stTable'], [data-testid='stDataFrame']"
STYLE = (
    "<style>.st-key-class_tab { display: none; }"  # classroom_view.keep_teaching_tab's: draws nothing
    f" {WIDE} {{ timeline-scope: --cl-wide; position: relative; }}"
    " [data-testid='stTable'] > div, [data-testid='stDataFrame'] .dvn-scroller { scroll-timeline: --cl-wide inline; }"
    f" {WIDE.replace(']', ']::after')} {{ content: ''; position: absolute; top: 0; right: 0; bottom: 0;"
    " width: 2rem; pointer-events: none; z-index: 2; opacity: 0;"
    " background: linear-gradient(to right, transparent, rgba(128, 128, 128, 0.45));"
    " animation: cl-more linear both; animation-timeline: --cl-wide; }"
    " @keyframes cl-more { from { opacity: 1; } 90% { opacity: 1; } to { opacity: 0; } }"
    " @media (max-width: 640px) {"
    " .js-plotly-plot .modebar-container { display: none !important; }"
    " [data-testid='stElementContainer']:has([data-testid='stDataFrame']) { margin-top: 2rem; }"
    " .st-key-models_panel th, .st-key-models_panel td { min-width: 10rem; }"
    f" {HEADING_LINK} {{ display: none; }}"
    "}</style>"
)

_RUN = threading.local()  # a session's script runs in its own thread, one run at a time


@contextmanager
def app_frame(page: str = "") -> Iterator[None]:
    """app.py runs the page st.navigation chose (its url path `page`) inside this: the page's own run is then in
    the frame, and what the last page's widgets left in session state is gone before it draws (forget_left)."""
    forget_left(page)
    ctx = get_script_run_ctx()
    before = ctx.shared.widget_user_keys_this_run.snapshot() if ctx else frozenset()
    _RUN.inside = True
    try:
        yield
    finally:
        _RUN.inside = False
        if ctx:
            _, kept = st.session_state.get(LEFT, ("", frozenset()))
            st.session_state[LEFT] = (page, kept | (ctx.shared.widget_user_keys_this_run.snapshot() - before))


# (url path, the widget keys its runs drew): a page's widgets' keys, for the next page to drop (forget_left)
LEFT = "_page_widget_keys"


def forget_left(page: str) -> None:
    """On a move to another page, drop the last page's widget keys from session state. Pages seed their boxes
    through session state (a default set once, an example button's sentence), and such a value outlives its
    widget: the next page's box of the same key took it (Attention opened on Masked LM's sentence, BERT inputs'
    sentences A and B read "man" and "king" from Word embeddings, Probing's models came up empty after Word
    senses' and ELMo stopped on them), where it should open on its own default, or the value its link gives."""
    last, keys = st.session_state.get(LEFT, ("", frozenset()))
    if last == page:
        return
    with get_session_state().query_params() as url:  # a box bound to the URL is unbound as it goes, or the
        for key in keys:  # next page could not write ?key= itself (ELMo's ?word= after Word embeddings' box)
            binding = url.get_binding_for_param(key)
            if binding is not None:
                url.unbind_widget(binding.widget_id)
    for key in keys:
        st.session_state.pop(key, None)
    st.session_state[LEFT] = (page, frozenset())


# Streamlit keeps the main area's scroll position when a page switches to another: a teacher who pressed "Ask
# the class" at the foot of a lesson got the projector scrolled to its foot, the question and its count above
# the screen (found in Chromium: 470 px down). A page that should open at its top says so with this.
TO_TOP = "<script>document.querySelector('[data-testid=\"stMain\"]')?.scrollTo({top: 0});</script>"


def open_at_top() -> None:
    """Scroll the page to its top once, as it draws (a script of the app's own, no input of a user in it)."""
    st.html(TO_TOP, unsafe_allow_javascript=True)


def app_style() -> None:
    """The app's own CSS, on every page (a style alone takes no room on the page)."""
    st.html(STYLE)


def ensure_app_frame() -> None:
    """Rerun through app.py when Streamlit ran a page file directly.

    With a `pages/` folder beside app.py, a fresh server runs the first requests for deep
    links (/playground?text=...) in Streamlit's legacy folder mode, without app.py, until
    some session has called st.navigation. A shared link must open the real app, so such a
    run switches the server to st.navigation and reruns; the URL is kept.

    Whether this run is in the frame is read off the run itself, not off Streamlit's
    server-wide switch: when a class arrives at once, a run that began in folder mode can
    find the switch already turned by another session's run, and must rerun all the same
    (it went on without app.py, whose `import pandas` it then lacked: a figure built while
    another session was still importing pandas failed, tests/test_browser.py).
    """
    if not getattr(_RUN, "inside", False):
        PagesManager.uses_pages_directory = False
        st.rerun()
