"""What class mode draws (issue 35): the code for the projector with its QR code, a student's question
(polled, answered with one Send), the projector's live count, the class's answers beside the model's, and
the teacher's buttons inside the lessons ("Ask the class", "Bring the class here").

This module never talks to the class store: the page, and app.py for the parts on every page, hand it
the store's operations as functions (`install`), so components stay below serving. Everything a student
typed is shown as text: widget values, plotly bars (escaped in components.charts) and light charts.
"""

from __future__ import annotations

import io
import logging
import os
import re
import secrets
from collections.abc import Callable, Hashable, Sequence
from functools import cache
from typing import Any, Protocol
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import streamlit as st

from model_zoo import EmptyInput, ModelZooError

from .charts import build_score_bars
from .i18n import current_lang, in_every_language, md_escape, t, t_plain
from .notices import render_error
from .road import CLASSROOM, HOME, PLAYGROUND, ready_lessons

# A student's screen asks for the current question every POLL_S where the server cannot push, and every
# BACKSTOP_S where it can (a push gone astray is caught up then). The browser tests set both past their
# waits, so that only the server's push can bring a change to a student's screen.
POLL_S = float(os.environ.get("CONTEXTLAB_CLASS_POLL_S", "1.5"))
BACKSTOP_S = float(os.environ.get("CONTEXTLAB_CLASS_BACKSTOP_S", "10"))
COUNT_S = 1.0  # the projector's count
TEACHER = "class_teacher"  # session_state: (code, secret) while this browser tab teaches a class
STUDENT = "class_student"  # session_state: the code of the class this tab has joined
ASKED = "class_asked"  # session_state: this tab just asked from a lesson (the projector opens at its top)
JOINED = "class"  # the query parameter that keeps a followed student's class in the URL
ME = "me"  # the one that keeps the tab's random id (session_id)
_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")
SESSION = "class_session"  # session_state: this tab's random id in the store (not a person)
CLASS_PAGE = CLASSROOM.file


class QuestionLike(Protocol):  # serving.classroom's records, read-only
    @property
    def id(self) -> int: ...
    @property
    def prompt(self) -> str: ...
    @property
    def options(self) -> list[Any]: ...
    @property
    def revealed(self) -> bool: ...
    @property
    def details(self) -> dict[str, Any]: ...


class StatusLike(Protocol):
    @property
    def question(self) -> QuestionLike | None: ...
    @property
    def follow(self) -> str | None: ...
    @property
    def follow_n(self) -> int: ...


class ClassLike(Protocol):
    @property
    def code(self) -> str: ...


class Store(Protocol):
    """The class store's operations this module calls (serving.classroom.ClassStore's)."""

    def status(self, code: str) -> StatusLike: ...
    def answer(self, code: str, session: str, text: str, nickname: str | None, question: int | None) -> int: ...
    def ask(
        self, code: str, secret: str, key: str, prompt: str, options: Sequence[str], details: dict[str, Any] | None
    ) -> object: ...
    def follow(self, code: str, secret: str, link: str | None) -> None: ...
    def join(self, code: str) -> ClassLike: ...
    def my_answer(self, code: str, session: str, question: int) -> str | None: ...
    def check_teacher(self, code: str, secret: str) -> bool: ...


Push = Callable[[str, Hashable, Callable[[Any], Hashable]], bool]
_stores: list[Callable[[], Store]] = []
_pushes: list[Push] = []


def install(get_store: Callable[[], Store], push: Push | None = None) -> None:
    """The store to call (app.py, on every run: a function, so nothing opens the database before it is used),
    and `push(code, shown, key)`: have the server rerun this tab once `key(status)` of class `code` is no
    longer `shown` (serving.class_mode.push_on_change; False where it cannot, and the tab polls)."""
    _stores[:] = [get_store]
    _pushes[:] = [] if push is None else [push]


def store() -> Store:
    return _stores[0]()


def teacher() -> tuple[str, str] | None:
    """(code, secret) where this tab teaches a class."""
    found = st.session_state.get(TEACHER)
    return found if isinstance(found, tuple) and _stores else None


