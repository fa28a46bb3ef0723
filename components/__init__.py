"""Streamlit renderers (render_*) and pure figure/table builders (build_*). No model loading here."""
