"""Class mode (issue 35) in real browsers: a teacher's projector and eight students, each in a browser
context of its own (its own Streamlit session), answering an open task. On one app process with the class
in a SQLite file, and on `scripts/serve.py --workers 2` (nginx in front of two app processes) with the
class in a real PostgreSQL, the students spread over both workers. The same flows as AppTest sessions:
tests/test_class_page.py."""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from tests.conftest import ROOT, fresh_database
from tests.test_browser import Page, browser, serve, wait_healthy  # noqa: F401  (browser: the module's Chromium fixture)
from tests.test_serve import _free_port_block

pytestmark = pytest.mark.browser

# What eight students type for "Paris is the capital of [MASK].": answers that differ only in case are one bar.
ANSWERS = ("France", "Paris", "france", "France", "Lyon", "France", "France", "France")
TEACHER_ONLY = (
    "Reveal",
    "Ask the class",
    "End the class and delete its answers",
    "Release the class to explore",
    "Bring the class here",
)
WAIT_MS = 180_000  # a first question loads the masked LM, on a machine that may be busy with other work
SEEN_MS = 20_000  # what a live screen (the projector's count, a student's poll) is given to catch up
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
# A student's own watcher looks only every 10 minutes, pushed or not: the reveal reaches the students' screens
# in these tests by the server's push alone (serving.class_push), on one worker and across two.
PUSH_ONLY = {"CONTEXTLAB_CLASS_POLL_S": "600", "CONTEXTLAB_CLASS_BACKSTOP_S": "600"}


def worker_of(tab: Page) -> str | None:
    """The worker scripts/serve.py's nginx pinned this browser to (its cookie), None without one."""
    return next((c["value"] for c in tab.context.cookies() if c["name"] == "contextlab_worker"), None)


def dismiss_dialogs(tab: Page, seen: list[str]) -> None:
    """Note the text of any modal box over the page (Streamlit's "Page not found") in `seen`, and close it."""
    dialogs = tab.page.get_by_role("dialog")
    if dialogs.count():
        seen.extend(dialogs.all_inner_texts())
        tab.shot("class-opened-with-a-box")
    for _ in range(dialogs.count()):
        dialogs.first.get_by_role("button", name="Close").click()
        tab.page.wait_for_timeout(300)


def start_and_ask(tab: Page, url: str, seen: list[str]) -> str:
    """The teacher starts a class and asks the blank task; the class's code."""
    tab.open(f"{url}/class?lang=en")
    dismiss_dialogs(tab, seen)
    tab.page.get_by_role("button", name="Start a class").click()
    tab.page.wait_for_function("() => new URLSearchParams(location.search).has('key')", timeout=WAIT_MS)
    tab.settle()
    query = parse_qs(urlparse(tab.page.url).query)
    assert query["lang"] == ["en"] and query["key"][0]
    tab.page.get_by_text("Guess the word the model puts in a blank").click()
    # the choice reruns the page, whose form then holds the blank's box (a busy server draws it a moment later)
    box = tab.page.get_by_label(re.compile("^Sentence with a blank"))
    expect(box).to_have_value("Paris is the capital of [MASK].", timeout=WAIT_MS)
    tab.settle()
    tab.page.get_by_role("button", name="Ask the class").click()
    tab.page.get_by_text("0 answered", exact=True).wait_for(timeout=WAIT_MS)
    return query["code"][0]


def join(tab: Page, url: str, code: str, seen: list[str]) -> None:
    """A student opens the students' link and sees the question with a box for the answer."""
    tab.page.goto(f"{url}/class?code={code}")
    tab.page.get_by_label("Your answer").wait_for(timeout=WAIT_MS)
    dismiss_dialogs(tab, seen)
    assert "Which word does the model put in the blank? Paris is the capital of [MASK]." in tab.page.inner_text("body")


def teacher_controls(tab: Page) -> list[str]:
    """The teacher's controls this tab shows (as buttons or anywhere in its text)."""
    body = tab.page.inner_text("body")
    return [
        label
        for label in TEACHER_ONLY
        if tab.page.get_by_role("button", name=label).count() or re.search(rf"\b{re.escape(label)}\b", body)
    ]


@dataclass
class Class:
    """A class's tabs, open, and the text of each modal box that covered one of them as it opened."""

    teacher: Page
    students: list[Page]
    boxes: list[str]

    def close(self) -> None:
        for tab in (self.teacher, *self.students):
            tab.close()

    def no_boxes(self) -> None:
        """The first visitor of a fresh app process who comes by the Class page's link gets the page, not
        "Page not found" over it. (Asserted last: a box closed as it came lets the rest of the class run.)"""
        assert self.boxes == [], f"a box covered the Class page as it opened: {self.boxes}"


