"""A class on one server: N sessions type fresh sentences at once, through Streamlit's own protocol.

    python scripts/bench_load.py [--sessions 1 30] [--rounds 4] [--url http://127.0.0.1:8501]
    make bench-load                    # the same, on a server it starts (one worker)
    make bench-load WORKERS=2          # behind the nginx of `make serve WORKERS=2`

Each session is what a browser tab is to the server: a websocket to /_stcore/stream that sends
BackMsg protobufs and reads ForwardMsg protobufs. A session opens a page (Masked LM, Word senses
with its own sentence, Attention), waits for the run to end, then types a fresh sentence into the
page's text box (a widget-state rerun, sent into the box's fragment where the page has one, as the
browser does) and times it until the server says the run finished; it types the next sentence as
soon as the answer is in ("now try your own", with no pause). All sessions of a round start
together. Reported per page: p50/p95 of those reruns, errors (exception boxes, failed runs, wrong
answers) and the server's peak memory (RSS of its processes, summed). Every answer is checked to
be the one for its own session's sentence: the Masked LM bars against the model's own fill_mask,
the other pages by the sentence's words in what the server sent.

Not a test: `make test` never runs it. Figures depend on the machine; run it alone on it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urlparse
from urllib.request import urlopen

import psutil
import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import serve  # noqa: E402  (scripts/serve.py: the worker command and its health wait)

NOUNS = "farmer teacher pilot doctor child sailor baker singer driver student painter nurse".split()
ADJECTIVES = "old young tired happy quiet busy clever brave careful polite angry lucky".split()
PLACES = "river lake city village harbour market valley forest island station".split()
VERBS = "visit paint watch follow greet call help find thank meet".split()


def fresh_sentence(page: str, rng: random.Random) -> tuple[str, str]:
    """A sentence no session has sent yet (so no cache answers it) and a word that must come back."""
    noun, adj, place, verb = rng.choice(NOUNS), rng.choice(ADJECTIVES), rng.choice(PLACES), rng.choice(VERBS)
    n = rng.randrange(2, 999)
    if page == "masked_lm":
        return f"The {adj} {noun} went to the [MASK] to {verb} {n} friends from the {place}.", noun
    if page == "senses":
        return f"The {adj} {noun} waited {n} minutes on the bank of the {place}.", noun
    return f"The {adj} {noun} walked {n} miles along the {place} to {verb} a friend.", noun


@dataclass(frozen=True)
class Page:
    url_path: str  # the page's URL path
    key: str  # the text box's widget key
    label: str


PAGES = (
    Page("masked_lm", "text", "Masked LM"),
    Page("senses", "mine", "Word senses (own sentence)"),
    Page("attention", "text", "Attention"),
)


@dataclass
class Run:
    """What one script run sent back."""

    seconds: float
    status: int
    payload: bytes  # every ForwardMsg of the run, serialized
    exceptions: list[str]
    bars: list[str] = field(default_factory=list)  # the first Masked LM chart's labels, top first


class Session:
    """One browser tab, as the server sees it."""

    def __init__(self, url: str) -> None:
        parsed = urlparse(url)
        self.ws_url = f"ws://{parsed.netloc}/_stcore/stream"
        self.http = url
        self.widgets: dict[str, tuple[str, str]] = {}  # key -> (widget id, fragment id)
        self.ws: websockets.ClientConnection | None = None

    async def connect(self) -> None:
        # A browser first fetches the page (which sets nginx's affinity cookie), then opens the socket.
        headers = {}
        cookie = await asyncio.to_thread(_affinity_cookie, self.http)
        if cookie:
            headers["Cookie"] = cookie
        self.ws = await websockets.connect(
            self.ws_url, subprotocols=["streamlit"], max_size=None, additional_headers=headers, open_timeout=60
        )

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def rerun(self, page: str, widget: tuple[str, str] | None = None, value: str = "") -> Run:
        """One script run: the page opened (no widget) or `value` typed into `widget`."""
        if widget is None:
            return await self.send(page, [])
        state = WidgetState(id=widget[0], string_value=value)
        return await self.send(page, [state], widget[1], {widget[0].rsplit("-", 1)[-1]: value})

    async def send(self, page: str, states: list[WidgetState], fragment: str = "", query: dict | None = None) -> Run:
        """One script run with these widget states (all in one fragment, or none), timed until it ends."""
        assert self.ws is not None
        msg = BackMsg()
        state = msg.rerun_script
        state.page_name = page  # by URL path, as a tab does; with st.navigation the hash is not needed
        state.widget_states.widgets.extend(states)
        state.fragment_id = fragment
        state.query_string = urlencode(query or {})  # what the page binds to the URL
        start = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        chunks: list[bytes] = []
        exceptions: list[str] = []
        bars: list[str] = []
        while True:
            data = await asyncio.wait_for(self.ws.recv(), timeout=300)
            assert isinstance(data, bytes)
            chunks.append(data)
            fwd = ForwardMsg()
            fwd.ParseFromString(data)
            kind = fwd.WhichOneof("type")
            if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                element = fwd.delta.new_element
                etype = element.WhichOneof("type")
                wid = getattr(getattr(element, etype), "id", "") if etype else ""
                if etype == "exception":
                    exceptions.append(f"{element.exception.type}: {element.exception.message}")
                elif etype == "plotly_chart":
                    if wid.endswith("-mask0"):
                        spec = json.loads(element.plotly_chart.spec or "{}")
                        for trace in spec.get("data", [])[:1]:
                            bars = list(reversed(trace.get("y", [])))
                elif wid.startswith("$$ID"):  # a widget: remembered by its key
                    self.widgets[wid.rsplit("-", 1)[-1]] = (wid, fwd.delta.fragment_id)
            elif kind == "script_finished":
                if fwd.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    continue
                return Run(time.perf_counter() - start, fwd.script_finished, b"".join(chunks), exceptions, bars)


def _affinity_cookie(url: str) -> str:
    with urlopen(url, timeout=60) as response:
        cookies = [c.split(";", 1)[0] for c in response.headers.get_all("Set-Cookie") or []]
    return "; ".join(cookies)


@dataclass
class Typed:
    page: str
    sentence: str
    marker: str
    run: Run


@dataclass
class Start:
    """The teacher's "go": given once every tab has its page open (or has failed to)."""

    sessions: int
    ready: int = 0
    go: asyncio.Event = field(default_factory=asyncio.Event)

    def arrived(self) -> None:
        self.ready += 1
        if self.ready == self.sessions:
            self.go.set()


