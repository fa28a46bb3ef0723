"""The Class page (issue 35) as a teacher and students meet it, each an AppTest session of the whole app on
one SQLite class store: start, join by link or code, a question asked from a lesson and answered, the
projector's count and reveal beside the model, moderation, follow-me, and the end of the class. The
same in real browsers, eight students and two workers: tests/test_class_browser.py."""

from __future__ import annotations

import html
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import all_text, app, open_page, shown
from tests.test_bad_input import BAD


@pytest.fixture(autouse=True)
def class_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A class store of this test's own: a SQLite file in its temporary folder."""
    from serving.classroom import store as store_module

    url = f"sqlite:///{tmp_path / 'class.sqlite3'}"
    monkeypatch.setenv("CONTEXTLAB_DB", url)
    yield url
    with store_module._stores_lock:
        found = store_module._stores.pop(url, None)
    if found is not None:
        found.close()


def open_class(**query: str):  # noqa: ANN201
    return open_page("pages/classroom.py", **query)


def start_class():  # noqa: ANN201
    """A teacher's tab that has pressed "Start a class": (the AppTest, code, secret)."""
    at = open_class()
    next(b for b in at.button if b.label == "Start a class").click().run()
    assert not at.exception
    code, secret = at.query_params["code"], at.query_params["key"]
    return at, code if isinstance(code, str) else code[0], secret if isinstance(secret, str) else secret[0]


def all_text_and_success(at) -> str:  # noqa: ANN001
    return all_text(at) + "\n" + "\n".join(str(e.value) for e in at.success)


def store():  # noqa: ANN201
    from serving import class_mode

    return class_mode.store()


def test_the_page_offers_to_join_or_start_and_asks_nothing_personal() -> None:
    at = open_class()
    assert not at.exception
    said = all_text(at)
    assert "Join a class" in said and "Teach" in said and "nothing personal is asked" in said
    assert [b.label for b in at.button if b.label == "Start a class"] and len(at.text_input) == 1  # the code only


def test_joining_with_no_code_asks_for_the_code_and_a_wrong_code_says_so() -> None:
    at = open_class()
    join = next(b for b in at.button if b.label == "Join")
    join.click().run()
    said = "\n".join(str(e.value) for e in at.info)
    assert not at.exception and "The class code is empty: type something first." in said
    at.text_input[0].set_value("ZZZ999")
    next(b for b in at.button if b.label == "Join").click().run()
    said = "\n".join(str(e.value) for e in at.info)
    assert "There is no class with the code “ZZZ999”" in said and "empty" not in said


def test_a_started_class_shows_its_code_and_keeps_it_on_reload() -> None:
    at, code, secret = start_class()
    assert len(code) == 6 and len(secret) >= 22  # 128 bits and more, URL-safe
    assert code in all_text(at) and f"class?code={code}" in all_text(at)
    assert at.get("imgs") or at.get("image")  # the QR code
    again = open_class(code=code, key=secret)  # a reload: a fresh session, same URL
    assert not again.exception and code in all_text(again) and "Reveal" not in all_text(again)
    assert any(b.label == "Ask the class" for b in again.button)


def test_the_teachers_open_task_form_shows_the_box_of_the_chosen_task_only() -> None:
    """Choosing the task changes the form: a word to write a sentence with, or a sentence with a blank; never
    both boxes, one of which the class would not be asked about."""
    at, _, _ = start_class()
    assert [w.label for w in at.selectbox] == ["Word"] and not [
        w for w in at.text_input if w.label.startswith("Sentence with a blank")
    ]
    next(r for r in at.radio if r.label == "Task").set_value("blank").run()
    assert not at.exception and not [w for w in at.selectbox if w.label == "Word"]
    assert [w.value for w in at.text_input if w.label.startswith("Sentence with a blank")] == [
        "Paris is the capital of [MASK]."
    ]


def test_students_answer_the_projector_counts_and_reveals_beside_the_model() -> None:
    at, code, secret = start_class()
    question = store().ask(
        code, secret, "mlm_paris", "Which word does the model put in the blank?", ["france", "paris"],
        {"kind": "lesson", "answer": "france", "model": "tiny-mlm", "labels": {"france": "France", "paris": "Paris"}},
    )  # fmt: skip
    students = []
    for choice in ("France", "France", "Paris"):
        student = open_class(code=code)
        assert not student.exception and "Which word does the model put in the blank?" in all_text(student)
        assert not any(
            b.label in ("Reveal", "Ask the class", "End the class and delete its answers") for b in student.button
        )
        student.radio[0].set_value(next(o for o in ("france", "paris") if o.capitalize() == choice))
        next(b for b in student.button if b.label == "Send").click().run()
        assert not student.exception and "Sent:" in all_text_and_success(student)
        students.append(student)
    assert store().count(code, question.id) == 3
    at.run()
    assert "3 answered" in all_text(at)
    next(b for b in at.button if b.label == "Reveal").click().run()
    said = all_text(at)
    assert "2 of 3 (67%) answered “France”, as the model did" in said and "most common answer was “France” (2)" in said
    assert at.get("metric")[0].value == "France"