def run_class(browser, url: str, name: str) -> Class:  # noqa: ANN001, F811
    """A teacher and eight students through one question: asked, answered, counted live, revealed. Returns
    the tabs (still open) after asserting what each one shows."""
    from playwright.sync_api import expect

    teacher = Page(browser)
    students: list[Page] = []
    boxes: list[str] = []  # modal boxes over a page as it opened
    try:
        code = start_and_ask(teacher, url, boxes)
        for _ in ANSWERS:  # one after another, as a class trickles in (and as nginx balances first visits)
            students.append(Page(browser))
            join(students[-1], url, code, boxes)
            assert teacher_controls(students[-1]) == []
        for i, (student, answer) in enumerate(zip(students, ANSWERS, strict=True)):
            student.page.get_by_label("Your answer").fill(answer)
            if i % 2:
                student.page.get_by_label("Nickname (optional)").fill(f"student {i}")
        students[-1].page.wait_for_timeout(2500)  # typed answers stay while the class's tabs are pushed and polled
        for student in students:
            student.page.get_by_role("button", name="Send").click()
        for student, answer in zip(students, ANSWERS, strict=True):
            student.page.get_by_text(f"Sent: “{answer}”").wait_for(timeout=SEEN_MS)
        expect(teacher.page.get_by_text("8 answered", exact=True)).to_be_visible(timeout=SEEN_MS)  # no click

        teacher.page.get_by_role("button", name="Reveal").click()
        chart = teacher.chart("The class's answers (8)", timeout=WAIT_MS)
        metric = teacher.page.locator('[data-testid="stMetric"]').filter(has_text="says")
        metric.wait_for(timeout=WAIT_MS)
        said = metric.locator('[data-testid="stMetricValue"]').inner_text().strip()
        assert metric.locator('[data-testid="stMetricLabel"]').inner_text().strip().endswith(" says") and said
        shown = chart.inner_text()
        assert all(word in shown for word in ("France", "Paris", "Lyon"))  # one bar per answer, "france" in France's
        chart_box, metric_box = chart.bounding_box(), metric.bounding_box()
        assert chart_box and metric_box and chart_box["x"] + chart_box["width"] <= metric_box["x"]  # side by side
        assert metric_box["y"] < chart_box["y"] + chart_box["height"]
        same = sum(a.casefold() == said.casefold() for a in ANSWERS)
        line = teacher.page.locator('[data-testid="stMarkdown"]').filter(has_text="What it shows:").inner_text()
        assert line.startswith("What it shows:") and f"{same} of 8 ({same / 8:.0%}) answered “{said}”" in line
        assert "the class's most common answer was “France” (6)" in line
        teacher.shot(f"{name}-projector")

        for student, answer in zip(students, ANSWERS, strict=True):
            student.page.get_by_text(f"says {said}.").wait_for(timeout=SEEN_MS)  # "Revealed: <model> says <answer>."
            assert f"You sent: “{answer}”" in student.page.inner_text("body")
            assert teacher_controls(student) == []
        students[0].shot(f"{name}-student")
        for tab in (teacher, *students):
            assert tab.exceptions() == 0
            assert tab.blocked == []  # nothing left localhost
        return Class(teacher, students, boxes)
    except BaseException:
        for tab in (teacher, *students):
            tab.close()
        raise


def test_eight_students_answer_and_the_projector_counts_and_reveals(browser, tmp_path: Path) -> None:  # noqa: F811
    """One app process, the class in a SQLite file of this test's own."""
    with serve({"CONTEXTLAB_DB": f"sqlite:///{tmp_path / 'class.sqlite3'}"} | PUSH_ONLY) as url:
        taught = run_class(browser, url, "class")
        try:  # the teacher's export, read from the store on the click (a deferred download): the eight answers
            teacher = taught.teacher.page
            teacher.get_by_text("End the class", exact=True).click()
            with teacher.expect_download(timeout=30_000) as download:
                teacher.get_by_role("button", name="Download the answers (CSV)").click()
            rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8"))))
            assert download.value.suggested_filename.startswith("class-") and len(rows) == len(ANSWERS)
            assert sorted(r["answer"] for r in rows) == sorted(ANSWERS)
        finally:
            taught.close()
    assert (tmp_path / "class.sqlite3").exists()  # the class was kept where the test said, not in the user's cache
    taught.no_boxes()


def test_asking_from_a_lessons_foot_opens_the_projector_at_its_top(browser, tmp_path: Path) -> None:  # noqa: F811
    """A teacher who presses "Ask the class" under a lesson's question, far down the lesson, gets the projector
    with the question and its count on the screen. Streamlit keeps the scroll from page to page: the Class page
    opened 470 px down, at its foot, the question above the screen."""
    with serve({"CONTEXTLAB_DB": f"sqlite:///{tmp_path / 'class.sqlite3'}"}) as url:
        teacher = Page(browser)
        try:
            teacher.open(f"{url}/class?lang=en")
            teacher.page.get_by_role("button", name="Start a class").click()
            teacher.page.wait_for_function("() => new URLSearchParams(location.search).has('key')", timeout=WAIT_MS)
            teacher.settle()
            teacher.page.get_by_role("link", name="Masked LM").first.click()
            ask = teacher.page.get_by_role("button", name="Ask the class").first
            ask.wait_for(timeout=WAIT_MS)
            teacher.settle()
            ask.scroll_into_view_if_needed()
            main = teacher.page.locator('[data-testid="stMain"]')
            assert main.evaluate("el => el.scrollTop") > 300  # the question is far down the lesson
            ask.click()
            count = teacher.page.get_by_text("0 answered", exact=True)
            count.wait_for(timeout=WAIT_MS)
            teacher.settle()
            assert main.evaluate("el => el.scrollTop") == 0
            box = count.bounding_box()
            assert box and 0 <= box["y"] < teacher.page.viewport_size["height"]  # the count on the screen
            teacher.shot("class-asked-from-a-lesson")
            assert teacher.exceptions() == 0
            assert teacher.blocked == []
        finally:
            teacher.close()


