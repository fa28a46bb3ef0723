"""One-sentence notices for what went wrong, in the learner's language; never a traceback."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import streamlit as st

from model_zoo import ModelUnavailable, ModelZooError
from model_zoo.lessons.cloze import LessonCheck
from model_zoo.registry import get_card, models_where
from model_zoo.words import has_han

from .i18n import Markdown, md_escape, shortened, strings, t, t_plain
from .url import key_from_url

if TYPE_CHECKING:
    from model_zoo import Model

M = TypeVar("M")
T = TypeVar("T")

TYPED = {"word", "text", "name"}  # the errors' fields that repeat what a learner typed or a link held


def render_unavailable(err: ModelUnavailable) -> None:
    """The page says which model it could not reach, what it uses instead, and the fix."""
    fallback = t("notice.fallback", fallback=err.fallback) if err.fallback else ""
    st.warning(
        t(f"notice.{err.status.replace(' ', '_')}", name=err.name, fallback=fallback, command=err.prefetch_command),
        icon=":material/cloud_off:",
    )


def error_message(err: ModelZooError) -> str:
    """The learner-facing sentence for a model_zoo error, in the learner's language."""
    params = {k: ", ".join(v) if isinstance(v, list) else v for k, v in vars(err).items()}
    for k in TYPED & params.keys():
        if isinstance(params[k], str):
            params[k] = shortened(params[k])
    if isinstance(what := params.get("what"), str) and f"what.{what}" in strings("en"):
        params["what"] = t_plain(f"what.{what}")  # "the answer" in the learner's language, not model_zoo's
    key = f"error.{type(err).__name__}"
    if getattr(err, "suggestions", None) == []:  # "Closest spellings: ." says nothing
        key += "_no_suggestion"
    try:
        return t(key, **params)
    except KeyError:  # an error without a translation yet: model_zoo's English sentence, as text
        return md_escape(str(err))


def render_lesson_miss(
    check: LessonCheck | None, model: str, classic: str = "", other: LessonCheck | None = None, other_model: str = ""
) -> None:
    """One line under a model's output where it misses the word the lesson names: what it says instead,
    and the model that does show the point (`other`, measured live, or the `classic` to prefetch)."""
    if check is None or check.shows:
        return
    where = (
        t("notice.lesson_rank", rank=check.rank, p=f"{check.p:.0%}")
        if check.rank
        else t("notice.lesson_absent", k=check.considered)
    )
    then: str
    if other is not None and other.shows and other.p is not None:
        then = t("notice.lesson_other", other=other_model, p=f"{other.p:.0%}")
    else:
        then = t("notice.lesson_classic", classic=classic) if classic else ""
    answer = " / ".join(sorted(check.answers))
    st.caption(t("notice.lesson_miss", model=model, first=check.first, answer=answer, where=where, other=then))


def render_script_note(models: str | Sequence[str], text: str, capability: str, family: str | None = None) -> None:
    """One line where Chinese text meets models that learned English only (`models`: the section's, one name or
    several): what their output is worth, and which models of the zoo (of `family`, where given) read Chinese and
    can do `capability`, prefetched or not, or that none can."""
    names = [models] if isinstance(models, str) else models
    english = [name for name in dict.fromkeys(names) if get_card(name).language == "en"]
    if not has_han(text) or not english:
        return
    readers = models_where(capability=capability, family=family, reads="zh")
    if readers:
        st.caption(t("notice.english_only", model=", ".join(english), models=", ".join(readers)))
        return
    job = t_plain(f"cap.{capability}")
    st.caption(t("notice.english_only_none", model=", ".join(english), job=f"{family}: {job}" if family else job))


def render_error(err: ModelZooError) -> None:
    """A model_zoo error (empty input, missing word, no [MASK], ...) as an info box."""
    st.info(error_message(err), icon=":material/info:")


def with_fallback(name: str, get: Callable[[str], tuple[M, ModelUnavailable | None]]) -> M:
    """The model `name` through `get` (the cache layer); says so when a stand-in is used, and
    stops the page with the reason when there is none (a registered model still to come)."""
    try:
        model, unavailable = get(name)
    except ModelUnavailable as err:
        render_unavailable(err)
        st.stop()
    except ModelZooError as err:  # its files are damaged (BadCheckpoint): one sentence, and the page stops here
        render_error(err)
        st.stop()
    if unavailable is not None:
        render_unavailable(unavailable)
    return model


