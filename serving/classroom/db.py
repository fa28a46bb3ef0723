"""Where the class store lives, and bringing its tables up to date.

CONTEXTLAB_DB holds a `postgresql://` URL (several machines behind one load balancer share it, through
psycopg 3); without it, a SQLite file under ContextLab's cache (CONTEXTLAB_CACHE) in WAL mode, so the
worker processes of `make serve WORKERS=N` on one machine share one class. Every store runs Alembic's
`upgrade head` when it opens, safely when several workers open at once: PostgreSQL under an advisory
lock, SQLite under a lock file (and a retry should a filesystem not honour it)."""

from __future__ import annotations

import fcntl
import os
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from model_zoo.registry import cache_root

SQLITE_FILE = "classroom.sqlite3"
BUSY_TIMEOUT_MS = 10_000  # how long a SQLite writer waits for another worker's write before giving up
MIGRATIONS = Path(__file__).parent / "migrations"
ADVISORY_KEY = zlib.crc32(b"contextlab.classroom.migrate")  # one PostgreSQL advisory lock for every worker


def database_url() -> str:
    """CONTEXTLAB_DB when set, else the SQLite file under the cache root."""
    configured = os.environ.get("CONTEXTLAB_DB", "").strip()
    return configured or f"sqlite:///{cache_root() / SQLITE_FILE}"


def make_engine(url: str) -> Engine:
    """An engine for `url`: postgresql:// (psycopg 3) or sqlite:///FILE (WAL, a busy timeout, foreign keys on)."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres", "postgresql+psycopg"):
        return create_engine(parsed.set(drivername="postgresql+psycopg"), pool_pre_ping=True)
    if parsed.drivername in ("sqlite", "sqlite+pysqlite") and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database or "").parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(parsed, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    raise ValueError(f"CONTEXTLAB_DB must be a postgresql:// URL or a sqlite:/// file, not {parsed.drivername}://.")


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # readers never wait for a writer: many workers, one file
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")  # ending a class cascades to its questions and answers
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def migrate(engine: Engine, tries: int = 5) -> None:
    """Alembic's `upgrade head` on `engine`, one process at a time."""
    if engine.dialect.name == "postgresql":
        with engine.begin() as connection:
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADVISORY_KEY})
            _upgrade(connection)
        return
    with _file_lock(Path(f"{engine.url.database}.migrate-lock")):
        for attempt in range(tries):
            try:
                with engine.begin() as connection:
                    _upgrade(connection)
                return
            except OperationalError as err:  # another process got there first, or holds the write lock
                message = str(err).lower()
                if attempt == tries - 1 or not ("already exists" in message or "locked" in message):
                    raise
                time.sleep(0.1 * (attempt + 1))


def _upgrade(connection: Any, revision: str = "head") -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