def test_the_reveal_draws_the_models_answer_even_where_nobody_gave_it() -> None:
    """Nobody picked the model's answer: it still has its bar (at 0%) on the projector, and an option worded
    with its own quotation marks is not quoted again; a student's sentence keeps one full stop."""
    import json

    at, code, secret = start_class()
    labels = {"car": "nearer to “car”", "dog": "nearer to “dog”", "equal": "equally far from both"}
    store().ask(
        code, secret, "onehot_puppy", "Where does “puppy” land?", list(labels),
        {"kind": "lesson", "answer": "equal", "model": "one-hot", "labels": labels},
    )  # fmt: skip
    student = open_class(code=code)
    student.radio[0].set_value("car")
    next(b for b in student.button if b.label == "Send").click().run()
    assert "Sent: nearer to “car” — you can change" in all_text_and_success(student)
    at.run()
    next(b for b in at.button if b.label == "Reveal").click().run()
    spec = json.loads(next(c for c in at.get("plotly_chart") if c.proto.id.endswith("-class_bars")).proto.spec)
    drawn = [html.unescape(label) for label in spec["data"][0]["y"]]
    assert set(drawn) == set(labels.values())  # every option, the model's answer among them
    said = all_text(at)
    assert "0 of 1 (0%) answered “equally far from both”, as the model did" in said
    assert "the class's most common answer was nearer to “car” (1)" in said and "““" not in said


def test_a_lessons_question_is_asked_from_the_lesson_with_the_live_models_answer(tiny_zoo: Path) -> None:
    """The teacher's tab, on the One-hot lesson: "Ask the class" under its check-yourself question sends
    the question, its options and the answer the page computes now; the tab turns into the projector."""
    at, code, secret = start_class()
    at.switch_page("pages/onehot.py").run()
    assert not at.exception
    asks = [b for b in at.button if b.label == "Ask the class"]
    assert asks, "no Ask the class button in the teacher's lesson"
    next(b for b in at.button if b.key == "class_ask_onehot_cos").click().run()
    asked = store().status(code).question
    assert asked is not None and asked.key == "onehot_cos" and "cosine similarity" in asked.prompt
    assert asked.details["answer"] in asked.options and asked.details["why"]  # the live answer is an option
    assert "0 answered" in all_text(at) or "Reveal" in [b.label for b in at.button]
    student = open_class(code=code)
    assert not any(b.key and b.key.startswith("class_ask_") for b in student.button)
    student.switch_page("pages/onehot.py").run()  # a student in a lesson: the question atop it, no teacher button
    assert "cosine similarity" in all_text(student) and not any(b.label == "Ask the class" for b in student.button)


def test_the_teacher_brings_the_class_to_a_view_and_releases_it() -> None:
    at, code, secret = start_class()
    at.switch_page("pages/onehot.py").run()
    next(b for b in at.button if b.label == "Bring the class here").click().run()
    status = store().status(code)
    assert status.follow is not None and status.follow.startswith("/") and status.follow_n == 1
    at.switch_page("pages/classroom.py").run()
    next(b for b in at.button if b.label == "Release the class to explore").click().run()
    assert store().status(code).follow is None


def test_a_student_brought_to_a_lesson_keeps_their_own_language() -> None:
    """The teacher's English does not travel with "Bring the class here": a student reading in Chinese lands on
    the lesson in Chinese (the link kept the teacher's ?lang=en and turned the student's page English)."""
    at, code, secret = start_class()
    student = open_class(code=code, lang="zh")
    assert not student.exception
    at.switch_page("pages/onehot.py").run()
    next(b for b in at.button if b.label == "Bring the class here").click().run()
    follow = store().status(code).follow
    assert follow is not None and "lang=" not in follow
    student.run()
    assert not student.exception
    assert student.query_params["lang"] in ("zh", ["zh"]) and student.query_params["class"] in (code, [code])
    assert "机器" in student.title[0].value or "向量" in student.title[0].value  # (AppTest's URL is the road's)