def select_model(
    label: str,
    names: list[str],
    default: str,
    get: Callable[[str], tuple[M, ModelUnavailable | None]],
    key: str = "model",
) -> M:
    """A model picker kept in the URL (?model=..., or `key`), and the model it names through `get`; a link's
    model that is not among `names` is said in one sentence (the picker opens on `default`)."""
    return with_fallback(pick_name(label, names, default, key), get)


def pick_name(label: str, names: list[str], default: str, key: str = "model") -> str:
    """A model picker kept in the URL, and the name picked (a link's unknown name is said in one sentence)."""
    key_from_url(key, names, default)  # before the picker, which drops such a value without a word
    return st.selectbox(label, names, index=names.index(default), key=key, bind="query-params")


def select_name(
    label: str,
    names: list[str],
    default: str,
    ready: Callable[[str], bool],
    get: Callable[[str], tuple[Model, ModelUnavailable | None]],
    key: str = "model",
) -> str:
    """select_model for a page that draws from a model's files before it needs the model: the name picked,
    without loading it where `ready` says its weights are here; else the stand-in's name through `get`
    (which loads it and says why, as select_model does)."""
    name = pick_name(label, names, default, key)
    return name if ready(name) else with_fallback(name, get).name


_MACHINE = re.compile(
    r"(?P<n>\d+) CPU (?P<unit>cores|threads), (?P<arch>[\w-]+)(?:, (?P<products>bf16 products|fp32))?"
)


def machine_words(machine: str) -> str:
    """The machine a measurement names (scripts/time_buttons.py's "2 CPU cores, x86_64, bf16 products", a
    shipped race's "2 CPU threads, x86_64") in the page's language; another wording as it was recorded."""
    found = _MACHINE.fullmatch(machine)
    if found is None:
        return machine
    words = t_plain(f"timing.machine_{found['unit']}", n=found["n"], arch=found["arch"])
    if found["products"] is None:
        return words
    products = t_plain("timing.products_" + found["products"].split()[0])  # bf16 products, fp32
    return t_plain("timing.machine_with", machine=words, products=products)


def timed_label(label: str, measured: tuple[float, str] | None) -> str:
    """A train-on-click button's label with the time its work took when measured (scripts/time_buttons.py):
    a promise of time is a measurement, or is not made."""
    if measured is None:
        return label
    seconds, machine = measured
    took = (
        t_plain("timing.seconds", n=f"{seconds:.0f}")
        if seconds < 90
        else t_plain("timing.minutes", n=f"{seconds / 60:.0f}")
    )
    return t("timing.label", label=Markdown(label), took=took, machine=machine_words(machine))


def under_bar(text: str, work: Callable[[Callable[[float], object]], T]) -> T:
    """work(on_progress) under a progress bar, which goes when the work ends; its errors go on to the caller."""
    bar = st.progress(0.0, text=text)
    try:
        return work(lambda f: bar.progress(f))
    finally:
        bar.empty()


def with_bar(text: str, work: Callable[[Callable[[float], object]], T]) -> T | None:
    """work(on_progress) under a progress bar (a training the first time anyone on the server asks); on a
    model error, None and the reason in one sentence."""
    try:
        return under_bar(text, work)
    except ModelZooError as err:
        render_error(err)
        return None


def when_asked(
    label: str, key: str, text: str, work: Callable[[Callable[[float], object]], T], once: bool = False
) -> T | None:
    """A button that starts `work` under a progress bar: its result after a click (on every later rerun
    too, unless `once`), else None. The click sets a flag, which AppTest and fragments keep."""
    flag = f"{key}_asked"
    st.button(label, key=key, icon=":material/model_training:", on_click=lambda: st.session_state.update({flag: True}))
    asked = st.session_state.pop(flag, False) if once else st.session_state.get(flag, False)
    return with_bar(text, work) if asked else None
