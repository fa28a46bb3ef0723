"""A class on one server: N sessions type fresh sentences at once, through Streamlit's own protocol.

    python scripts/bench_load.py [--sessions 1 30] [--rounds 4] [--url http://127.0.0.1:8501] [--only pages class]
    make bench-load                    # the same, on a server it starts (one worker)
    make bench-load WORKERS=2          # behind the nginx of `make serve WORKERS=2`
    make bench-load WORKERS=2 ONLY=class

Each session is what a browser tab is to the server: a websocket to /_stcore/stream that sends
BackMsg protobufs and reads ForwardMsg protobufs. A session opens a page (Masked LM, Word senses
with its own sentence, Attention), waits for the run to end, then types a fresh sentence into the
page's text box (a widget-state rerun, sent into the box's fragment where the page has one, as the
browser does) and times it until the server says the run finished; it types the next sentence as
soon as the answer is in ("now try your own", with no pause). All sessions of a round start
together. Reported per page: p50/p95 of those reruns, the p95 to each rerun's first output (the first
table or chart after the box: earlier than the end where a page draws a first result, GPT's blank), errors (exception boxes, failed runs, wrong
answers) and the server's peak memory (RSS of its processes, summed). Every answer is checked to
be the one for its own session's sentence: the Masked LM bars against the model's own fill_mask,
the other pages by the sentence's words in what the server sent.

The class section (class mode, issue 35): a teacher's tab starts a class and asks a question from the
Class page's form; 30 students' tabs on /class?code=CODE rerun their question box every 2 s and the
projector its count every 1 s (the pages' st.fragment(run_every=...), rerun by the client as a browser's
timer does; since the server pushes a class's changes, the students' tabs look only every 10 s, and every
run the server starts is read as it comes). Reported: (a) all 30 press Send at once: Send to acknowledgement (p50/p95), the last Send
to the projector showing 30, and the answers found stored (the teacher reveals; the moderation list);
(b) the 31 tabs polling for --idle seconds with nothing else: the CPU of the server's processes (nginx
and every worker), then the pages' figures measured again while they poll; (c) with 2 workers or more,
a worker killed (SIGKILL) after half the class answered: the answers sent before it kept, its tabs back
on another worker (the browser's reconnect: /_stcore/health until a worker answers, then the page again
from its URL), the rest answering, and everybody answering the next question.

The writers section (issue 36): 1, 10 and 30 sessions on the GPT lesson press Write at once, each with a
prompt of its own (greedy, 30 tokens): the time to each session's first token (its first streamed text)
and the tokens a second each session then sees, p50 and the slowest, and all sessions' tokens a second.

The presses section (issue 36): every train-on-click button (--buttons, `make bench-load ONLY=presses
BUTTONS=all`; Probing's Retrain by default) pressed by the whole class at once on its page: the seconds until
each presser's page shows the result (the work done once and shared, or queued with each one's place shown),
and the class typing into Masked LM PRESS_SETTLE_S later, beside the trainings, against the same typing
alone. Run it on a fresh cache (CONTEXTLAB_CACHE) so the buttons' work is not already on disk.

The clicks section (issue 38): on Word senses' Nearest uses, each session on a word of its own picks another
use to look from, 1 and then 30 at once: the seconds until the page lists its nearest uses (every word of
the shipped sentences searched at layer 6 of minilm-l6; the index built once per server and kept on disk).

The long section: each page's main box given the longest text it takes (its max_chars; 20,000 characters to a box
that keeps the first characters of a paste itself, components.url.text_box), one session: the
server's memory before, at its peak during the run and after it.

Not a test: `make test` never runs it. Figures depend on the machine; run it alone on it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import tomllib
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.parse import parse_qsl, urlencode, urlparse
from urllib.request import Request, urlopen

import psutil
import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.typing import Subprotocol

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import serve  # noqa: E402  (scripts/serve.py: the worker command and its health wait)

STREAMLIT_PROTOCOL = Subprotocol("streamlit")  # the websocket subprotocol Streamlit's frontend asks for

EN: dict[str, dict[str, str]] = tomllib.loads((ROOT / "assets" / "i18n" / "en.toml").read_text())  # the app's texts

NOUNS = "farmer teacher pilot doctor child sailor baker singer driver student painter nurse".split()
ADJECTIVES = "old young tired happy quiet busy clever brave careful polite angry lucky".split()
PLACES = "river lake city village harbour market valley forest island station".split()
VERBS = "visit paint watch follow greet call help find thank meet".split()


def fresh_sentence(page: str, rng: random.Random) -> tuple[str, str]:
    """A sentence no session has sent yet (so no cache answers it) and a word that must come back."""
    noun, adj, place, verb = rng.choice(NOUNS), rng.choice(ADJECTIVES), rng.choice(PLACES), rng.choice(VERBS)
    n = rng.randrange(2, 999)
    if page in ("masked_lm", "inside"):
        return f"The {adj} {noun} went to the [MASK] to {verb} {n} friends from the {place}.", noun
    if page == "senses":
        return f"The {adj} {noun} waited {n} minutes on the bank of the {place}.", noun
    if page == "embeddings":  # a list of words (the page's words box)
        return f"{noun} {place} {rng.choice(NOUNS)} {rng.choice(PLACES)} {adj}", noun
    if page == "gpt":  # left only vs both sides: a blank (the page shows the candidates, not the sentence)
        return f"The {adj} {noun} walked {n} miles to the ___ by the {place}.", ""
    if page == "using_bert":  # the reader's passage (its question stays the page's)
        return f"The {adj} {noun} walked {n} miles along the {place}. Rain falls under gravity.", noun
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
# Every other lesson with a text box (`--pages` names them; `make bench-load PAGES=all`): its main box.
MORE_PAGES = (
    Page("onehot", "text", "One-hot vectors"),
    Page("embeddings", "words", "Word embeddings (words)"),
    Page("transformer", "tf_text", "The Transformer"),
    Page("elmo", "sentence", "ELMo (weighted sum)"),
    Page("bert_inputs", "a", "BERT inputs"),
    Page("using_bert", "passage", "Using BERT (reader's passage)"),
    Page("gpt", "blank_text", "GPT (left only vs both sides)"),
    Page("playground", "text", "Playground"),
    Page("inside", "text", "Inside the model"),
)
EVERY_PAGE = PAGES + MORE_PAGES


FINISHED = (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)  # a run that ended well


@dataclass
class Run:
    """What one script run sent back."""

    seconds: float
    status: int
    payload: bytes  # every ForwardMsg of the run, serialized
    exceptions: list[str]
    bars: list[str] = field(default_factory=list)  # the first Masked LM chart's labels, top first
    first: float | None = None  # seconds to the first table or chart drawn after the typed box (its first output)


class Session:
    """One browser tab, as the server sees it."""

    def __init__(self, url: str) -> None:
        parsed = urlparse(url)
        self.ws_url = f"ws://{parsed.netloc}/_stcore/stream"
        self.http = url
        self.widgets: dict[str, tuple[str, str]] = {}  # key -> (widget id, fragment id)
        self.limits: dict[str, int] = {}  # a text box's key -> its max_chars (0: none)
        self.ws: websockets.ClientConnection | None = None

    async def connect(self) -> None:
        # A browser first fetches the page (which sets nginx's affinity cookie), then opens the socket.
        headers = {}
        cookie = await asyncio.to_thread(_affinity_cookie, self.http)
        if cookie:
            headers["Cookie"] = cookie
        self.ws = await websockets.connect(
            self.ws_url, subprotocols=[STREAMLIT_PROTOCOL], max_size=None, additional_headers=headers, open_timeout=60
        )

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def rerun(self, page: str, widget: tuple[str, str] | None = None, value: str = "") -> Run:
        """One script run: the page opened (no widget) or `value` typed into `widget`."""
        if widget is None:
            return await self.send(page, [])
        state = WidgetState(id=widget[0], string_value=value)
        return await self.send(page, [state], widget[1], {widget[0].rsplit("-", 1)[-1]: value}, widget[0])

    async def send(
        self, page: str, states: list[WidgetState], fragment: str = "", query: dict | None = None, box: str = ""
    ) -> Run:
        """One script run with these widget states (all in one fragment, or none), timed until it ends, and
        until the first table or chart after the widget `box` (a page that draws a first result early)."""
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
        first: float | None = None
        past_box = not box
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
                past_box = past_box or wid == box
                if first is None and past_box and etype in ("dataframe", "table", "plotly_chart"):
                    first = time.perf_counter() - start
                if etype == "exception":
                    exceptions.append(f"{element.exception.type}: {element.exception.message}")
                elif etype == "plotly_chart":
                    if wid.endswith("-mask0"):
                        spec = json.loads(element.plotly_chart.spec or "{}")
                        for trace in spec.get("data", [])[:1]:
                            bars = list(reversed(trace.get("y", [])))
                elif wid.startswith("$$ID"):  # a widget: remembered by its key
                    self.widgets[wid.rsplit("-", 1)[-1]] = (wid, fwd.delta.fragment_id)
                    if etype in ("text_input", "text_area"):
                        self.limits[wid.rsplit("-", 1)[-1]] = getattr(element, etype).max_chars
            elif kind == "script_finished":
                if fwd.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    continue
                seconds = time.perf_counter() - start
                return Run(seconds, fwd.script_finished, b"".join(chunks), exceptions, bars, first)


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
    # "word2vec": Word embeddings' live training, 10 epochs; "nice19", "idle": two processes on this machine
    # running tiny tensor steps in a Python loop (as a probe trains), at nice 19 or at SCHED_IDLE
    seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    stop: asyncio.Event = field(default_factory=asyncio.Event)


HOGS = ("umap", "word2vec", "nice19", "idle")
STEPS = """import torch
lin = torch.nn.Linear(128, 128)
opt, x = torch.optim.SGD(lin.parameters(), lr=1e-3), torch.randn(128, 128)
while True:
    loss = lin(x).pow(2).mean(); opt.zero_grad(); loss.backward(); opt.step()