# A teacher's tab keeps its class in the browser's sessionStorage, so that a reload of a lesson (or a worker that
# restarted) keeps the sidebar's class box. Not in the lesson's URL: the projector shows the address bar, and the
# secret would be on the wall. sessionStorage is this tab's alone (another tab, another device, a student's
# browser never read it) and goes when the tab closes. A Streamlit v2 component, mounted in the page itself.
_TAB_KEY = "class_tab"  # the component's widget key (its element is hidden: frame.STYLE)
_FORGET = "class_tab_forget"  # session_state: the tab's kept class is no longer taught (ended, or not its own)
_TAB_JS = """
export default function (component) {
  const KEY = "contextlab.teaching";
  const keep = component.data;  // "code secret": keep it; "": forget it; null: read it and say what it holds
  try {
    if (keep === "") sessionStorage.removeItem(KEY);
    else if (typeof keep === "string") sessionStorage.setItem(KEY, keep);
    else {
      const found = sessionStorage.getItem(KEY);
      if (found && component.setTriggerValue) component.setTriggerValue("found", found);
    }
  } catch (err) {}  // storage turned off in this browser: a reload loses the class box, nothing else
}
"""


@cache
def _tab_component() -> Any:
    """Registered once per server (a name registered twice warns)."""
    return st.components.v2.component("contextlab_class_tab", js=_TAB_JS)


def keep_teaching_tab() -> None:
    """On every page run (app.py): where this tab teaches, keep its class in the tab's sessionStorage; in a
    fresh session (a reload), read it back and teach again once the store confirms the secret. A tab that keeps
    nothing sends nothing and costs no run."""
    found = teacher()
    if found is not None:
        _tab_component()(data=" ".join(found), key=_TAB_KEY)
        return
    if st.session_state.pop(_FORGET, False):
        _tab_component()(data="", key=_TAB_KEY)
        return
    # a trigger: set in the one run after the script read it; absent where no browser runs it (bare mode)
    kept = getattr(_tab_component()(data=None, key=_TAB_KEY, on_found_change=lambda: None), "found", None)
    if not isinstance(kept, str) or not _stores:
        return
    code, _, secret = kept.partition(" ")
    try:
        ok = bool(code and secret) and store().check_teacher(code, secret)
    except Exception as err:  # noqa: BLE001  the store away for now (a restarting database): the lesson goes on,
        # the tab keeps its class, and its next reload asks again
        logging.getLogger(__name__).warning("a teacher's tab could not be checked: %s", type(err).__name__)
        return
    if ok:
        st.session_state[TEACHER] = (code, secret)
    else:  # ended, or not a class's secret: forgotten in the run that follows
        forget_teaching_tab()
    st.rerun()


def forget_teaching_tab() -> None:
    """The class this tab kept is over (ended, or its secret no longer opens it): the next run forgets it."""
    st.session_state[_FORGET] = True


def session_id() -> str:
    """This tab's random id in the class store: one answer per question per tab (a resend replaces it). It
    is kept in the tab's URL (?me=...), so a reload, or a reconnect to another worker, is the same student
    again, not a second answer; it names no one."""
    if SESSION not in st.session_state:
        given = str(st.query_params.get(ME, ""))
        st.session_state[SESSION] = given if _ID.fullmatch(given) else secrets.token_urlsafe(16)
    st.query_params[ME] = st.session_state[SESSION]
    return str(st.session_state[SESSION])


def here() -> str:
    """This view as a path on this server with its query (what "Bring the class here" sends students to). The
    teacher's language stays behind: each student reads the lesson in their own (follow_now adds it)."""
    url = urlsplit(st.context.url or "/")
    query = [(k, v) for k, v in parse_qsl(url.query) if k not in ("code", "key", "lang", JOINED, ME)]
    return (url.path or "/") + ("?" + urlencode(query, quote_via=quote) if query else "")


def page_of(link: str) -> tuple[str, dict[str, str]] | None:
    """The page file and query a follow link names (None for a link to no page of the app)."""
    url = urlsplit(link)
    name = url.path.strip("/").rsplit("/", 1)[-1]
    lessons = {lesson.key: lesson.file for lesson in (*ready_lessons(), HOME, PLAYGROUND, CLASSROOM)}
    file = lessons.get(name or HOME.key)
    return None if file is None else (file, dict(parse_qsl(url.query)))


