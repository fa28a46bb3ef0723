"""A shipped file over 16 MiB (the project's limit on one file in the repository) is kept as byte pieces beside
where it would be: NAME.part0, NAME.part1, ... of at most 16 MiB each, read back whole. Every reader of a shipped
weights file goes through `read_bytes` (or `pieces`, `exists`), so a file split or not reads the same; the weights' fingerprint
hashes the joined bytes under NAME, so splitting a file leaves every figure precomputed from it valid.

Plain byte pieces rather than one valid file per piece (as the lens's lens-N.safetensors are): an ELMo
weights.hdf5 is one HDF5 file in AllenNLP's layout, which h5py reads from memory as well as from disk."""

from __future__ import annotations

import io
import re
from pathlib import Path

PIECE_BYTES = 16 * 2**20
_PIECE = re.compile(r"\.part(\d+)$")


def pieces(path: Path) -> list[Path]:
    """The files `path` is read from: itself where it is whole, else its pieces in order (none: missing)."""
    if path.exists():
        return [path]
    found = [(int(m.group(1)), p) for p in path.parent.glob(path.name + ".part*") if (m := _PIECE.search(p.name))]
    return [p for _, p in sorted(found)]


def exists(path: Path) -> bool:
    return bool(pieces(path))


def whole_name(piece: Path) -> str:
    """NAME for NAME.partN, the name itself otherwise."""
    return _PIECE.sub("", piece.name)


def order(file: Path) -> tuple[Path, int]:
    """Where `file` sorts among files: a piece where its whole file would be, its number after (-1: whole)."""
    found = _PIECE.search(file.name)
    return (file.with_name(whole_name(file)), int(found.group(1))) if found else (file, -1)


def readable(path: Path) -> Path | io.BytesIO:
    """`path` itself where it is whole (or missing: its reader says so), else its pieces joined in memory."""
    return io.BytesIO(read_bytes(path)) if len(pieces(path)) > 1 else path


def read_bytes(path: Path) -> bytes:
    """`path`'s bytes, joined from its pieces where it was split; FileNotFoundError where neither is there."""
    parts = pieces(path)
    if not parts:
        raise FileNotFoundError(path)
    return b"".join(p.read_bytes() for p in parts)


def split(path: Path, piece_bytes: int = PIECE_BYTES) -> list[Path]:
    """Replace `path` by pieces of at most `piece_bytes` where it is larger (the files a training ships);
    a smaller file stays as it is. Returns the files now holding it."""
    for stale in path.parent.glob(path.name + ".part*"):  # an earlier split's pieces: the file now is `path`
        stale.unlink()
    if path.stat().st_size <= piece_bytes:
        return [path]
    data = path.read_bytes()
    written = []
    for number, start in enumerate(range(0, len(data), piece_bytes)):
        piece = path.with_name(f"{path.name}.part{number}")
        piece.write_bytes(data[start : start + piece_bytes])
        written.append(piece)
    path.unlink()
    return written