"""


async def local_trainings(hog: Hog) -> None:
    """Two trainings' worth of CPU beside the server (the bench on the server's machine), at the priority
    `hog.kind` names, until told to stop: which priority lets the class's page runs go first."""
    from model_zoo.trainer_process import lowest_priority

    def lower() -> None:
        if hog.kind == "idle":
            lowest_priority(19)
        else:
            os.nice(19)

    loops = [subprocess.Popen([sys.executable, "-c", STEPS], preexec_fn=lower) for _ in range(2)]  # noqa: PLW1509
    try:
        await asyncio.sleep(3)  # torch imported: the loops run
        hog.started.set()
        await hog.stop.wait()
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


async def hog_work(url: str, hog: Hog) -> None:
    """Start the long work again as soon as it ends, until told to stop; `started` is set at the first."""
    if hog.kind in ("nice19", "idle"):
        await local_trainings(hog)
        return
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
    """Peak RSS of the server processes (a worker or several), summed, sampled every 50 ms; and each app
    process's own peak over the whole run, RSS and PSS (its share of pages it shares: the model files two
    workers map), PSS read every second (the kernel adds it up page by page)."""

    def __init__(self, pids: list[int]) -> None:
        super().__init__(daemon=True)
        self.procs = [psutil.Process(p) for p in pids]
        self.peak = 0
        self.each: dict[str, dict[str, int]] = {}  # an app process's port: its peak "rss" and "pss", bytes
        self.done = threading.Event()

    def apps(self) -> dict[str, psutil.Process]:
        """The app (Streamlit) processes among the watched ones and their descendants, by port, and each one's
        trainer process (serving.runtime.Trainer) as "PORT trainer"."""
        found = {}
        for root in self.procs:
            try:
                for proc in (root, *root.children(recursive=True)):
                    if (port := app_port(proc)) is not None:
                        found[str(port)] = proc
                        for child in proc.children(recursive=True):
                            if "model_zoo.trainer_process" in child.cmdline():
                                found[f"{port} trainer"] = child
            except psutil.Error:
                pass
        return found

    def per_app(self) -> None:
        for port, proc in self.apps().items():
            try:
                info = proc.memory_full_info()
            except psutil.Error:
                continue
            peak = self.each.setdefault(port, {"rss": 0, "pss": 0})
            peak["rss"], peak["pss"] = max(peak["rss"], info.rss), max(peak["pss"], getattr(info, "pss", 0))

    def per_app_mb(self) -> dict[str, dict[str, int]]:
        return {port: {k: round(v / 2**20) for k, v in peak.items()} for port, peak in sorted(self.each.items())}

    def rss(self) -> int:
        total = 0
        for proc in self.procs:
            try:
                total += proc.memory_info().rss + sum(c.memory_info().rss for c in proc.children(recursive=True))
            except psutil.Error:
                pass
        return total

    def run(self) -> None:
        tick = 0
        while not self.done.wait(0.05):
            self.peak = max(self.peak, self.rss())
            tick += 1
            if tick % 20 == 0:
                self.per_app()


def check_answers(typed: list[Typed]) -> list[str]:
    """Every answer is the one for its own sentence (after the timing, so it costs the server nothing)."""
    wrong = []
    masked = [t for t in typed if t.page == "masked_lm"]
    if masked:
        import model_zoo
        from model_zoo.onednn import BF16_VAR

        os.environ.setdefault(BF16_VAR, "auto")  # the precision scripts/serve.py serves it in
        # The page's model: bert-base-uncased once prefetched, else the offline masked LM.
        bert = model_zoo.availability(model_zoo.get_card("bert-base-uncased")).ready
        model = model_zoo.load("bert-base-uncased" if bert else "smollm2-135m-mlm")
        assert isinstance(model, model_zoo.MaskedLM)
        # In bf16 a batch's products round otherwise than one sentence's alone, so guesses a hair apart may
        # trade places (6 of 60 sentences' second and third, on an AMX Xeon, 2026-12-04): there the page's
        # three must be among this pass's five. Another session's answer would bring other words.
        loose = model.runs_bf16
        for t in masked:
            expected = [token for token, _ in model.fill_mask(t.sentence, 8)[0]]
            if (
                (set(t.run.bars[:3]) - set(expected[:5]) or len(t.run.bars) < 3)
                if loose
                else t.run.bars[:3] != expected[:3]
            ):
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
    """The app processes: the one this script started, else the server listening on the URL's port here
    (server_roots), else every streamlit process on this machine."""
    if own is not None:
        return [own.pid]
    if roots := server_roots(url):
        return [p.pid for p in roots]
    return [p.pid for p in psutil.process_iter(["cmdline"]) if "streamlit" in " ".join(p.info["cmdline"] or [])]


