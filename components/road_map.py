"""The home page's map: the road one-hot -> word2vec/GloVe -> Transformer -> ELMo -> ULMFiT -> GPT-1 -> BERT
-> GPT-2, in time order, each stop saying what it took from the one before; clickable."""

from __future__ import annotations

import streamlit as st

from model_zoo import Availability, ModelCard

from .i18n import t
from .models_panel import STATUS_MARK
from .road import PLAYGROUND, ROAD, Stop


def _models_of(stop: Stop, cards: list[ModelCard]) -> list[ModelCard]:
    return [card for card in cards if stop.family is not None and card.family == stop.family]


def pick_demo_model(models: list[ModelCard], states: dict[str, Availability]) -> ModelCard | None:
    """The model a stop's "try it" link opens: a classic that is here beats the offline stand-in."""
    ready = [card for card in models if states[card.name].ready]
    ready.sort(key=lambda card: card.offline)  # False (a classic) first; the sort is stable
    return ready[0] if ready else None


def render_stop(number: int, stop: Stop, cards: list[ModelCard], states: dict[str, Availability]) -> None:
    with st.container(border=True, height="stretch"):
        st.markdown(f"**{number} · {t(f'road.{stop.key}.name')}**")
        st.caption(stop.year)
        if number > 1:  # what it took from the stop before it
            st.caption(f":material/subdirectory_arrow_right: {t(f'road.{stop.key}.took')}")
        st.write(t(f"road.{stop.key}.idea"))
        st.markdown(f"*{t(f'road.{stop.key}.limit')}*")
        models = _models_of(stop, cards)
        if models:
            st.caption(" · ".join(f"{STATUS_MARK[states[c.name].status]} `{c.name}`" for c in models))
        demo = pick_demo_model(models, states)
        if demo is not None:
            st.page_link(
                PLAYGROUND.file,
                label=t("road.try", name=demo.name),
                icon=PLAYGROUND.icon,
                query_params={"model": demo.name, "text": t(f"road.{stop.key}.example")},
            )
        for lesson in stop.see_also:  # a later stop's lesson that also teaches this one
            st.page_link(lesson.file, label=t("road.see_also", title=t(f"lesson.{lesson.key}.title")), icon=lesson.icon)
        for lesson in stop.lessons:
            title = t(f"lesson.{lesson.key}.title")
            if lesson.ready:
                st.page_link(lesson.file, label=title, icon=lesson.icon)
            else:
                st.caption(f":material/schedule: {title} · {t('road.coming')}")


# Page links cut their label to one line; in the map's narrow columns a lesson's name must wrap. The arrow
# between two stops points right while they stand side by side, and down where a phone stacks the columns
# (Streamlit does under 640 px).
_WRAP_LINKS = (
    "<style>[data-testid='stPageLink'] * {white-space: normal !important; overflow: visible !important; "
    "text-overflow: clip !important; max-width: 100% !important; height: auto !important;}"
    " .road-arrow {font-size: 2rem; line-height: 1; text-align: center;}"
    " .road-arrow .down {display: none;}"
    " .road-arrow.between {display: none;}"
    " @media (max-width: 640px) { .road-arrow .right {display: none;} .road-arrow .down, .road-arrow.between"
    " {display: block;} }"
    "</style>"
)
ARROW = '<div class="road-arrow" aria-hidden="true"><span class="right">→</span><span class="down">↓</span></div>'
ROW_ARROW = '<div class="road-arrow between" aria-hidden="true">↓</div>'  # a row's last stop to the next row's first


PER_ROW = 4  # stops side by side: seven in one row would squeeze each into a sliver on a projector


def render_road(cards: list[ModelCard], states: dict[str, Availability]) -> None:
    """The stops in rows of PER_ROW, numbered in order, an arrow from each stop to the next."""
    st.html(_WRAP_LINKS)
    widths: list[float] = []
    for i in range(PER_ROW):
        widths += [5.0] if i == PER_ROW - 1 else [5.0, 0.6]
    for start in range(0, len(ROAD), PER_ROW):
        columns = st.columns(widths, vertical_alignment="center")
        for i, stop in enumerate(ROAD[start : start + PER_ROW]):
            with columns[2 * i]:
                render_stop(start + i + 1, stop, cards, states)
            if i < PER_ROW - 1 and start + i < len(ROAD) - 1:
                with columns[2 * i + 1]:
                    st.html(ARROW)
        if start + PER_ROW < len(ROAD):
            st.html(ROW_ARROW)
