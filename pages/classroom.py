"""Class mode (issue 35): a teacher starts a class and asks it a question; students answer from their own
browsers without an account; the projector counts the answers live and reveals them beside the live
model's. Students join with the code (/class?code=CODE); the teacher's link also holds a secret
(/class?code=CODE&key=SECRET), the only way to the controls. The lessons' own questions are asked from the
lessons (their "Ask the class" button, while this tab teaches); the open tasks from here."""

from __future__ import annotations

from functools import partial
from typing import Any
from urllib.parse import urlsplit

import streamlit as st

from components import classroom_view as view
from components.frame import ensure_app_frame, open_at_top
from components.i18n import current_lang, t, t_plain
from components.light_charts import Own, build_sense_map, chart_labels, render_light_chart
from components.notices import render_error, render_script_note
from components.quiz import listed
from components.senses_tools_view import sense_labels
from model_zoo import ModelZooError
from model_zoo.registry import FILL_MASK, list_models
from serving import class_mode, lesson_senses
from serving.classroom import NotTeacher, QuestionInfo, TooLong

BLANK = "Paris is the capital of [MASK]."
BLANK_CHARS = 300  # the teacher's blank sentence: a line on the projector, not a paragraph
MODELS = {card.name for card in list_models()}


def students_link(code: str) -> str:
    """The link the QR code carries: this server's /class page with the code (no secret)."""
    url = urlsplit(st.context.url or "http://localhost/class")
    return f"{url.scheme}://{url.netloc}{url.path.rstrip('/') or '/class'}?code={code}"


def start() -> None:
    code, secret = class_mode.store().start_class()
    st.session_state[view.TEACHER] = (code, secret)
    st.query_params.update({"code": code, "key": secret})  # a reload keeps the class
    st.rerun()


def landing() -> None:
    st.write(t("class.intro", hours=f"{class_mode.retention_hours():g}"))
    join, teach = st.columns(2)
    with join:
        view.render_join()
    with teach, st.container(border=True):
        st.subheader(t("class.teach_title"))
        st.write(t("class.teach_how"))
        if st.button(t("class.start"), type="primary", icon=":material/co_present:"):
            try:
                start()
            except ModelZooError as err:  # no store on this server: one sentence
                render_error(err)


# -- the teacher's projector -------------------------------------------------------------------------
def ask_open_task(code: str, secret: str) -> None:
    """The open tasks: a sentence that uses a sense-labelled word, or a guess at the masked LM's blank."""
    with st.container(border=True):
        st.subheader(t("class.ask_title"))
        st.caption(t("class.from_lessons"))
        # outside the form: choosing the task reruns the page, so the form shows that task's box alone
        task = st.radio(
            t("class.task"),
            ("sentence", "blank"),
            format_func=lambda k: t_plain(f"class.task_{k}"),
            horizontal=True,
            key="class_task_kind",
        )
        with st.form("class_task", border=False, enter_to_submit=True):
            if task == "sentence":
                word, text = st.selectbox(t("class.sentence_word"), class_mode.sentence_words()), ""
            else:
                # no max_chars: Streamlit's box drops a longer paste without a word (components.url.limited_box)
                word, text = "", st.text_input(t("class.blank_text"), BLANK)
            if not st.form_submit_button(t("class.ask"), type="primary", icon=":material/campaign:"):
                return
    try:
        if task == "blank" and len(text) > BLANK_CHARS:
            raise TooLong("text", len(text), BLANK_CHARS)
        if task == "sentence":
            written = view.in_each_language(lambda: t_plain("class.sentence_q", word=word))
            details: dict[str, Any] = {"kind": "sentence", "word": word, "model": class_mode.map_model()}
        else:
            model, top = class_mode.blank_answers(text)
            written = view.in_each_language(lambda: t_plain("class.blank_q", text=text))
            details = {"kind": "blank", "model": model, "answer": top[0][0].strip(), "top": listed(top, n=5)}
        details["in"] = written  # each student reads the question in their own language
        class_mode.store().ask(code, secret, f"class_{task}", written[current_lang()]["prompt"], (), details)
    except ModelZooError as err:
        render_error(err)
        return
    st.rerun()


def current(code: str, secret: str, question: QuestionInfo) -> None:
    """The question asked last: its live count until revealed, then the class beside the model."""
    store, details = class_mode.store(), question.details
    st.subheader(question.prompt, anchor=False)
    if (lesson := view.page_of(details.get("link", ""))) is not None and details.get("link"):
        st.page_link(
            lesson[0], label=t_plain("class.back_to_lesson"), icon=":material/arrow_back:", query_params=lesson[1]
        )
    if not question.revealed:
        view.render_count(lambda: store.count(code, question.id))
        if st.button(t("class.reveal"), type="primary", icon=":material/visibility:"):
            store.reveal(code, secret, question.id)
            st.rerun()
        return
    st.caption(t_plain("class.answered", n=store.count(code, question.id)))
    bars = [(b.text, b.count) for b in store.answers(code, secret, question.id)]
    if details.get("kind") == "sentence":
        sentence_map(code, secret, question)
    elif "answer" in details:
        labels = details.get("labels", {})
        extra = details.get("top") or details.get("why", "")
        view.render_reveal(
            bars, details.get("model", ""), str(details["answer"]), lambda o: labels.get(o, o), extra, question.options
        )
        if details.get("kind") == "blank" and details.get("model") in MODELS:  # Chinese on an English-only model
            render_script_note(details.get("model", ""), question.prompt, FILL_MASK)
    moderate(code, secret, question)


