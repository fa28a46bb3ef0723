"""Make sure every page runs inside app.py's frame (language switch, navigation, class mode)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager

# On a phone (Streamlit stacks columns under 640 px), where nothing hovers, toolbars are shown at all times:
# plotly's would lie over a chart's title (the charts' PNG stays a camera click away on a wider screen), and a
# table's (download, search, full screen), drawn above the table, over the line before it: a table gets room.
STYLE = (
    "<style>@media (max-width: 640px) {"
    " .js-plotly-plot .modebar-container { display: none !important; }"
    " [data-testid='stElementContainer']:has([data-testid='stDataFrame']) { margin-top: 2rem; }"
    "}</style>"
)

_RUN = threading.local()  # a session's script runs in its own thread, one run at a time


@contextmanager
def app_frame() -> Iterator[None]:
    """app.py runs the page st.navigation chose inside this: the page's own run is then in the frame."""
    _RUN.inside = True
    try:
        yield
    finally:
        _RUN.inside = False


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
