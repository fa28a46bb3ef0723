"""What a shared server needs to hold a class, without Streamlit: requests batched across sessions,
results computed once however many sessions ask, gates that queue heavy work, low-priority threads for
trainings, and the warm-up thread. serving/__init__.py (the Streamlit cache layer) builds on these;
they are tested on their own (tests/test_batching.py, tests/test_runtime.py).
"""

from __future__ import annotations

import gc
import os
import queue
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from model_zoo.errors import ModelZooError

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)


class MicroBatcher(Generic[K, V]):
    """Requests from many sessions that arrive together share one forward pass.

    A class types at the same moment: thirty single-sentence forward passes, each in its own
    script thread, fight over the GIL and the cores, while one pass over thirty sentences costs
    a few single ones. The first caller to find no batch running leads: it waits `wait_s` for
    others to join (a bounded wait: alone, a learner pays only that), runs `run` on up to
    `max_batch` items and hands each caller its own result. Callers arriving meanwhile queue for
    the next batch; no extra thread is started (the leaders are the callers' own threads).

    While other page scripts run in the worker (a class at it), the leader then waits on while others
    keep joining: `gather_s` at a time, until a wait brings nobody or `gather_max_s` has passed. A class's
    sentences reach a batcher spread over a few hundred ms (each script runs its page up to the call
    first, one at a time under the GIL), and on a page that asks in steps (GPT's blank: the left
    guesses, the masked LM's, then the whole sentences) more spread at every step; a leader that ran
    alone made the rest wait for a pass of one before theirs (docs/deploy.md has the figures). A
    learner alone in the worker still waits only `wait_s`.
    """

    def __init__(
        self,
        run: Callable[[list[K]], list[V]],
        max_batch: int = 32,
        wait_s: float = 0.003,
        gather_s: float = 0.04,
        gather_max_s: float = 0.3,
    ) -> None:
        self._run, self.max_batch, self.wait_s = run, max_batch, wait_s
        self.gather_s, self.gather_max_s = gather_s, gather_max_s
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
        self._gather()
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

    def _gather(self) -> None:
        """The leader's wait for others to join its batch (the class docstring says how long)."""
        time.sleep(self.wait_s)
        if not others_running():
            return
        deadline, seen = time.monotonic() + self.gather_max_s, len(self._queue)
        while seen < self.max_batch and time.monotonic() < deadline:
            time.sleep(self.gather_s)
            if len(self._queue) == seen:  # read without the lock: a count, only ever a hint
                return
            seen = len(self._queue)

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


SCRIPT_THREAD = "ScriptRunner.scriptThread"  # Streamlit's name for the thread of one page run (or fragment rerun)


def others_running() -> bool:
    """Whether another page script is running in this process now. Streamlit runs each page run in a
    thread of its own, ended with the run (tests/test_batching.py checks the name on a real run)."""
    me = threading.current_thread()
    return any(t.name == SCRIPT_THREAD and t is not me for t in threading.enumerate())


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


class Written(Protocol):
    """A text in a Batch: done once it has its last token."""

    @property
    def done(self) -> bool: ...


class Batch(Protocol[S_co]):
    """What Writers runs (model_zoo.lessons.generation.Batch): texts written together, a token each a step."""

    def __len__(self) -> int: ...
    def add_many(self, texts: Sequence[tuple[str, Any]]) -> Sequence[tuple[Written, S_co] | BaseException]: ...
    def step(self) -> Sequence[tuple[Written, S_co]]: ...
    def leave(self, gone: Sequence[Any]) -> None: ...


@dataclass(eq=False)
class _Writer(Generic[S]):
    text: str
    strategy: Any
    steps: queue.SimpleQueue  # its steps as they are made, then None (done) or the error that stopped it
    stopped: threading.Event


STEP_WAIT_S = 120.0  # a writer waiting this long for its next token is told the writing stopped


