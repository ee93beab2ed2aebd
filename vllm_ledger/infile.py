"""Input files read only as regular files, bounded (the counterpart of ``outfile.py``).

Every file the project reads that a user, a deployment or a crash may have put there (ledger
markers, the summary, declared stops, the zone file, config, host, prices and key files) is
opened here: a FIFO, socket, device or directory in its place is refused before anything
blocks on it, and no read takes more than the caller's bound. Standard library only: it runs
inside vLLM.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from vllm_ledger.errors import NotARegularFile

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)


@contextlib.contextmanager
def open_regular(
    path: Path | str, max_bytes: int | None = None
) -> Iterator[tuple[int, os.stat_result]]:
    """A descriptor on a regular file and its ``fstat``, without ever blocking or opening
    anything else.

    A FIFO, socket, device or directory is refused from its ``stat`` (``NotARegularFile``),
    before any open; the open is non-blocking and its ``fstat`` checked again, so a file swapped
    in between is refused too. A file larger than ``max_bytes`` (where given) raises ``OSError``
    (EFBIG). The descriptor is closed on leaving.
    """
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise NotARegularFile(errno.EINVAL, "not a regular file", str(path))
    fd = os.open(path, _FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotARegularFile(errno.EINVAL, "not a regular file", str(path))
        if max_bytes is not None and st.st_size > max_bytes:
            raise OSError(errno.EFBIG, f"larger than {max_bytes} bytes", str(path))
        yield fd, st
    finally:
        os.close(fd)


def read_up_to(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes from ``fd``, read in chunks of at most 1 MiB."""
    chunks = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_regular_file(path: Path | str, max_bytes: int) -> bytes:
    """The bytes of a small regular file (``open_regular``'s checks), at most ``max_bytes``:
    a longer one (grown since its ``fstat``, too) raises ``OSError`` (EFBIG)."""
    with open_regular(path, max_bytes) as (fd, _st):
        data = read_up_to(fd, max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(errno.EFBIG, f"larger than {max_bytes} bytes", str(path))
    return data


def read_regular_text(path: Path | str, max_bytes: int, encoding: str = "utf-8") -> str:
    """``read_regular_file`` decoded (``UnicodeDecodeError`` is a ``ValueError``)."""
    return read_regular_file(path, max_bytes).decode(encoding)
