"""The ledger file's schema: its count columns, the bounds a row must keep, and the migrations.

Tables
------
``meta``        key/value facts about the writer (run id, rank, expected writers, instance).
``buckets``     per-second sums keyed by (``ts`` wall second, ``engine`` DP rank).
``hourly``      the same sums folded per hour (kept forever; seconds past 8 days are compacted).
``daily``       the same sums folded per UTC day (kept forever).
``spans``       wall-clock spans the writer vouches for (its heartbeats), with the commit
                sequence number reached at the end of each span.
``migrations``  the append-only list of schema steps applied to this file.

Runs inside vLLM: standard library only.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

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