def test_a_teachers_reloaded_lesson_keeps_the_class_box_and_no_other_tab_gets_it(browser, tmp_path: Path) -> None:  # noqa: F811
    """A teacher who reloads a lesson (or whose worker restarted) keeps the sidebar's class box: the tab keeps
    its class in sessionStorage, never in the lesson's address, which the projector shows. Another browser
    opening the same address is not a teacher; once the class ends, a reload forgets it."""
    with serve({"CONTEXTLAB_DB": f"sqlite:///{tmp_path / 'class.sqlite3'}"}) as url:
        teacher, other = Page(browser), Page(browser)
        box = '[data-testid="stSidebar"] .st-key-class_teacher_box'
        try:
            teacher.open(f"{url}/class?lang=en")
            teacher.page.get_by_role("button", name="Start a class").click()
            teacher.page.wait_for_function("() => new URLSearchParams(location.search).has('key')", timeout=WAIT_MS)
            code = parse_qs(urlparse(teacher.page.url).query)["code"][0]
            secret = parse_qs(urlparse(teacher.page.url).query)["key"][0]
            teacher.settle()
            teacher.page.get_by_role("link", name="One-hot vectors").first.click()
            teacher.page.locator(box).wait_for(timeout=WAIT_MS)
            lesson = teacher.page.url
            assert secret not in lesson and "/onehot" in lesson
            teacher.page.reload()
            teacher.page.locator(box).wait_for(timeout=WAIT_MS)  # the box is back after the reload
            teacher.settle()
            assert f"Teaching class {code}" in teacher.page.locator(box).inner_text()
            assert teacher.page.get_by_role("button", name="Bring the class here").count() == 1
            teacher.shot("class-teacher-lesson-reloaded")

            other.open(lesson)  # the same address in another browser: a learner, not the teacher
            other.settle()
            assert other.h1() and other.page.locator(box).count() == 0

            teacher.page.locator(box).get_by_role("link", name="Back to the projector").click()
            teacher.page.get_by_text("End the class", exact=True).click()
            teacher.page.get_by_role("button", name="End the class and delete its answers").click()
            teacher.page.get_by_text("The class has ended").first.wait_for(timeout=WAIT_MS)
            teacher.open(f"{url}/onehot?lang=en")
            teacher.settle()
            teacher.page.reload()
            teacher.settle()
            assert teacher.page.locator(box).count() == 0
            assert teacher.page.evaluate("() => sessionStorage.getItem('contextlab.teaching')") is None
            # a tab that keeps a code and a secret the store does not know (a class ended elsewhere, a guess)
            # teaches nothing, and forgets it
            teacher.page.evaluate(f"() => sessionStorage.setItem('contextlab.teaching', '{code} {secret[::-1]}')")
            teacher.page.reload()
            teacher.settle()
            teacher.page.wait_for_function(
                "() => sessionStorage.getItem('contextlab.teaching') === null", timeout=SEEN_MS
            )
            assert teacher.page.locator(box).count() == 0
            for each in (teacher, other):
                assert each.exceptions() == 0
                assert each.blocked == []
        finally:
            teacher.close()
            other.close()


# -- two workers behind nginx, the class in PostgreSQL ----------------------------------------------
@pytest.fixture
def class_postgres(postgres_server: str) -> Iterator[str]:
    """A new, empty database on the test session's PostgreSQL server: its URL."""
    with fresh_database(postgres_server, f"class_browser_{os.getpid()}") as url:
        yield url


@pytest.fixture
def two_workers(class_postgres: str) -> Iterator[str]:
    """`scripts/serve.py --workers 2` with the class store in PostgreSQL: nginx's URL."""
    if not Path(NGINX).exists():
        pytest.fail("nginx is not installed: run `make nginx` (Debian's nginx-light); `make test` does it first.")
    port = _free_port_block(2)
    env = {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9", "CONTEXTLAB_DB": class_postgres} | PUSH_ONLY
    command = [sys.executable, "scripts/serve.py", "--workers", "2", "--port", str(port)]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, 240, "scripts/serve.py --workers 2")  # nginx starts once both workers answer
        yield url
    finally:
        proc.terminate()  # serve.py stops its workers and nginx
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_two_workers_share_the_class_in_postgresql(browser, two_workers: str) -> None:  # noqa: F811
    taught = run_class(browser, two_workers, "class-2-workers")
    try:
        workers = [worker_of(student) for student in taught.students]
        assert worker_of(taught.teacher) in ("w1", "w2")
        assert set(workers) == {"w1", "w2"}, workers  # the class is spread over both workers, and counted as one
    finally:
        taught.close()
    taught.no_boxes()
