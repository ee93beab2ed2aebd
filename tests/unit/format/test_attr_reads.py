"""The SQL the read side runs on the attribution tables, on a real ledger written by the
Recorder: label sets, sums per label set, rows by one label and the same a column at a time,
folds; and the columns on hostile values: the rows as stored, value for value and type for type,
or None where SQLite cannot give them so (the rows are read then)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.credited_ledgers import Call, write_credited_ledger
from vllm_ledger.format import attr_reads
from vllm_ledger.format.schema import ATTR_COLUMNS, ATTR_DIMS
from vllm_ledger.read.discovery import discover_paths

T = 1_800_000_000  # on the hour
DAY0 = T - T % 86400


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    calls = [
        Call(T + 1, key="k1", user="alice", prompt=10, gen=2, cached=4),
        Call(T + 12, key="k2", user="bob", prompt=5, gen=1),
    ]
    write_credited_ledger(tmp_path, "run-a", start_ts=T, end_ts=T + 20, calls=calls)
    (path,) = discover_paths([tmp_path])
    return path


def _tables(conn: sqlite3.Connection) -> frozenset[str]:
    return frozenset(r[0] for r in conn.execute("SELECT name FROM sqlite_master"))


def test_a_file_has_attribution_only_with_every_table(ledger: Path) -> None:
    with sqlite3.connect(ledger) as conn:
        tables = _tables(conn)
    assert attr_reads.has_attribution(tables)
    assert not attr_reads.has_attribution(tables - {"attr_folded"})
    assert not attr_reads.has_attribution(frozenset({"buckets", "hourly"}))


def test_label_sets_and_their_sums_per_table(ledger: Path) -> None:
    with sqlite3.connect(ledger) as conn:
        assert attr_reads.dims(conn) == [
            (1, "k1", "", "alice", "", ""),
            (2, "k2", "", "bob", "", ""),
        ]
        # (dim, prompt, generation, cached, requests, events, non_integer, lowest, most, over)
        expected = [(1, 10, 2, 4, 1, 0, 0, 0, 10, 0), (2, 5, 1, 0, 1, 0, 0, 0, 5, 0)]
        assert attr_reads.sums(conn, "attr_seconds", T, T + 20) == expected
        assert attr_reads.sums(conn, "attr_hourly", T, T + 3600) == expected
        assert attr_reads.sums(conn, "attr_daily", DAY0, DAY0 + 86400) == expected
        assert attr_reads.sums(conn, "attr_seconds", T + 10, T + 20) == expected[1:]
        assert attr_reads.sums(conn, "attr_seconds", T + 20, T + 30) == []


def test_rows_by_one_label_as_stored(ledger: Path) -> None:
    with sqlite3.connect(ledger) as conn:
        assert attr_reads.labelled_rows(conn, "attr_seconds", "user", T, T + 20) == [
            ("alice", "", 10, 2, 4, 1, 0),
            ("bob", "", 5, 1, 0, 1, 0),
        ]
        assert attr_reads.labelled_rows(conn, "attr_hourly", "key", T, T + 3600) == [
            ("k1", "", 10, 2, 4, 1, 0),
            ("k2", "", 5, 1, 0, 1, 0),
        ]
        columns = attr_reads.labelled_columns(conn, "attr_hourly", "key", T, T + 3600)
        assert columns is not None
        assert list(zip(*columns, strict=True)) == [
            ("k1", "", 10, 2, 4, 1, 0),
            ("k2", "", 5, 1, 0, 1, 0),
        ]
        conn.execute("DELETE FROM attr_dims WHERE id = 2")
        rows = attr_reads.labelled_rows(conn, "attr_seconds", "tenant", T + 10, T + 20)
        assert rows == [(None, None, 5, 1, 0, 1, 0)]  # a label set the file does not name
        columns = attr_reads.labelled_columns(conn, "attr_seconds", "tenant", T + 10, T + 20)
        assert columns is not None and list(zip(*columns, strict=True)) == rows


def test_folded_names_per_kind_over_the_hours(ledger: Path) -> None:
    with sqlite3.connect(ledger) as conn:
        assert attr_reads.folded(conn, T, T + 3600) == []
        conn.executemany(
            "INSERT INTO attr_folded (ts, kind, folded) VALUES (?, ?, ?)",
            [(T, "user", 3), (T + 3600, "user", 4), (T, "key", 2), (T + 7200, "key", 9)],
        )
        assert sorted(attr_reads.folded(conn, T, T + 7200)) == [
            ("key", 2, 0, 2),
            ("user", 7, 0, 3),
        ]


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


def _hostile(rows: list[tuple[Any, ...]], dims: list[tuple[Any, Any]]) -> sqlite3.Connection:
    """A file with the attribution tables, no type or NULL constraint on any column."""
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE TABLE attr_dims (id INTEGER PRIMARY KEY, {', '.join(ATTR_DIMS)})")
    conn.execute(f"CREATE TABLE attr_hourly (ts, dim, {', '.join(ATTR_COLUMNS)})")
    for i, (user, reason) in enumerate(dims):
        conn.execute("INSERT INTO attr_dims VALUES (?, '', '', ?, '', ?)", (i, user, reason))
    for i, (dim, *counts) in enumerate(rows):
        conn.execute("INSERT INTO attr_hourly VALUES (?, ?, ?, ?, ?, ?, ?)", (i, dim, *counts))
    return conn


@given(st.lists(_ROW, max_size=8), st.lists(_DIM, max_size=4))
def test_columns_are_the_rows_as_stored_or_none(
    rows: list[tuple[Any, ...]], dims: list[tuple[Any, Any]]
) -> None:
    conn = _hostile(rows, dims)
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
    conn = _hostile([(0, value, 1, 0, 1, 0)], [("alice", "")])
    got = attr_reads.labelled_columns(conn, "attr_hourly", "user", 0, 100)
    assert (got is not None) is columns
    if got is not None:
        assert list(zip(*got, strict=True)) == attr_reads.labelled_rows(
            conn, "attr_hourly", "user", 0, 100
        )


def test_an_empty_span_is_empty_columns() -> None:
    conn = _hostile([(0, 1, 1, 0, 1, 0)], [("alice", "")])
    assert attr_reads.labelled_columns(conn, "attr_hourly", "user", 50, 100) == [[]] * 7