class Writers(Generic[S]):
    """Every text a worker's learners write with one causal LM, written together by one thread
    (continuous batching): a writer joins the running batch between steps, each step gives every writer
    its next token, and a writer who presses Stop or leaves the page frees its slot at the next step.

    Thirty learners pressing Write at once used to run thirty decoding loops, two at a time (a gate)
    and the rest waiting: a step of one text costs almost what a step of thirty does on these cores,
    since the time goes to reading the weights. At most `slots` texts are written at once; the rest
    wait in arrival order (the page shows a spinner until their first token)."""

    def __init__(self, batch: Callable[[], Batch[S]], slots: int = 64) -> None:
        self._batch, self.slots = batch, slots
        self._waiting: list[_Writer[S]] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.steps_run: list[int] = []  # the batch's size at its last steps (tests, make bench-load)

    def write(self, text: str, strategy: Any) -> Iterator[S]:
        """The steps of `text` as they are written (ModelZooError for an input the model cannot take).
        Leaving the loop early (Stop, the page rerun, the tab closed) takes the text out of the batch."""
        writer: _Writer[S] = _Writer(text, strategy, queue.SimpleQueue(), threading.Event())
        with self._lock:
            self._waiting.append(writer)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._forever, name="writers", daemon=True)
                self._thread.start()
        self._wake.set()
        try:
            while True:
                try:
                    step = writer.steps.get(timeout=STEP_WAIT_S)
                except queue.Empty:
                    raise WritingFailed(f"no token came for {STEP_WAIT_S:.0f} s") from None
                if step is None:
                    return
                if isinstance(step, BaseException):
                    raise step
                yield step
        finally:
            writer.stopped.set()
            self._wake.set()

    def _forever(self) -> None:
        # a batch (and the model it writes with) is made whenever writing starts with no text in the batch, and
        # let go when the last one leaves: a model loaded again since (evicted from the cache and read back, or
        # another model under the name) writes the next texts, and this thread keeps no old one alive
        batch: Batch[S] | None = None
        writing: dict[int, tuple[Written, _Writer[S]]] = {}  # id of a text in the batch -> (it, its writer)
        while True:
            if not writing and not self._waiting:
                batch = None
                self._wake.wait(1.0)
                self._wake.clear()
                continue
            if batch is None or not writing:
                try:
                    batch = self._batch()
                except BaseException as err:  # noqa: BLE001  the model could not be had: those waiting hear why
                    with self._lock:
                        failed, self._waiting = self._waiting, []
                    for writer in failed:
                        writer.steps.put(_failure(err))
                    continue
            try:
                self._join(batch, writing)
                self._step(batch, writing)
            except BaseException as err:  # noqa: BLE001  every writer in the batch hears why, in one sentence
                for _, writer in writing.values():
                    writer.steps.put(_failure(err))
                writing.clear()
                batch = None

    def _join(self, batch: Batch[S], writing: dict[int, tuple[Written, _Writer[S]]]) -> None:
        """The writers waiting, up to the free slots, into the batch (their prompts in one pass); the writers
        who left, out of it."""
        with self._lock:
            room = max(0, self.slots - len(writing))
            joining, self._waiting = self._waiting[:room], self._waiting[room:]
        joining = [writer for writer in joining if not writer.stopped.is_set()]
        try:
            started = batch.add_many([(writer.text, writer.strategy) for writer in joining]) if joining else []
        except BaseException as err:  # the pass failed: its writers hear why; the batch starts anew
            for writer in joining:
                writer.steps.put(_failure(err))
            raise
        for writer, found in zip(joining, started, strict=True):
            if isinstance(found, BaseException):  # the writer's own input: told to the writer alone
                writer.steps.put(found)
                continue
            text, first = found
            writer.steps.put(first)
            if text.done:
                writer.steps.put(None)
            else:
                writing[id(text)] = (text, writer)
        gone = [text for text, writer in writing.values() if writer.stopped.is_set()]
        if gone:
            batch.leave(gone)
            for text in gone:
                writing.pop(id(text))

    def _step(self, batch: Batch[S], writing: dict[int, tuple[Written, _Writer[S]]]) -> None:
        """One token for every text in the batch, each to its writer; the texts done leave."""
        if not len(batch):
            return
        size = len(batch)
        stepped = batch.step()
        self.steps_run = [*self.steps_run[-99:], size]
        for text, step in stepped:
            _, writer = writing[id(text)]
            writer.steps.put(step)
            if text.done:
                writer.steps.put(None)
                writing.pop(id(text))


def _failure(err: BaseException) -> ModelZooError:
    return err if isinstance(err, ModelZooError) else WritingFailed(err)


