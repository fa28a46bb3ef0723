"""serving.runtime, what holds a class without Streamlit: the shared memo, gates and the warm-up thread
(the micro-batcher: tests/test_batching.py)."""

from __future__ import annotations

import threading

import pytest

from model_zoo.errors import ModelUnavailable
from serving.runtime import Memo, gate, start_warm_up


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
    assert first.acquire(blocking=False) and first.acquire(blocking=False)
    assert not first.acquire(blocking=False)  # a third holder waits
    first.release()
    first.release()


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
