"""Server push for class mode (issue 35): a student's tab is rerun by the server when its class changes
(a question asked or revealed, the class brought somewhere), instead of every tab asking.

Each tab used to rerun a watcher fragment every POLL_S: thirty-one tabs made fifteen script runs a second
on the worker that also answers their lessons (a few % of a core, but each run takes Python's GIL between
a Masked LM batch's thirty reruns), and a question reached the last screen up to POLL_S after it was
asked. Here one thread per worker reads the status of each class its tabs watch (the store's own memo:
one database read per class per WATCH_S), and reruns just the tabs whose screen is out of date, the way
Streamlit reruns a tab when its script changes on disk. A change made through this worker wakes the
thread at once; another worker's (or machine's) change is seen within WATCH_S.

Streamlit has no public call to rerun another session, so `tab_rerunner` uses its runtime's session
lookup (documented thread-safe) and its session's event loop; where that is missing (another Streamlit,
AppTest), it returns None and the tab keeps polling on its own (components.classroom_view)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from model_zoo import ModelZooError

WATCH_S = 0.25  # how often a worker reads each watched class (another worker's change arrives within it)
MAX_TABS = 2000  # tabs one worker watches at most (a tab past it polls on its own)
_ENDED = object()  # a class that ended or expired


@dataclass
class _Tab:
    code: str
    shown: Hashable  # what the tab drew, in short: key(status) when it ran
    key: Callable[[object], Hashable]  # components.classroom_view's signature of a status
    rerun: Callable[[], bool]  # False once the tab is gone


class Watcher:
    """The tabs of this worker that wait for a class to change, and the thread that reruns them."""

    def __init__(self, status: Callable[[str], object], every_s: float = WATCH_S) -> None:
        self._status, self.every_s = status, every_s
        self._tabs: dict[str, _Tab] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.pushed = 0  # reruns asked for (tests, make bench-load)

    def watch(
        self, tab: str, code: str, shown: Hashable, key: Callable[[object], Hashable], rerun: Callable[[], bool]
    ) -> bool:
        """Rerun `tab` (once) when `key` of class `code`'s status stops being `shown`. False where the
        worker watches too many tabs already (the tab then polls)."""
        with self._lock:
            if tab not in self._tabs and len(self._tabs) >= MAX_TABS:
                return False
            self._tabs[tab] = _Tab(code, shown, key, rerun)
            if self._thread is None:
                self._thread = threading.Thread(target=self._forever, name="class-push", daemon=True)
                self._thread.start()
        return True

    def forget(self, tab: str) -> None:
        with self._lock:
            self._tabs.pop(tab, None)

    def changed(self, code: str) -> None:
        """A class changed through this worker: look now, not at the next tick."""
        self._wake.set()

    def watching(self) -> int:
        with self._lock:
            return len(self._tabs)

    def step(self) -> int:
        """One look at every watched class; reruns the tabs out of date and returns how many."""
        with self._lock:
            tabs = list(self._tabs.items())
        now: dict[str, object] = {}
        for code in {t.code for _, t in tabs}:
            try:
                now[code] = self._status(code)
            except ModelZooError:  # ended or expired: every tab of it reruns and says so
                now[code] = _ENDED
            except Exception:  # noqa: BLE001  a database briefly away: the next tick looks again
                continue
        done = 0
        for tab_id, tab in tabs:
            if tab.code not in now or (now[tab.code] is not _ENDED and tab.key(now[tab.code]) == tab.shown):
                continue
            with self._lock:  # the tab's own next run watches again with what it then draws
                if self._tabs.get(tab_id) is not tab:  # it ran since this look began: its new screen is
                    continue  # looked at next tick
                del self._tabs[tab_id]
            if tab.rerun():
                done += 1
        self.pushed += done
        return done

    def _forever(self) -> None:
        while True:
            self._wake.wait(self.every_s)
            self._wake.clear()
            self.step()


def tab_rerunner() -> tuple[str, Callable[[], bool]] | None:
    """(this tab's session id, a function that reruns it from any thread as it stands: its page, its URL's
    query as this run left it, its widgets' values); None where Streamlit offers no way (AppTest, a
    Streamlit without these internals). Call it from the tab's own script run."""
    try:
        from streamlit.proto.ClientState_pb2 import ClientState
        from streamlit.runtime import Runtime
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        if ctx is None or not Runtime.exists():
            return None
        runtime = Runtime.instance()
        session = runtime.get_app_session(ctx.session_id)
        loop = getattr(session, "_event_loop", None)
        if session is None or loop is None or not hasattr(session, "request_rerun"):
            return None
    except Exception:  # noqa: BLE001  internals moved: the tab polls instead
        return None

    def rerun() -> bool:
        if runtime.get_app_session(ctx.session_id) is not session:
            return False  # the tab closed (or reconnected as a new session, which watches on its own)
        # no widget states: Streamlit keeps the session's own values and presses no button again
        state = ClientState(query_string=ctx.query_string, page_script_hash=ctx.page_script_hash)
        try:
            loop.call_soon_threadsafe(session.request_rerun, state)
        except RuntimeError:  # the server is stopping
            return False
        return True

    return ctx.session_id, rerun