async def session_work(url: str, page: Page, rounds: int, seed: int, start: Start) -> list[Typed]:
    """Open the page, wait for the round's start, then type `rounds` fresh sentences back to back."""
    rng = random.Random(seed)
    session = Session(url)
    try:
        try:
            await session.connect()
            first = await session.rerun(page.url_path)
            if page.key not in session.widgets:
                raise RuntimeError(f"{page.url_path}: no text box {page.key!r} (exceptions: {first.exceptions})")
        finally:
            start.arrived()
        await start.go.wait()
        typed = []
        for _ in range(rounds):
            sentence, marker = fresh_sentence(page.url_path, rng)
            run = await session.rerun(page.url_path, session.widgets[page.key], sentence)
            typed.append(Typed(page.url_path, sentence, marker, run))
        return typed
    finally:
        await session.close()


@dataclass
class Hog:
    """One more session that keeps the server busy with the longest work a learner can start."""

    kind: str  # "umap": Word senses' own sentence on a UMAP map with a new seed each time;
    # "word2vec": Word embeddings' live training, 10 epochs
    seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    stop: asyncio.Event = field(default_factory=asyncio.Event)


HOGS = ("umap", "word2vec")


async def hog_work(url: str, hog: Hog) -> None:
    """Start the long work again as soon as it ends, until told to stop; `started` is set at the first."""
    rng = random.Random(7)
    session = Session(url)
    page = "senses" if hog.kind == "umap" else "embeddings"
    try:
        await session.connect()
        await session.rerun(page)
        while not hog.stop.is_set():
            if hog.kind == "umap":
                sentence, _ = fresh_sentence("senses", rng)
                (method, fragment), (seed, _), (mine, _) = (session.widgets[k] for k in ("method", "seed", "mine"))
                value = rng.randrange(10_000)
                states = [
                    WidgetState(id=method, string_value="UMAP"),
                    WidgetState(id=seed, double_value=value),
                    WidgetState(id=mine, string_value=sentence),
                ]
                pending = session.send(page, states, fragment, {"method": "umap", "mine": sentence})
            else:
                (epochs, _), (train, _) = session.widgets["w2v_epochs"], session.widgets["w2v_train"]
                states = [WidgetState(id=train, trigger_value=True)]
                states.append(WidgetState(id=epochs, double_array_value=WidgetState().double_array_value))
                states[-1].double_array_value.data.append(10)
                pending = session.send(page, states)
            task = asyncio.ensure_future(pending)
            await asyncio.sleep(0.2)  # the request is on its way: the measured sessions may start
            hog.started.set()
            run = await task
            hog.seconds.append(run.seconds)
            hog.errors += run.exceptions
    except Exception as err:  # noqa: BLE001  (reported with the figures)
        hog.errors.append(f"{type(err).__name__}: {err}")
    finally:
        hog.started.set()
        await session.close()


