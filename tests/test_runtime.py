"""serving.runtime, what holds a class without Streamlit: the shared memo, gates and the warm-up thread
(the micro-batcher: tests/test_batching.py)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from model_zoo.errors import MissingCapability, ModelUnavailable
from serving import runtime
from serving.runtime import Line, Memo, Together, Trainer, TrainingStopped, gate, start_warm_up


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


def test_sessions_pressing_together_share_one_run_and_each_sees_every_report_in_order() -> None:
    together, runs = Together(), []
    halfway, release = threading.Event(), threading.Event()

    def work(report: Callable[[object], None]) -> str:
        runs.append(1)
        report(1)
        report(2)
        halfway.set()
        assert release.wait(30)
        report(3)
        return "trained"

    seen: dict[int, list[object]] = {i: [] for i in range(30)}
    got: list[str] = []

    def press(i: int) -> None:
        got.append(together.run("settings", work, seen[i].append))

    class Left(Exception):  # what a session's element raises once its learner has left the page
        pass

    left: list[Left] = []

    def leave(report: object) -> None:
        raise Left

    def press_and_leave() -> None:
        try:
            together.run("settings", work, leave)
        except Left as err:
            left.append(err)

    first = threading.Thread(target=press_and_leave)  # the first presser leaves at the first report
    first.start()
    assert halfway.wait(30)  # the others press once two reports are out: they see those first
    threads = [threading.Thread(target=press, args=(i,)) for i in range(30)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    release.set()
    for t in [first, *threads]:
        t.join(30)
    assert len(left) == 1  # only its own waiting ended: the training went on for the others
    assert runs == [1] and got == ["trained"] * 30
    assert all(seen[i] == [1, 2, 3] for i in range(30))
    assert together.run("settings", lambda report: "again", print) == "again"  # over: a new press runs anew

    failed_runs, broke, go = [], threading.Event(), threading.Event()

    def broken(report: Callable[[object], None]) -> str:
        failed_runs.append(1)
        broke.set()
        assert go.wait(30)
        raise RuntimeError("no")

    errors: list[BaseException] = []

    def press_broken() -> None:
        try:
            together.run("bad", broken, print)
        except RuntimeError as err:
            errors.append(err)

    threads = [threading.Thread(target=press_broken) for _ in range(3)]
    threads[0].start()
    assert broke.wait(30)
    for t in threads[1:]:
        t.start()
    time.sleep(0.2)
    go.set()
    for t in threads:
        t.join(30)
    assert failed_runs == [1] and len(errors) == 3  # one run: everyone joined hears of its failure


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


# what the trainer process runs in the tests below (module-level: the process imports them by name)
def _counting(n: int, report: Callable[[int], object]) -> tuple[int, int]:
    for i in range(n):
        report(i)
    return os.getpid(), os.sched_getscheduler(0) if hasattr(os, "SCHED_IDLE") else os.getpriority(os.PRIO_PROCESS, 0)


def _failing(report: Callable[[int], object]) -> None:
    report(0)
    raise ValueError("a learning rate below zero")


def _missing(report: Callable[[int], object]) -> None:
    from model_zoo.errors import MissingCapability

    raise MissingCapability("smollm2-135m", "Encoder", "it is a CausalLM")


def _dying(report: Callable[[int], object]) -> None:
    os._exit(3)


def _rss_mb(report: Callable[[int], object]) -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 2**20


def _fine_tuning_like(report: Callable[[int], object]) -> int:
    """A network's weights, gradients and AdamW's two moments, a few steps, as fine-tuning holds them: the
    process's RSS at the end of the job, before it frees them."""
    import torch

    torch.manual_seed(0)
    net = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(32)])  # 34M weights: 134 MB
    optimizer = torch.optim.AdamW(net.parameters())
    for _ in range(4):
        loss = net(torch.randn(64, 1024)).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return _rss_mb(report)


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads RSS from Linux's /proc")
def test_a_finished_training_gives_its_memory_back() -> None:
    """A training's tensors, freed, went back to glibc's malloc, which kept them: fine-tuning's trainer process
    stayed at 3.3 GB after the job, not 0.46 GB (model_zoo.trainer_process.give_back_memory)."""
    trainer = Trainer(idle_s=60)
    trainer.warm("torch")
    before = trainer.run(_rss_mb)
    peak = trainer.run(_fine_tuning_like)
    after = trainer.run(_rss_mb)
    assert peak - before > 400  # the job held its network, gradients and moments
    assert after - before < (peak - before) / 4, (before, peak, after)


