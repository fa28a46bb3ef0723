"""Make sure every page runs inside app.py's frame (language switch, navigation)."""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager


def ensure_app_frame() -> None:
    """Rerun through app.py when Streamlit ran a page file directly.

    With a `pages/` folder beside app.py, a fresh server runs the first request for a deep
    link (/playground?text=...) in Streamlit's legacy folder mode, without app.py, until
    some session has called st.navigation. A shared link must open the real app, so the
    first such run switches the server to st.navigation and reruns; the URL is kept.
    """
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()