class MemoryWatch(threading.Thread):
    """Peak RSS of the server processes (a worker or several), sampled every 50 ms."""

    def __init__(self, pids: list[int]) -> None:
        super().__init__(daemon=True)
        self.procs = [psutil.Process(p) for p in pids]
        self.peak = 0
        self.done = threading.Event()

    def rss(self) -> int:
        total = 0
        for proc in self.procs:
            try:
                total += proc.memory_info().rss + sum(c.memory_info().rss for c in proc.children(recursive=True))
            except psutil.Error:
                pass
        return total

    def run(self) -> None:
        while not self.done.wait(0.05):
            self.peak = max(self.peak, self.rss())


def check_answers(typed: list[Typed]) -> list[str]:
    """Every answer is the one for its own sentence (after the timing, so it costs the server nothing)."""
    wrong = []
    masked = [t for t in typed if t.page == "masked_lm"]
    if masked:
        import model_zoo

        # The page's model: bert-base-uncased once prefetched, else the offline masked LM.
        bert = model_zoo.availability(model_zoo.get_card("bert-base-uncased")).ready
        model = model_zoo.load("bert-base-uncased" if bert else "smollm2-135m-mlm")
        for t in masked:
            expected = [token for token, _ in model.fill_mask(t.sentence, 8)[0]]
            if t.run.bars[:3] != expected[:3]:
                wrong.append(f"masked_lm: {t.sentence!r} got {t.run.bars[:3]}, expected {expected[:3]}")
    for t in typed:
        if t.page != "masked_lm" and t.marker.encode() not in t.run.payload:
            wrong.append(f"{t.page}: {t.sentence!r}: the answer does not show the sentence's word {t.marker!r}")
    return wrong


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(
    url: str, page: Page, sessions: int, rounds: int, seed: int, hog: Hog | None = None
) -> tuple[list[Typed], list[str]]:
    """`sessions` sessions type `rounds` fresh sentences each, all starting together (while `hog` runs)."""
    start = Start(sessions)
    hogging = None
    if hog is not None:
        hogging = asyncio.ensure_future(hog_work(url, hog))
        await hog.started.wait()
    tasks = [session_work(url, page, rounds, seed * 1000 + i, start) for i in range(sessions)]
    results = await asyncio.gather(*tasks, return_exceptions=True)
    if hogging is not None and hog is not None:
        hog.stop.set()
        await hogging
    typed = [t for r in results if isinstance(r, list) for t in r]
    failures = [f"{type(r).__name__}: {r}" for r in results if isinstance(r, BaseException)]
    return typed, failures


