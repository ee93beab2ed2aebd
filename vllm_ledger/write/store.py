"""The ledger file: schema, migrations, and opening for write or read-only.

One SQLite file per API process and run (see ``paths.py`` for where it lives). Every SQL
statement of the project is here: the on-disk format lives in one module, as
prometheus_client keeps its own in ``mmap_dict.py``. The recorder and compaction write through
it; the read side reads through it (``read_facts``, ``sum_by_engine``). Runs inside vLLM, so
standard library only.

Tables
------
``meta``        key/value facts about the writer (run id, rank, expected writers, instance).
``buckets``     per-second sums keyed by (``ts`` wall second, ``engine`` DP rank).
``hourly``      the same sums folded per hour (kept forever; seconds past 8 days are compacted).
``daily``       the same sums folded per UTC day (kept forever).
``spans``       wall-clock spans the writer vouches for (its heartbeats), with the commit
                sequence number reached at the end of each span.
``migrations``  the append-only list of schema steps applied to this file.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_ledger.errors import NotARegularFile

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

# The six sums a window adds up (the fault counts come from ``problem_seconds`` instead).
SUM_COLUMNS: tuple[str, ...] = COUNT_COLUMNS[:6]

# What one second of one DP engine can physically hold (docs/ledger.md says why): the recorder
# refuses an event that would pass them, and a reader refuses a file whose rows do.
MAX_TOKENS_PER_ENGINE_SECOND = 10**8
MAX_REQUESTS_PER_ENGINE_SECOND = 10**6
MAX_DECODE_US_PER_ENGINE_SECOND = 2**62 // 86400  # so a daily row stays below 2^62

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
    (
        "0003_daily",
        # The same sums per UTC day, so a window of a year reads about 365 rows per engine
        # instead of 8760; back-filled from the hourly rows in the migration's transaction.
        f"""
CREATE TABLE daily (
  ts INTEGER NOT NULL,
  engine INTEGER NOT NULL,
  {_COUNTS_DDL},
  PRIMARY KEY (ts, engine)
) WITHOUT ROWID;
INSERT INTO daily (ts, engine, {", ".join(COUNT_COLUMNS)})
  SELECT ts - ts % 86400, engine, {", ".join(f"sum({c})" for c in COUNT_COLUMNS)}
  FROM hourly GROUP BY ts - ts % 86400, engine;
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


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


# ---- writing ---------------------------------------------------------------------------------

_COLS = ", ".join(COUNT_COLUMNS)
_MARKS = ", ".join("?" * len(COUNT_COLUMNS))
_UPSERT_BUCKET = (
    f"INSERT INTO buckets (ts, engine, {_COLS}) VALUES (?, ?, {_MARKS})"
    " ON CONFLICT (ts, engine) DO UPDATE SET "
    + ", ".join(f"{c} = {c} + excluded.{c}" for c in COUNT_COLUMNS)
)
_UPSERT_HOURLY = _UPSERT_BUCKET.replace("INSERT INTO buckets", "INSERT INTO hourly")
_UPSERT_DAILY = _UPSERT_BUCKET.replace("INSERT INTO buckets", "INSERT INTO daily")
_UPSERT_PROBLEM = (
    "INSERT INTO problem_seconds (ts, dropped_events, rejected_events, lost_events)"
    " VALUES (?, ?, ?, ?) ON CONFLICT (ts) DO UPDATE SET"
    " dropped_events = dropped_events + excluded.dropped_events,"
    " rejected_events = rejected_events + excluded.rejected_events,"
    " lost_events = lost_events + excluded.lost_events"
)


def write_meta(conn: sqlite3.Connection, meta: dict[str, str]) -> None:
    """Set meta keys, in one transaction."""
    with transaction(conn):
        conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", meta.items())


def commit_batch(
    conn: sqlite3.Connection,
    *,
    seconds: list[tuple[int, ...]],
    hours: list[tuple[int, ...]],
    days: list[tuple[int, ...]],
    problems: list[tuple[int, int, int, int]],
    span_id: int | None,
    now_ts: float,
    seq: int,
    final: bool,
) -> int:
    """One flush as one transaction: add the counts, extend or start a span, bump ``last_seq``.

    ``seconds``, ``hours`` and ``days`` are ``(ts, engine, *COUNT_COLUMNS)`` rows added to what
    is there;
    ``span_id`` None starts a new span at ``now_ts``. Returns the span's id.
    """
    with transaction(conn):
        if seconds:
            conn.executemany(_UPSERT_BUCKET, seconds)
            conn.executemany(_UPSERT_HOURLY, hours)
            conn.executemany(_UPSERT_DAILY, days)
        if problems:
            conn.executemany(_UPSERT_PROBLEM, problems)
        if span_id is None:
            cur = conn.execute(
                "INSERT INTO spans (start_ts, end_ts, last_seq) VALUES (?, ?, ?)",
                (now_ts, now_ts, seq),
            )
            span_id = int(cur.lastrowid or 0)
        else:
            conn.execute(
                "UPDATE spans SET end_ts = ?, last_seq = ? WHERE id = ?", (now_ts, seq, span_id)
            )
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('last_seq', ?)", (str(seq),))
        if final:
            conn.execute(
                "INSERT OR REPLACE INTO meta VALUES ('clean_close_ts', ?)", (repr(now_ts),)
            )
    return span_id


