"""Every text box of every page, and every value of every page's link, fed what a class (or a pasted
link) can send: a result or one readable sentence, never a traceback, never a hang (a run that does not
end within a minute fails as one that raised)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT, open_page

# Every page the app serves (pages/0_class.py only hands a fresh server's first /class visit to app.py)
PAGES = sorted(f"pages/{p.name}" for p in (ROOT / "pages").glob("*.py") if not p.name[0].isdigit())
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
# Boxes a page shows once a view is open (the query that opens it): Word senses' axes with a word at each end
OPENED = {"pages/senses.py": {"tool": "axes", "axes_xa": "word", "axes_xb": "word"}}
HANG = 60  # seconds: a run past this is a hang, not a slow answer (speed is make bench's)


@pytest.mark.slow
@pytest.mark.parametrize("path", PAGES)
def test_every_text_box_survives_bad_input(path: str) -> None:
    opened = OPENED.get(path, {})
    at = open_page(path, **opened)  # models loaded, defaults drawn: what follows is the learner's typing
    assert not at.exception
    boxes = [("text_input", w.key) for w in at.text_input] + [("text_area", w.key) for w in at.text_area]
    for kind, key in boxes:
        for name, text in BAD.items():
            at = open_page(path, **opened)
            getattr(at, kind)(key=key).set_value(text).run(timeout=HANG)
            assert not at.exception, (path, key, name, [e.message for e in at.exception][:1])


@pytest.mark.slow
@pytest.mark.parametrize("path", PAGES)
def test_every_link_value_survives_bad_input(path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a pasted or edited link can carry: each bad value at once in every query parameter the page
    writes, and in the class mode's (a class code, a teacher's key, a followed student's class)."""
    monkeypatch.setenv("CONTEXTLAB_DB", f"sqlite:///{tmp_path / 'class.sqlite3'}")  # not the user's class store
    keys = [k for k in open_page(path).query_params if k != "lang"] + ["class"]
    keys += ["code", "key"] if path.endswith("classroom.py") else []
    for name, text in BAD.items():
        at = open_page(path, **dict.fromkeys(keys, text))
        assert not at.exception, (path, name, [e.message for e in at.exception][:1])