def test_each_student_reads_the_teachers_question_in_their_own_language(tiny_zoo: Path) -> None:
    """An English teacher's question reaches a student who reads Chinese in Chinese, options included: the
    heading was the teacher's English in an otherwise Chinese page. The projector keeps the teacher's language."""
    at, code, secret = start_class()
    at.switch_page("pages/onehot.py").run()
    next(b for b in at.button if b.key == "class_ask_onehot_cos").click().run()
    assert not at.exception
    asked = store().status(code).question
    assert asked is not None and asked.prompt.startswith("What is the cosine similarity")
    student = open_class(code=code, lang="zh")
    assert not student.exception
    said = all_text(student)
    assert "“dog”和“cat”的 one-hot 向量的余弦相似度是多少？" in said and "cosine similarity" not in said
    english = open_class(code=code, lang="en")
    assert "cosine similarity" in all_text(english)
    # the Class page's own tasks too
    at = open_class(code=code, key=secret, lang="en")
    next(r for r in at.radio if r.label == "Task").set_value("blank").run()  # the form then shows the blank's box
    next(w for w in at.text_input if w.label.startswith("Sentence with a blank")).set_value(
        "Paris is the capital of [MASK]."
    )
    next(b for b in at.button if b.label == "Ask the class").click().run()
    assert not at.exception and "Which word does the model put in the blank?" in all_text(at)
    student.run()
    assert "模型会在空格里填哪个词？Paris is the capital of [MASK]." in all_text(student)


def test_bad_answers_and_nicknames_are_stored_and_shown_as_text() -> None:
    """The reliability tests' bad inputs as a class's answers (and nicknames): the projector draws them as
    text (escaped in the chart, plain text in the moderation list), runs nothing and stays up."""
    import json

    at, code, secret = start_class()
    details = {"kind": "blank", "answer": "x", "model": "smollm2-135m-mlm"}
    question = store().ask(code, secret, "class_blank", "Which word?", (), details)
    store()._clock = iter(range(10**6)).__next__  # one send a second on a fake clock: the rate limit has its own test
    sent = {}
    for i, value in enumerate(BAD.values()):
        try:
            store().answer(code, f"s{i}", value, nickname=value[:24], question=question.id)
            sent[i] = value
        except ValueError:  # empty, or over the length limit: one sentence, tested in test_classroom_store
            pass
    store().reveal(code, secret, question.id)
    at = open_class(code=code, key=secret)
    html = BAD["html and script"]
    assert not at.exception and html in sent.values() and BAD["markdown image"] in sent.values()
    bars = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]["y"]
    assert html not in bars and any("&lt;" in label for label in bars)  # plotly reads <b>, <a>: escaped
    listed = [str(e.value) for e in at.text]
    assert any(html in line for line in listed)  # the moderation list: exactly what was sent, as text
    assert all("<img" not in str(m.value) and "<script" not in str(m.value) for m in at.markdown)


def test_ending_the_class_deletes_it_and_its_students_are_told_in_one_sentence() -> None:
    at, code, secret = start_class()
    student = open_class(code=code)
    next(b for b in at.button if b.label == "End the class and delete its answers").click().run()
    assert "The class has ended" in "\n".join(str(s.value) for s in at.success)
    with pytest.raises(Exception):  # noqa: B017, PT011
        store().join(code)
    student.run()
    assert all_text(student).count(f"There is no class with the code “{code}”") == 1  # said once, not twice
    assert any(b.label == "Join" for b in student.button)  # and the page offers to join another


def test_the_classs_sentences_land_on_the_word_senses_map_coloured_by_their_vote(tiny_zoo: Path) -> None:
    from tests.conftest import light_charts

    at, code, secret = start_class()
    next(b for b in at.button if b.label == "Ask the class").click().run()  # the first task: a sentence with "bank"
    question = store().status(code).question
    assert question is not None and question.details["word"] == "bank"
    for i, text in enumerate(("We sat on the bank of the river.", "The bank lent me money.", "I like trains.")):
        student = open_class(code=code)
        student.text_input[0].set_value(text)
        next(b for b in student.button if b.label == "Send").click().run()
        said = all_text_and_success(student)
        assert ("does not use “bank”" in said) == (i == 2)
    next(b for b in at.button if b.label == "Reveal").click().run()
    assert not at.exception
    chart = light_charts(at)["class_map"]
    assert [p["sentence"] for p in chart["others"]] == ["We sat on the bank of the river.", "The bank lent me money."]
    assert all(0 <= p["sense"] < len(chart["senses"]) for p in chart["others"])
    assert "the nearest shipped uses of the class's 2 sentences vote" in all_text(at)
    at.slider[0].set_value(0).run()  # step to the embeddings: the map is drawn anew at that layer
    assert "layer 0" in light_charts(at)["class_map"]["title"]