def compact(conn: sqlite3.Connection, horizon_ts: int) -> int:
    """Delete per-second rows before ``horizon_ts`` in one transaction; returns rows deleted.

    The hourly rows keep their sums; the first record's exact second is kept in meta
    (``first_second_ts``), since hourly rows only know its hour.
    """
    with transaction(conn):
        row = conn.execute("SELECT value FROM meta WHERE key = 'compacted_before_ts'").fetchone()
        before = int(row[0]) if row else None
        if before is not None and before >= horizon_ts:
            return 0
        if conn.execute("SELECT 1 FROM meta WHERE key = 'first_second_ts'").fetchone() is None:
            first = conn.execute("SELECT min(ts) FROM buckets").fetchone()[0]
            if first is not None:
                conn.execute("INSERT INTO meta VALUES ('first_second_ts', ?)", (str(first),))
        cur = conn.execute("DELETE FROM buckets WHERE ts < ?", (horizon_ts,))
        conn.execute(
            "INSERT OR REPLACE INTO meta VALUES ('compacted_before_ts', ?)", (str(horizon_ts),)
        )
        deleted = cur.rowcount
    with contextlib.suppress(sqlite3.Error):
        conn.execute("PRAGMA incremental_vacuum")
    return deleted


# ---- reading ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Facts:
    """What a reader needs of one ledger besides its sums, as stored (not yet validated)."""

    tables: frozenset[str]
    meta: dict[str, str]
    spans: list[tuple[float, float]]
    problem_seconds: list[tuple[int, int, int, int]]  # (second, dropped, rejected, lost)
    first_second_ts: int | None  # min(ts) of the per-second rows
    first_hour_ts: int | None  # min(ts) of the hourly rows
    last_end_ts: float | None  # end of the last second or hour holding counts


def read_facts(conn: sqlite3.Connection) -> Facts:
    """Everything but the sums, on the connection's current read transaction."""
    tables = frozenset(
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
    )
    if "meta" not in tables:
        return Facts(tables, {}, [], [], None, None, None)
    meta = read_meta(conn)
    spans = [
        (s, e) for s, e in conn.execute("SELECT start_ts, end_ts FROM spans ORDER BY start_ts")
    ]
    problems: list[tuple[int, int, int, int]] = []
    if "problem_seconds" in tables:
        problems = [
            (r[0], r[1], r[2], r[3])
            for r in conn.execute(
                "SELECT ts, dropped_events, rejected_events, lost_events FROM problem_seconds"
            )
        ]
    # One aggregate per statement: SQLite answers a lone min() or max() from the primary key's
    # end, but scans the whole table for min() and max() together.
    first_s, last_s, first_h, last_h = (
        conn.execute(q).fetchone()[0]
        for q in (
            "SELECT min(ts) FROM buckets",
            "SELECT max(ts) FROM buckets",
            "SELECT min(ts) FROM hourly",
            "SELECT max(ts) FROM hourly",
        )
    )
    # Compaction deletes a prefix of the per-second rows, so where any remain the last one is
    # the last counted second; otherwise only its hour is known.
    last_end = last_s + 1 if last_s is not None else last_h + 3600 if last_h is not None else None
    return Facts(
        tables,
        meta,
        spans,
        problems,
        first_s,
        first_h,
        None if last_end is None else float(last_end),
    )


_SUMS = ", ".join(f"sum({c})" for c in SUM_COLUMNS)
_TOKEN_COLUMNS = ("prompt_tokens", "generation_tokens", "cached_tokens", "decode_tokens")
# Beside each group's sums, what the reader needs to refuse rows it must not add: any value
# that is not an integer, the smallest value, the largest token count, the largest request
# count and the largest decode time of a row, and whether a row has more cached than input.
_CHECKS = ", ".join(
    [
        "max(" + " OR ".join(f"typeof({c}) != 'integer'" for c in SUM_COLUMNS) + ")",
        f"min(min({', '.join(SUM_COLUMNS)}))",
        f"max(max({', '.join(_TOKEN_COLUMNS)}))",
        "max(requests)",
        "max(decode_seconds_micro)",
        "max(cached_tokens > prompt_tokens)",
    ]
)
_SUM_QUERIES = {
    table: f"SELECT engine, {_SUMS}, {_CHECKS} FROM {table}"
    " WHERE ts >= ? AND ts < ? GROUP BY engine"
    for table in ("buckets", "hourly", "daily")
}


def sum_by_engine(
    conn: sqlite3.Connection, table: str, start_ts: int, end_ts: int
) -> list[tuple[Any, ...]]:
    """``(engine, *SUM_COLUMNS, *checks)`` rows over ``[start_ts, end_ts)`` of ``buckets``,
    ``hourly`` or ``daily``, as stored: the checks (non-integer seen, lowest value, most tokens,
    most requests, most decode microseconds, cached over input seen) are for the reader to
    judge each group before it adds the sums."""
    return conn.execute(_SUM_QUERIES[table], (start_ts, end_ts)).fetchall()


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
