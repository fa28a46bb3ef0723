"""The trainer process (serving.runtime.Trainer starts it as `python -m model_zoo.trainer_process FD NICE`):
it takes jobs from its socket one at a time, runs each at the idle CPU priority (nice NICE where the system has
none), and sends back the job's reports, then
its result or its error. It ends when the socket closes. Imports nothing heavy: a job's module brings what
the job needs."""

from __future__ import annotations

import functools
import importlib
import os
import pickle
import sys
from multiprocessing.connection import Connection
from typing import Any


def serve(connection: Connection) -> None:
    """Run each job `(job, work, args)` as `work(*args, report)`: ("report", job, x) for each report(x), then
    ("done", job, result) or ("error", job, exception). Returns when the server closes its end."""
    while True:
        try:
            job, work, args = connection.recv()
        except EOFError:  # the server closed its end: no more trainings
            return

        def report(value: Any, job: int = job) -> None:
            connection.send(("report", job, value))

        try:
            message = ("done", job, work(*args, report))
        except Exception as err:  # the page that asked shows it
            message = ("error", job, err)
        try:
            try:
                connection.send(message)
            except (pickle.PicklingError, TypeError, AttributeError):  # an error that cannot travel: its text does
                connection.send(("error", job, RuntimeError(f"{type(message[2]).__name__}: {message[2]}")))
        except OSError:  # the server went away mid-job (its worker stopped): nobody is left to tell
            return
        del message
        give_back_memory()


def give_back_memory() -> None:
    """What a finished job freed, back to the system: a job's tensors are freed to glibc's malloc, which keeps
    the pages for later; malloc_trim returns them. Fine-tuning's copy, gradients and AdamW's moments
    otherwise stayed on this process's RSS until it ended (where there is no glibc, nothing to do)."""
    import gc

    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any:
    """glibc's malloc_trim, looked up once (find_library runs ldconfig); None without glibc."""
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def preload(module: str, report: Any) -> None:
    """A job that only imports `module`: the process made ready before a learner presses (Trainer.warm)."""
    importlib.import_module(module)


def lowest_priority(nice: int, who: int = 0) -> None:
    """Put process (or, on Linux, thread) `who` (0: this one) at the idle CPU priority, where it runs only
    on a core that nothing else wants; where the system has no such policy, at nice `nice`.

    Not nice 19 alone: on Linux's EEVDF scheduler a page run that wakes on a core busy with a nice-19
    training waits for the training's slice to end, and thirty sessions' Masked LM went from 1.59-1.76 s
    at the p95 alone to 1.80-2.55 s beside two nice-19 tensor loops, but 1.58-1.64 s beside the same loops
    at SCHED_IDLE, which a waking page run preempts at once (AVX2 EPYC, 2 cores, 2 workers; docs/deploy.md)."""
    try:
        os.sched_setscheduler(who, os.SCHED_IDLE, os.sched_param(0))
        return
    except (AttributeError, OSError):  # not Linux (no SCHED_IDLE), or not allowed here
        pass
    if hasattr(os, "setpriority"):
        os.setpriority(os.PRIO_PROCESS, who, max(nice, os.getpriority(os.PRIO_PROCESS, who)))


def main(argv: list[str]) -> None:
    fd, nice = int(argv[1]), int(argv[2])
    lowest_priority(nice)
    serve(Connection(fd))


if __name__ == "__main__":
    main(sys.argv)