def start_server(port: int) -> subprocess.Popen:
    """One app process on `port`, started and awaited as `make serve` starts its workers."""
    proc = subprocess.Popen(
        serve.worker_command(port),
        cwd=ROOT,
        env=serve.worker_env(os.cpu_count() or 1),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
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


# -- class mode (issue 35) ---------------------------------------------------------------------------
# A class of students on /class?code=CODE, each tab rerunning its question box every 2 s (the page's
# st.fragment(run_every=...), rerun by the client's timer as a browser's is), and the teacher's projector
# counting every 1 s. Sessions go through the same protocol as above; a browser's Send is the form's
# widget states and its submit trigger, sent into the box's fragment.
CLASS_TEXT = EN["class"]
SENT = CLASS_TEXT["sent"].split("{answer}")[0]  # "Sent: ", the student's acknowledgement
GUESSES = "France Europe Paris Germany Italy Spain England Belgium Canada Brazil".split()
RECONNECT_S = 60.0  # a tab that finds no worker for this long is stuck
POLL_S = 2.0  # components.classroom_view.POLL_S: a student's box asks for the question this often


@dataclass
class Widget:
    kind: str
    id: str
    label: str
    form: str
    fragment: str
    options: list[str]
    submit: bool  # a form's submit button


@dataclass
class Drawn:
    """What one run of a tab sent back."""

    seconds: float
    status: int
    texts: list[str]  # markdown, captions, alerts, headings, plain text
    exceptions: list[str]
    fragment: str  # the fragment rerun ("" for the whole page)


class Disconnected(Exception):
    """The tab's socket closed (its worker died, or nginx dropped it)."""


class Tab:
    """A browser tab on the Class page: its socket, the widgets it shows, the fragments its timers rerun, and
    the browser's reconnect (ask /_stcore/health until a worker answers, a new socket, the page again from its
    URL, which for a student holds the class's code). Its timers start at a random phase: a class's tabs
    join over a minute, not at one instant."""

    def __init__(self, url: str, query: dict[str, str], page: str = "class", seed: int = 0) -> None:
        self.url, self.page, self.query = url.rstrip("/"), page, dict(query)
        self.rng = random.Random(seed)
        self.cookies: dict[str, str] = {}
        self.ws: websockets.ClientConnection | None = None
        self.closed: asyncio.Future | None = None  # the socket's reader: done once the socket is closed
        self.inbox: deque[ForwardMsg | None] = deque()  # what the server sent, not read yet (None: closed)
        self.arrived = asyncio.Event()  # set when something comes in
        self.pushed = 0  # runs the server started itself
        self.last: Drawn | None = None  # what the last run drew
        self.widgets: dict[str, Widget] = {}
        self.states: dict[str, WidgetState] = {}  # values the tab keeps sending (a submitted form's)
        self.timers: dict[str, float] = {}  # fragment id -> seconds between its reruns
        self.lock = asyncio.Lock()  # one run at a time: a Send waits for a poll in flight
        self.on_run: Callable[[Tab, Drawn], None] | None = None
        self.errors: list[str] = []
        self.lost_at: float | None = None
        self.back_at: float | None = None  # when the page was drawn again after a lost socket
        self.bad_gateways = 0  # 502s met while reconnecting

    @property
    def worker(self) -> str:
        return self.cookies.get(serve.COOKIE, "")

    def _get(self, path: str) -> int:
        request = Request(self.url + path)
        if self.cookies:
            request.add_header("Cookie", "; ".join(f"{k}={v}" for k, v in self.cookies.items()))
        try:
            with urlopen(request, timeout=30) as response:
                status, headers = response.status, response.headers
        except HTTPError as err:
            status, headers = err.code, err.headers
            err.close()
        for cookie in headers.get_all("Set-Cookie") or []:
            name, _, value = cookie.split(";", 1)[0].partition("=")
            self.cookies[name.strip()] = value.strip()
        return status

    async def _connect(self) -> None:
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())} if self.cookies else {}
        ws_url = "ws" + self.url.removeprefix("http") + "/_stcore/stream"
        self.ws = await websockets.connect(
            ws_url, subprotocols=[STREAMLIT_PROTOCOL], max_size=None, additional_headers=headers, open_timeout=60
        )
        self.inbox = deque()
        self.closed = asyncio.ensure_future(self._read(self.ws, self.inbox, self.arrived))
        self.widgets, self.states, self.timers = {}, {}, {}  # a new session on the server

    @staticmethod
    async def _read(ws: websockets.ClientConnection, inbox: deque, arrived: asyncio.Event) -> None:
        """Everything the server sends, as it comes: the answers to this tab's runs and the runs the server
        starts itself (class mode's push); None once the socket is closed."""
        try:
            async for data in ws:
                fwd = ForwardMsg()
                fwd.ParseFromString(data if isinstance(data, bytes) else data.encode())
                inbox.append(fwd)
                arrived.set()
        except websockets.ConnectionClosed:
            pass
        finally:
            inbox.append(None)
            arrived.set()

    def pushed_run(self) -> bool:
        """Whether the server started a run of this tab by itself (class mode's push) that is not read yet:
        what came after this tab's last run ended, up to a new run's first message, is passed over."""
        while self.inbox and self.inbox[0] is not None and self.inbox[0].WhichOneof("type") != "new_session":
            self.inbox.popleft()
        return bool(self.inbox) and self.inbox[0] is not None

    async def _next(self) -> ForwardMsg:
        deadline = time.perf_counter() + 300
        while not self.inbox:
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), timeout=max(0.0, deadline - time.perf_counter()))
        fwd = self.inbox[0]
        if fwd is None:  # closed: left there for whoever reads next too
            raise Disconnected("socket closed")
        return self.inbox.popleft()  # type: ignore[return-value]

    async def open(self) -> Drawn:
        """The page from its URL: fetched (nginx's cookie), then the socket and the first run."""
        status = await asyncio.to_thread(self._get, f"/{self.page}?{urlencode(self.query)}")
        if status != 200:
            raise RuntimeError(f"/{self.page}: HTTP {status}")
        await self._connect()
        return await self.run()

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def run(self, states: Sequence[WidgetState] = (), fragment: str = "", auto: bool = False) -> Drawn:
        async with self.lock:
            return await self._run(states, fragment, auto)

    async def _run(self, states: Sequence[WidgetState], fragment: str, auto: bool) -> Drawn:
        if self.ws is None:
            raise Disconnected("no socket")
        msg = BackMsg()
        rerun = msg.rerun_script
        rerun.page_name = self.page
        rerun.query_string = urlencode(self.query)
        sent = {s.id for s in states}
        kept = [s for wid, s in self.states.items() if wid in self.widgets and wid not in sent]
        rerun.widget_states.widgets.extend([*kept, *states])
        rerun.fragment_id = fragment
        rerun.is_auto_rerun = auto
        while self.pushed_run():  # a run the server started, not yet read: first, as the browser does
            self.pushed += 1
            await self._collect("", time.perf_counter())
        start = time.perf_counter()
        try:
            await self.ws.send(msg.SerializeToString())
        except websockets.ConnectionClosed as err:
            raise Disconnected(str(err)) from err
        return await self._collect(fragment, start)

    async def _collect(self, fragment: str, start: float) -> Drawn:
        """Read one run's messages until the script finishes (a run this tab asked for, or one the server
        started: then `fragment` is "", the whole page)."""
        widgets: dict[str, Widget] = {}
        timers: dict[str, float] = {}
        stopped: list[str] = []
        texts: list[str] = []
        exceptions: list[str] = []
        ran_fragments: set[str] = set()
        while True:
            fwd = await self._next()
            kind = fwd.WhichOneof("type")
            if kind == "delta" and fwd.delta.fragment_id:
                ran_fragments.add(fwd.delta.fragment_id)
            if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                _read_element(fwd.delta.new_element, fwd.delta.fragment_id, widgets, texts, exceptions)
            elif kind == "auto_rerun":
                timers[fwd.auto_rerun.fragment_id] = fwd.auto_rerun.interval
            elif kind == "stop_auto_rerun":
                stopped += fwd.stop_auto_rerun.fragment_ids
            elif kind == "page_info_changed":
                self.query = dict(parse_qsl(fwd.page_info_changed.query_string))
            elif kind == "script_finished":
                if fwd.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:  # st.rerun: the whole page again
                    fragment, widgets, timers, texts, exceptions, ran_fragments = "", {}, {}, [], [], set()
                    continue
                break
        # what ran decides, not what was asked: a run the server pushed while this tab's fragment ran (or the
        # other way round) arrives in the other's place
        if fwd.script_finished == ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY:
            ran = {fragment} if fragment else ran_fragments
            self.widgets = {k: w for k, w in self.widgets.items() if w.fragment not in ran} | widgets
            self.timers |= timers
        else:
            self.widgets, self.timers = widgets, timers
        for f in stopped:
            self.timers.pop(f, None)
        drawn = Drawn(time.perf_counter() - start, fwd.script_finished, texts, exceptions, fragment)
        self.last = drawn
        if self.on_run is not None:
            self.on_run(self, drawn)
        return drawn

    async def live(self, stop: asyncio.Event) -> None:
        """Rerun the page's timed fragments as the browser's timers do, until `stop`; reconnect on a lost socket."""
        stopping = asyncio.ensure_future(stop.wait())
        due: dict[str, float] = {}
        try:
            while not stop.is_set():
                now = time.perf_counter()
                due = {f: due.get(f, now + self.rng.uniform(0, every)) for f, every in self.timers.items()}
                if self.closed is not None and self.closed.done():
                    await self.reconnect(stop)
                    due = {}
                    continue
                if self.pushed_run():  # a run the server started (class push), once this tab's own is read
                    try:
                        async with self.lock:
                            if self.pushed_run():
                                self.pushed += 1
                                await self._collect("", time.perf_counter())
                    except Disconnected:
                        await self.reconnect(stop)
                        due = {}
                    continue
                wait = min(due.values()) - now if due else 0.5
                if wait > 0:
                    self.arrived.clear()
                    if not self.pushed_run():
                        arrival = asyncio.ensure_future(self.arrived.wait())
                        await asyncio.wait(
                            [stopping, arrival, *([self.closed] if self.closed else [])],
                            timeout=wait,
                            return_when=asyncio.FIRST_COMPLETED,
                        )
                        arrival.cancel()
                    continue
                fragment = min(due, key=lambda f: due[f])
                while due[fragment] <= now:  # a tick missed while busy is skipped, as setInterval does
                    due[fragment] += self.timers[fragment]
                if self.lock.locked():
                    continue
                try:
                    await self.run(fragment=fragment, auto=True)
                except Disconnected:
                    await self.reconnect(stop)
                    due = {}
        except Exception as err:  # a tab whose timers died would look like one the server forgot
            self.errors.append(f"the tab's timers stopped: {type(err).__name__}: {err}")
            raise
        finally:
            stopping.cancel()

    async def reconnect(self, stop: asyncio.Event) -> None:
        self.lost_at = time.perf_counter()
        delay = 0.5
        while not stop.is_set():
            try:
                status = await asyncio.to_thread(self._get, "/_stcore/health")
            except OSError:
                status = 0
            self.bad_gateways += status == 502
            if status == 200:
                try:
                    async with self.lock:
                        await self._connect()
                        await self._run((), "", False)
                    self.back_at = time.perf_counter()
                    return
                except (OSError, Disconnected, websockets.InvalidHandshake):
                    pass
            if time.perf_counter() - self.lost_at > RECONNECT_S:
                self.errors.append(f"no worker answered within {RECONNECT_S:.0f} s (last HTTP status {status})")
                await stop.wait()
                return
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, 3.0)


