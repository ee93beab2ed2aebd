"""Output files the CLI writes (``render --output``, ``report --html``, ``ramp --out``): only
ever regular files, written whole.

A path the user names may already be something else: a directory, a FIFO (opening it for
writing waits for a reader, forever), a device (``/dev/null``, or worse ``/dev/sda``; and
renaming a file over a device node as root would replace the node), a socket. Each is refused
with one line before anything is opened. A symlink is followed to what it names, and that must
be a regular file or nothing.

The text is written to a temporary file in the target's own folder and renamed over the
target, so a reader (a browser, a shell about to run a script) sees the old file or the new
one, never half. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from vllm_ledger.errors import BadArgument

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str:
    """``a directory``, ``a FIFO``, ``a character device``, ... for a non-regular ``st_mode``."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def check_target(path: str | os.PathLike[str], *, flag: str, example: str) -> Path:
    """Where ``path`` really writes (a symlink followed), refused unless it is a regular file
    or nothing yet in an existing folder. Opens nothing."""
    given = Path(path)
    if str(path) == "" or given.name in ("", ".", ".."):
        raise BadArgument(f"{flag} {str(path)!r} is not a file name: give one, e.g. {example}")
    folder = given.parent
    if not folder.is_dir():
        raise BadArgument(f"{flag} {given}: folder {folder} does not exist; create it first")
    real = Path(os.path.realpath(given))
    try:
        st = os.stat(real)
    except FileNotFoundError:
        if not real.parent.is_dir():  # a dangling symlink into a missing folder
            raise BadArgument(
                f"{flag} {given}: folder {real.parent} does not exist; create it first"
            ) from None
        return real
    except OSError as exc:
        raise BadArgument(f"{flag} {given}: {exc.strerror}: give another path") from exc
    if not stat.S_ISREG(st.st_mode):
        raise BadArgument(
            f"{flag} {given} is {kind_of(st.st_mode)}, not a regular file: "
            f"give a file name, e.g. {example}"
        )
    return real


def write_file(
    path: str | os.PathLike[str], data: bytes, *, flag: str, example: str, mode: int = 0o644
) -> Path:
    """Write ``data`` to ``path`` whole (temporary file, then rename); returns the real path."""
    with _whole(path, flag=flag, example=example, mode=mode, text=False) as (real, f):
        f.write(data)
    return real


@contextlib.contextmanager
def writing(
    path: str | os.PathLike[str], *, flag: str, example: str, mode: int = 0o644
) -> Iterator[IO[str]]:
    """A text file to stream into, that appears at ``path`` whole when the block ends without
    an error (temporary file, then rename), and not at all otherwise."""
    with _whole(path, flag=flag, example=example, mode=mode, text=True) as (_real, f):
        yield f


@contextlib.contextmanager
def _whole(
    path: str | os.PathLike[str], *, flag: str, example: str, mode: int, text: bool
) -> Iterator[tuple[Path, IO[Any]]]:
    """The one temporary-file-then-rename: a file in the target's folder to write, renamed over
    the real target when the block ends without an error, removed otherwise."""
    real = check_target(path, flag=flag, example=example)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
    except OSError as exc:
        raise BadArgument(f"{flag} {path}: cannot write in {real.parent}: {exc.strerror}") from exc
    try:
        opened = os.fdopen(fd, "w", encoding="utf-8", newline="") if text else os.fdopen(fd, "wb")
        with opened as f:
            yield real, f
            f.flush()
            os.fchmod(f.fileno(), mode)
        # Checked again just before the rename: a FIFO or device put there meanwhile stays.
        check_target(path, flag=flag, example=example)
        os.replace(tmp, real)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


__all__ = ["check_target", "kind_of", "write_file", "writing"]
