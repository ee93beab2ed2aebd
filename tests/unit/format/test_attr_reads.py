"""The SQL the read side runs on attribution tables: a span's labelled rows a column at a time
are the rows as stored, value for value and type for type, or None where SQLite cannot give
them so (the rows are read then)."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_ledger.format import attr_reads
from vllm_ledger.format.schema import ATTR_COLUMNS, ATTR_DIMS

# What a hostile file may hold where counts and labels belong: any SQLite value.
_ANY = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=6),
    st.binary(max_size=3),
    st.none(),
)
_ROW = st.tuples(st.integers(0, 4), *[st.one_of(st.integers(0, 99), _ANY)] * len(ATTR_COLUMNS))
_DIM = st.tuples(st.one_of(st.text(max_size=6), _ANY), st.sampled_from(["", "aborted", "x"]))


def _file(rows: list[tuple[Any, ...]], dims: list[tuple[Any, Any]]) -> sqlite3.Connection:
    """A file with the attribution tables, no type or NULL constraint on any column."""
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE TABLE attr_dims (id INTEGER PRIMARY KEY, {', '.join(ATTR_DIMS)})")
    conn.execute(f"CREATE TABLE attr_hourly (ts, dim, {', '.join(ATTR_COLUMNS)})")
    for i, (user, reason) in enumerate(dims):
        conn.execute("INSERT INTO attr_dims VALUES (?, '', '', ?, '', ?)", (i, user, reason))
    for i, (dim, *counts) in enumerate(rows):
        conn.execute("INSERT INTO attr_hourly VALUES (?, ?, ?, ?, ?, ?, ?)", (i, dim, *counts))
    return conn


@settings(max_examples=300, deadline=None)
@given(st.lists(_ROW, max_size=8), st.lists(_DIM, max_size=4))
def test_columns_are_the_rows_as_stored_or_none(
    rows: list[tuple[Any, ...]], dims: list[tuple[Any, Any]]
) -> None:
    conn = _file(rows, dims)
    got = attr_reads.labelled_columns(conn, "attr_hourly", "user", 0, 100)
    try:
        want = attr_reads.labelled_rows(conn, "attr_hourly", "user", 0, 100)
    except sqlite3.OperationalError:  # a text that is not UTF-8: the rows fail as well
        assert got is None
        return
    if got is None:
        return  # a blob, a real number: the rows answer
    assert [tuple(row) for row in zip(*got, strict=True)] == want
    assert [[type(v) for v in row] for row in zip(*got, strict=True)] == [
        [type(v) for v in row] for row in want
    ]


@pytest.mark.parametrize(
    ("value", "columns"),
    [
        (7, True),
        ('a\x00b \u2028 "q\\ \x01', True),  # escaped in JSON, read back as stored
        (None, True),
        (b"\x00", False),  # JSON cannot hold a blob
        (2.5, False),  # SQLite's JSON writes 15 digits of a real number
        (float("inf"), False),
    ],
)
def test_what_json_cannot_carry_is_left_to_the_rows(value: Any, columns: bool) -> None:
    conn = _file([(0, value, 1, 0, 1, 0)], [("alice", "")])
    got = attr_reads.labelled_columns(conn, "attr_hourly", "user", 0, 100)
    assert (got is not None) is columns
    if got is not None:
        assert list(zip(*got, strict=True)) == attr_reads.labelled_rows(
            conn, "attr_hourly", "user", 0, 100
        )


def test_an_empty_span_is_empty_columns() -> None:
    conn = _file([(0, 1, 1, 0, 1, 0)], [("alice", "")])
    assert attr_reads.labelled_columns(conn, "attr_hourly", "user", 50, 100) == [[]] * 7