# -- the projector -----------------------------------------------------------------------------------
def on_this_computer_only(link: str) -> bool:
    """Whether `link` names the teacher's own computer (localhost, 127.x, ::1): no student's device opens it."""
    host = urlsplit(link).hostname or ""
    return host == "localhost" or host.startswith("127.") or host == "::1"


def network_address(link: str) -> str | None:
    """`link`'s server at this computer's address on its network (the one Streamlit prints as its Network
    URL), or None where it has none."""
    from streamlit import net_util

    ip = net_util.get_internal_ip()
    if not ip:
        return None
    url = urlsplit(link)
    return f"{url.scheme}://{ip}{f':{url.port}' if url.port else ''}"


def qr_png(link: str) -> bytes:
    """The students' link as a QR code (segno, pure Python): a PNG the projector shows large."""
    import segno

    out = io.BytesIO()
    segno.make(link, error="m").save(out, kind="png", scale=8, border=2)
    return out.getvalue()


def render_code(code: str, link: str, big: bool = True) -> None:
    """The class's code, large enough to read from the back of a room, and the QR code of `link`; once a
    question is on (`big` False) one line with the code, the QR code a click away."""
    if not big:
        line, qr = st.columns([5, 1], vertical_alignment="center")
        line.markdown(t("class.code_line", code=code, link=link))
        with qr.popover(t_plain("class.qr"), icon=":material/qr_code_2:"):
            st.image(qr_png(link), width=260)
        return
    words, picture = st.columns([3, 2], vertical_alignment="center")
    with words:
        st.caption(t("class.code_label"))
        st.markdown(
            f"<div class='class-code' style='font-size:6rem;font-weight:700;letter-spacing:.12em;"
            f"font-family:monospace;line-height:1.1'>{code}</div>",
            unsafe_allow_html=True,
        )  # A-Z, 2-9 only
        st.write(t("class.students_link", link=link, code=code))
    picture.image(qr_png(link), width=260, caption=t_plain("class.qr"))


def render_count(count: Callable[[], int]) -> None:
    """ "N answered", refreshed every COUNT_S while the question is open."""

    @st.fragment(run_every=COUNT_S)
    def counter() -> None:
        try:
            n = count()
        except ModelZooError as err:
            render_error(err)
            return
        st.markdown(
            f"<div style='font-size:3rem;font-weight:700'>{t_plain('class.answered', n=n)}</div>",
            unsafe_allow_html=True,
        )  # a number and our own words

    counter()


def quoted(answer: str) -> str:
    """An answer in a sentence: in quotation marks, unless it has its own ("nearer to “car”" stays as it is,
    not "“nearer to “car””"). A sentence's full stop stays inside the marks."""
    return answer if any(mark in answer for mark in '“”"') else f"“{answer}”"


def comparison(bars: Sequence[tuple[str, int]], answer: str, label: Callable[[str], str]) -> str:
    """The one line under the reveal: how many answered as the model did, and the class's commonest answer."""
    n = sum(c for _, c in bars)
    if not n:
        return t_plain("class.compare_none")
    same = sum(c for text, c in bars if text.casefold() == answer.casefold())
    top, top_n = bars[0]
    return t_plain(
        "class.compare",
        same=same,
        n=n,
        share=f"{same / n:.0%}",
        answer=quoted(label(answer)),
        top=quoted(label(top)),
        top_n=top_n,
    )


def with_every_option(bars: Sequence[tuple[str, int]], options: Sequence[str]) -> list[tuple[str, int]]:
    """The class's answers (text, count), largest first, with every option of the question nobody chose at 0
    after them: the model's answer has its bar on the projector even where no student gave it."""
    given = {text.casefold() for text, _ in bars}
    return [*bars, *((o, 0) for o in options if o.casefold() not in given)]