def server_pids(url: str, own: subprocess.Popen | None) -> list[int]:
    """The app processes: the one this script started, or every streamlit process on this machine."""
    if own is not None:
        return [own.pid]
    return [p.pid for p in psutil.process_iter(["cmdline"]) if "streamlit" in " ".join(p.info["cmdline"] or [])]


def start_server(port: int) -> subprocess.Popen:
    """One app process on `port`, started and awaited as `make serve` starts its workers."""
    proc = subprocess.Popen(serve.worker_command(port), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        serve.wait_healthy(port)
    except SystemExit:
        proc.kill()
        raise
    return proc


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running server or proxy (default: start one worker here)")
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 30])
    parser.add_argument("--rounds", type=int, default=4, help="fresh sentences per session")
    parser.add_argument("--pages", nargs="+", default=[p.url_path for p in PAGES])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--hog",
        nargs="+",
        choices=HOGS,
        default=[],
        help="measure again while one more session runs this long work (isolation: umap, word2vec)",
    )
    args = parser.parse_args(argv)
    own = None if args.url else start_server(port := free_port())
    url = args.url or f"http://127.0.0.1:{port}"
    report: dict[str, object] = {"url": url, "cpus": os.cpu_count(), "rounds": args.rounds, "pages": {}}
    try:
        watch = MemoryWatch(server_pids(url, own))
        baseline = watch.rss()
        watch.start()
        # warm: every model loaded and every page's fixed work done once, as after a class's first minute
        for page in (p for p in PAGES if p.url_path in args.pages):
            asyncio.run(measure(url, page, 1, 1, seed=99))
        print(f"{'page':<28} {'sessions':>8} {'p50 s':>7} {'p95 s':>7} {'max s':>7} {'errors':>6} {'peak RSS':>9}")
        for page in (p for p in PAGES if p.url_path in args.pages):
            for n, hog in ((n, hog) for n in args.sessions for hog in [None, *args.hog]):
                watch.peak = watch.rss()
                hogging = Hog(hog) if hog else None
                typed, failures = asyncio.run(measure(url, page, n, args.rounds, seed=n, hog=hogging))
                seconds = [t.run.seconds for t in typed]
                errors = failures + [e for t in typed for e in t.run.exceptions]
                errors += [f"run ended with status {t.run.status}" for t in typed if t.run.status not in (0, 3)]
                errors += check_answers(typed)
                row = {
                    "sessions": n,
                    "reruns": len(seconds),
                    "p50_s": round(statistics.median(seconds), 3) if seconds else None,
                    "p95_s": round(percentile(seconds, 0.95), 3) if seconds else None,
                    "max_s": round(max(seconds), 3) if seconds else None,
                    "errors": len(errors),
                    "peak_rss_mb": round(watch.peak / 2**20),
                }
                label = page.label
                if hogging is not None:
                    label += f" + {hog}"
                    row["hog"] = {
                        "kind": hog,
                        "runs_s": [round(x, 2) for x in hogging.seconds],
                        "errors": hogging.errors,
                    }
                    errors += [f"hog: {e}" for e in hogging.errors]
                    row["errors"] = len(errors)
                report["pages"].setdefault(page.label, []).append(row)  # type: ignore[union-attr]
                print(
                    f"{label:<28} {n:>8} {row['p50_s']:>7} {row['p95_s']:>7} {row['max_s']:>7} "
                    f"{len(errors):>6} {row['peak_rss_mb']:>6} MB"
                )
                if hogging is not None:
                    print(f"    {hog} runs alongside (s): {', '.join(f'{x:.1f}' for x in hogging.seconds)}")
                for e in errors[:5]:
                    print("   ", e[:300])
        watch.done.set()
        report["baseline_rss_mb"] = round(baseline / 2**20)
        if args.json:
            args.json.write_text(json.dumps(report, indent=2) + "\n")
    finally:
        if own is not None:
            own.send_signal(signal.SIGTERM)
            own.wait(30)


if __name__ == "__main__":
    main()
