"""The app as a server runs it (`make run`, and each worker of `make serve`): app.py in Streamlit's own ASGI
server (st.App), with components.web's middleware before Streamlit's (a link below a page's path opens the page,
not a blank one). `streamlit run asgi.py` finds `app` below."""

from __future__ import annotations

import streamlit as st
from starlette.middleware import Middleware

from components.web import NestedPageRedirect

app = st.App("app.py", middleware=[Middleware(NestedPageRedirect)])
