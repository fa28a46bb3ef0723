"""What a shared server needs to hold a class, without Streamlit: requests batched across sessions,
results computed once however many sessions ask, gates that queue heavy work, low-priority threads for
trainings, and the warm-up thread. serving/__init__.py (the Streamlit cache layer) builds on these;
they are tested on their own (tests/test_batching.py, tests/test_runtime.py).
"""

from __future__ import annotations

import gc
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Generic, TypeVar

from model_zoo.errors import ModelZooError

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")


class MicroBatcher(Generic[K, V]):
    """Requests from many sessions that arrive together share one forward pass.

    A class types at the same moment: thirty single-sentence forward passes, each in its own
    script thread, fight over the GIL and the cores, while one pass over thirty sentences costs
    a few single ones. The first caller to find no batch running leads: it waits `wait_s` for
    others to join (a bounded wait: alone, a learner pays only that), runs `run` on up to
    `max_batch` items and hands each caller its own result. Callers arriving meanwhile queue for
    the next batch; no extra thread is started (the leaders are the callers' own threads).
    """

    def __init__(self, run: Callable[[list[K]], list[V]], max_batch: int = 32, wait_s: float = 0.003) -> None:
        self._run, self.max_batch, self.wait_s = run, max_batch, wait_s
        self._cond = threading.Condition()
        self._queue: list[_Slot[K, V]] = []
        self._running = False
        self.batches: list[int] = []  # sizes of the last batches run (for tests and make bench)

    def __call__(self, item: K) -> V:
        slot: _Slot[K, V] = _Slot(item)
        with self._cond:
            self._queue.append(slot)
            while not slot.done and (self._running or self._queue[0] is not slot):
                self._cond.wait()
            if slot.done:
                return slot.result()
            self._running = True  # this caller leads the next batch
        time.sleep(self.wait_s)
        with self._cond:
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
        try:
            self._answer(batch)
        finally:
            with self._cond:
                for s in batch:
                    s.done = True
                self.batches = [*self.batches[-99:], len(batch)]
                self._running = False
                self._cond.notify_all()
        return slot.result()

    def _answer(self, batch: list[_Slot[K, V]]) -> None:
        """Run the batch; if a learner's input fails it (a ModelZooError), each item alone, so
        that only that learner sees the message and the others still get their answers."""
        try:
            for s, value in zip(batch, self._run([s.item for s in batch]), strict=True):
                s.value = value
            return
        except ModelZooError as err:
            if len(batch) == 1:
                batch[0].error = err
                return
        except BaseException as err:  # every caller of a failed batch sees why
            for s in batch:
                s.error = err
            return
        for s in batch:
            try:
                s.value = self._run([s.item])[0]
            except BaseException as err:
                s.error = err


@dataclass
class _Slot(Generic[K, V]):
    item: K
    done: bool = False
    value: V | None = None
    error: BaseException | None = None

    def result(self) -> V:
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]


class Memo:
    """Results that take seconds, computed once per server and shared by every session, the least
    recently used dropped past `max_entries`; one lock per result being computed, so that thirty
    sessions asking at once start one computation, not thirty. A computation that fails stores
    nothing: the next request computes again.

    Not st.cache_data: a progress bar drawn while computing must not be replayed on a hit (Streamlit
    refuses to replay it into another run's layout), and a hit must not copy a large result."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._store: OrderedDict[Hashable, object] = OrderedDict()
        self._lock = threading.Lock()
        self._computing: dict[Hashable, threading.Lock] = {}

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        with self._lock:
            if key in self._store:
                self._store.move_to_end(key)
                return self._store[key]  # type: ignore[return-value]
            gate = self._computing.setdefault(key, threading.Lock())
        with gate:  # one session computes; the others wait here, then find its result
            with self._lock:
                if key in self._store:
                    return self._store[key]  # type: ignore[return-value]
            try:
                value = compute()
                with self._lock:
                    self._store[key] = value
                    while len(self._store) > self.max_entries:
                        self._store.popitem(last=False)
            finally:  # stored first: a session arriving now finds the value, or (after an error) computes
                with self._lock:
                    self._computing.pop(key, None)
        return value

    def peek(self, key: Hashable) -> object | None:
        """The stored result for `key`, or None: never computes."""
        with self._lock:
            return self._store.get(key)

    def __len__(self) -> int:
        return len(self._store)

    def clear(self) -> None:
        """Forget every result (computations under way finish and store theirs)."""
        with self._lock:
            self._store.clear()


_gates: dict[str, threading.Semaphore] = {}
_gates_lock = threading.Lock()


def gate(name: str, slots: int) -> threading.Semaphore:
    """The server's one gate `name`: at most `slots` holders at once (heavy work queues behind it)."""
    with _gates_lock:
        return _gates.setdefault(name, threading.Semaphore(slots))


TRAINING_NICE = 10  # a training's threads give way to page runs (CFS weight 110 against 1,024)


@contextmanager
def low_priority_threads() -> Iterator[None]:
    """Threads started inside (gensim's workers) run at a lower CPU priority: a training a learner
    starts takes the cores only when no page run wants them. On Linux the nice value is per thread
    and a new thread inherits its creator's; this thread's own is put back where the system lets us."""
    if not hasattr(os, "setpriority"):  # not Linux or macOS: trainings run at normal priority
        yield
        return
    me = threading.get_native_id()
    before = os.getpriority(os.PRIO_PROCESS, me)
    os.setpriority(os.PRIO_PROCESS, me, max(before, TRAINING_NICE))
    try:
        yield
    finally:
        with suppress(OSError):  # raising priority back needs CAP_SYS_NICE; the thread ends with the run
            os.setpriority(os.PRIO_PROCESS, me, before)


def freeze_startup_objects() -> None:
    """Move what is alive now (torch, transformers, plotly, the models: millions of objects that
    live as long as the server) out of the garbage collector's way. Python's collector then walks
    only what page runs create; Streamlit's own full collection after every run is off
    (.streamlit/config.toml), since walking all of it took most of a rerun's time."""
    gc.collect()
    gc.freeze()


def start_warm_up(
    load: Callable[[str], object], names: Iterable[str], delay_s: float, pause: Callable[[float], object]
) -> threading.Thread:
    """A daemon thread that waits `delay_s` (through `pause`), then `load`s each name in turn; a model
    that cannot be loaded is left to the page that needs it, which says why."""

    def work() -> None:
        pause(delay_s)
        for name in names:
            with suppress(ModelZooError):
                load(name)

    thread = threading.Thread(target=work, name="contextlab-warm-up", daemon=True)
    thread.start()
    return thread