def _read_element(element: Any, fragment: str, widgets: dict, texts: list[str], exceptions: list[str]) -> None:
    kind = element.WhichOneof("type")
    if kind is None:
        return
    body: Any = getattr(element, kind)
    if kind == "exception":
        exceptions.append(f"{body.type}: {body.message}")
    elif kind in ("markdown", "alert", "heading", "text"):
        texts.append(body.body)
    elif kind in ("button", "text_input", "text_area", "radio", "selectbox") and body.id:
        options = list(getattr(body, "options", []))
        submit = kind == "button" and body.is_form_submitter
        widgets[body.id] = Widget(kind, body.id, body.label, body.form_id, fragment, options, submit)


def _trigger(widget: Widget) -> WidgetState:
    return WidgetState(id=widget.id, trigger_value=True)


def _button(tab: Tab, label: str) -> Widget:
    found = [w for w in tab.widgets.values() if w.kind == "button" and not w.submit and w.label == label]
    if not found:
        raise RuntimeError(f"no {label!r} button on the teacher's page")
    return found[0]


async def start_class(teacher: Tab) -> str:
    """The teacher opens /class and presses "Start a class": the code and secret land in the tab's URL."""
    await teacher.open()
    await teacher.run([_trigger(_button(teacher, CLASS_TEXT["start"]))])
    if "code" not in teacher.query or "key" not in teacher.query:
        raise RuntimeError("the class did not start (no code in the teacher's URL)")
    return teacher.query["code"]


async def ask_blank(teacher: Tab) -> None:
    """The open task "guess the word the model puts in a blank", asked with the form's default sentence."""
    task = next(w for w in teacher.widgets.values() if w.kind == "radio" and CLASS_TEXT["task_blank"] in w.options)
    chosen = WidgetState(id=task.id, string_value=CLASS_TEXT["task_blank"])
    teacher.states[task.id] = chosen  # the tab keeps its choice, as the browser does
    await teacher.run([chosen])  # the form then shows the blank's box
    submit = next(w for w in teacher.widgets.values() if w.form == "class_task" and w.submit)
    drawn = await teacher.run([_trigger(submit)])
    if not any(w.kind == "button" and w.label == CLASS_TEXT["reveal"] for w in teacher.widgets.values()):
        raise RuntimeError(f"the question was not asked: {drawn.texts[-3:]} {drawn.exceptions}")


async def reveal(teacher: Tab) -> list[str]:
    """The teacher reveals: the moderation list, one "nickname: answer" line per stored answer."""
    drawn = await teacher.run([_trigger(_button(teacher, CLASS_TEXT["reveal"]))])
    return list(drawn.texts)


async def acknowledged(students: list[Student], projector: Projector, size: int) -> dict:
    """Send → "Sent" over the students who pressed (p50/p95/max, how many), and the seconds from the last
    press until the projector counted `size`."""
    acks = [a for s in students for a in s.acks]
    shown = await projector.shows(size, max(s.pressed for s in students))
    return seconds_summary(acks) | {
        "acknowledged": len(acks),
        "projector_all_s": None if shown is None else round(shown, 3),
    }


async def end_class(stop: asyncio.Event, live: list, tabs: list[Tab]) -> None:
    """Stop every tab's timers and close its socket."""
    stop.set()
    await asyncio.gather(*live, return_exceptions=True)
    await asyncio.gather(*(t.close() for t in tabs), return_exceptions=True)


def stored(sent: list[str], rows: list[str]) -> int:
    """How many of the `sent` answers the teacher's moderation list ("nickname: answer" lines) holds, counted
    as a multiset of answers (a nickname sent through this protocol's fragment form is not always applied;
    a browser's is, tests/test_class_browser.py)."""
    held = Counter(row.split(": ", 1)[-1] for row in rows if ": " in row)
    return sum(min(n, held[a]) for a, n in Counter(sent).items())


def answered(drawn: Drawn) -> int | None:
    """The projector's count ("N answered", in large type) in what a count run drew."""
    for text in drawn.texts:
        if "font-size:3rem" in text and (found := re.search(r">\s*(\d+)", text)):
            return int(found.group(1))
    return None


@dataclass
class Student:
    tab: Tab
    nickname: str
    seen: dict[int, float] = field(default_factory=dict)  # question id -> when its box first showed it
    sent: dict[int, str] = field(default_factory=dict)  # question id -> the answer acknowledged
    acks: list[float] = field(default_factory=list)  # seconds from Send to the acknowledgement
    pressed: float = 0.0
    errors: list[str] = field(default_factory=list)

    def form(self) -> tuple[int, Widget, Widget | None, Widget] | None:
        """The open question's id, answer box, nickname box and Send button, where the tab shows one."""
        submit = next((w for w in self.tab.widgets.values() if w.submit and w.form.startswith("class_form_")), None)
        if submit is None:
            return None
        inside = [w for w in self.tab.widgets.values() if w.kind == "text_input" and w.form == submit.form]
        nickname = next((w for w in inside if w.id.endswith("-class_nickname")), None)
        box = next(w for w in inside if w is not nickname)
        return int(submit.form.rsplit("_", 1)[-1]), box, nickname, submit

    def watch(self, tab: Tab, drawn: Drawn) -> None:
        if (form := self.form()) is not None:
            self.seen.setdefault(form[0], time.perf_counter())

    async def send(self, answer: str) -> None:
        """Type the answer and a nickname, press Send; timed until the box acknowledges it."""
        form = self.form()
        if form is None:
            tab = self.tab
            self.errors.append(
                f"no question to answer (tab on {tab.worker or 'w1'}: {tab.pushed} runs pushed, timers"
                f" {sorted(tab.timers.values())}, {len(tab.inbox)} messages unread, widgets {[w.label for w in tab.widgets.values()][:6]}; last run: {tab.last})"
            )
            return
        qid, box, nickname, submit = form
        kept = [WidgetState(id=box.id, string_value=answer)]
        if nickname is not None:
            kept.append(WidgetState(id=nickname.id, string_value=self.nickname))
        self.pressed = time.perf_counter()
        try:
            drawn = await self.tab.run([*kept, _trigger(submit)], submit.fragment)
        except Disconnected as err:
            self.errors.append(f"socket lost while sending: {err}")
            return
        self.tab.states |= {s.id: s for s in kept}  # the form keeps its values, as the browser's does
        if any(text.startswith(SENT) and answer in text for text in drawn.texts):
            self.acks.append(time.perf_counter() - self.pressed)
            self.sent[qid] = answer
        else:
            self.errors.append(f"no acknowledgement: {[t[:80] for t in drawn.texts[-2:]]} {drawn.exceptions}")


@dataclass
class Projector:
    tab: Tab
    counts: list[tuple[float, int]] = field(default_factory=list)  # (when, count shown)

    def watch(self, tab: Tab, drawn: Drawn) -> None:
        if (n := answered(drawn)) is not None:
            self.counts.append((time.perf_counter(), n))

    async def shows(self, n: int, after: float, timeout: float = 30) -> float | None:
        """Seconds from `after` until a count run showed at least `n` (None: not within `timeout`)."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            hit = next((when for when, c in self.counts if when >= after and c >= n), None)
            if hit is not None:
                return hit - after
            await asyncio.sleep(0.05)
        return None


async def all_see(students: list[Student], asked: float, timeout: float = 20) -> list[float]:
    """Wait until every student's box shows the newest question; seconds from `asked` for each."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        newest = [max(s.seen, default=None) for s in students]
        if all(q is not None and s.seen[q] >= asked for s, q in zip(students, newest, strict=True)):
            return [s.seen[q] - asked for s, q in zip(students, newest, strict=True) if q is not None]
        await asyncio.sleep(0.05)
    return [s.seen[q] - asked for s in students if (q := max(s.seen, default=None)) is not None and s.seen[q] >= asked]


def server_roots(url: str) -> list[psutil.Process]:
    """The server behind `url` on this machine: the process listening on its port or, behind nginx, the
    `scripts/serve.py` above it (its workers and nginx are its descendants). [] for a server elsewhere."""
    port = urlparse(url).port or 80
    roots: dict[int, psutil.Process] = {}
    for conn in psutil.net_connections("tcp"):
        if conn.status != psutil.CONN_LISTEN or conn.laddr.port != port or not conn.pid:
            continue
        proc = psutil.Process(conn.pid)
        while (parent := proc.parent()) is not None and (
            parent.name().startswith("nginx") or parent.cmdline()[1:2] and parent.cmdline()[1].endswith("serve.py")
        ):
            proc = parent
        roots[proc.pid] = proc
    return list(roots.values())


def server_processes(url: str) -> list[psutil.Process]:
    """server_roots and every process under them."""
    found = {p.pid: p for p in server_roots(url)}
    for proc in list(found.values()):
        found |= {c.pid: c for c in proc.children(recursive=True)}
    return list(found.values())


