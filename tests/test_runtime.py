"""serving.runtime, what holds a class without Streamlit: the shared memo, gates and the warm-up thread
(the micro-batcher: tests/test_batching.py)."""

from __future__ import annotations

import threading
import time

import pytest

from model_zoo.errors import ModelUnavailable
from serving.runtime import Line, Memo, gate, start_warm_up


def test_the_memo_keeps_the_most_recently_used_and_forgets_on_clear() -> None:
    memo, calls = Memo(max_entries=2), []

    def compute(key: str):  # noqa: ANN202
        return lambda: calls.append(key) or key.upper()

    assert memo.get("a", compute("a")) == "A" and memo.get("b", compute("b")) == "B"
    assert memo.get("a", compute("a")) == "A"  # a hit: "a" is now the most recent
    memo.get("c", compute("c"))  # a third result drops the least recently used, "b"
    assert len(memo) == 2 and calls == ["a", "b", "c"]
    memo.get("a", compute("a"))
    memo.get("b", compute("b"))
    assert calls == ["a", "b", "c", "b"]
    memo.clear()
    assert len(memo) == 0
    memo.get("a", compute("a"))
    assert calls[-1] == "a"


def test_thirty_sessions_asking_at_once_start_one_computation_and_a_failure_is_not_kept() -> None:
    memo, calls = Memo(max_entries=8), []
    started, release = threading.Event(), threading.Event()

    def slow() -> object:
        calls.append(1)
        started.set()
        assert release.wait(30)
        return object()

    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(memo.get("k", slow))) for _ in range(30)]
    for t in threads:
        t.start()
    assert started.wait(30)
    release.set()
    for t in threads:
        t.join(30)
    assert len(calls) == 1 and len(got) == 30 and all(g is got[0] for g in got)

    def broken() -> object:
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        memo.get("bad", broken)
    assert memo.get("bad", lambda: "computed again") == "computed again"


def test_a_gate_is_one_per_name_with_its_slots() -> None:
    first = gate("test gate", 2)
    assert gate("test gate", 5) is first  # the server's one gate: the first call sets its size
    entered = threading.Event()

    def third() -> None:
        with first:
            entered.set()

    with first, first:
        waiting = threading.Thread(target=third)
        waiting.start()
        assert not entered.wait(0.3)  # a third holder waits
    assert entered.wait(5)  # and enters once a slot is free
    waiting.join(5)


def test_a_class_pressing_train_waits_in_line_and_each_is_told_its_place() -> None:
    """Thirty presses of a training button on one slot: served in the order they came, each told how many
    trainings are ahead of it as the line moves; one who leaves the line (a stop raised through its
    progress bar) frees its place for those behind."""
    line = Line(1)
    told: dict[int, list[int]] = {n: [] for n in range(4)}
    served: list[int] = []
    release = threading.Event()

    def press(n: int) -> None:
        def on_wait(ahead: int) -> None:
            told[n].append(ahead)
            if n == 2 and len(told[2]) == 1:
                raise RuntimeError("left the page")

        try:
            with line.place(on_wait, every_s=0.05):
                served.append(n)
                if n == 0:
                    release.wait(5)
                if n == 1:
                    time.sleep(0.3)  # long enough for the last to see its place move
        except RuntimeError:
            served.append(-n)

    threads = []
    for n in range(4):  # one after the other: the line's order is known
        threads.append(threading.Thread(target=press, args=(n,)))
        threads[-1].start()
        time.sleep(0.2)
    release.set()
    for thread in threads:
        thread.join(5)
    assert served == [0, -2, 1, 3]
    assert told[0] == []  # a free slot: nothing to tell
    assert told[1] == [1]  # the training running is ahead
    assert told[2] == [2]  # then left
    assert told[3] == [2, 1]  # its place moved up as the others went


def test_the_warm_up_waits_then_loads_each_model_and_skips_one_out_of_reach() -> None:
    loaded: list[str] = []
    paused: list[float] = []

    def load(name: str) -> None:
        if name == "far":
            raise ModelUnavailable(name, "not here", None)
        loaded.append(name)

    thread = start_warm_up(load, ["a", "far", "b"], 0.25, paused.append)
    thread.join(30)
    assert thread.daemon and paused == [0.25] and loaded == ["a", "b"]
