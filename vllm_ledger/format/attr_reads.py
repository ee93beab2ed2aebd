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


# The rows of a span, each with the one label asked and its reason (``by`` is one of ATTR_DIMS'
# first four, never user text): the reader sums them by that label itself, which costs less
# than SQLite's GROUP BY (a sort of every row), and judges the span's rows in one pass apart
# (``checks``). A row whose label set the file does not name comes with a NULL reason.
_CHECKS = f"{_NOT_INT}, {_LOWEST}, {_MOST}, {_OVER}"
# A span's rows judged in one pass: a value that is not an integer makes its column's sum a
# float (SQLite's sum() of anything else) or its count short (NULL); with no value negative,
# each column's total bounds every value in it, so no per-value maximum is needed.
_COUNTS = ", ".join(f"count({c})" for c in ATTR_COLUMNS)
_CHECK_QUERIES = {
    table: f"SELECT count(*), {_COUNTS}, {_LOWEST}, {_OVER}, {_SUMS} FROM {table}"
    " WHERE ts >= ? AND ts < ?"
    for table in ATTR_TABLES
}
_LABELLED_QUERIES = {
    (table, by): f"SELECT d.{by}, d.reason, {', '.join(f'a.{c}' for c in ATTR_COLUMNS)}"
    f" FROM {table} a LEFT JOIN attr_dims d ON d.id = a.dim WHERE a.ts >= ? AND a.ts < ?"
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


def checks(conn: sqlite3.Connection, table: str, start_ts: int, end_ts: int) -> tuple[Any, ...]:
    """``(non_integer, lowest, over, *ATTR_COLUMNS sums)`` of every row of ``table`` in
    ``[start_ts, end_ts)``: whether any value is not an integer, the lowest value, whether any
    row has more cached than prompt tokens, and each column's total (0 for no rows). A sum
    past 2^63 raises SQLite's integer overflow."""
    n = len(ATTR_COLUMNS)
    row = conn.execute(_CHECK_QUERIES[table], (start_ts, end_ts)).fetchone()
    rows, counts, (lowest, over), sums = row[0], row[1 : 1 + n], row[1 + n : 3 + n], row[3 + n :]
    non_int = any(c != rows for c in counts) or any(
        s is not None and type(s) is not int for s in sums
    )
    return (non_int, lowest, over, *(s or 0 for s in sums))


def labelled_rows(
    conn: sqlite3.Connection, table: str, by: str, start_ts: int, end_ts: int
) -> list[tuple[Any, ...]]:
    """``(value of by, reason, *ATTR_COLUMNS)`` of each row of ``table`` in ``[start_ts,
    end_ts)``, as stored; value and reason NULL where the file names no such label set."""
    return conn.execute(_LABELLED_QUERIES[(table, by)], (start_ts, end_ts)).fetchall()


def folded(conn: sqlite3.Connection, start_ts: int, end_ts: int) -> list[tuple[Any, ...]]:
    """``(kind, sum of folded, non_integer, lowest)`` over the hours in ``[start_ts, end_ts)``."""
    return conn.execute(
        "SELECT kind, sum(folded), max(typeof(folded) != 'integer'), min(folded)"
        " FROM attr_folded WHERE ts >= ? AND ts < ? GROUP BY kind",
        (start_ts, end_ts),
    ).fetchall()
