"""The SQL the read side runs on a ledger's attribution tables (whose tokens; migration
``0004_attribution`` in ``format/schema.py``): the labels, the credited sums per label over a
span, the names folded past the bound. Rows as stored, with the checks a reader judges them by
(``read/attribution.py`` decides what counts). Standard library only.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from vllm_ledger.format.schema import ATTR_COLUMNS, ATTR_DIMS, ATTR_TABLES

ATTR_TABLE_NAMES = frozenset({"attr_dims", *ATTR_TABLES, "attr_folded"})

_SUMS = ", ".join(f"sum({c})" for c in ATTR_COLUMNS)
_NOT_INT = "max(" + " OR ".join(f"typeof({c}) != 'integer'" for c in ATTR_COLUMNS) + ")"
_LOWEST = f"min(min({', '.join(ATTR_COLUMNS)}))"
_MOST = f"max(max({', '.join(ATTR_COLUMNS)}))"
_OVER = "max(cached_tokens > prompt_tokens)"
_SUM_QUERIES = {
    table: f"SELECT dim, {_SUMS}, {_NOT_INT}, {_LOWEST}, {_MOST}, {_OVER} FROM {table}"
    " WHERE ts >= ? AND ts < ? GROUP BY dim"
    for table in ATTR_TABLES
}


# Sums grouped by one label and the reason, in SQL: a view by user reads one row per user,
# whatever the other labels (``by`` is one of ATTR_DIMS' first four, never user text), with
# the checks of the rows summed, as for the counts.
_CHECKS = f"{_NOT_INT}, {_LOWEST}, {_MOST}, {_OVER}"
_BY_QUERIES = {
    (table, by): f"SELECT d.{by}, d.reason, {_SUMS}, {_CHECKS}"
    f" FROM {table} a JOIN attr_dims d ON d.id = a.dim"
    " WHERE a.ts >= ? AND a.ts < ? GROUP BY d.{by}, d.reason".format(by=by)
    for table in ATTR_TABLES
    for by in ATTR_DIMS[:4]
}


def has_attribution(tables: frozenset[str]) -> bool:
    """Whether a file has the attribution tables (a file written before them has not)."""
    return tables >= ATTR_TABLE_NAMES


def dims(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """``(id, key, adapter, user, tenant, reason)`` of every label set the file names."""
    return conn.execute(f"SELECT id, {', '.join(ATTR_DIMS)} FROM attr_dims").fetchall()


def sums(conn: sqlite3.Connection, table: str, start_ts: int, end_ts: int) -> list[tuple[Any, ...]]:
    """``(dim, *ATTR_COLUMNS sums, non_integer, lowest, most, over)`` per label set over
    ``[start_ts, end_ts)`` of ``attr_seconds``, ``attr_hourly`` or ``attr_daily``."""
    return conn.execute(_SUM_QUERIES[table], (start_ts, end_ts)).fetchall()


def sums_by(
    conn: sqlite3.Connection, table: str, by: str, start_ts: int, end_ts: int
) -> list[tuple[Any, ...]]:
    """``(value of by, reason, *ATTR_COLUMNS sums, non_integer, lowest, most, over)`` per value
    and reason over ``[start_ts, end_ts)``: the sums of every label set sharing them, and the
    checks of the rows summed."""
    return conn.execute(_BY_QUERIES[(table, by)], (start_ts, end_ts)).fetchall()


def folded(conn: sqlite3.Connection, start_ts: int, end_ts: int) -> list[tuple[Any, ...]]:
    """``(kind, sum of folded, non_integer, lowest)`` over the hours in ``[start_ts, end_ts)``."""
    return conn.execute(
        "SELECT kind, sum(folded), max(typeof(folded) != 'integer'), min(folded)"
        " FROM attr_folded WHERE ts >= ? AND ts < ? GROUP BY kind",
        (start_ts, end_ts),
    ).fetchall()
