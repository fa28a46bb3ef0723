"""Files ContextLab keeps in its cache (encoded sentence sets, probing features, trained heads): written
whole or not at all, and never the reason a page fails. A cache folder that is read-only or full (issue 36)
costs the work again next time, not the answer now; a torn or corrupted file is read as none and written
again."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

UNREADABLE = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile)  # what numpy and json raise on a bad file


def keep(path: Path, write: Callable[[Path], None], partial_suffix: str) -> bool:
    """write(partial) beside `path`, then move it into place (whole or not at all, even with two processes
    writing at once). On a cache that cannot be written (read-only, full: OSError) say so in the log, leave
    no partial file, and return False: the caller has its result in memory and goes on."""
    # Each writer its own partial file (process and thread): two workers filling the same cache file at once
    # each write theirs whole, and the last move wins. One shared partial name let the second writer truncate
    # the file the first had just moved into place, which a reader then found empty (a page's traceback).
    partial = path.with_name(f"{path.stem}.{os.getpid()}-{threading.get_ident()}{partial_suffix}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(partial)
        partial.replace(path)
        return True
    except OSError as err:
        log.warning("ContextLab's cache was not written (%s): %s", path, err)
        _drop(partial)
        return False


def read(path: Path, load: Callable[[Path], T]) -> T | None:
    """load(path) where the file is there and whole; None where it is not. A file that cannot be read (torn,
    corrupted, of another layout) is removed where possible, so that it is computed and written again."""
    if not path.exists():
        return None
    try:
        return load(path)
    except UNREADABLE as err:
        log.warning("ContextLab's cache file %s cannot be read (%s): computing it again", path, err)
        _drop(path)
        return None


def _drop(path: Path) -> None:
    """Remove `path` where it can be (a read-only cache keeps it: then it is only not used)."""
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)
