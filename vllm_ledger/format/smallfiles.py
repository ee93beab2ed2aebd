"""The small files kept beside the ledgers: each written whole (``write_whole``: a temporary
file, then a rename), and the sequence marker each ledger keeps beside it (``<file>.seq``),
read through ``infile.py`` (a regular file only, bounded). Standard library only.

A marker is one record, ``SEQ TS CRC`` padded to ``MARKER_RECORD_BYTES``: the last committed
sequence number, the commit's time and a CRC-32 of the two. Its writer keeps it open and writes
each commit's record over the last in place (``MarkerWriter``: one ``pwrite``, no temporary
file, no rename, no open per commit); a reader that meets a write halfway finds a checksum
that does not match and takes it for no marker, never for another number. A marker of two
fields (``SEQ TS``, no checksum) is one an earlier writer left, read as it is.
"""

from __future__ import annotations

import contextlib
import os
import stat
import zlib
from pathlib import Path

from vllm_ledger.errors import NotARegularFile
from vllm_ledger.infile import read_regular_file

MARKER_MAX_BYTES = 256
MARKER_RECORD_BYTES = 64  # a sequence number of 19 digits and any time fit with room to spare


def marker_record(seq: int, ts: float) -> bytes:
    """The marker's record for ``seq`` committed at ``ts``, ``MARKER_RECORD_BYTES`` long."""
    body = f"{seq} {ts!r}"
    return f"{body} {zlib.crc32(body.encode()):08x}".ljust(MARKER_RECORD_BYTES - 1).encode() + b"\n"


def write_whole(path: Path, data: bytes, *, tmp: Path, mode: int = 0o666) -> None:
    """``data`` at ``path`` whole: written to ``tmp`` (created with ``mode``, less the umask),
    then renamed over ``path``, so a reader sees the old file or the new one; ``tmp`` is
    removed when either step fails. ``tmp`` is made anew (a leftover there, a link
    included, is removed first and never followed). No fsync: what is written this way is a
    hint or is written again."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # a crashed writer's leftover, or a name put there
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:  # an interrupt between the two steps leaves no temporary file either
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_sequence_marker(path: Path, seq: int, ts: float) -> None:
    """Record the last committed sequence number beside the ledger (no fsync: a hint), whole
    (``write_whole``): what a writer does where it cannot keep the marker open."""
    write_whole(Path(f"{path}.seq"), marker_record(seq, ts), tmp=Path(f"{path}.seq.tmp"))


class MarkerWriter:
    """One writer's marker, kept open and written over in place at each commit. It follows
    the ledger it is asked for (a new file after a rotation). It writes only to a regular
    file it opened without following a link; where it cannot open one, each commit's marker
    goes through ``write_sequence_marker``, which replaces whatever stands there."""

    def __init__(self) -> None:
        self._ledger: Path | None = None
        self._fd: int | None = None

    def write(self, ledger: Path, seq: int, ts: float) -> None:
        if ledger != self._ledger:
            self.close()
            self._fd = _open_marker(ledger)
            self._ledger = ledger
        if self._fd is None:
            write_sequence_marker(ledger, seq, ts)
        else:
            os.pwrite(self._fd, marker_record(seq, ts), 0)

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = None
        self._ledger = None


def _open_marker(ledger: Path) -> int | None:
    """The marker opened for writing, one record long; None where it is not a regular file or
    cannot be opened (a link, a FIFO, a folder: never written through, never waited on)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(f"{ledger}.seq", flags, 0o644)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        os.ftruncate(fd, MARKER_RECORD_BYTES)
    except OSError:
        os.close(fd)
        return None
    return fd


def read_sequence_marker(path: Path) -> tuple[int, float] | None:
    """The marker beside a ledger, or None where there is none or it cannot be parsed.

    Raises ``NotARegularFile`` where something other than a file stands in its place, and
    ``PermissionError`` where the reader may not read it: the reader must not take either for
    "no marker" (it could hide lost commits).
    """
    try:
        fields = read_regular_file(f"{path}.seq", MARKER_MAX_BYTES).decode().split()
        if len(fields) == 3:  # SEQ TS CRC
            seq, ts, crc = fields
            if crc != f"{zlib.crc32(f'{seq} {ts}'.encode()):08x}":
                return None  # met halfway through a write, or damaged
        else:
            seq, ts = fields  # an earlier writer's SEQ TS (ValueError for any other count)
        return int(seq), float(ts)
    except (NotARegularFile, PermissionError):
        raise  # something is there that we may not read: not the same as no marker
    except (OSError, ValueError):
        return None