def sentence_map(code: str, secret: str, question: QuestionInfo) -> None:
    """Every student's sentence on the Word senses map, at a layer the teacher steps through."""
    word = question.details["word"]
    sentences = [r.text for r in class_mode.store().responses(code, secret, question.id) if not r.hidden]
    sense_set = lesson_senses.sense_sets()[word]
    try:
        depth = class_mode.map_depth(word)
        layer = st.slider(t("class.layer"), 0, depth, depth, key=f"class_layer_{question.id}")
        with st.spinner(t_plain("class.reading", n=len(sentences))):
            drawn = class_mode.class_map(word, layer, sentences)
    except ModelZooError as err:
        render_error(err)
        return
    names = list(sense_labels(sense_set).values())  # in sense_keys' order, as sense_set.labels
    stars = [
        Own(float(x), float(y), s, t_plain("senses.vote", sense=names[v], share=f"{share:.0%}"), v)
        for (x, y), s, v, share in zip(drawn.points, drawn.sentences, drawn.votes, drawn.shares, strict=True)
    ]
    title = t_plain("senses.map_title", model=drawn.model, layer=drawn.layer, layers=drawn.depth)
    chart = build_sense_map(
        drawn.uses, sense_set.sense_numbers, names, sense_set.sentences, sense_set.use_glosses, word, title,
        None, t_plain("class.their_sentences"), chart_labels(), stars,
    )  # fmt: skip
    render_light_chart(chart, key="class_map")
    counts = {n: drawn.votes.count(i) for i, n in enumerate(names) if drawn.votes.count(i)}
    said = ", ".join(f"{n}: {c}" for n, c in sorted(counts.items(), key=lambda kv: -kv[1]))
    st.write(t("class.map_line", layer=drawn.layer, model=drawn.model, n=len(drawn.sentences), counts=said or "—"))
    if drawn.left_out:
        st.caption(t("class.left_out", n=drawn.left_out, word=word))


def moderate(code: str, secret: str, question: QuestionInfo) -> None:
    """Every answer, each with a switch that hides it from the projector's chart and map."""
    rows = class_mode.store().responses(code, secret, question.id)
    with st.expander(t("class.moderate", n=len(rows))):
        for row in rows:
            text, hide = st.columns([5, 1], vertical_alignment="center")
            text.text(f"{row.nickname or '·'}: {row.text}")
            hidden = hide.toggle(t("class.hidden"), value=row.hidden, key=f"class_hide_{row.id}")
            if hidden != row.hidden:
                class_mode.store().hide(code, secret, row.id, hidden)
                st.rerun()


def follow_and_end(code: str, secret: str) -> None:
    store = class_mode.store()
    status = store.status(code)
    with st.container(border=True):
        st.subheader(t("class.follow_title"))
        if status.follow:
            st.write(t("class.following", link=status.follow))
            if st.button(t("class.release"), icon=":material/lock_open:"):
                store.follow(code, secret, None)
                st.rerun()
        else:
            st.caption(t("class.follow_how"))
    with st.expander(t("class.end_title")):
        st.download_button(  # the class's answers read from the store when the teacher clicks, not on every run
            t("class.download"),
            partial(store.export_csv, code, secret),
            f"class-{code}.csv",
            "text/csv",
            icon=":material/download:",
            on_click="ignore",
        )
        if st.button(t("class.end"), type="primary", icon=":material/logout:"):
            store.end_class(code, secret)
            st.session_state.pop(view.TEACHER, None)
            view.forget_teaching_tab()
            st.query_params.clear()
            st.session_state["class_ended"] = True
            st.rerun()


def teach(code: str, secret: str) -> None:
    question = class_mode.store().current_question(code)
    link = students_link(code)
    view.render_code(code, link, big=question is None)
    if view.on_this_computer_only(link):  # the teacher opened the app as localhost: the QR code leads nowhere
        address, url = view.network_address(link), urlsplit(link)
        here = f"{url.scheme}://{url.netloc}"
        st.warning(
            t("class.local_link", address=address, here=here) if address else t("class.local_link_none", here=here),
            icon=":material/wifi_off:",
        )
    st.caption(t("class.keep_link"))
    if question is not None:
        with st.container(border=True, key="class_current"):
            current(code, secret, question)
    ask_open_task(code, secret)
    follow_and_end(code, secret)
    if st.session_state.pop(view.ASKED, False):  # from a lesson's foot: the question just asked is at the top
        open_at_top()


def run() -> None:
    ensure_app_frame()
    st.title(t("class.title"))
    if st.session_state.pop("class_ended", False):
        st.success(t("class.ended"), icon=":material/check_circle:")
    code, secret = st.query_params.get("code", ""), st.query_params.get("key", "")
    try:
        if code and secret and class_mode.store().check_teacher(code, secret):
            st.session_state[view.TEACHER] = (class_mode.store().join(code).code, secret)
            teach(*st.session_state[view.TEACHER])
            return
        if code and secret:  # a wrong secret opens a student's view, nothing more
            render_error(NotTeacher(code))
        if code:  # a student's link
            st.session_state[view.STUDENT] = class_mode.store().join(code).code
    except ModelZooError as err:
        render_error(err)
        if code:  # the link's class has ended: the tab leaves it, said here once (not again by its box)
            st.session_state.pop(view.STUDENT, None)
    joined = st.session_state.get(view.STUDENT)
    if joined:
        view.render_student(joined, class_mode.uses_word, big=True)
        if st.button(t("class.leave"), icon=":material/logout:"):
            st.session_state.pop(view.STUDENT, None)
            st.query_params.clear()
            st.rerun()
        return
    landing()


run()
