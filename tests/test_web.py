"""The app process's own HTTP rule (components/web.py, asgi.py's middleware): a link below a page's path opens the
page. Streamlit alone answers it with its index, whose relative scripts then load from the wrong folder: a blank
page (the browser test opens such a link on `make run`'s server)."""

from __future__ import annotations

import asyncio
from typing import Any

from components.web import NestedPageRedirect

PAGE_VISIT = [(b"accept", b"text/html,application/xhtml+xml,application/xml;q=0.9")]


def answer(path: str, headers: list[tuple[bytes, bytes]], method: str = "GET") -> tuple[int, str]:
    """What the middleware answers for `path` (a raw path with its query): its status and Location, or
    (0, "") where it hands the request to Streamlit."""
    raw, _, query = path.partition("?")
    scope: dict[str, Any] = {
        "type": "http",
        "method": method,
        "path": raw,
        "raw_path": raw.encode(),
        "query_string": query.encode(),
        "headers": headers,
    }
    sent: list[dict[str, Any]] = []

    async def streamlit(scope: dict[str, Any], receive: Any, send: Any) -> None:
        sent.append({"type": "passed"})

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(NestedPageRedirect(streamlit)(scope, None, send))
    if sent[0]["type"] == "passed":
        return 0, ""
    headers_sent = dict(sent[0]["headers"])
    return sent[0]["status"], headers_sent[b"location"].decode()


def test_a_link_below_a_page_opens_the_page_with_its_query() -> None:
    assert answer("/masked_lm/x?text=a%20b", PAGE_VISIT) == (302, "/masked_lm?text=a%20b")
    assert answer("/nothing/here", PAGE_VISIT) == (302, "/nothing")
    assert answer("/gpt/a/b/c/", PAGE_VISIT, "HEAD") == (302, "/gpt")


def test_a_link_cannot_add_a_header_of_its_own() -> None:
    status, location = answer("/a%0d%0aSet-Cookie:%20evil=1/b", PAGE_VISIT)
    assert (status, location) == (302, "/a%0d%0aSet-Cookie:%20evil=1")  # still percent-encoded: one header


def test_pages_streamlits_folders_and_the_frontends_own_requests_go_on() -> None:
    for path in ("/masked_lm", "/", "/masked_lm?text=x", "/static/js/index.js", "/_stcore/health", "/media/a/b.png"):
        assert answer(path, PAGE_VISIT) == (0, ""), path
    assert answer("/masked_lm/_stcore/health", [(b"accept", b"*/*")]) == (0, "")  # the frontend's base-path probe
    assert answer("/masked_lm/x", []) == (0, "")
    assert answer("/masked_lm/x", PAGE_VISIT, "POST") == (0, "")
