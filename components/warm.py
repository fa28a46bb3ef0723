"""Warming the server up: the default models load in the background once the first page is drawn."""

from __future__ import annotations

import threading
import time

# Seconds between the end of the server's first page run and the warm-up. Importing torch
# holds Python's GIL for long stretches (loading its libraries), and with the models it takes
# both cores for ~7 s. Begun during the first run, it delayed that page's script by ~0.5 s and
# its browser (fetching and compiling the chart code, ~2 s on 2 cores) by as much again.
DELAY_S = 4.0


def begin(delay_s: float = DELAY_S) -> threading.Thread:
    """After `delay_s`, in a daemon thread: let the cache layer load the default models
    (serving.warm_up; the first load imports torch, ~3 s). A page that needs a model
    sooner loads it itself; load_model shares a load in progress."""

    def warm() -> None:
        time.sleep(delay_s)
        import serving

        serving.warm_up()

    thread = threading.Thread(target=warm, name="contextlab-import", daemon=True)
    thread.start()
    return thread
