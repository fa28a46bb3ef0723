"""The trainer process (serving.runtime.Trainer starts it as `python -m model_zoo.trainer_process FD NICE`):
it takes jobs from its socket one at a time, runs each at nice NICE, and sends back the job's reports, then
its result or its error. It ends when the socket closes. Imports nothing heavy: a job's module brings what
the job needs."""

from __future__ import annotations

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


def preload(module: str, report: Any) -> None:
    """A job that only imports `module`: the process made ready before a learner presses (Trainer.warm)."""
    importlib.import_module(module)


def main(argv: list[str]) -> None:
    fd, nice = int(argv[1]), int(argv[2])
    if hasattr(os, "nice"):
        os.nice(nice)
    serve(Connection(fd))


if __name__ == "__main__":
    main(sys.argv)