def test_a_training_runs_in_its_own_low_priority_process_and_reports_in_order() -> None:
    trainer = Trainer(idle_s=60)
    seen: list[int] = []
    pid, priority = trainer.run(_counting, 200, on_report=seen.append)
    assert pid != os.getpid()  # no page thread shares its interpreter lock
    # nor its priority: on a core a page run wants, the training gives way at once (at nice 19 it did not)
    assert priority == getattr(os, "SCHED_IDLE", 19)
    assert seen == list(range(200))  # every report, in order, in the caller's own thread
    again, _ = trainer.run(_counting, 0)
    assert again == pid  # one process serves the trainings in turn
    trainer._close_if_idle()  # not idle yet: it stays
    assert trainer.running


def test_a_failing_training_raises_in_the_page_and_a_dead_process_is_one_sentence_then_replaced() -> None:
    trainer = Trainer(idle_s=60)
    seen: list[int] = []
    with pytest.raises(ValueError, match="learning rate"):
        trainer.run(_failing, on_report=seen.append)
    assert seen == [0]
    # the app's own errors, whose __init__ take other arguments than their message, reach the page as themselves
    # (pickled by class and attributes): not as "the training stopped", nor with the trainer killed for it
    with pytest.raises(MissingCapability, match="smollm2-135m") as raised:
        trainer.run(_missing)
    assert raised.value.model == "smollm2-135m" and str(raised.value).startswith("smollm2-135m")
    alive = trainer._process[0].pid
    assert trainer.run(_counting, 0)[0] == alive
    with pytest.raises(TrainingStopped, match="Press the button again"):
        trainer.run(_dying)
    pid, _ = trainer.run(_counting, 1)  # the next press gets a fresh process
    assert pid != os.getpid()


def test_a_warmed_trainer_has_its_process_ready_before_the_first_press() -> None:
    trainer = Trainer(idle_s=60)
    trainer.warm("json")
    assert trainer.running
    pid = trainer._process[0].pid
    trainer.warm("json")  # a second page run starts nothing more
    assert trainer.run(_counting, 0)[0] == pid  # the first press uses the process already there


def test_the_trainer_process_ends_when_no_training_came_for_a_while() -> None:
    trainer = Trainer(idle_s=0.5)
    pid, _ = trainer.run(_counting, 1)
    deadline = time.monotonic() + 10
    while trainer.running and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not trainer.running
    with pytest.raises(ProcessLookupError):  # its memory is given back
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            os.kill(pid, 0)
            time.sleep(0.1)


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="the idle policy is Linux's")
@pytest.mark.skipif(os.geteuid() != 0, reason="putting a thread back from idle needs root (CI runs as root)")
@pytest.mark.parametrize("privileged", [True, False])
def test_a_training_in_a_page_thread_never_leaves_that_thread_idle(monkeypatch, privileged: bool) -> None:
    """In a page's script thread (which Streamlit may hand the learner's next run) a training goes to the idle
    policy only where the server may put the thread back after; elsewhere to nice 10, as a thread of its own
    that ends with the training may go idle anyway."""
    if not privileged:
        monkeypatch.setattr(os, "geteuid", lambda: 1000)  # a server run by a user, RLIMIT_NICE 0 (Linux's default)

    def lowness() -> tuple[int, int]:
        me = threading.get_native_id()
        return os.sched_getscheduler(me), os.getpriority(os.PRIO_PROCESS, me)

    seen: dict[str, tuple[int, int]] = {}

    def page_thread() -> None:
        seen["before"] = lowness()
        with runtime.low_priority_threads():
            seen["page"] = lowness()
        seen["after"] = lowness()
        with runtime.low_priority_threads(thread_ends=True):
            seen["own"] = lowness()

    thread = threading.Thread(target=page_thread)
    thread.start()
    thread.join()
    assert seen["before"] == (os.SCHED_OTHER, 0) == seen["after"]
    assert seen["page"] == ((os.SCHED_IDLE, 0) if privileged else (os.SCHED_OTHER, runtime.TRAINING_NICE))
    assert seen["own"][0] == os.SCHED_IDLE


