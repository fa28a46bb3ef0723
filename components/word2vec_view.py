"""How the word2vec a learner trained on the Embeddings page did: its size, its time, its agreement with GloVe."""

import streamlit as st

from components.i18n import t
from model_zoo.lessons.lexicon import BUILD_SCRIPT
from model_zoo.lessons.word2vec import Quality, TrainSettings


def render_word2vec_summary(seconds: float, words: int, settings: TrainSettings, quality: Quality) -> None:
    """What was trained (words, dimensions, epochs, seconds) and how its neighbours agree with GloVe's."""
    st.success(
        t(
            "emb.trained",
            seconds=f"{seconds:.0f}",
            words=f"{words:,}",
            dim=settings.dim,
            epochs=settings.epochs,
        ),
        icon=":material/check_circle:",
    )
    st.markdown(
        t(
            "emb.quality",
            ours=f"{quality.agreement:.0%}",
            glove=f"{quality.glove_agreement:.0%}",
            chance=f"{quality.chance:.0%}",
            n=quality.words,
            script=BUILD_SCRIPT,
        )
    )
