"""Streamlit renderers (render_*) and pure figure/table builders (build_*); web.py, the app process's one HTTP
rule (asgi.py's middleware). No model loading here."""
