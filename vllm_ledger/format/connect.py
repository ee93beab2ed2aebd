"""Opening a ledger file: for write (WAL, this process alone) or read-only (immutable where no
writer has it open), and looking at a file from outside SQLite before trusting it. Standard
library only.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from vllm_ledger.format.schema import apply_migrations


def open_for_write(path: Path, now_ts: float, busy_timeout_s: float = 2.0) -> sqlite3.Connection:
    """Create or open a ledger file for this process alone, in WAL with synchronous=NORMAL."""
    conn = sqlite3.connect(
        str(path), timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
    )
    try:
        # Takes effect on a new file only; lets compaction hand freed pages back.
        conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise sqlite3.OperationalError(f"journal_mode is {mode}, not wal")
        conn.execute("PRAGMA synchronous=NORMAL")
        apply_migrations(conn, now_ts)
    except BaseException:
        conn.close()
        raise
    return conn


def read_only_uri(path: Path, immutable: bool = False) -> str:
    """The URI readers use: ``mode=ro``; ``immutable=1`` only for a file with no ``-wal``.

    ``immutable=1`` ignores the WAL, so it is right only where there is none: then no writer
    has the file open (SQLite removes the ``-wal`` when the last connection closes) and every
    commit is in the main file. It is what keeps a reader from creating ``-wal`` and ``-shm``
    in a ledger folder it may write to. In an SQLite URI's path only ``%``, ``?`` and ``#``
    need escaping.
    """
    text = str(path.resolve()).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return f"file:{text}?mode=ro&immutable=1" if immutable else f"file:{text}?mode=ro"


Stamp = tuple[int, int]  # (size, mtime_ns) of a file opened immutable


def _wal_absent(path: Path | str) -> bool:
    return not os.path.lexists(f"{path}-wal")


def unchanged(path: Path | str, stamp: Stamp | None) -> bool:
    """False when a file opened immutable has changed since (a writer or compaction opened it:
    what was read from it may mix two states). Always True for a normal read-only open."""
    if stamp is None:
        return True
    try:
        st = os.stat(path)
    except OSError:
        return False
    return (st.st_size, st.st_mtime_ns) == stamp and _wal_absent(path)


@contextlib.contextmanager
def open_read_only(path: Path, busy_timeout_s: float = 2.0) -> Iterator[sqlite3.Connection]:
    """Open a ledger read-only (immutable where it has no ``-wal``); closed when the block ends."""
    conn = sqlite3.connect(read_only_uri(path, _wal_absent(path)), uri=True, timeout=busy_timeout_s)
    try:
        yield conn
    finally:
        conn.close()


def connect_read_only(
    path: Path, busy_timeout_s: float = 2.0
) -> tuple[sqlite3.Connection, bytes, Stamp | None]:
    """A read-only connection in an open read transaction, the file's first 100 bytes and, for a
    file opened immutable (no ``-wal``: see ``read_only_uri``), its stamp, with one open of the
    file. Every query on the connection then sees the same commit (the
    transaction holds until the connection closes: keep it short-lived).

    The header is read with ``pread`` on the descriptor SQLite itself opened: ``open()`` takes
    the lowest free descriptor, so the one free just before the connect is SQLite's, which
    ``fstat`` confirms (same device and inode as the path). So the bytes checked are those of
    the very file SQLite reads, and the file is opened once. Where that cannot be confirmed
    (another thread opened a file at the same moment) the header is read with a second, plain
    open. The caller must have made sure the file is a regular file of at least 100 bytes:
    SQLite deletes the ``-wal`` beside a shorter one, even read-only.
    """
    st = os.stat(path)
    immutable = _wal_absent(path)
    probe = os.open(os.devnull, os.O_RDONLY)
    os.close(probe)
    conn = sqlite3.connect(
        read_only_uri(path, immutable), uri=True, timeout=busy_timeout_s, isolation_level=None
    )
    try:
        head = b""
        with contextlib.suppress(OSError):
            fst = os.fstat(probe)
            if (fst.st_dev, fst.st_ino) == (st.st_dev, st.st_ino):
                head = os.pread(probe, HEADER_BYTES, 0)
        if not head:
            with open(path, "rb") as f:
                head = f.read(HEADER_BYTES)
        if head.startswith(SQLITE_MAGIC):
            conn.execute("BEGIN")
    except BaseException:
        conn.close()
        raise
    return conn, head, (st.st_size, st.st_mtime_ns) if immutable else None


def fsync_dir(path: Path) -> None:
    """Make a new file's directory entry durable (best effort)."""
    with contextlib.suppress(OSError):
        fd = os.open(str(path), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


SQLITE_MAGIC = b"SQLite format 3\x00"


_SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE = 1006


def close_without_checkpoint(conn: sqlite3.Connection) -> None:
    """Close a connection to a damaged ledger without SQLite's checkpoint-on-close.

    A checkpoint would copy WAL frames into the damaged file; the file must stay byte for byte
    as it was found. Python 3.12+ exposes the switch; on 3.10/3.11 it is set through the
    connection's ``sqlite3*`` handle (the first field of CPython's connection object). If
    neither works the connection is left open (and so unclosed) rather than risk a write.
    """
    try:
        setconfig = getattr(conn, "setconfig", None)
        if setconfig is not None:
            setconfig(_SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, True)
        else:
            import _sqlite3
            import ctypes

            lib = ctypes.CDLL(_sqlite3.__file__)
            handle = ctypes.c_void_p.from_address(id(conn) + object.__basicsize__).value
            db_config = lib.sqlite3_db_config
            db_config.restype = ctypes.c_int
            rc = db_config(
                ctypes.c_void_p(handle),
                ctypes.c_int(_SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE),
                ctypes.c_int(1),
                ctypes.c_void_p(None),
            )
            if rc != 0:
                raise OSError(f"sqlite3_db_config returned {rc}")
    except Exception:
        _LEAKED.append(conn)  # never closed, never checkpointed
        return
    with contextlib.suppress(sqlite3.Error):
        conn.close()


_LEAKED: list[sqlite3.Connection] = []


HEADER_BYTES = 100


def header_damage(head: bytes) -> str | None:
    """What is wrong with a ledger's first 100 bytes, or None when they are an SQLite header."""
    if len(head) < HEADER_BYTES:
        return "truncated"
    if not head.startswith(SQLITE_MAGIC):
        return "bad header"
    return None


def file_damage(path: Path, expect_wal: bool) -> str | None:
    """A cheap look at a ledger file from outside SQLite: None if it looks sound."""
    try:
        with open(path, "rb") as f:
            head = f.read(HEADER_BYTES)
    except OSError as exc:
        return f"cannot read: {exc.strerror}"
    damage = header_damage(head)
    if damage is None and expect_wal and not os.path.exists(f"{path}-wal"):
        return "WAL file missing"
    return damage


def quick_check(path: Path, busy_timeout_s: float = 2.0) -> str:
    """``PRAGMA quick_check`` on a fresh read-only connection: "ok" or the first problem."""
    damage = file_damage(path, expect_wal=False)
    if damage is not None:  # never let SQLite open a headerless file: it drops the -wal
        return damage
    try:
        with open_read_only(path, busy_timeout_s) as conn:
            rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.Error as exc:
        return str(exc)
    first = str(rows[0][0]) if rows else "no answer"
    return first
