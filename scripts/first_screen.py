"""Where each lesson's main model output starts, and how much prose a learner reads before it (issue 34).

Starts nothing itself: point it at a running app (`streamlit run app.py --server.port 8620`).

    python scripts/first_screen.py [--url http://localhost:8620] [--lang en zh] [--lesson masked_lm] [--shots DIR]

Each lesson is opened in headless Chromium on a projector (1440 x 900) and a phone (390 x 844). Once
Streamlit has finished running, the lesson's main output, the element a page marks with
`st.container(key="main_output")` (class `st-key-main_output`), is found; its top is read in px from the
top of the page (scrolled to the top), and the words of prose above it are counted: the text of markdown,
caption and notice elements in the main area, outside widget labels, titles and headers, drawn (not
folded in an expander) and starting above the main output. Chinese has no spaces: its characters count
two to a word. Prints a table and writes JSON (--json FILE, or stdout with --json -).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from components.road import ready_lessons  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
SCREENS = {"projector": (1440, 900), "phone": (390, 844)}
MARKER = ".st-key-main_output"
MAX_WORDS = 80  # the bound on prose above the main output
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
LATIN = re.compile(r"[A-Za-z0-9\u00c0-\u024f][\w'’.\-]*")

# In the page: the main output's box, and the prose (markdown, captions, notices) that starts above it.
# Widget labels, help tooltips, headings, the sidebar and anything inside a closed expander are not prose.
MEASURE = """
(marker) => {
  const main = document.querySelector('[data-testid="stMain"]') || document.body;
  const out = main.querySelector(marker);
  if (!out) return null;
  const box = out.getBoundingClientRect();
  const skip = '[data-testid="stWidgetLabel"], [data-testid="stTooltipHoverTarget"], [data-testid="stHeading"], '
    + 'h1, h2, h3, h4, h5, h6, ' + marker;
  const texts = [];
  for (const el of main.querySelectorAll('[data-testid="stMarkdownContainer"], [data-testid="stCaptionContainer"]')) {
    if (el.closest(skip) || el.parentElement.closest('[data-testid="stMarkdownContainer"]')) continue;
    const r = el.getBoundingClientRect();
    if (r.height === 0 || r.width === 0 || r.top >= box.top) continue;  // folded away, or below the output
    texts.push(el.innerText);
  }
  return {top: box.top, bottom: box.bottom, width: box.width, height: box.height, texts};
}
"""


@dataclass
class Row:
    lesson: str
    lang: str
    screen: str
    top: float | None  # px from the top of the page to the main output; None: no main output marked
    height: float | None
    width: float | None
    words: int | None  # words of prose above it
    viewport: int

    @property
    def passes(self) -> bool:
        return self.top is not None and self.top < self.viewport and (self.words or 0) <= MAX_WORDS


def count_words(text: str) -> int:
    """Latin words, and Chinese characters two to a word (about as many as an English sentence of the same)."""
    return len(LATIN.findall(text)) + round(len(CJK.findall(text)) / 2)


def settle(page, timeout: float = 180) -> None:  # noqa: ANN001
    """Wait until the script has finished running: a title drawn, no running indicator for 1.5 s."""
    page.wait_for_selector("h1", timeout=timeout * 1000)
    deadline, quiet_since = time.time() + timeout, None
    status = page.locator('[data-testid="stStatusWidget"]')
    while time.time() < deadline:
        if status.count() == 0 or not status.first.is_visible():
            quiet_since = quiet_since or time.time()
            if time.time() - quiet_since > 1.5:
                return
        else:
            quiet_since = None
        time.sleep(0.25)
    raise TimeoutError("the app kept running")


def measure(page, url: str, lesson: str, lang: str, screen: str, shots: Path | None = None) -> Row:  # noqa: ANN001
    width, height = SCREENS[screen]
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"{url}/{lesson}?lang={lang}")
    settle(page)
    page.wait_for_timeout(500)  # charts and components size themselves after the script's end
    found = page.evaluate(MEASURE, MARKER)
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / f"{lesson}-{lang}-{screen}.png"))
    if found is None:
        return Row(lesson, lang, screen, None, None, None, None, height)
    words = sum(count_words(text) for text in found["texts"])
    return Row(lesson, lang, screen, found["top"], found["height"], found["width"], words, height)


def measure_all(browser, url: str, lessons: list[str], langs: list[str], shots: Path | None = None) -> list[Row]:  # noqa: ANN001
    rows = []
    for screen in SCREENS:
        context = browser.new_context(viewport=dict(zip(("width", "height"), SCREENS[screen])))
        page = context.new_page()
        try:
            for lang in langs:
                for lesson in lessons:
                    rows.append(measure(page, url, lesson, lang, screen, shots))
        finally:
            context.close()
    return rows


def launch(playwright):  # noqa: ANN001, ANN201
    return playwright.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])


def table(rows: list[Row]) -> str:
    lines = [
        "| lesson | lang | screen | top px | words above | output w x h | fits |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        size = "-" if r.width is None else f"{r.width:.0f} x {r.height:.0f}"
        top = "no marker" if r.top is None else f"{r.top:.0f} / {r.viewport}"
        lines.append(
            f"| {r.lesson} | {r.lang} | {r.screen} | {top} | {r.words} | {size} | {'yes' if r.passes else 'NO'} |"
        )
    return "\n".join(lines)


def main() -> int:
    lessons = [lesson.key for lesson in ready_lessons()]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://localhost:8620")
    parser.add_argument("--lang", nargs="+", default=["en"], choices=["en", "zh"])
    parser.add_argument("--lesson", nargs="+", default=lessons, choices=lessons)
    parser.add_argument("--json", help="write the measurements here as JSON ('-': stdout)")
    parser.add_argument("--shots", type=Path, help="save a first-screen screenshot of each page here")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch(p)
        try:
            rows = measure_all(browser, args.url.rstrip("/"), args.lesson, args.lang, args.shots)
        finally:
            browser.close()
    data = [asdict(r) | {"passes": r.passes} for r in rows]
    if args.json == "-":
        print(json.dumps(data, indent=1))
    else:
        if args.json:
            Path(args.json).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(table(rows))
    return 0 if all(r.passes for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
