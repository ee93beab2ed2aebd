"""The SQL the write side runs on its own ledger: meta, one flush as one transaction, and
compaction of old per-second rows. Standard library only.
"""

from __future__ import annotations

import contextlib
import sqlite3

from vllm_ledger.format.schema import (
    ATTR_COLUMNS,
    ATTR_DIMS,
    ATTR_TABLES,
    COUNT_COLUMNS,
    transaction,
)

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


_ATTR_COLS = ", ".join(ATTR_COLUMNS)
_UPSERT_ATTR = {
    table: f"INSERT INTO {table} (ts, dim, {_ATTR_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (ts, dim) DO UPDATE SET "
    + ", ".join(f"{c} = {c} + excluded.{c}" for c in ATTR_COLUMNS)
    for table in ATTR_TABLES
}
_INSERT_DIMS = f"INSERT OR IGNORE INTO attr_dims ({', '.join(ATTR_DIMS)}) VALUES (?, ?, ?, ?, ?)"
_SELECT_DIM = "SELECT id FROM attr_dims WHERE " + " AND ".join(f"{d} = ?" for d in ATTR_DIMS)
_UPSERT_FOLDED = (
    "INSERT INTO attr_folded (ts, kind, folded) VALUES (?, ?, ?)"
    " ON CONFLICT (ts, kind) DO UPDATE SET folded = max(folded, excluded.folded)"
)

_SET_LAST_SEQ = (
    "INSERT INTO meta VALUES ('last_seq', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)

# A credited row as the recorder hands it over: (second, dims, *ATTR_COLUMNS).
AttrRow = tuple[int, tuple[str, str, str, str, str], int, int, int, int, int]


def _add_attribution(
    conn: sqlite3.Connection,
    rows: list[AttrRow],
    folded: list[tuple[int, str, int]],
    dim_ids: dict[tuple[str, ...], int],
) -> None:
    """Add the credited rows to the three tables (folded by hour and UTC day here), naming new
    dims; ``dim_ids`` (the caller's cache for this file) learns the ids (the caller drops it
    when the transaction fails)."""
    new = {dims for _ts, dims, *_c in rows if dims not in dim_ids}
    if new:
        conn.executemany(_INSERT_DIMS, new)
        for dims in new:
            dim_ids[dims] = conn.execute(_SELECT_DIM, dims).fetchone()[0]
    for table, size in ATTR_TABLES.items():
        acc: dict[tuple[int, int], list[int]] = {}
        for ts, dims, *counts in rows:
            key = (ts - ts % size, dim_ids[dims])
            got = acc.get(key)
            if got is None:
                acc[key] = list(counts)
            else:
                for i, n in enumerate(counts):
                    got[i] += n
        conn.executemany(_UPSERT_ATTR[table], [(t, d, *c) for (t, d), c in acc.items()])
    if folded:
        conn.executemany(_UPSERT_FOLDED, folded)


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
    attribution: list[AttrRow] | None = None,
    folded: list[tuple[int, str, int]] | None = None,
    dim_ids: dict[tuple[str, ...], int] | None = None,
) -> int:
    """One flush as one transaction: add the counts, extend or start a span, bump ``last_seq``.

    ``seconds``, ``hours`` and ``days`` are ``(ts, engine, *COUNT_COLUMNS)`` rows added to what
    is there;
    ``span_id`` None starts a new span at ``now_ts``. ``attribution``: credited rows (whose
    tokens), added in the same transaction. Returns the span's id.
    """
    with transaction(conn):
        if seconds:
            conn.executemany(_UPSERT_BUCKET, seconds)
            conn.executemany(_UPSERT_HOURLY, hours)
            conn.executemany(_UPSERT_DAILY, days)
        if attribution or folded:
            _add_attribution(
                conn, attribution or [], folded or [], {} if dim_ids is None else dim_ids
            )
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
        # An upsert, not INSERT OR REPLACE: the row is changed where it is, so its index
        # page is not written again at every commit.
        conn.execute(_SET_LAST_SEQ, (str(seq),))
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
        has_attr = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'attr_seconds'"
        ).fetchone()
        if has_attr:
            conn.execute("DELETE FROM attr_seconds WHERE ts < ?", (horizon_ts,))
        conn.execute(
            "INSERT OR REPLACE INTO meta VALUES ('compacted_before_ts', ?)", (str(horizon_ts),)
        )
        deleted = cur.rowcount
    with contextlib.suppress(sqlite3.Error):
        # As a script: run to its end, every free page given back (a single step of the
        # statement frees one page only).
        conn.executescript("PRAGMA incremental_vacuum;")
    return deleted
