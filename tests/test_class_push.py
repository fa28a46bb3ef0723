"""Server push for class mode (serving.class_push): each worker's one thread reruns the students' tabs whose
class changed, through its own store or another worker's. The real push into Streamlit sessions is driven in
Chromium by tests/test_class_browser.py, with the tabs' own polling turned off."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from components.classroom_view import _signature as shown_key
from serving import class_push
from serving.classroom import ClassStore


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[tuple[ClassStore, ClassStore, list[float]]]:
    """Two workers' stores on one SQLite file; the second's status memo runs on a clock the test moves."""
    url = f"sqlite:///{tmp_path / 'class.sqlite3'}"
    a, b = ClassStore(url), ClassStore(url)
    clock = [0.0]
    b._clock = lambda: clock[0]
    yield a, b, clock
    a.close()
    b.close()


def tab(reruns: list[str], name: str, alive: bool = True) -> Callable[[], bool]:
    def rerun() -> bool:
        reruns.append(name)
        return alive

    return rerun


def test_a_question_asked_on_another_worker_reruns_only_the_tabs_it_changes(workers) -> None:  # noqa: ANN001
    a, b, clock = workers
    code, secret = a.start_class()
    quiet, quiet_secret = a.start_class()
    watcher = class_push.Watcher(b.status, every_s=3600)  # the test takes the steps
    reruns: list[str] = []
    for i in range(30):
        assert watcher.watch(f"s{i}", code, shown_key(b.status(code)), shown_key, tab(reruns, f"s{i}"))
    watcher.watch("other", quiet, shown_key(b.status(quiet)), shown_key, tab(reruns, "other"))
    assert watcher.step() == 0 and reruns == []  # nothing changed: nobody reruns

    a.ask(code, secret, "k", "Which word goes in the blank?")
    clock[0] += b.status_ttl  # the other worker's memo of the class runs out
    assert watcher.step() == 30
    assert sorted(reruns) == sorted(f"s{i}" for i in range(30))  # each once; the other class's tab not at all
    assert watcher.step() == 0 and watcher.watching() == 1  # a rerun tab watches again from its own run

    watcher.watch("s0", code, shown_key(b.status(code)), shown_key, tab(reruns, "s0"))
    question = b.status(code).question
    assert question is not None
    a.reveal(code, secret, question.id)
    clock[0] += b.status_ttl
    assert watcher.step() == 1 and reruns[-1] == "s0"  # the reveal changes the screen too
    a.end_class(quiet, quiet_secret)
    clock[0] += b.status_ttl
    assert watcher.step() == 1 and reruns[-1] == "other"  # an ended class: the tab reruns and says so


def test_a_change_through_the_same_worker_wakes_its_thread_at_once(workers) -> None:  # noqa: ANN001
    a, b, _ = workers
    code, secret = b.start_class()
    watcher = class_push.Watcher(b.status, every_s=3600)  # only the wake can bring the rerun
    b.on_change.append(watcher.changed)
    rerun = threading.Event()
    watcher.watch("s1", code, shown_key(b.status(code)), shown_key, lambda: rerun.set() or True)
    b.follow(code, secret, "/attention")  # "Bring the class here"
    assert rerun.wait(30)
    assert watcher.pushed == 1


def test_a_closed_tab_is_dropped_and_a_full_worker_leaves_tabs_to_poll(workers, monkeypatch) -> None:  # noqa: ANN001
    a, b, clock = workers
    code, secret = a.start_class()
    watcher = class_push.Watcher(b.status, every_s=3600)
    reruns: list[str] = []
    watcher.watch("gone", code, shown_key(b.status(code)), shown_key, tab(reruns, "gone", alive=False))
    a.ask(code, secret, "k", "Q?")
    clock[0] += b.status_ttl
    assert watcher.step() == 0 and reruns == ["gone"] and watcher.watching() == 0  # tried once, then forgotten
    monkeypatch.setattr(class_push, "MAX_TABS", 2)
    assert watcher.watch("t1", code, None, shown_key, tab(reruns, "t1"))
    assert watcher.watch("t2", code, None, shown_key, tab(reruns, "t2"))
    assert not watcher.watch("t3", code, None, shown_key, tab(reruns, "t3"))  # its tab polls on its own
    assert watcher.watch("t1", code, None, shown_key, tab(reruns, "t1"))  # one already watched watches again


def test_outside_a_streamlit_server_no_tab_can_be_pushed() -> None:
    """AppTest and plain Python have no server to push through: the tab keeps polling (classroom_view)."""
    assert class_push.tab_rerunner() is None