def test_a_training_goes_on_and_is_kept_when_the_presser_who_started_it_leaves() -> None:
    """Fine-tuning's two minutes: the presser who started it clicks elsewhere (their wait ends with Streamlit's
    stop, raised in their report), the training goes on for the others and its result is kept for the next
    press, which trains nothing (serving._kept_even_if_left)."""
    import serving

    key = ("test kept", time.monotonic())
    go_on, started, runs = threading.Event(), threading.Event(), []

    def work(report: Callable[[object], None]) -> str:
        runs.append(1)
        report(0.5)
        started.set()
        assert go_on.wait(30)
        report(1.0)
        return "trained"

    class Left(Exception):
        pass

    def leave(_: object) -> None:
        raise Left

    with pytest.raises(Left):
        serving._kept_even_if_left(key, work, leave)  # the presser leaves at the first report
    assert started.wait(30)
    seen: list[object] = []
    other = threading.Thread(target=lambda: seen.append(serving._kept_even_if_left(key, work, seen.append)))
    other.start()  # another presser joins the training under way
    time.sleep(0.2)
    go_on.set()
    other.join(30)
    assert seen[-1] == "trained" and 1.0 in seen  # they saw it end, with its last report
    assert serving._kept_even_if_left(key, work, None) == "trained"
    assert runs == [1]  # one training for all three


def test_a_class_pressing_retrain_shares_one_training_that_goes_on_when_its_first_presser_leaves(monkeypatch) -> None:
    """Probing's Retrain pressed while another training holds the line, then by a second learner: both are told
    their place; the first clicks elsewhere once the training has begun (their wait ends with Streamlit's stop,
    raised in their progress bar). The training goes on, once: the second sees its place, its progress to the
    end and its result, and a later press gets the kept result (every train-on-click button's work runs so,
    serving._kept_even_if_left). In the first presser's thread the training stopped with them, the second had
    seen nothing meanwhile and began it again."""
    import serving
    from model_zoo.lessons import probing

    runs: list[str] = []
    go_on = threading.Event()

    def train(*args: object, on_report: Callable[[object], None]) -> str:
        runs.append("probe")
        on_report(0.5)
        assert go_on.wait(30)
        on_report(1.0)
        return "retrained"

    monkeypatch.setattr(serving, "probing_features", lambda name: "features")
    monkeypatch.setattr(serving, "_probing_data", lambda: ([], {}))
    monkeypatch.setattr(probing, "max_train_rows", lambda features: 10)
    monkeypatch.setattr(probing, "task_set", lambda *a, **k: "data")
    monkeypatch.setattr(probing, "mapped_path", lambda features: "path")
    monkeypatch.setattr(serving.TRAINER, "run", lambda fn, *args, on_report: train(*args, on_report=on_report))
    seed = int(time.monotonic() * 1000)  # a result no other test keeps

    class Left(Exception):
        pass

    def leave(_: float) -> None:
        raise Left

    first_places: list[int] = []
    places: list[int] = []
    progress: list[float] = []
    got: list[object] = []

    def first() -> None:
        try:
            got.append(serving.retrain_probe("tiny", "pos", seed, leave, first_places.append))
        except Left:
            got.append("left")

    pressed = threading.Thread(target=first)
    joined = threading.Thread(
        target=lambda: got.append(serving.retrain_probe("tiny", "pos", seed, progress.append, places.append))
    )
    with serving._probe_gate():  # another training holds the line
        pressed.start()
        time.sleep(1.5)
        joined.start()
        time.sleep(1.5)
        assert runs == [] and first_places == [1] and places == [1]  # both told their place
    pressed.join(10)
    assert got == ["left"]  # the first presser left at the training's first report
    go_on.set()
    joined.join(30)
    assert got == ["left", "retrained"] and progress == [0.5, 1.0]
    assert serving.retrain_probe("tiny", "pos", seed) == "retrained" and runs == ["probe"]  # one training for all
