"""Files ContextLab keeps in its cache (encoded sentence sets, probing features, trained heads): written
whole or not at all, and never the reason a page fails. A cache folder that is read-only or full (issue 36)
costs the work again next time, not the answer now; a torn or corrupted file is read as none and written
again."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from .contextual import Contextual

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


def keep_compiled(packages: tuple[str, ...], folder: Path) -> int:
    """Have numba keep what it compiles for the functions of `packages` (imported already) in `folder`, so that
    the next process loads it rather than compiling again; returns how many functions it now keeps.

    umap-learn does not ask numba to cache its functions (no cache=True), so every process compiled them on
    its first map: 16-18 s of a core here, in each worker after every start (the learner who first picked
    UMAP, or a seed without a precomputed map, waited for it) and in each test worker. With this cache a
    fresh process's first map takes 3.3-4.8 s, importing umap-learn included, against 20-21 s (`make bench`).
    This is numba's own cache, turned on as cache=True turns it on (Dispatcher.enable_caching), in
    ContextLab's cache folder rather than beside the package's source (site-packages may be read-only);
    NUMBA_CACHE_DIR, where set, wins. numba keys each entry on the function's source file and the CPU, and
    writes each file whole (a temporary file, then a move). A cache that cannot be read or written costs the
    compile, never the map; a numba without these hooks compiles as before."""
    try:
        from numba.core import config
        from numba.core.caching import FunctionCache, NullCache
        from numba.core.dispatcher import Dispatcher
    except ImportError:
        return 0

    class QuietCache(FunctionCache):
        """numba's cache, where a damaged file is compiled again and a write that fails is only logged."""

        def load_overload(self, sig: object, target_context: object) -> object:
            try:
                return super().load_overload(sig, target_context)
            except Exception as err:  # a torn or foreign file, whatever pickle raises on it
                log.warning("numba's cache for %s cannot be read (%s): compiling it again", self._name, err)
                return None

        def save_overload(self, sig: object, data: object) -> None:
            try:
                super().save_overload(sig, data)
            except Exception as err:  # a full or read-only cache folder
                log.warning("numba's cache for %s was not written: %s", self._name, err)

    if not config.CACHE_DIR:  # type: ignore[attr-defined]  # numba's config is set from its environment
        config.CACHE_DIR = str(folder)  # type: ignore[attr-defined]
    kept = 0
    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] not in packages:
            continue
        for value in list(vars(module).values()):
            if isinstance(value, Dispatcher) and isinstance(getattr(value, "_cache", None), NullCache):
                try:
                    value._cache = QuietCache(value.py_func)  # type: ignore[attr-defined]  # as enable_caching does
                    kept += 1
                except Exception as err:  # no folder numba can write to, a function it cannot cache
                    log.info("numba will compile %s in every process: %s", value.py_func.__qualname__, err)
    return kept


def weights_version(encoder: Contextual) -> str:
    """A short hash of a loaded model's weights (each tensor's name, shape and sum: its torch modules'), computed
    once per model object, for the names of the files kept from it: a model trained again under the same name
    (elmo-mini, smollm2-135m-mlm) is never served the vectors its earlier weights gave."""
    known = encoder.__dict__.get("_weights_version")
    if known is not None:
        return str(known)
    import hashlib

    import torch

    digest = hashlib.sha1()
    # A copy of the attributes, taken at once: other sessions' threads add cached ones (a head, a token
    # list) to the same shared model while this hashes, and iterating the live dict then raises.
    for module in [v for v in list(vars(encoder).values()) if isinstance(v, torch.nn.Module)]:
        for name, tensor in module.state_dict().items():
            if tensor.is_floating_point():
                digest.update(f"{name}{tuple(tensor.shape)}{float(tensor.double().sum()):.8e}".encode())
    encoder.__dict__["_weights_version"] = version = digest.hexdigest()[:10]
    return version
