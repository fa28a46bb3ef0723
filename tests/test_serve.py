"""`make serve WORKERS=2`: two app processes behind nginx, each browser kept on one of them."""

from __future__ import annotations

import asyncio
import gzip
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.request import Request, urlopen

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import bench_load  # noqa: E402
import serve  # noqa: E402

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def test_nginx_config_keeps_a_browser_on_one_worker_and_proxies_websockets(tmp_path: Path) -> None:
    conf = serve.nginx_config(8501, [8502, 8503], tmp_path)
    assert "server 127.0.0.1:8502" in conf and "server 127.0.0.1:8503" in conf
    assert "least_conn;" in conf and f"$cookie_{serve.COOKIE}" in conf and "w2 w2;" in conf
    assert "server 127.0.0.1:8502 backup" in conf  # a browser pinned to a dead worker goes to another
    assert "proxy_set_header Upgrade $http_upgrade;" in conf
    if Path(NGINX).exists():  # nginx itself accepts it
        (tmp_path / "nginx.conf").write_text(conf)
        checked = subprocess.run(
            [NGINX, "-t", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")], capture_output=True, text=True
        )
        assert checked.returncode == 0, checked.stderr


def test_the_load_bench_waits_for_a_busy_server_to_settle(monkeypatch: pytest.MonkeyPatch) -> None:
    """bench_load measures a class once the server's own work (its warm-up loading models) is over: while a
    server process keeps a core busy it waits, and an idle one it measures at once."""
    import threading

    import psutil

    monkeypatch.setattr(bench_load, "server_processes", lambda url: [psutil.Process()])  # this process, as the server
    monkeypatch.setattr(bench_load, "SETTLE_WINDOW_S", 0.2)
    assert bench_load.settle("http://server", most_s=10.0) < 5.0  # idle: settled, not waited out

    def burn(until: float) -> None:
        while time.perf_counter() < until:
            pass

    busy = threading.Thread(target=burn, args=(time.perf_counter() + 1.5,))
    busy.start()
    try:
        assert bench_load.settle("http://server", most_s=10.0) >= 1.2  # not before the busy core is idle
    finally:
        busy.join()


def _free_port_block(n: int) -> int:
    """A port p with p .. p+n free (the proxy and its workers)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n < 65535 and all(_free(base + i) for i in range(n + 1)):
            return base
    raise RuntimeError("no free block of ports")


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def _worker_for(url: str, cookie: str | None) -> tuple[str, str]:
    """Which worker answers a browser with `cookie` (None: a first visit), and its cookie after."""
    request = Request(url, headers={"Cookie": cookie} if cookie else {})
    with urlopen(request, timeout=60) as response:
        given = response.headers["Set-Cookie"].split(";", 1)[0]
        return response.headers["X-ContextLab-Worker"], given


def _landing(url: str, headers: dict[str, str]) -> tuple[int, str]:
    """The status of a request to `url` and where it is sent on (its Location header), redirects not followed."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.netloc, timeout=60)
    try:
        connection.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""), headers=headers)
        response = connection.getresponse()
        return response.status, response.headers.get("Location", "")
    finally:
        connection.close()


@pytest.mark.slow
@pytest.mark.skipif(not Path(NGINX).exists(), reason="nginx is not installed (make nginx)")
def test_two_workers_share_a_class_and_each_browser_stays_on_its_own() -> None:
    port = _free_port_block(2)
    proc = subprocess.Popen([sys.executable, "scripts/serve.py", "--workers", "2", "--port", str(port)], cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 240
        while True:
            try:
                _worker_for(url + "/_stcore/health", None)
                break
            except OSError:
                assert proc.poll() is None and time.time() < deadline, "serve.py did not come up"
                time.sleep(1)
        # each worker's torch gets its share of the cores and glibc two malloc arenas (a worker peaked 0.2-0.8 GB
        # higher under a class with the default's 8 a core: scripts/serve.py), unless the environment says otherwise
        workers = bench_load.worker_processes(url)
        assert len(workers) == 2
        for worker in workers.values():
            environ = worker.environ()
            assert environ["MALLOC_ARENA_MAX"] == os.environ.get("MALLOC_ARENA_MAX", "2")
            assert environ["OMP_NUM_THREADS"] == str(max(1, (os.cpu_count() or 1) // 2))
        browsers = [_worker_for(url, None) for _ in range(20)]
        assert len({worker for worker, _ in browsers}) == 2  # the class is spread over both
        for worker, cookie in browsers[:5]:
            assert all(_worker_for(url, cookie)[0] == worker for _ in range(3))  # and each stays put

        page = urlopen(url, timeout=60).read().decode()
        script = re.search(r'src="\./(static/js/index\.[^"]+\.js)"', page)
        assert script is not None
        with urlopen(Request(f"{url}/{script[1]}", headers={"Accept-Encoding": "gzip"}), timeout=60) as response:
            assert response.headers["Content-Encoding"] == "gzip"  # the frontend goes out compressed
            packed = response.read()
        assert len(packed) < len(gzip.decompress(packed)) / 2

        # a link below a page's path opens the page (Streamlit alone shows a blank page there: its scripts are
        # asked for under the wrong folder), through nginx as on one worker (asgi.py); the frontend's own
        # requests there are left alone
        visit = {"Accept": "text/html,application/xhtml+xml"}
        assert _landing(f"{url}/masked_lm/x?text=a%20b", visit) == (302, "/masked_lm?text=a%20b")
        assert _landing(f"{url}/nothing/here", visit) == (302, "/nothing")
        sent_on = _landing(f"{url}/a%0d%0aSet-Cookie:%20evil=1/b", visit)  # a header of the link's own: none
        assert sent_on == (302, "/a%0d%0aSet-Cookie:%20evil=1")
        assert _landing(f"{url}/masked_lm/_stcore/health", {})[0] == 404
        assert _landing(f"{url}/{script[1]}", visit)[0] == 200

        async def fill_in() -> list[str]:
            session = bench_load.Session(url)
            await session.connect()
            try:
                await session.rerun("masked_lm")
                run = await session.rerun("masked_lm", session.widgets["text"], "Paris is the capital of [MASK].")
                return run.bars
            finally:
                await session.close()

        assert "france" in [w.lower() for w in asyncio.run(fill_in())[:3]]  # a page answers through the proxy
    finally:
        proc.terminate()
        proc.wait(30)
    assert (
        subprocess.run(["pgrep", "-f", f"server.port {port + 1}"], capture_output=True).returncode == 1
    )  # workers gone
