"""Serve ContextLab to a class: several app processes behind nginx, each browser kept on one.

    make serve WORKERS=2 [PORT=8501]
    python scripts/serve.py --workers 2 --port 8501

Streamlit keeps each session (a browser tab's websocket and its state) inside one Python
process, and one process runs the pages of all its sessions under one GIL. With WORKERS=N,
N processes of the app listen on PORT+1 .. PORT+N (loopback only) and nginx listens on PORT:
- session affinity: a browser's first request goes to the least busy worker, and a cookie naming
  that worker keeps its page, websocket, reconnects and media files there. (Hashing on the
  client address would put a whole classroom behind one school NAT on one worker.)
- websockets are proxied (Upgrade/Connection headers, long read timeout).
- each worker's torch uses cores / N threads, so N workers do not oversubscribe the CPU.
- on a CPU that multiplies bf16 natively (AVX512-BF16, AMX), the masked LM and the reader on its
  weights multiply in bf16 (CONTEXTLAB_BF16=auto unless set; model_zoo/onednn.py): for thirty
  sentences 0.63 s instead of 0.89 s, their pages saying so with the scores measured again in bf16.
- glibc's malloc keeps at most two arenas in each worker (MALLOC_ARENA_MAX=2 unless set, `worker_env`):
  Streamlit runs each session's script in a thread of its own, and by default glibc gives threads up to
  8 arenas a core, each keeping what its threads freed. With every page in use by thirty sessions, a
  worker's peak RSS was 2.14-2.73 GB with glibc's default and 1.96-1.98 GB with two arenas (two runs each,
  two workers, an AMX Xeon), the pages' p95 within the runs' spread (docs/deploy.md, 2026-12-04).
- the workers share the model files and caches on disk (~/.cache/contextlab, the Hugging Face
  cache); each holds its own copy of the models in memory (about 1 GB a worker).
- a worker that stops is started again; meanwhile nginx passes its browsers to the others (their
  tabs reconnect there and rerun from their URL) and re-pins them with the cookie.
WORKERS=1 runs the app alone on PORT, as `make run` does. docs/deploy.md: more machines.
Needs nginx (Debian: apt-get install nginx-light). Stops everything on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.request import urlopen

ROOT = Path(__file__).resolve().parent.parent
COOKIE = "contextlab_worker"


def nginx_config(port: int, workers: list[int], folder: Path) -> str:
    """nginx.conf for one listener on `port` in front of the app processes on `workers` ports.

    A browser's first request goes to the worker with the fewest open connections (each tab
    holds a websocket, so this counts sessions) and the answer pins the browser there with a
    cookie naming that worker; later requests, the websocket and reconnects follow the cookie.
    (A hash of a random cookie also keeps browsers apart, but splits a class of 30 as unevenly
    as coin flips do: 20 and 10 is common.) A pinned worker that is down (killed, restarting)
    is passed over for the others, and the answer pins the browser to the worker that gave it:
    its tab reconnects there instead of meeting 502s until the worker is back."""
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=0;" for p in workers)
    pinned = "\n".join(f"        w{i} w{i};" for i in range(1, len(workers) + 1))
    # the address that answered is the last one tried ($upstream_addr lists every one tried)
    names = "\n".join(f'        "~127\\.0\\.0\\.1:{p}$" w{i};' for i, p in enumerate(workers, 1))
    upstreams = "\n".join(
        f"    upstream w{i} {{\n        server 127.0.0.1:{p} max_fails=0;\n"
        + "".join(f"        server 127.0.0.1:{other} backup max_fails=0;\n" for other in workers if other != p)
        + "    }"
        for i, p in enumerate(workers, 1)
    )
    temp = " ".join(
        f"{name}_temp_path {folder / name};" for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""# Written by scripts/serve.py; regenerated at every start.
worker_processes 1;
pid {folder / "nginx.pid"};
error_log {folder / "error.log"} warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    {temp}
    # Streamlit sends its frontend (about 5 MB of script) uncompressed: a class fetching it at
    # once over one Wi-Fi gets it in a quarter of the bytes.
    gzip on;
    gzip_proxied any;
    gzip_vary on;
    gzip_min_length 1024;
    gzip_types application/javascript text/javascript text/css application/json image/svg+xml;
    map $http_upgrade $connection_upgrade {{ default upgrade; "" close; }}
    # The worker a browser's cookie names, else the pool (least connections) for a first visit.
    map $cookie_{COOKIE} $target {{
        default contextlab;
{pinned}
    }}
    map $upstream_addr $worker {{
        default "";
{names}
    }}
    upstream contextlab {{
        least_conn;
{servers}
    }}
    # A pinned worker, and the others as backups for when it is down: a connection it refuses is
    # tried on the next (proxy_next_upstream's default, error and timeout, before anything is sent).
{upstreams}
    server {{
        listen {port};
        location / {{
            proxy_pass http://$target;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_read_timeout 1d;
            proxy_buffering off;
            add_header Set-Cookie "{COOKIE}=$worker; Path=/; HttpOnly; SameSite=Lax" always;
            add_header X-ContextLab-Worker $worker always;  # which worker answered
        }}
    }}
}}
"""


