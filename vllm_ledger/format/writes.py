"""The SQL the write side runs on its own ledger: meta, one flush as one transaction, and
compaction of old per-second rows. Standard library only.
"""

from __future__ import annotations

import contextlib
import sqlite3

from vllm_ledger.format.schema import COUNT_COLUMNS, transaction

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