def worker_processes(url: str) -> dict[str, psutil.Process]:
    """The app processes behind nginx, by the name the affinity cookie gives them (w1, w2, ...)."""
    port = urlparse(url).port or 80
    workers = {}
    for proc in server_processes(url):
        if (worker_port := app_port(proc)) is not None and worker_port != port:
            workers[f"w{worker_port - port}"] = proc
    return workers


def app_port(proc: psutil.Process) -> int | None:
    """The port of an app (Streamlit) process, from its command line; None for any other process."""
    args = proc.cmdline()
    if "streamlit" in " ".join(args) and "--server.port" in args:
        return int(args[args.index("--server.port") + 1])
    return None


def cpu_seconds(procs: list[psutil.Process]) -> float:
    total = 0.0
    for proc in procs:
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            pass
    return total


SETTLED_PCT = 5.0  # a server whose processes use less of a core than this over SETTLE_WINDOW_S is settled
SETTLE_WINDOW_S = 2.0


def settle(url: str, most_s: float = 180.0) -> float:
    """Wait until the server's own background work is over (the warm-up that loads the default models after
    the first page, serving.warm_up); seconds waited. A teacher starts the server before the class; figures
    taken while it still loads models measured up to twice as slow (Masked LM 1.5-1.9 s against 0.7-0.8)."""
    procs = server_processes(url)
    start = time.perf_counter()
    while time.perf_counter() - start < most_s:
        cpu0, t0 = cpu_seconds(procs), time.perf_counter()
        time.sleep(SETTLE_WINDOW_S)
        if 100 * (cpu_seconds(procs) - cpu0) / (time.perf_counter() - t0) < SETTLED_PCT:
            break
    return round(time.perf_counter() - start, 1)


