"""The ledger file's schema: its count columns and the bounds a row must keep (both from
``figures.py``), and the migrations.

Tables
------
``meta``        key/value facts about the writer (run id, rank, expected writers, instance).
``buckets``     per-second sums keyed by (``ts`` wall second, ``engine`` DP rank).
``hourly``      the same sums folded per hour (kept forever; seconds past 8 days are compacted).
``daily``       the same sums folded per UTC day (kept forever).
``spans``       wall-clock spans the writer vouches for (its heartbeats), with the commit
                sequence number reached at the end of each span.
``migrations``  the append-only list of schema steps applied to this file.
``attr_dims``   whose: (key, adapter, user, tenant, reason) labels, an id each.
``attr_seconds``, ``attr_hourly``, ``attr_daily``: per second (hour, UTC day) and whose, the
                credited counts (``ATTR_COLUMNS``); ``attr_folded``: per hour and kind, the
                distinct names folded into ``other`` past the bound.

A figure whose column came later names its migration in ``since``; ``MIGRATIONS`` adds that
step itself (``migrations``).

Runs inside vLLM: standard library only.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence

from vllm_ledger import figures

# The fault counts kept beside the figures in every row (``problem_seconds`` holds them per
# second, so that coverage stays exact after compaction).
FAULT_COLUMNS: tuple[str, ...] = (
    "dropped_events",  # lost to a full queue
    "rejected_events",  # input the plugin could not read
    "lost_events",  # in a batch whose commit failed
)


# The figures' columns (``figures.FIGURES``), in their order: what a window adds up.
SUM_COLUMNS: tuple[str, ...] = figures.columns()


def count_columns(figs: Sequence[figures.Figure] = figures.FIGURES) -> tuple[str, ...]:
    """Every count column of ``buckets``, ``hourly`` and ``daily``: the figures', the fault
    counts after them. The recorder's accumulators and ``commit_batch``'s rows are in this
    order (the tables' own order differs only for a column a later migration added)."""
    return (*figures.columns(figs), *FAULT_COLUMNS)


COUNT_COLUMNS: tuple[str, ...] = count_columns()


# Each figure's column and the most one second of one DP engine may hold in it
# (``figures.py``; docs/ledger.md says why).
PER_ENGINE_SECOND: dict[str, int] = {f.column: f.per_engine_second for f in figures.FIGURES}


def columns_added_by(
    migration: str, figs: Sequence[figures.Figure] = figures.FIGURES
) -> tuple[str, ...]:
    """The count columns a named migration added to ``buckets``, ``hourly`` and ``daily``
    (the fault counts came with the first tables)."""
    added = tuple(f.column for f in figs if f.since == migration)
    return (*added, *FAULT_COLUMNS) if migration == figures.INITIAL else added


def add_columns_ddl(migration: str, figs: Sequence[figures.Figure] = figures.FIGURES) -> str:
    """A later migration's DDL: its figures' columns added to the three tables of counts."""
    return "".join(
        f"ALTER TABLE {table} ADD COLUMN {c} INTEGER NOT NULL DEFAULT 0;\n"
        for c in columns_added_by(migration, figs)
        for table in ("buckets", "hourly", "daily")
    )


# The counts of an attribution row (``attr_seconds``, ``attr_hourly``, ``attr_daily``): the
# tokens and finished requests credited (the ledger's own column names), and ``events``:
# requests aborted, middleware faults (``write/tags.py``).
ATTR_COLUMNS: tuple[str, ...] = (
    "prompt_tokens",
    "generation_tokens",
    "cached_tokens",
    "requests",
    "events",
)
ATTR_DIMS: tuple[str, ...] = ("key", "adapter", "user", "tenant", "reason")
ATTR_TABLES: dict[str, int] = {"attr_seconds": 1, "attr_hourly": 3600, "attr_daily": 86400}

# The first tables' columns, as migrations 0001 and 0003 made them: a column added later comes
# with its own migration (``add_columns_ddl``), so these statements never change.
_FIRST_COLUMNS = columns_added_by(figures.INITIAL)


_COUNTS_DDL = ",\n  ".join(f"{c} INTEGER NOT NULL DEFAULT 0" for c in _FIRST_COLUMNS)


# The named migrations written out, in order; never edited once released.
_WRITTEN: tuple[tuple[str, str], ...] = (
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
INSERT INTO daily (ts, engine, {", ".join(_FIRST_COLUMNS)})
  SELECT ts - ts % 86400, engine, {", ".join(f"sum({c})" for c in _FIRST_COLUMNS)}
  FROM hourly GROUP BY ts - ts % 86400, engine;
""",
    ),
    (
        "0004_attribution",
        # Whose tokens (docs/attribution.md): credited per second, hour and UTC day, like the
        # counts; a file written before has none (its requests read as not attributed).
        """
CREATE TABLE attr_dims (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL,
  adapter TEXT NOT NULL,
  user TEXT NOT NULL,
  tenant TEXT NOT NULL,
  reason TEXT NOT NULL,
  UNIQUE (key, adapter, user, tenant, reason)
);
"""
        + "".join(
            f"""
CREATE TABLE {table} (
  ts INTEGER NOT NULL,
  dim INTEGER NOT NULL,
  {", ".join(f"{c} INTEGER NOT NULL DEFAULT 0" for c in ATTR_COLUMNS)},
  PRIMARY KEY (ts, dim)
) WITHOUT ROWID;
"""
            for table in ATTR_TABLES
        )
        + """
CREATE TABLE attr_folded (
  ts INTEGER NOT NULL,
  kind TEXT NOT NULL,
  folded INTEGER NOT NULL,
  PRIMARY KEY (ts, kind)
) WITHOUT ROWID;
""",
    ),
)


def migrations(figs: Sequence[figures.Figure] = figures.FIGURES) -> tuple[tuple[str, str], ...]:
    """Every schema step, in order: the ones written out, then for each later ``since`` of the
    figures (in their order) the migration that adds its figures' columns (``add_columns_ddl``),
    so a new figure needs no step written here."""
    written = {name for name, _ddl in _WRITTEN}
    later: dict[str, None] = {}
    for f in figs:
        if f.since != _WRITTEN[0][0]:
            if f.since in written:
                raise ValueError(
                    f"{f.name}: its column needs a migration of its own, not {f.since}"
                )
            later[f.since] = None
    return (*_WRITTEN, *((name, add_columns_ddl(name, figs)) for name in later))


MIGRATIONS: tuple[tuple[str, str], ...] = migrations()


def apply_migrations(
    conn: sqlite3.Connection,
    now_ts: float,
    steps: Sequence[tuple[str, str]] = MIGRATIONS,
) -> list[str]:
    """Apply the schema steps (``MIGRATIONS``) this file lacks, each in its own transaction."""
    conn.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_ts REAL)")
    done = {row[0] for row in conn.execute("SELECT name FROM migrations")}
    applied = []
    for name, ddl in steps:
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
