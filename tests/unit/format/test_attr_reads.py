"""The SQL the read side runs on the attribution tables, on a real ledger written by the
Recorder: label sets, sums per label set, the checks of a span, rows by one label, folds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.credited_ledgers import Call, write_credited_ledger
from vllm_ledger.format import attr_reads
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


def test_checks_of_a_span(ledger: Path) -> None:
    with sqlite3.connect(ledger) as conn:
        # (non_integer, lowest, over, prompt, generation, cached, requests, events)
        assert attr_reads.checks(conn, "attr_seconds", T, T + 20) == (False, 0, 0, 15, 3, 4, 2, 0)
        assert attr_reads.checks(conn, "attr_seconds", T + 20, T + 30) == (
            False, None, None, 0, 0, 0, 0, 0,
        )  # fmt: skip
        conn.execute("UPDATE attr_seconds SET cached_tokens = 11.5 WHERE dim = 1")  # over too
        conn.execute("UPDATE attr_seconds SET prompt_tokens = -1 WHERE dim = 2")
        assert attr_reads.checks(conn, "attr_seconds", T, T + 20) == (True, -1, 1, 9, 3, 11.5, 2, 0)
        conn.execute("UPDATE attr_seconds SET events = 'x' WHERE dim = 2")
        assert attr_reads.checks(conn, "attr_seconds", T, T + 20)[0] is True


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
        conn.execute("DELETE FROM attr_dims WHERE id = 2")
        rows = attr_reads.labelled_rows(conn, "attr_seconds", "tenant", T + 10, T + 20)
        assert rows == [(None, None, 5, 1, 0, 1, 0)]  # a label set the file does not name


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