def seconds_summary(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50_s": None, "p95_s": None, "max_s": None}
    return {
        "p50_s": round(statistics.median(values), 3),
        "p95_s": round(percentile(values, 0.95), 3),
        "max_s": round(max(values), 3),
    }


async def join_class(url: str, code: str, size: int) -> tuple[list[Student], list[str]]:
    """`size` students open /class?code=CODE at once."""
    students = [Student(Tab(url, {"code": code}, seed=i), f"s{i:02d}") for i in range(size)]
    for s in students:
        s.tab.on_run = s.watch
    results = await asyncio.gather(*(s.tab.open() for s in students), return_exceptions=True)
    return students, [f"join: {type(r).__name__}: {r}" for r in results if isinstance(r, BaseException)]


async def answer_together(students: list[Student], round_no: int) -> list[Student]:
    """Every student in `students` presses Send at the same moment; returns them."""
    await asyncio.gather(*(s.send(f"{GUESSES[(i + round_no) % len(GUESSES)]}") for i, s in enumerate(students)))
    return students


async def class_load(url: str, size: int, idle_s: float, pages: list[Page], sessions: int, rounds: int) -> dict:
    """(a) `size` students answer at once, (b) `size` + 1 pollers idle, then beside the pages' own load."""
    out: dict[str, Any] = {"students": size}
    procs = server_processes(url)
    # the same processes with no tab open, first (once the warm-up's last work has settled): what the
    # class's tabs add is the difference
    await asyncio.sleep(min(idle_s, 20.0))
    cpu0, t0 = cpu_seconds(procs), time.perf_counter()
    await asyncio.sleep(min(idle_s, 20.0))
    no_tabs = 100 * (cpu_seconds(procs) - cpu0) / (time.perf_counter() - t0)
    teacher = Tab(url, {})
    projector = Projector(teacher)
    code = await start_class(teacher)
    teacher.on_run = projector.watch
    students, errors = await join_class(url, code, size)
    out["workers_of_students"] = dict(Counter(s.tab.worker or "w1" for s in students))
    stop = asyncio.Event()
    tabs = [teacher, *(s.tab for s in students)]
    live = [asyncio.ensure_future(t.live(stop)) for t in tabs]
    typed: list[Typed] = []
    try:
        asked = time.perf_counter()
        await ask_blank(teacher)
        seen = await all_see(students, asked)
        out["question_seen"] = seconds_summary(seen) | {"students": len(seen)}
        # (b) nothing but the timers for idle_s
        own = psutil.Process()
        cpu0, own0, t0 = cpu_seconds(procs), cpu_seconds([own]), time.perf_counter()
        await asyncio.sleep(idle_s)
        wall = time.perf_counter() - t0
        out["idle"] = {
            "seconds": round(wall, 1),
            "server_cpu_pct_of_one_core": round(100 * (cpu_seconds(procs) - cpu0) / wall, 1),
            "server_cpu_pct_with_no_tab_open": round(no_tabs, 1),
            "bench_client_cpu_pct": round(100 * (cpu_seconds([own]) - own0) / wall, 1),
            "server_processes": len(procs),
        }
        # (b) the pages' own figures while the class polls
        for page in pages:
            page_typed, failures = await measure(url, page, sessions, rounds, seed=sessions + 7)
            typed += page_typed
            out.setdefault("pages_while_polling", {})[page.label] = {"typed": page_typed, "failures": failures}
        # (a) everybody presses Send at once
        await answer_together(students, 0)
        out["answer"] = await acknowledged(students, projector, size)
        out["projector_all_s"] = out["answer"].pop("projector_all_s")
        rows = await reveal(teacher)
        out["stored"] = stored([a for s in students for a in s.sent.values()], rows)
    finally:
        await end_class(stop, live, tabs)
    out["errors"] = errors + [e for s in students for e in s.errors + s.tab.errors] + teacher.errors
    out["runs_pushed_by_the_server"] = sum(tab.pushed for tab in tabs)
    return out


async def class_failover(url: str, size: int) -> dict:
    """(c) Kill one worker after half the class has answered: nothing sent is lost, its tabs reconnect to
    another worker (nginx re-pins them), the rest answer, and everybody answers the next question."""
    out: dict[str, Any] = {"students": size}
    teacher = Tab(url, {})
    projector = Projector(teacher)
    code = await start_class(teacher)
    teacher.on_run = projector.watch
    students, errors = await join_class(url, code, size)
    stop = asyncio.Event()
    tabs = [teacher, *(s.tab for s in students)]
    live = [asyncio.ensure_future(t.live(stop)) for t in tabs]
    try:
        asked = time.perf_counter()
        await ask_blank(teacher)
        await all_see(students, asked)
        first, rest = students[: size // 2], students[size // 2 :]
        await answer_together(first, 0)
        before = [a for s in first for a in s.sent.values()]
        workers = worker_processes(url)
        victim = "w1"
        on_victim = [t for t in tabs if t.worker == victim]
        out["killed"] = victim
        out["tabs_on_killed_worker"] = len(on_victim)
        out["sent_before_kill"] = len(before)
        killed_at = time.perf_counter()
        workers[victim].kill()  # SIGKILL: no goodbye to its sockets
        deadline = killed_at + RECONNECT_S + 10
        while time.perf_counter() < deadline and not all(
            t.back_at is not None and t.back_at > killed_at or t.errors for t in on_victim
        ):
            await asyncio.sleep(0.1)
        back = [t for t in on_victim if t.back_at is not None and t.back_at > killed_at and t.lost_at is not None]
        out["reconnected"] = len(back)
        out["reconnect"] = seconds_summary([t.back_at - killed_at for t in back])  # type: ignore[operator]
        out["socket_lost"] = seconds_summary([t.lost_at - killed_at for t in back])  # type: ignore[operator]
        out["bad_gateways_seen"] = sum(t.bad_gateways for t in on_victim)
        out["now_on"] = dict(Counter(t.worker for t in on_victim))
        await asyncio.sleep(2 * POLL_S)  # every box has polled again after its reconnect
        await answer_together(rest, 1)
        rows = await reveal(teacher)
        out["kept_after_kill"] = stored(before, rows)
        out["first_question_stored"] = stored([a for s in students for a in s.sent.values()], rows)
        for s in students:
            s.acks.clear()
        asked = time.perf_counter()
        await ask_blank(teacher)
        await all_see(students, asked)
        await answer_together(students, 2)
        out["next_question"] = await acknowledged(students, projector, size)
        newest = max(max(s.sent, default=0) for s in students)
        rows = await reveal(teacher)
        out["next_question"]["stored"] = stored([s.sent[newest] for s in students if newest in s.sent], rows)
    finally:
        await end_class(stop, live, tabs)
    out["errors"] = errors + [e for s in students for e in s.errors + s.tab.errors] + teacher.errors
    out["runs_pushed_by_the_server"] = sum(tab.pushed for tab in tabs)
    return out


# -- the GPT lesson's writers (issue 36) ---------------------------------------------------------------
WRITERS = (1, 10, 30)
WRITE_TOPICS = ("river", "market", "garden", "winter", "music", "train", "kitchen", "forest", "school", "harbour")


@dataclass
class Written:
    first_s: float | None = None  # Write pressed -> the first token's text on the page
    tokens: int = 0
    per_s: float | None = None  # the tokens after the first, a second, as this session saw them come
    error: str = ""


async def write_once(url: str, i: int, ready: asyncio.Barrier) -> Written:
    """One session on /gpt: its own prompt, Write pressed when every session is ready; each streamed text timed."""
    tab = Tab(url, {"lang": "en"}, page="gpt", seed=i)
    found = Written()
    try:
        await tab.open()
        box = next(w for w in tab.widgets.values() if w.id.endswith("-prompt"))
        write = next(w for w in tab.widgets.values() if w.kind == "button" and w.id.endswith("-write"))
        prompt = f"Student {i} wrote a story about the {WRITE_TOPICS[i % len(WRITE_TOPICS)]}: it began"
        await ready.wait()
        msg = BackMsg()
        msg.rerun_script.page_name = "gpt"
        msg.rerun_script.query_string = urlencode(tab.query)
        msg.rerun_script.widget_states.widgets.extend([WidgetState(id=box.id, string_value=prompt), _trigger(write)])
        pressed = time.perf_counter()
        assert tab.ws is not None
        await tab.ws.send(msg.SerializeToString())
        seen: dict[str, float] = {}  # each streamed text, when it came
        while True:
            fwd = await tab._next()
            kind = fwd.WhichOneof("type")
            if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                element = fwd.delta.new_element
                if element.WhichOneof("type") == "exception":
                    found.error = element.exception.message[:200]
                elif element.WhichOneof("type") == "code" and element.code.code_text.startswith(prompt):
                    seen.setdefault(element.code.code_text, time.perf_counter())
            elif kind == "script_finished" and fwd.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                break
        times = sorted(seen.values())
        found.tokens = len(times)
        if times:
            found.first_s = times[0] - pressed
        if len(times) > 1:
            found.per_s = (len(times) - 1) / (times[-1] - times[0])
        if not times and not found.error:
            found.error = "no text written"
    except Exception as err:  # noqa: BLE001
        found.error = f"{type(err).__name__}: {err}"
    finally:
        await tab.close()
    return found


async def writers_at_once(url: str, n: int) -> list[Written]:
    ready = asyncio.Barrier(n)
    return list(await asyncio.gather(*(write_once(url, i, ready) for i in range(n))))


def run_writers(url: str, workers: int, watch: MemoryWatch, report: dict) -> None:
    print("\nGPT lesson: sessions pressing Write at once (greedy, 30 tokens, a prompt each)")
    asyncio.run(writers_at_once(url, 2 * workers))  # warm: the causal LM loaded in every worker
    print(
        f"{'writers':>8} {'first token p50':>16} {'p95':>7} {'tokens/s each p50':>18} {'slowest':>8} {'all':>7} errors"
    )
    rows = []
    for n in WRITERS:
        watch.peak = watch.rss()
        started = time.perf_counter()
        done = asyncio.run(writers_at_once(url, n))
        wall = time.perf_counter() - started
        firsts = [w.first_s for w in done if w.first_s is not None]
        rates = [w.per_s for w in done if w.per_s is not None]
        errors = [w.error for w in done if w.error]
        row = {
            "writers": n,
            "first_token_p50_s": round(percentile(firsts, 0.5), 2) if firsts else None,
            "first_token_p95_s": round(percentile(firsts, 0.95), 2) if firsts else None,
            "tokens_per_s_each_p50": round(percentile(rates, 0.5), 1) if rates else None,
            "tokens_per_s_slowest": round(min(rates), 1) if rates else None,
            "tokens_per_s_all": round(sum(w.tokens for w in done) / wall, 1),
            "errors": len(errors),
            "peak_rss_mb": round(watch.peak / 2**20),
        }
        rows.append(row)
        print(
            f"{n:>8} {row['first_token_p50_s']!s:>16} {row['first_token_p95_s']!s:>7}"
            f" {row['tokens_per_s_each_p50']!s:>18} {row['tokens_per_s_slowest']!s:>8} {row['tokens_per_s_all']!s:>7}"
            f" {len(errors)}"
        )
        for e in errors[:3]:
            print("   ", e)
    report["writers"] = rows


def page_row(
    typed: list[Typed], failures: list[str], sessions: int, peak: int, cpu: float | None = None
) -> tuple[dict, list[str]]:
    """One row of figures for a page (and its errors, every answer checked against its own sentence); `cpu`: the
    server's CPU seconds over the measure, given per answer (a figure that waits on nothing: on a machine whose
    speed wanders from run to run, before and after compare better by it than by their seconds to the answer)."""
    seconds = [t.run.seconds for t in typed]
    errors = failures + [e for t in typed for e in t.run.exceptions]
    errors += [f"run ended with status {t.run.status}" for t in typed if t.run.status not in FINISHED]
    errors += check_answers(typed)
    firsts = [t.run.first for t in typed if t.run.first is not None]
    row = {
        "sessions": sessions,
        "reruns": len(seconds),
        "p50_s": round(statistics.median(seconds), 3) if seconds else None,
        "p95_s": round(percentile(seconds, 0.95), 3) if seconds else None,
        "max_s": round(max(seconds), 3) if seconds else None,
        # the first table or chart after the box: earlier than the run's end where a page draws in steps (GPT's blank)
        "first_output_p95_s": round(percentile(firsts, 0.95), 3) if firsts else None,
        "errors": len(errors),
        "peak_rss_mb": round(peak / 2**20),
        "server_cpu_s_per_answer": round(cpu / len(seconds), 4) if cpu is not None and seconds else None,
    }
    return row, errors


def run_pages(args: argparse.Namespace, url: str, watch: MemoryWatch, report: dict) -> None:
    print(
        f"{'page':<28} {'sessions':>8} {'p50 s':>7} {'p95 s':>7} {'max s':>7} {'first output p95':>16} "
        f"{'errors':>6} {'peak RSS':>9} {'CPU s/answer':>12}"
    )
    procs = server_processes(url)
    for page in (p for p in EVERY_PAGE if p.url_path in args.pages):
        for n, hog in ((n, hog) for n in args.sessions for hog in [None, *args.hog]):
            watch.peak = watch.rss()
            hogging = Hog(hog) if hog else None
            # each row its own sentences: a row typing the last row's would find its answers cached
            seed = n + 100_000 * args.seed + 1_000 * (1 + args.hog.index(hog) if hog else 0)
            cpu0 = cpu_seconds(procs)
            typed, failures = asyncio.run(measure(url, page, n, args.rounds, seed=seed, hog=hogging))
            row, errors = page_row(typed, failures, n, watch.peak, cpu_seconds(procs) - cpu0)
            label = page.label
            if hogging is not None:
                label += f" + {hog}"
                row["hog"] = {"kind": hog, "runs_s": [round(x, 2) for x in hogging.seconds], "errors": hogging.errors}
                errors += [f"hog: {e}" for e in hogging.errors]
                row["errors"] = len(errors)
            report["pages"].setdefault(page.label, []).append(row)
            print(
                f"{label:<28} {n:>8} {row['p50_s']:>7} {row['p95_s']:>7} {row['max_s']:>7} "
                f"{row['first_output_p95_s']!s:>16} {len(errors):>6} {row['peak_rss_mb']:>6} MB"
                f" {row['server_cpu_s_per_answer']!s:>12}"
            )
            if hogging is not None and hogging.seconds:  # a session's work, timed (not the local loops)
                print(f"    {hog} runs alongside (s): {', '.join(f'{x:.1f}' for x in hogging.seconds)}")
            for e in errors[:5]:
                print("   ", e[:300])


# -- the longest input a box takes ---------------------------------------------------------------------
UNLIMITED_CHARS = 20_000  # what a box without max_chars is given (a text_box reads the first characters it holds)


def long_text(page: str, chars: int, rng: random.Random) -> str:
    """`chars` characters of plain sentences, the page's own first (its [MASK] or blank, once)."""
    parts = [fresh_sentence(page, rng)[0]]
    while sum(len(p) + 1 for p in parts) < chars:
        parts.append(fresh_sentence("plain", rng)[0])
    return " ".join(parts)[:chars]


async def type_long(url: str, page: Page, watch: MemoryWatch) -> dict:
    """One session types the longest text the page's box takes: the server's memory before, at its peak
    during the run, and after it (what the run left behind)."""
    session = Session(url)
    try:
        await session.connect()
        await session.rerun(page.url_path)
        chars = session.limits.get(page.key) or UNLIMITED_CHARS
        text = long_text(page.url_path, chars, random.Random(chars))
        before = watch.peak = watch.rss()
        run = await session.rerun(page.url_path, session.widgets[page.key], text)
        peak, after = watch.peak, watch.rss()
    finally:
        await session.close()
    return {
        "page": page.label,
        "chars": len(text),
        "seconds": round(run.seconds, 2),
        "added_peak_mb": round((peak - before) / 2**20),
        "kept_mb": round((after - before) / 2**20),
        "errors": len(run.exceptions) + (run.status not in FINISHED),
        "exceptions": run.exceptions[:3],
    }


def run_long(args: argparse.Namespace, url: str, watch: MemoryWatch, report: dict) -> None:
    """Every page's box given the longest input it takes, one page after another, nothing else running."""
    print(
        "\nThe longest input each box takes, one session (the server's memory: peak added during the run, kept after)"
    )
    print(f"  {'page':<30} {'chars':>7} {'s':>6} {'+peak MB':>9} {'kept MB':>8} errors")
    rows = []
    for page in (p for p in EVERY_PAGE if p.url_path in args.pages):
        row = asyncio.run(type_long(url, page, watch))
        rows.append(row)
        print(
            f"  {page.label:<30} {row['chars']:>7} {row['seconds']:>6} {row['added_peak_mb']:>9}"
            f" {row['kept_mb']:>8} {row['errors']}"
        )
        for e in row["exceptions"]:
            print("   ", e[:300])
    report["long"] = rows


def _s(figures: dict) -> str:
    return f"p50 {figures['p50_s']} / p95 {figures['p95_s']} / max {figures['max_s']} s"


def run_class(args: argparse.Namespace, url: str, workers: int, watch: MemoryWatch, report: dict) -> None:
    """(a) a class answering at once, (b) a class polling, alone and beside the pages' load, (c) a worker killed."""
    size = args.class_size
    pages = [p for p in EVERY_PAGE if p.url_path in args.pages]
    sessions = max(args.sessions)
    print(f"\nclass mode: {size} students and the projector, {workers} worker(s)")
    watch.peak = watch.rss()
    found = asyncio.run(class_load(url, size, args.idle, pages, sessions, args.rounds))
    beside = found.pop("pages_while_polling", {})
    found["peak_rss_mb"] = round(watch.peak / 2**20)
    for label, result in beside.items():
        row, errors = page_row(result["typed"], result["failures"], sessions, watch.peak)
        found.setdefault("pages_while_polling", {})[label] = row
        found["errors"] += [f"{label}: {e}" for e in errors]
    idle, answer, seen = found["idle"], found["answer"], found["question_seen"]
    print(f"  students per worker: {found['workers_of_students']}")
    print(f"  question shown on {seen['students']}/{size} students' boxes after asking: {_s(seen)}")
    print(
        f"  {size + 1} tabs open {idle['seconds']} s, nothing else: server CPU {idle['server_cpu_pct_of_one_core']}%"
        f" (with no tab open {idle['server_cpu_pct_with_no_tab_open']}%)"
        f" of one core ({idle['server_processes']} processes; this client {idle['bench_client_cpu_pct']}%)"
    )
    for label, row in found.get("pages_while_polling", {}).items():
        print(f"  {label} while they poll, {row['sessions']} sessions: p50 {row['p50_s']} / p95 {row['p95_s']} s, "
              f"{row['errors']} errors")  # fmt: skip
    print(f"  {size} press Send at once: {answer['acknowledged']}/{size} acknowledged, {_s(answer)}")
    print(f"  last Send -> projector shows {size}: {found['projector_all_s']} s; stored {found['stored']}/{size}")
    report["class"] = {"workers": workers, "load": found}
    if workers >= 2:
        print(f"  failover: {size} students, one worker killed (SIGKILL) after half of them answered")
        failover = asyncio.run(class_failover(url, size))
        report["class"]["failover"] = failover
        nxt = failover["next_question"]
        print(
            f"  killed {failover['killed']} ({failover['tabs_on_killed_worker']} tabs on it); "
            f"{failover['kept_after_kill']}/{failover['sent_before_kill']} answers sent before the kill kept; "
            f"{failover['reconnected']}/{failover['tabs_on_killed_worker']} tabs back ({_s(failover['reconnect'])} "
            f"after the kill; their sockets closed {_s(failover['socket_lost'])} after it; "
            f"{failover['bad_gateways_seen']} 502s met), now on {failover['now_on']}"
        )
        print(f"  first question, all stored after the rest answered: {failover['first_question_stored']}/{size}")
        print(
            f"  next question: {nxt['acknowledged']}/{size} acknowledged ({_s(nxt)}), projector shows {size} "
            f"{nxt['projector_all_s']} s after the last Send, stored {nxt['stored']}/{size}"
        )
        found["errors"] += failover["errors"]
    else:
        print("  failover: needs --workers 2 or more (make bench-load WORKERS=2)")
    for e in found["errors"][:8]:
        print("   ", e[:300])


# -- a training button pressed by a whole class at once ------------------------------------------------------
PRESS_SETTLE_S = 10.0  # the class types this long after pressing: beside the trainings, not the presses' page runs


def _literal(key: str) -> str:
    """The longest piece of en.toml's text for `key` that no placeholder fills: found in any text the page draws
    from it, whatever fills the rest (a model's name, a measured time)."""
    section, name = key.split(".")
    return max(re.split(r"\{[^}]*\}", EN[section][name]), key=len).strip()


@dataclass(frozen=True)
class Button:
    """A train-on-click button: the page it is on, its label's and its result's en.toml keys, and the URL
    parameter a learner may set that makes the work their own (a seed), if any."""

    page: str
    label: str
    done: tuple[str, ...]  # texts the page draws once the work is in (any of them)
    own: str = ""  # the query parameter that gives each presser their own training ("" : one for the class)


BUTTONS = {
    "retrain": Button("probing", "probing.retrain", ("probing.retrained",), own="seed"),
    "word2vec": Button("embeddings", "emb.train", ("emb.trained",)),
    "why_mask": Button("masked_lm", "mlm.why_train", ("mlm.why_found",)),
    "transfer": Button("transfer", "transfer.train", ("transfer.live",)),
    "tagger": Button("using_bert", "using.token_train", ("using.token_caption",)),
    "cross_lingual": Button("using_bert", "using.ml_train", ("using.ml_note", "using.ml_note_english")),
    "finetune": Button("using_bert", "using.finetune", ("using.finetune_caption",)),
    "qa_frozen": Button("using_bert", "using.qa_frozen_train", ("using.qa_frozen_score", "using.qa_frozen_caption")),
}


@dataclass
class Pressed:
    seconds: float
    shown: bool  # the run ended with the button's result on the page
    error: str = ""


async def press_once(url: str, button: Button, i: int, query: dict[str, str], ready: asyncio.Barrier) -> Pressed:
    """One learner on the button's page (from `query`) presses it when the whole class does; the time until
    the page shows the result (a page that reruns itself once the work is in is read to its end)."""
    tab = Tab(url, query, page=button.page, seed=i)
    label, done = _literal(button.label), [_literal(k) for k in button.done]
    try:
        await tab.open()
        found = [w for w in tab.widgets.values() if w.kind == "button" and label in w.label]
        if not found:
            raise RuntimeError(f"no {label!r} button on /{button.page}")
        await ready.wait()
        start = time.perf_counter()
        drawn = await tab.run([_trigger(found[0])])
        while not any(d in text for text in drawn.texts for d in done) and tab.pushed_run():
            tab.pushed += 1
            drawn = await tab._collect("", time.perf_counter())
        shown = any(d in text for text in drawn.texts for d in done)
        return Pressed(time.perf_counter() - start, shown, "; ".join(drawn.exceptions))
    except Exception as err:  # noqa: BLE001  (reported with the figures)
        return Pressed(0.0, False, f"{type(err).__name__}: {err}")
    finally:
        await tab.close()


async def presses_at_once(url: str, button: Button, queries: list[dict[str, str]]) -> list[Pressed]:
    """Each of len(queries) learners opens the button's page from their URL's query, and all press together."""
    ready = asyncio.Barrier(len(queries))
    return list(await asyncio.gather(*(press_once(url, button, i, q, ready) for i, q in enumerate(queries))))


def press_row(name: str, label: str, done: list[Pressed], peak: int) -> dict:
    times = [p.seconds for p in done if p.shown]
    errors = [p.error for p in done if p.error]
    row = {
        "button": name,
        "presses": label,
        "p50_s": round(percentile(times, 0.5), 2) if times else None,
        "p95_s": round(percentile(times, 0.95), 2) if times else None,
        "max_s": round(max(times), 2) if times else None,
        "shown": len(times),
        "errors": len(errors),
        "peak_rss_mb": round(peak / 2**20),
    }
    print(
        f"  {name:>13} {label:>24} {row['p50_s']!s:>7} {row['p95_s']!s:>7} {row['max_s']!s:>7}"
        f" {len(times):>3}/{len(done):<3} {len(errors)}"
    )
    for e in errors[:3]:
        print("   ", e[:300])
    return row


def typing_row(page: Page, n: int, typed: list[Typed], failures: list[str], label: str) -> dict:
    times = [t.run.seconds for t in typed]
    row = {
        "typing": page.label,
        "with": label,
        "p50_s": round(percentile(times, 0.5), 3),
        "p95_s": round(percentile(times, 0.95), 3),
        "errors": sum(1 for t in typed if t.run.exceptions) + len(failures),
    }
    print(f"  {page.label} typed by {n}, {label}: p50 {row['p50_s']} p95 {row['p95_s']} s")
    return row


def run_presses(args: argparse.Namespace, url: str, watch: MemoryWatch, report: dict) -> None:
    """Each button in --buttons pressed by the whole class at once (a fresh server's first presses: the work
    is done once and shared, or queued with each presser's place shown), with the class typing into Masked
    LM PRESS_SETTLE_S later, against the same typing alone. A button whose work a learner's setting makes
    their own (Probing's seed) is pressed twice: all with one seed, then each with their own."""
    n, page = args.class_size, PAGES[0]
    print(f"\nTraining buttons pressed by {n} at once (seconds until each presser's page shows the result)")
    print(f"  {'button':>13} {'presses':>24} {'p50':>7} {'p95':>7} {'max':>7} shown errors")
    rows = []
    for name in args.buttons:
        button = BUTTONS[name]
        if button.own:  # the page takes seeds 0-99: each sub-run its own, none trained earlier on a fresh server
            watch.peak = watch.rss()
            done = asyncio.run(presses_at_once(url, button, [{button.own: "5"}] * n))
            rows.append(press_row(name, f"{n}, one {button.own}", done, watch.peak))

        async def beside(button: Button = button) -> tuple[list[Pressed], tuple[list[Typed], list[str]]]:
            queries = [{button.own: str(10 + i)} if button.own else {} for i in range(n)]
            pressing = asyncio.ensure_future(presses_at_once(url, button, queries))
            await asyncio.sleep(PRESS_SETTLE_S)  # the presses' own page runs are over: the trainings run
            typed = await measure(url, page, n, args.rounds, seed=77 + len(rows))
            return await pressing, typed

        watch.peak = watch.rss()
        done, typed = asyncio.run(beside())
        rows.append(press_row(name, f"{n}, each their own {button.own}" if button.own else f"{n}", done, watch.peak))
        rows.append(typing_row(page, n, *typed, f"beside {name} ({PRESS_SETTLE_S:.0f} s after the presses)"))
    # alone last: by then the server is as warm as it was beside the trainings (a fresh server's first
    # minute, its warm-up still loading, would make "alone" the slower)
    rows.append(typing_row(page, n, *asyncio.run(measure(url, page, n, args.rounds, seed=76)), "alone, after them"))
    report["presses"] = rows


# -- Word senses' nearest uses, clicked by a whole class at once ---------------------------------------------
SENSE_WORDS = ("bank", "bark", "bat", "crane", "light", "match", "mouse", "pitch", "plant", "rock", "spring", "stick")
NEAREST = {"tool": "nearest", "near_model": "minilm-l6", "near_layer": "6"}  # the instrument, as a link opens it


async def look_once(url: str, i: int, ready: asyncio.Barrier) -> Pressed:
    """One learner on Word senses' Nearest uses (a word of their own) picks another use to look from when the
    whole class does: the time until the page lists that use's nearest uses."""
    word = SENSE_WORDS[i % len(SENSE_WORDS)]
    tab = Tab(url, {**NEAREST, "word": word}, page="senses", seed=i)
    listed = _literal("senses.near_title")
    try:
        await tab.open()
        box = next(w for w in tab.widgets.values() if w.kind == "selectbox" and w.label == EN["senses"]["near_from"])
        use = box.options[1 + i // len(SENSE_WORDS) % (len(box.options) - 1)]  # not the use the page opened on
        await ready.wait()
        start = time.perf_counter()
        drawn = await tab.run([WidgetState(id=box.id, string_value=use)], box.fragment)
        shown = any(listed in text for text in drawn.texts) and not drawn.exceptions
        return Pressed(time.perf_counter() - start, shown, "; ".join(drawn.exceptions))
    except Exception as err:  # noqa: BLE001  (reported with the figures)
        return Pressed(0.0, False, f"{type(err).__name__}: {err}")
    finally:
        await tab.close()


async def looks_at_once(url: str, n: int) -> list[Pressed]:
    ready = asyncio.Barrier(n)
    return list(await asyncio.gather(*(look_once(url, i, ready) for i in range(n))))


def run_clicks(args: argparse.Namespace, url: str, watch: MemoryWatch, report: dict) -> None:
    """Word senses' Nearest uses (issue 38): 1 and then the whole class pick a use to look from at once, each
    on a word of their own (every word of the shipped sentences searched at layer 6 of minilm-l6)."""
    print("\nWord senses, Nearest uses: a use picked by each at once (seconds until its nearest uses are listed)")
    print(f"  {'clicks':>13} {'at once':>24} {'p50':>7} {'p95':>7} {'max':>7} shown errors")
    rows = []
    for n in args.sessions:
        watch.peak = watch.rss()
        rows.append(press_row("nearest uses", str(n), asyncio.run(looks_at_once(url, n)), watch.peak))
    report["clicks"] = rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running server or proxy (default: start one worker here)")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=("pages", "writers", "class", "presses", "long", "clicks"),
        default=["pages", "writers", "class", "presses", "long", "clicks"],
    )
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 30])
    parser.add_argument("--rounds", type=int, default=4, help="fresh sentences per session")
    parser.add_argument(
        "--seed", type=int, default=0, help="another seed, other sentences: measure again on a server that has the last"
    )
    parser.add_argument(
        "--pages",
        nargs="+",
        default=[p.url_path for p in PAGES],
        help=f"pages to type into ('all': every lesson with a text box: {', '.join(p.url_path for p in EVERY_PAGE)})",
    )
    parser.add_argument("--class-size", type=int, default=30, help="students in the class section")
    parser.add_argument(
        "--buttons",
        nargs="+",
        default=["retrain"],
        help=f"training buttons the presses section presses ('all': {', '.join(BUTTONS)})",
    )
    parser.add_argument("--idle", type=float, default=60.0, help="seconds the class polls with nothing else")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--hog",
        nargs="+",
        choices=HOGS,
        default=[],
        help="measure again while one more session runs this long work (isolation: umap, word2vec), or while two"
        " tensor loops run on this machine at nice 19 or at the idle priority (nice19, idle)",
    )
    args = parser.parse_args(argv)
    if args.buttons == ["all"]:
        args.buttons = list(BUTTONS)
    if unknown := set(args.buttons) - set(BUTTONS):
        parser.error(f"unknown buttons {sorted(unknown)}: choose from {', '.join(BUTTONS)}")
    if args.pages == ["all"]:
        args.pages = [p.url_path for p in EVERY_PAGE]
    own = None if args.url else start_server(port := free_port())
    url = args.url or f"http://127.0.0.1:{port}"
    workers = max(1, len(worker_processes(url)))
    report: dict[str, Any] = {"url": url, "cpus": os.cpu_count(), "workers": workers, "rounds": args.rounds}
    report["pages"] = {}
    try:
        watch = MemoryWatch(server_pids(url, own))
        baseline = watch.rss()
        watch.start()
        # warm: every model loaded and every page's fixed work done once in every worker (one session each at
        # once: the pool gives each to the least busy worker), as after a class's first minute
        for page in (p for p in EVERY_PAGE if p.url_path in args.pages):
            asyncio.run(measure(url, page, workers, 1, seed=99))
        report["settled_s"] = settle(url)
        print(f"the server settled {report['settled_s']} s after the warm pages")
        if "pages" in args.only:
            run_pages(args, url, watch, report)
        if "writers" in args.only:
            run_writers(url, workers, watch, report)
        if "class" in args.only:
            run_class(args, url, workers, watch, report)
        if "presses" in args.only:
            run_presses(args, url, watch, report)
        if "long" in args.only:
            run_long(args, url, watch, report)
        if "clicks" in args.only:
            run_clicks(args, url, watch, report)
        watch.done.set()
        report["baseline_rss_mb"] = round(baseline / 2**20)
        report["peak_per_worker_mb"] = watch.per_app_mb()
        print("each app process's peak over the run (MB):", report["peak_per_worker_mb"])
        if args.json:
            args.json.write_text(json.dumps(report, indent=2) + "\n")
    finally:
        if own is not None:
            own.send_signal(signal.SIGTERM)
            own.wait(30)


if __name__ == "__main__":
    main()