def render_reveal(
    bars: Sequence[tuple[str, int]],
    model: str,
    answer: str,
    label: Callable[[str], str],
    extra: str = "",
    options: Sequence[str] = (),
) -> None:
    """The class's answers as bars, largest first (and the question's other `options` at 0), beside the live
    model's answer and one line comparing them."""
    bars = with_every_option(bars, options)
    n = sum(c for _, c in bars) or 1
    chart, model_side = st.columns([3, 2])
    with chart:
        pairs = [(label(text), c / n) for text, c in bars[:12]]
        st.plotly_chart(build_score_bars(pairs, t_plain("class.chart", n=sum(c for _, c in bars))), key="class_bars")
    with model_side:
        st.metric(t_plain("class.model_says", model=model), label(answer))
        if extra:
            st.caption(extra)
    st.markdown(f"**{t_plain('class.compare_lead')}** " + md_escape(comparison(bars, answer, label)))


# -- the lessons' buttons ----------------------------------------------------------------------------
def render_ask(key: str, prompt: str, options: Sequence[str], details: Callable[[], dict[str, Any] | None]) -> None:
    """ "Ask the class" under a lesson's question, for the teacher only: the question, its options and the
    live model's answer (`details`, computed on the click) go to the class; the tab turns into the projector."""
    found = teacher()
    if found is None:
        return
    if not st.button(t("class.ask"), key=f"class_ask_{key}", icon=":material/campaign:"):
        return
    try:
        facts = details()
    except ModelZooError as err:
        render_error(err)
        return
    if facts is None:
        return
    code, secret = found
    try:
        store().ask(code, secret, key, prompt, options, facts | {"link": here()})
    except ModelZooError as err:
        render_error(err)
        return
    st.session_state[ASKED] = True
    st.switch_page(CLASS_PAGE, query_params={"code": code, "key": secret})


def render_teacher_sidebar() -> None:
    """On every lesson, while this tab teaches: the class's code, "Bring the class here" and the way back."""
    found = teacher()
    if found is None:
        return
    code, secret = found
    with st.sidebar.container(border=True, key="class_teacher_box"):
        st.markdown(t("class.teaching", code=code))
        if st.button(t("class.follow_here"), key="class_follow_here", icon=":material/group:"):
            store().follow(code, secret, here())
            st.toast(t_plain("class.followed"))
        st.page_link(
            CLASS_PAGE,
            label=t_plain("class.projector"),
            icon=":material/co_present:",
            query_params={"code": code, "key": secret},
        )


# -- a student's screen ------------------------------------------------------------------------------
def _signature(now: Any) -> tuple[int | None, bool, int]:
    """What a student's screen shows, in short: a change of it redraws the screen."""
    question = now.question
    return (None if question is None else question.id, bool(question and question.revealed), now.follow_n)


def render_student(code: str, uses_word: Callable[[str, str], bool], big: bool) -> None:
    """The current question of class `code` and a Send button, redrawn without a click when the teacher
    asks, reveals or brings the class somewhere (then this tab moves). `big`: the Class page's own (else a
    box atop a lesson).

    The server reruns this tab when its class changes (serving.class_push: one thread per worker reads
    the class, no tab polls); a watcher fragment that draws nothing still looks every BACKSTOP_S, and
    every POLL_S where the server cannot push. Redrawing the question box at every poll cost a class of
    thirty 11% of a core, and the watchers alone, every 2 s, about 3% and a question's last screen 2 s.
    A change reruns this tab once; Send reruns the box's own fragment."""
    session_id()  # into the URL now: a reload keeps it
    try:
        now = store().status(code)
    except ModelZooError as err:
        render_error(err)
        st.session_state.pop(STUDENT, None)  # an ended or expired class: the tab leaves it
        return
    seen = st.session_state.get("class_follow_seen")
    if now.follow and now.follow_n != seen:
        st.session_state["class_follow_seen"] = now.follow_n
        target = page_of(now.follow)
        if target is not None:  # the class's code goes along: a tab that reconnects to another worker rejoins
            ours = {"lang": current_lang(), JOINED: code, ME: session_id()}  # a link of before kept ?lang=
            st.switch_page(target[0], query_params=target[1] | ours)
    elif seen is None:
        st.session_state["class_follow_seen"] = now.follow_n
    shown = st.session_state["class_shown"] = _signature(now)
    pushed = bool(_pushes) and _pushes[0](code, shown, _signature)

    @st.fragment
    def box() -> None:
        current = store().status(code).question if now.question is not None else None
        with st.container(border=True, key="class_student_box"):
            st.caption(t("class.you_are_in", code=code))
            if current is None:
                st.write(t("class.wait"))
                return
            render_question(code, current, uses_word, big)

    @st.fragment(run_every=BACKSTOP_S if pushed else POLL_S)
    def watch() -> None:
        try:
            changed = _signature(store().status(code)) != st.session_state.get("class_shown")
        except ModelZooError:
            changed = True  # the class ended: the tab's next run says so
        if changed:
            st.rerun()

    box()
    watch()