class WritingFailed(ModelZooError):
    """The shared batch could not go on (an error in the model's pass): each of its writers is told so."""

    def __init__(self, cause: BaseException | str) -> None:
        lines = str(cause).splitlines() or [""]
        self.why = cause if isinstance(cause, str) else f"{type(cause).__name__}: {lines[0][:160]}"
        super().__init__(f"The model stopped writing ({self.why}). Press Write again.")


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


@dataclass
class _Run:
    reports: list[object]
    done: bool = False
    value: object = None
    error: BaseException | None = None


class Together:
    """Work that sessions asking for the same thing at the same moment share, its progress seen by each:
    the first to ask starts it in a thread of its own; everyone who asks while it runs, the first
    included, waits for it, and every report the work makes reaches each of them in order, in their own
    thread (a Streamlit element is drawn from its session's script thread only), those made before they
    joined first. A session that leaves stops only its own waiting: the work goes on for the others.
    The result is not kept: once the work ends, the next to ask starts it afresh (a live training is
    pressed to be watched).

    Not Memo: Memo's waiters see nothing until the result is in, it keeps the result, and its work runs
    in the first caller's thread, which ends with that session."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._runs: dict[Hashable, _Run] = {}

    def run(
        self, key: Hashable, work: Callable[[Callable[[object], None]], T], on_report: Callable[[object], object]
    ) -> T:
        """work(report) started once for `key`; its result (or its error) for everyone who asked meanwhile."""
        with self._cond:
            run = self._runs.get(key)
            if run is None:
                run = self._runs[key] = _Run([])
                threading.Thread(target=self._work, args=(key, run, work), name=f"together {key}", daemon=True).start()
        return self._follow(run, on_report)  # type: ignore[return-value]

    def _work(self, key: Hashable, run: _Run, work: Callable[[Callable[[object], None]], object]) -> None:
        def report(item: object) -> None:
            with self._cond:
                run.reports.append(item)
                self._cond.notify_all()

        try:
            run.value = work(report)
        except BaseException as err:  # noqa: BLE001  (raised in every waiting session)
            run.error = err
        finally:
            with self._cond:
                run.done = True
                if self._runs.get(key) is run:
                    del self._runs[key]
                self._cond.notify_all()

    def _follow(self, run: _Run, on_report: Callable[[object], object]) -> object:
        seen = 0
        while True:
            with self._cond:
                while not run.done and len(run.reports) <= seen:
                    self._cond.wait()
                new, done = run.reports[seen:], run.done
            seen += len(new)
            for item in new:
                on_report(item)
            if done:
                if run.error is not None:
                    raise run.error
                return run.value


class Line:
    """A gate with its queue in view: at most `slots` holders at once, the others served in the order they
    came, each told how many are ahead of it as that changes (a class pressing Train learns its place:
    "3 trainings ahead of yours"). `with line:` waits without being told. A semaphore lets a newcomer take a
    slot that frees while others wait (CPython's wakes the longest waiting, but a press arriving at that
    moment can barge in first) and cannot say who is ahead, hence this."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._cond = threading.Condition()
        self._waiting: list[object] = []
        self._holding = 0

    def __enter__(self) -> None:
        self._take(None, 1.0)

    def __exit__(self, *_: object) -> None:
        with self._cond:
            self._holding -= 1
            self._cond.notify_all()

    @contextmanager
    def place(self, on_wait: Callable[[int], object] | None = None, every_s: float = 1.0) -> Iterator[None]:
        """Hold a slot for the block, after waiting in line; `on_wait(ahead)` each time the number of holders
        and waiters before this one changes (never called where a slot is free at once)."""
        self._take(on_wait, every_s)
        try:
            yield
        finally:
            self.__exit__()

    def _take(self, on_wait: Callable[[int], object] | None, every_s: float) -> None:
        me = object()
        told: int | None = None
        with self._cond:
            self._waiting.append(me)
        try:
            while True:
                with self._cond:
                    if self._holding < self.slots and self._waiting[0] is me:
                        self._waiting.pop(0)
                        self._holding += 1
                        return
                    ahead = self._holding + self._waiting.index(me)
                    if ahead == told or on_wait is None:
                        self._cond.wait(every_s)
                        continue
                told = ahead
                on_wait(ahead)  # outside the lock: a page's progress bar (or a stop raised through it)
        except BaseException:  # the learner left or pressed again: out of the line
            with self._cond:
                if me in self._waiting:
                    self._waiting.remove(me)
                    self._cond.notify_all()
            raise


