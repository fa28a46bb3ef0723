"""Every text box of every page, fed what a class (or a pasted link) can send: a result or one
readable sentence, never a traceback, and never a hang (each run well under 10 s)."""

from __future__ import annotations

import time

import pytest

from tests.conftest import open_page

PAGES = [
    "pages/onehot.py",
    "pages/embeddings.py",
    "pages/bert_inputs.py",
    "pages/masked_lm.py",
    "pages/attention.py",
    "pages/senses.py",
    "pages/playground.py",
    "pages/using_bert.py",
]
BAD = {
    "empty": "",
    "spaces": "   \t  ",
    "control characters": "the bank\x00\x07\x1b[31m river",
    "html and script": "</script><img src=x onerror=alert(1)><script>alert(2)</script> [MASK]",
    "markdown image": "![x](http://example.com/pixel.png) **bank** $x$ :red[bank]",
    "fifty masks": "[MASK] " * 50,
    "5,000 digits": "1" * 5000,
    "one 20,000-letter word": "a" * 20_000,
    "a pasted essay": "The bank by the river was closed. " * 600,
    "Chinese line": "银行在河边" * 800,
    "emoji and combining marks": "🏦🌊 bank\u0301\u0301\u0301 ‮reversed‬ \u200b\ufeff",
}
SECONDS = 10


@pytest.mark.slow
@pytest.mark.parametrize("path", PAGES)
def test_every_text_box_survives_bad_input(path: str) -> None:
    at = open_page(path)  # models loaded, defaults drawn: what follows is the learner's typing
    assert not at.exception
    boxes = [("text_input", w.key) for w in at.text_input] + [("text_area", w.key) for w in at.text_area]
    assert boxes, f"{path} has no text box"
    for kind, key in boxes:
        for name, text in BAD.items():
            at = open_page(path)
            start = time.perf_counter()
            getattr(at, kind)(key=key).set_value(text).run(timeout=SECONDS)
            took = time.perf_counter() - start
            assert not at.exception, (path, key, name, [e.message for e in at.exception][:1])
            assert took < SECONDS, (path, key, name, took)