def test_a_followed_students_tab_that_reconnects_rejoins_its_class(tiny_zoo: Path) -> None:
    """A worker restarts: the student's tab comes back as a new session on the lesson it was brought to
    (its URL holds the class's code), and the question is still atop the page."""
    at, code, secret = start_class()
    store().ask(code, secret, "class_blank", "Which word goes in the blank?", (), {"kind": "blank"})
    student = app(**{"class": code}).run()
    student.switch_page("pages/onehot.py").run()
    assert not student.exception and "Which word goes in the blank?" in all_text(student)
    store().end_class(code, secret)
    gone = app(**{"class": code}).run()
    assert not gone.exception and "class" not in gone.query_params  # an ended class: the lesson goes on alone


def test_a_student_who_reloads_is_the_same_student_and_sees_what_they_sent() -> None:
    """A reload (or a reconnect to another worker) is a fresh session with the same URL: the tab's random
    id is in it, so the answer is replaced, not counted twice, and "Sent" comes back."""
    at, code, secret = start_class()
    question = store().ask(code, secret, "class_blank", "Which word goes in the blank?", (), {"kind": "blank"})
    student = open_class(code=code)
    me = student.query_params["me"]
    student.text_input[0].set_value("France")
    next(b for b in student.button if b.label == "Send").click().run()
    again = open_class(code=code, me=me if isinstance(me, str) else me[0])  # the reload
    assert "Sent: “France”" in "\n".join(str(e.value) for e in again.success)
    again.text_input[0].set_value("Paris")
    next(b for b in again.button if b.label == "Send").click().run()
    assert store().count(code, question.id) == 1 and [b.text for b in store().answers(code, secret, question.id)] == [
        "Paris"
    ]
    other = open_class(code=code, me="not an id <b>")  # a link's bad id: a fresh one, never an error
    assert not other.exception and other.query_params["me"] != "not an id <b>"


def test_the_class_boxes_take_a_long_paste_and_say_in_one_sentence_what_is_too_long(tiny_zoo: Path) -> None:
    """No box of the class page has Streamlit's max_chars, which drops a longer paste without a word
    (streamlit/streamlit#9221): a student's long answer or nickname and a teacher's long blank sentence are
    each answered by one sentence saying the limit, and nothing is sent."""
    join = open_class()
    at, code, secret = start_class()
    next(r for r in at.radio if r.label == "Task").set_value("blank").run()  # the form then shows the blank's box
    next(w for w in at.text_input if w.label.startswith("Sentence with a blank")).set_value("[MASK] is here. " * 25)
    next(b for b in at.button if b.label == "Ask the class").click().run()
    assert "The text is 400 characters long; the most is 300: make it shorter." in all_text(at)
    assert store().status(code).question is None
    question = store().ask(code, secret, "class_blank", "Which word goes in the blank?", (), {"kind": "blank"})
    student = open_class(code=code)
    boxes = [w for page in (join, at, student) for w in page.text_input]
    assert {w.label for w in boxes} >= {"Class code", "Your answer", "Nickname (optional)"}
    assert not [(w.label, w.proto.max_chars) for w in boxes if w.proto.max_chars]
    next(w for w in student.text_input if w.label == "Your answer").set_value("France " * 40)
    next(b for b in student.button if b.label == "Send").click().run()
    assert "The answer is 279 characters long; the most is 200: make it shorter." in all_text(student)
    next(w for w in student.text_input if w.label == "Your answer").set_value("France")
    next(w for w in student.text_input if w.label == "Nickname (optional)").set_value("n" * 30)
    next(b for b in student.button if b.label == "Send").click().run()
    assert "The nickname is 30 characters long; the most is 24: make it shorter." in all_text(student)
    assert store().count(code, question.id) == 0


def test_a_class_started_at_localhost_says_its_link_reaches_no_student(monkeypatch: pytest.MonkeyPatch) -> None:
    """A teacher who opened the app as localhost gets a link and a QR code no student's device opens: the page
    says so, and names this computer's address on its network to use instead (the class stays)."""
    from streamlit import net_util

    from components import classroom_view as classroom

    monkeypatch.setattr(net_util, "get_internal_ip", lambda: "192.168.1.20")
    at, code, _ = start_class()  # AppTest's page has no URL of its own: the link reads http://localhost/class
    warned = " ".join(shown(str(w.value)) for w in at.warning)
    assert "This link names this computer only (http://localhost)" in warned and "http://192.168.1.20" in warned
    assert classroom.on_this_computer_only("http://127.0.0.1:8660/class?code=ABC234")
    assert classroom.on_this_computer_only("http://[::1]:8501/class")
    for reached in ("http://192.168.1.20:8501/class", "https://contextlab.school.example/class", "http://lab-pc/class"):
        assert not classroom.on_this_computer_only(reached)
    assert classroom.network_address("http://localhost:8501/class?code=ABC234") == "http://192.168.1.20:8501"