def worker_env(threads: int) -> dict[str, str]:
    """A worker's environment: `threads` torch threads (always: N workers share the cores), bf16 products where
    the CPU has them and two malloc arenas (the module's docstring says why), these two unless the environment
    sets them itself."""
    env = dict(os.environ)
    env.update(dict.fromkeys(("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"), str(threads)))
    env.setdefault("CONTEXTLAB_BF16", "auto")  # bf16 products where the CPU has them (model_zoo/onednn.py)
    env.setdefault("MALLOC_ARENA_MAX", "2")
    return env


def worker_command(port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "asgi.py",  # app.py with the middleware a server needs (components/web.py)
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
    ]


def wait_healthy(port: int, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"the app on port {port} did not start within {timeout:.0f} s")


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=int(os.environ.get("WORKERS", "1")))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8501")))
    args = parser.parse_args(argv)
    if args.workers < 1:
        raise SystemExit("--workers must be at least 1")
    # The cores shared among the workers' torch. Under a class's load the pages' Python mostly waits
    # for the shared batch (serving.MicroBatcher), so leaving half the cores to it made the batch
    # slower and no page faster: with one worker on 2 cores, Masked LM's p95 for 30 sessions was
    # 1.28-1.35 s with 1 torch thread and 0.84-0.97 s with 2 (make bench-load, 2026-11-26; docs/measurements.md).
    threads = max(1, (os.cpu_count() or 1) // args.workers)
    env = worker_env(threads)
    if args.workers == 1:
        os.chdir(ROOT)
        os.execve(sys.executable, worker_command(args.port)[:-2], env)  # the app alone, on all interfaces
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        raise SystemExit("nginx is not installed: apt-get install nginx-light (or run WORKERS=1)")
    ports = [args.port + 1 + i for i in range(args.workers)]
    folder = Path(tempfile.mkdtemp(prefix="contextlab-nginx-"))
    (folder / "nginx.conf").write_text(nginx_config(args.port, ports, folder))
    workers = [subprocess.Popen(worker_command(p), cwd=ROOT, env=env) for p in ports]
    proxy: subprocess.Popen | None = None
    try:
        for p in ports:
            wait_healthy(p)
        proxy = subprocess.Popen([nginx, "-p", str(folder), "-c", str(folder / "nginx.conf"), "-g", "daemon off;"])
        print(
            f"ContextLab: {args.workers} workers ({threads} torch thread(s) each) behind nginx on http://localhost:{args.port}"
        )
        signal.signal(signal.SIGTERM, _interrupt)
        supervise(workers, ports, proxy, env)
    except KeyboardInterrupt:
        pass
    finally:
        procs = [*workers, *([proxy] if proxy else [])]
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(folder, ignore_errors=True)


def supervise(workers: list[subprocess.Popen], ports: list[int], proxy: subprocess.Popen, env: dict) -> None:
    """Start again a worker that stops (a crash, a kill, memory): meanwhile nginx sends its browsers to the
    others and re-pins them, and a class keeps its data (in the class store, not in the worker). A worker
    that stops again within a minute of its start waits twice as long as the last time (up to a minute)."""
    started = [time.monotonic()] * len(workers)
    delay = [1.0] * len(workers)
    while proxy.poll() is None:
        for i, proc in enumerate(workers):
            if proc.poll() is None:
                continue
            soon = time.monotonic() - started[i] < 60
            delay[i] = min(delay[i] * 2, 60.0) if soon else 1.0
            print(f"worker on port {ports[i]} stopped ({proc.returncode}): starting it again in {delay[i]:.0f} s")
            time.sleep(delay[i])
            workers[i] = subprocess.Popen(worker_command(ports[i]), cwd=ROOT, env=env)
            started[i] = time.monotonic()
        time.sleep(1)
    raise SystemExit("nginx stopped: stopping the workers")


if __name__ == "__main__":
    main()
