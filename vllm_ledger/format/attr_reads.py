"""The SQL the read side runs on a ledger's attribution tables (whose tokens; migration
``0004_attribution`` in ``format/schema.py``): the labels, the credited sums per label over a
span, the names folded past the bound. Rows as stored, with the checks a reader judges them by
(``read/attribution.py`` decides what counts). Standard library only.
"""

from __future__ import annotations

import json
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
# than SQLite's GROUP BY (a sort of every row), and judges them as they came, a column at a
# time (``read/attribution.py``), which costs less than a pass of SQL over them apart. A row
# whose label set the file does not name comes with a NULL reason.
_LABELLED_QUERIES = {
    (table, by): f"SELECT d.{by}, d.reason, {', '.join(f'a.{c}' for c in ATTR_COLUMNS)}"
    f" FROM {table} a LEFT JOIN attr_dims d ON d.id = a.dim WHERE a.ts >= ? AND a.ts < ?"
    for table in ATTR_TABLES
    for by in ATTR_DIMS[:4]
}


# The same rows a column at a time: SQLite gathers each column of a span into one JSON array in
# one pass (every array in the same order, the rows'), and Python's JSON reader makes each a list
# in C, which costs about a third less than a tuple per row through the sqlite3 module.
_LABELLED_COLUMNS = {
    (table, by): "SELECT "
    + ", ".join(
        f"json_group_array({c})" for c in (f"d.{by}", "d.reason", *(f"a.{c}" for c in ATTR_COLUMNS))
    )
    + f" FROM {table} a LEFT JOIN attr_dims d ON d.id = a.dim WHERE a.ts >= ? AND a.ts < ?"
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


def labelled_rows(
    conn: sqlite3.Connection, table: str, by: str, start_ts: int, end_ts: int
) -> list[tuple[Any, ...]]:
    """``(value of by, reason, *ATTR_COLUMNS)`` of each row of ``table`` in ``[start_ts,
    end_ts)``, as stored; value and reason NULL where the file names no such label set."""
    return conn.execute(_LABELLED_QUERIES[(table, by)], (start_ts, end_ts)).fetchall()


def labelled_columns(
    conn: sqlite3.Connection, table: str, by: str, start_ts: int, end_ts: int
) -> list[list[Any]] | None:
    """``labelled_rows`` a column at a time, each value as stored, or None where SQLite cannot
    give them so (``labelled_rows`` then can): no JSON functions, a value JSON cannot hold (a
    blob), a text that is not UTF-8, a real number (SQLite's JSON writes 15 digits of it)."""
    try:
        texts = conn.execute(_LABELLED_COLUMNS[(table, by)], (start_ts, end_ts)).fetchone()
        columns = [json.loads(text, parse_float=_real) for text in texts]
    except (sqlite3.OperationalError, ValueError, TypeError):
        return None
    n = len(columns[0]) if type(columns[0]) is list else -1
    return columns if all(type(c) is list and len(c) == n for c in columns) else None


def _real(text: str) -> float:
    raise ValueError(f"a real number ({text[:20]}), not as stored")


def folded(conn: sqlite3.Connection, start_ts: int, end_ts: int) -> list[tuple[Any, ...]]:
    """``(kind, sum of folded, non_integer, lowest)`` over the hours in ``[start_ts, end_ts)``."""
    return conn.execute(
        "SELECT kind, sum(folded), max(typeof(folded) != 'integer'), min(folded)"
        " FROM attr_folded WHERE ts >= ? AND ts < ? GROUP BY kind",
        (start_ts, end_ts),
    ).fetchall()
