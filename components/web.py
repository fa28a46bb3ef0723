"""The HTTP side of one app process, for asgi.py (st.App's middleware): what Streamlit's server alone answers
badly. Light on purpose: no model, no torch."""

from __future__ import annotations

import re
from typing import Any

# A page visit to a path below a page's (/masked_lm/x, /nothing/here: a link cut or mistyped). Streamlit answers
# with its index, whose scripts are relative (./static/...), so the browser asks for them under the wrong folder,
# gets the index again and shows a blank page. Streamlit's own folders are left as they are.
NESTED = re.compile(rb"^/(?!(?:static|_stcore|media|component|app)/)([^/?]+)/[^?]")


class NestedPageRedirect:
    """Sends a browser that visits a path below a page's (its Accept names text/html) to the path's first part,
    its query kept: that page, or the app's "page not found" line atop the road. The frontend's own requests
    under a page's path (its base-path probe, /masked_lm/_stcore/health) name no text/html and go on. The path
    is read as sent (`raw_path`, still percent-encoded): a %0d%0a in a link stays three characters in the
    Location header, never the end of it and the start of a header of the link's own."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD"):
            accept = b",".join(value for name, value in scope["headers"] if name.lower() == b"accept")
            found = NESTED.match(scope.get("raw_path") or scope["path"].encode())
            if found and b"text/html" in accept:
                query = scope.get("query_string") or b""
                location = b"/" + found[1] + (b"?" + query if query else b"")
                headers = [(b"location", location), (b"content-length", b"0"), (b"cache-control", b"no-cache")]
                await send({"type": "http.response.start", "status": 302, "headers": headers})
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)
