"""The small files kept beside the ledgers: each written whole (``write_whole``: a temporary
file, then a rename), and the sequence marker each ledger keeps beside it (``<file>.seq``),
read through ``infile.py`` (a regular file only, bounded). Standard library only.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from vllm_ledger.errors import NotARegularFile
from vllm_ledger.infile import read_regular_file


def write_whole(path: Path, data: bytes, *, tmp: Path, mode: int = 0o666) -> None:
    """``data`` at ``path`` whole: written to ``tmp`` (created with ``mode``, less the umask),
    then renamed over ``path``, so a reader sees the old file or the new one; ``tmp`` is
    removed when either step fails. No fsync: what is written this way is a hint or is
    written again."""
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_sequence_marker(path: Path, seq: int, ts: float) -> None:
    """Record the last committed sequence number beside the ledger (no fsync: a hint)."""
    write_whole(Path(f"{path}.seq"), f"{seq} {ts!r}\n".encode(), tmp=Path(f"{path}.seq.tmp"))


MARKER_MAX_BYTES = 256


def read_sequence_marker(path: Path) -> tuple[int, float] | None:
    """The marker beside a ledger, or None where there is none or it cannot be parsed.

    Raises ``NotARegularFile`` where something other than a file stands in its place, and
    ``PermissionError`` where the reader may not read it: the reader must not take either for
    "no marker" (it could hide lost commits).
    """
    try:
        seq, ts = read_regular_file(f"{path}.seq", MARKER_MAX_BYTES).decode().split()
        return int(seq), float(ts)
    except (NotARegularFile, PermissionError):
        raise  # something is there that we may not read: not the same as no marker
    except (OSError, ValueError):
        return None
