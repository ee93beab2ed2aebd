"""The ledger file: schema, migrations, and opening for write or read-only.

One SQLite file per API process and run (see ``paths.py`` for where it lives).
Runs inside vLLM, so standard library only.

Tables
------
``meta``        key/value facts about the writer (run id, rank, expected writers, instance).
``buckets``     per-second sums keyed by (``ts`` wall second, ``engine`` DP rank).
``hourly``      the same sums folded per hour, for seconds older than the compaction horizon.
``spans``       wall-clock spans the writer vouches for (its heartbeats), with the commit
                sequence number reached at the end of each span.
``migrations``  the append-only list of schema steps applied to this file.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

LEDGER_SUFFIX = ".ledger.sqlite"

# Column order shared by ``buckets`` and ``hourly`` and by the recorder's accumulators.
COUNT_COLUMNS: tuple[str, ...] = (
    "prompt_tokens",
    "generation_tokens",
    "cached_tokens",
    "requests",
    "decode_tokens",  # sum(max(generation_tokens - 1, 0)) of finished requests
    "decode_seconds_micro",  # sum of decode seconds of finished requests, in microseconds
    "dropped_events",  # lost to a full queue
    "rejected_events",  # input the plugin could not read
    "lost_events",  # in a batch whose commit failed
)

_COUNTS_DDL = ",\n  ".join(f"{c} INTEGER NOT NULL DEFAULT 0" for c in COUNT_COLUMNS)

MIGRATIONS: tuple[tuple[str, str], ...] = (
    (
        "0001_initial",
        f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE buckets (
  ts INTEGER NOT NULL,
  engine INTEGER NOT NULL,
  {_COUNTS_DDL},
  PRIMARY KEY (ts, engine)
) WITHOUT ROWID;
CREATE TABLE hourly (
  ts INTEGER NOT NULL,
  engine INTEGER NOT NULL,
  {_COUNTS_DDL},
  PRIMARY KEY (ts, engine)
) WITHOUT ROWID;
CREATE TABLE spans (
  id INTEGER PRIMARY KEY,
  start_ts REAL NOT NULL,
  end_ts REAL NOT NULL,
  last_seq INTEGER NOT NULL
);
""",
    ),
    (
        "0002_problem_seconds",
        # Seconds in which something was dropped, rejected or lost, kept after compaction
        # so that coverage stays exact to the second.
        """
CREATE TABLE problem_seconds (
  ts INTEGER PRIMARY KEY,
  dropped_events INTEGER NOT NULL DEFAULT 0,
  rejected_events INTEGER NOT NULL DEFAULT 0,
  lost_events INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
""",
    ),
)


def apply_migrations(conn: sqlite3.Connection, now_ts: float) -> list[str]:
    """Apply the schema steps this file lacks, each in its own transaction."""
    conn.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_ts REAL)")
    done = {row[0] for row in conn.execute("SELECT name FROM migrations")}
    applied = []
    for name, ddl in MIGRATIONS:
        if name in done:
            continue
        with transaction(conn):
            for statement in ddl.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT INTO migrations VALUES (?, ?)", (name, now_ts))
        applied.append(name)
    return applied


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One explicit write transaction on an autocommit connection; rolled back on error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


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


def read_only_uri(path: Path) -> str:
    """The URI readers use: ``mode=ro``, never ``immutable=1`` (which ignores the WAL)."""
    from urllib.parse import quote

    return f"file:{quote(str(path.resolve()))}?mode=ro"


@contextlib.contextmanager
def open_read_only(path: Path, busy_timeout_s: float = 2.0) -> Iterator[sqlite3.Connection]:
    """Open a ledger read-only; the connection is closed when the block ends."""
    conn = sqlite3.connect(read_only_uri(path), uri=True, timeout=busy_timeout_s)
    try:
        yield conn
    finally:
        conn.close()


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


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


def file_damage(path: Path, expect_wal: bool) -> str | None:
    """A cheap look at a ledger file from outside SQLite: None if it looks sound."""
    try:
        with open(path, "rb") as f:
            head = f.read(100)
    except OSError as exc:
        return f"cannot read: {exc.strerror}"
    if len(head) < 100:
        return "truncated"
    if not head.startswith(SQLITE_MAGIC):
        return "bad header"
    if expect_wal and not os.path.exists(f"{path}-wal"):
        return "WAL file missing"
    return None


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


def write_sequence_marker(path: Path, seq: int, ts: float) -> None:
    """Record the last committed sequence number beside the ledger (no fsync: a hint)."""
    marker = Path(f"{path}.seq")
    tmp = Path(f"{path}.seq.tmp")
    tmp.write_text(f"{seq} {ts!r}\n")
    os.replace(tmp, marker)


def read_sequence_marker(path: Path) -> tuple[int, float] | None:
    try:
        seq, ts = Path(f"{path}.seq").read_text().split()
        return int(seq), float(ts)
    except (OSError, ValueError):
        return None
