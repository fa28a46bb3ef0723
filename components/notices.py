"""One-sentence notices for what went wrong, in the learner's language; never a traceback."""

from __future__ import annotations

import streamlit as st

from model_zoo import ModelUnavailable, ModelZooError

from .i18n import t


def render_unavailable(err: ModelUnavailable) -> None:
    """The page says which model it could not reach, what it uses instead, and the fix."""
    st.warning(
        t("notice.unavailable", name=err.name, fallback=err.fallback or "-", command=err.prefetch_command),
        icon=":material/cloud_off:",
    )


def error_message(err: ModelZooError) -> str:
    """The learner-facing sentence for a model_zoo error, in the learner's language."""
    params = {k: ", ".join(v) if isinstance(v, list) else v for k, v in vars(err).items()}
    key = f"error.{type(err).__name__}"
    try:
        return t(key, **params)
    except KeyError:  # an error without a translation yet: model_zoo's English sentence
        return str(err)


def render_error(err: ModelZooError) -> None:
    """A model_zoo error (empty input, missing word, no [MASK], ...) as an info box."""
    st.info(error_message(err), icon=":material/info:")