_gates: dict[str, Line] = {}
_gates_lock = threading.Lock()


def gate(name: str, slots: int) -> Line:
    """The server's one gate `name`: at most `slots` holders at once (heavy work queues behind it, in order)."""
    with _gates_lock:
        return _gates.setdefault(name, Line(slots))


TRAINING_NICE = 10  # where the system has no idle policy (not Linux), a training thread's nice value


@contextmanager
def low_priority_threads(thread_ends: bool = False) -> Iterator[None]:
    """This thread and the threads started inside (gensim's workers; on Linux a new thread inherits its
    creator's priority) run at the idle CPU priority (trainer_process.lowest_priority): a training a learner
    starts takes a core only when no page run wants it. This thread's own priority is put back after.

    Going back from the idle policy needs the privilege to raise priority. Without it a page's script
    thread, which Streamlit may hand the learner's next run, would stay idle and wait behind the whole class;
    so there this thread goes to nice TRAINING_NICE instead (back to its own nice needs the privilege too,
    but a nice-10 run is only slower), unless `thread_ends` (a thread of the training's own, which ends
    with it: serving.runtime.Together's)."""
    if not hasattr(os, "setpriority"):  # neither Linux nor macOS: trainings run at normal priority
        yield
        return
    from model_zoo.trainer_process import lowest_priority

    me = threading.get_native_id()
    policy = os.sched_getscheduler(me) if hasattr(os, "sched_getscheduler") else None
    before = os.getpriority(os.PRIO_PROCESS, me)
    if thread_ends or may_raise_priority(before):
        lowest_priority(TRAINING_NICE, me)
    else:
        os.setpriority(os.PRIO_PROCESS, me, max(before, TRAINING_NICE))
    try:
        yield
    finally:
        with suppress(OSError):  # not allowed: the thread keeps the lower priority until it ends
            if policy is not None:
                os.sched_setscheduler(me, policy, os.sched_param(0))
            os.setpriority(os.PRIO_PROCESS, me, before)


def may_raise_priority(nice: int) -> bool:
    """Whether this process may put a thread back to nice `nice` (and from the idle policy) after lowering
    it: root, or an RLIMIT_NICE that allows it (Linux's rule, 20 - nice; CAP_SYS_NICE alone is not seen)."""
    if os.geteuid() == 0:
        return True
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NICE)[0]
        return soft == resource.RLIM_INFINITY or soft >= 20 - nice
    except (ImportError, AttributeError, ValueError, OSError):  # no RLIMIT_NICE here (macOS)
        return False


TRAINER_NICE = 19  # where the system has no idle policy (not Linux), the trainer process's nice value
TRAINER_IDLE_S = 120.0  # the trainer process ends after this long without a training (its memory given back)


class TrainingStopped(ModelZooError):
    """The trainer process ended before the training did (killed, or out of memory)."""

    def __init__(self) -> None:
        super().__init__("The training stopped before it finished (its process ended). Press the button again.")