def in_each_language(prompt: Callable[[], str], labels: Callable[[], dict[str, str]] = dict) -> dict[str, Any]:
    """A question's prompt and its options' labels as each language writes them: its details' "in", from which
    every student reads their own (render_question). `prompt` and `labels` write them in the language spoken."""
    return in_every_language(lambda: {"prompt": prompt(), "labels": labels()})


def render_question(code: str, question: QuestionLike, uses_word: Callable[[str, str], bool], big: bool) -> None:
    """One question as a student answers it: the options (or a box), a nickname on the Class page, Send."""
    qid, details = question.id, question.details
    ours = details.get("in", {}).get(current_lang(), {})  # the question as written in this student's language
    labels: dict[str, str] = ours.get("labels") or details.get("labels", {})
    (st.subheader if big else st.markdown)(md_escape(ours.get("prompt", question.prompt)))
    sent_key = f"class_sent_{qid}"
    if sent_key not in st.session_state and (before := store().my_answer(code, session_id(), qid)) is not None:
        st.session_state[sent_key] = before  # this tab sent it before a reload: asked once, then remembered
    st.session_state.setdefault(sent_key, None)
    if question.revealed:  # the answers are on the projector: what this tab sent, and the model's answer
        if (mine := st.session_state[sent_key]) is not None:
            st.write(t("class.you_sent", answer=quoted(labels.get(mine, mine))))
        if "answer" in details:
            answer = str(details["answer"])
            said = t("class.revealed", model=details.get("model", ""), answer=labels.get(answer, answer))
            st.info(said, icon=":material/lightbulb:")
        else:
            st.info(t("class.revealed_map"), icon=":material/lightbulb:")
        return
    with st.form(key=f"class_form_{qid}", border=False, enter_to_submit=True):
        if question.options:
            choice = st.radio(
                t("class.your_answer"),
                [str(o) for o in question.options],
                index=None,
                format_func=lambda o: labels.get(o, o),
                horizontal=True,
            )
        else:
            choice = st.text_input(t("class.your_answer"))
        # the box's value, not session_state's copy: a fragment's form submit can reach the script before it
        nickname = st.text_input(t("class.nickname"), key="class_nickname") if big else None
        pressed = st.form_submit_button(t("class.send"), type="primary")
    if pressed:
        word = details.get("word")
        if not choice or not str(choice).strip():
            st.info(t("class.empty"), icon=":material/info:")
        elif word and not uses_word(str(choice), word):
            st.info(t("class.must_use", word=word), icon=":material/info:")
        else:
            try:
                name = nickname or st.session_state.get("class_nickname")  # a lesson's box: the Class page's name
                store().answer(code, session_id(), str(choice), name or None, qid)
                st.session_state[sent_key] = str(choice)
            except ModelZooError as err:
                render_error(err)
    if (mine := st.session_state[sent_key]) is not None:
        st.success(t("class.sent", answer=quoted(labels.get(mine, mine))), icon=":material/check_circle:")


def render_join() -> None:
    """A code box for a student who did not come through the link."""
    with st.form("class_join", border=True):
        st.subheader(t("class.join_title"))
        code = st.text_input(t("class.code"), placeholder="ABC234")
        if st.form_submit_button(t("class.join"), type="primary"):
            if not code.strip():  # not "There is no class with the code ''"
                render_error(EmptyInput("class code"))
                return
            try:
                st.session_state[STUDENT] = store().join(code).code
            except ModelZooError as err:
                render_error(err)
                return
            st.rerun()
