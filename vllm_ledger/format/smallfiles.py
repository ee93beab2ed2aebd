"""The small files beside the ledgers: opening a regular file without blocking, reading it
bounded, and the sequence marker each ledger keeps beside it. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from vllm_ledger.errors import NotARegularFile


def write_sequence_marker(path: Path, seq: int, ts: float) -> None:
    """Record the last committed sequence number beside the ledger (no fsync: a hint)."""
    marker = Path(f"{path}.seq")
    tmp = Path(f"{path}.seq.tmp")
    tmp.write_text(f"{seq} {ts!r}\n")
    os.replace(tmp, marker)


@contextlib.contextmanager
def open_regular(path: Path | str, max_bytes: int) -> Iterator[tuple[int, os.stat_result]]:
    """A descriptor on a regular file and its ``fstat``, without ever blocking or opening
    anything else.

    A FIFO, socket, device or directory named like one of the ledger's files is refused from
    its ``stat`` (``NotARegularFile``), before any open; the open is non-blocking and its
    ``fstat`` checked again, so a file swapped in between is refused too. A file larger than
    ``max_bytes`` raises ``OSError`` (EFBIG). The descriptor is closed on leaving.
    """
    import errno
    import stat

    if not stat.S_ISREG(os.stat(path).st_mode):
        raise NotARegularFile(errno.EINVAL, "not a regular file", str(path))
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotARegularFile(errno.EINVAL, "not a regular file", str(path))
        if st.st_size > max_bytes:
            raise OSError(errno.EFBIG, f"larger than {max_bytes} bytes", str(path))
        yield fd, st
    finally:
        os.close(fd)


def read_regular_file(path: Path | str, max_bytes: int) -> bytes:
    """The bytes of a small regular file (``open_regular``'s checks), at most ``max_bytes``."""
    import errno

    with open_regular(path, max_bytes) as (fd, _st):
        chunks = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise OSError(errno.EFBIG, f"larger than {max_bytes} bytes", str(path))
        return data


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