class Trainer:
    """Trainings run in a process of their own, at the lowest CPU priority, one at a time.

    A training in a page's script thread shares its worker's interpreter lock with every page run there. The
    probe trainings are small tensor steps in a Python loop and hold the lock most of the time, so a worker's
    thirty learners waited on it whenever the OS set the low-priority thread aside while it held the lock
    (Masked LM's p95 went 0.94 -> 3.2 s on two workers beside thirty Retrain presses). A process shares no
    lock, and at the idle CPU priority (model_zoo.trainer_process.lowest_priority) it gets a core only when no
    page run wants it. It starts at the first training and ends after `idle_s` without one: a worker holds its
    memory (torch, a few hundred MB) only while a class trains.

    Not multiprocessing (a ProcessPoolExecutor): its child re-runs the parent's `__main__`, which in a
    Streamlit worker is the last page script run, so every trainer process ran a page first (the same seed
    pressed by 30 took 27 s instead of 9). The child here is `python -m model_zoo.trainer_process`, which
    imports nothing but the job's own module.

    `run(work, *args, on_report=...)` calls `work(*args, report)` in the process: `work` a module-level
    function, its arguments and result picklable. Each `report(x)` reaches `on_report(x)` in the caller's
    thread, in order (a page's progress bar; a stop raised through it ends the wait, and the training
    finishes for nobody). An error in `work` is raised in the caller."""

    def __init__(self, nice: int = TRAINER_NICE, idle_s: float = TRAINER_IDLE_S) -> None:
        self.nice, self.idle_s = nice, idle_s
        self._lock = threading.Lock()
        self._process: Any = None  # (subprocess.Popen, its Connection, the socket under it) while it lives
        self._inboxes: dict[int, tuple[queue.SimpleQueue, Any]] = {}  # job -> (its inbox, the process running it)
        self._jobs = self._busy = 0
        self._last = time.monotonic()

    @property
    def running(self) -> bool:
        """Whether the trainer process is alive now."""
        return self._process is not None

    def run(self, work: Callable[..., T], *args: Any, on_report: Callable[[Any], object] | None = None) -> T:
        inbox: queue.SimpleQueue = queue.SimpleQueue()
        with self._lock:
            child, connection, _ = self._start()
            self._jobs += 1
            job = self._jobs
            self._inboxes[job], self._busy = (inbox, child), self._busy + 1
            try:
                connection.send((job, work, args))
            except OSError:  # the process ended just now: its reader tells the inbox
                pass
        try:
            while True:
                kind, value = inbox.get()
                if kind == "report":
                    if on_report is not None:
                        on_report(value)
                elif kind == "done":
                    return value
                elif kind == "error":
                    raise value
                else:
                    raise TrainingStopped()
        finally:
            with self._lock:
                self._inboxes.pop(job, None)
                self._busy -= 1
                self._last = time.monotonic()
            self._close_later()

    def warm(self, module: str) -> None:
        """Start the process now, if it is not running, and have it import `module` (a lesson's trainings):
        the first press then waits for no process start. Returns at once; the process ends after `idle_s`
        if no training comes."""
        from model_zoo import trainer_process

        with self._lock:
            if self._process is not None:
                return
            connection = self._start()[1]
            self._jobs += 1
            with suppress(OSError):
                connection.send((self._jobs, trainer_process.preload, (module,)))
            self._last = time.monotonic()
        self._close_later()

    def _start(self) -> tuple[Any, Any, Any]:
        """The live process and its connection, started if need be (called under the lock)."""
        if self._process is None:
            import subprocess
            import sys
            from multiprocessing.connection import Connection

            ours, theirs = socket.socketpair()
            path = os.pathsep.join(p for p in sys.path if p)  # what this process imports, the child can
            child = subprocess.Popen(
                [sys.executable, "-m", "model_zoo.trainer_process", str(theirs.fileno()), str(self.nice)],
                pass_fds=(theirs.fileno(),),
                env={**os.environ, "PYTHONPATH": path},
            )
            theirs.close()
            self._process = (child, Connection(os.dup(ours.fileno())), ours)
            threading.Thread(target=self._read, args=self._process[:2], name="contextlab-trainer", daemon=True).start()
        return self._process

    def _read(self, child: Any, connection: Any) -> None:
        """Hand each message from the process to the inbox of its job; when the process ends, every job
        still waiting is told."""
        while True:
            try:
                kind, job, value = connection.recv()
            except Exception:  # the process ended (EOFError), or sent what cannot be read here: it is done
                break
            with self._lock:
                found = self._inboxes.get(job)
            if found is not None:
                found[0].put((kind, value))
        connection.close()
        if child.poll() is None:
            child.kill()
        child.wait()
        with self._lock:
            if self._process is not None and self._process[0] is child:
                self._process = None
            for inbox, owner in self._inboxes.values():
                if owner is child:  # a later process's jobs are not this one's to end
                    inbox.put(("stopped", None))

    def _close_later(self) -> None:
        closer = threading.Timer(self.idle_s, self._close_if_idle)
        closer.daemon = True
        closer.start()

    def _close_if_idle(self) -> None:
        with self._lock:
            if self._process is None or self._busy or time.monotonic() - self._last < self.idle_s * 0.99:
                return
            ours = self._process[2]
            self._process = None
        ours.shutdown(socket.SHUT_RDWR)  # both ends read the end: the process exits, its reader thread waits for it
        ours.close()


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
