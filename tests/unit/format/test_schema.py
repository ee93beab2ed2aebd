"""``format/schema.py``: the named migrations, applied once each and recorded in the file, and
the one write transaction (committed whole or rolled back whole)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from vllm_ledger.format.schema import COUNT_COLUMNS, MIGRATIONS, apply_migrations, transaction

NOW = 1_764_400_000.25
NAMES = ["0001_initial", "0002_problem_seconds", "0003_daily"]


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    c = sqlite3.connect(str(tmp_path / "w0.g0.ledger.sqlite"), isolation_level=None)
    yield c
    c.close()


def tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_a_new_file_gets_every_migration_in_order_each_recorded(
    conn: sqlite3.Connection,
) -> None:
    every = [name for name, _ddl in MIGRATIONS]
    assert every[:3] == NAMES  # the first steps never change; later ones only add
    assert apply_migrations(conn, NOW) == every
    assert conn.execute("SELECT name, applied_ts FROM migrations ORDER BY name").fetchall() == [
        (name, NOW) for name in every
    ]
    assert tables(conn) == {
        "meta",
        "buckets",
        "hourly",
        "daily",
        "spans",
        "problem_seconds",
        "migrations",
        "attr_dims",
        "attr_seconds",
        "attr_hourly",
        "attr_daily",
        "attr_folded",
    }


def test_a_second_run_applies_nothing_and_keeps_the_first_record(
    conn: sqlite3.Connection,
) -> None:
    apply_migrations(conn, NOW)
    assert apply_migrations(conn, NOW + 100) == []
    assert conn.execute("SELECT count(*), max(applied_ts) FROM migrations").fetchone() == (
        len(MIGRATIONS),
        NOW,
    )


def test_the_count_tables_hold_the_count_columns_after_their_key(
    conn: sqlite3.Connection,
) -> None:
    apply_migrations(conn, NOW)
    for table in ("buckets", "hourly", "daily"):
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        # a column a later migration added comes last in the table, wherever it is counted
        assert columns[:2] == ["ts", "engine"]
        assert sorted(columns[2:]) == sorted(COUNT_COLUMNS)
    assert [r[1] for r in conn.execute("PRAGMA table_info(problem_seconds)")] == [
        "ts",
        "dropped_events",
        "rejected_events",
        "lost_events",
    ]


def test_only_the_missing_step_runs_and_daily_is_back_filled_from_hourly(
    conn: sqlite3.Connection,
) -> None:
    apply_migrations(conn, NOW)
    # A file written before the daily table existed: its hourly rows, no daily step.
    conn.execute("DROP TABLE daily")
    conn.execute("DELETE FROM migrations WHERE name = '0003_daily'")
    cols = ", ".join(COUNT_COLUMNS)
    marks = ", ".join("?" * len(COUNT_COLUMNS))
    day = 1_764_374_400  # a UTC midnight
    rows = [
        (day + 3600, 0, 10, 1),
        (day + 7200, 0, 5, 2),
        (day + 86400, 0, 7, 3),
        (day + 3600, 1, 4, 4),
    ]
    for ts, engine, prompt, requests in rows:
        values = dict.fromkeys(COUNT_COLUMNS, 0) | {"prompt_tokens": prompt, "requests": requests}
        conn.execute(
            f"INSERT INTO hourly (ts, engine, {cols}) VALUES (?, ?, {marks})",
            (ts, engine, *values.values()),
        )
    assert apply_migrations(conn, NOW + 5) == ["0003_daily"]
    got = conn.execute(
        "SELECT ts, engine, prompt_tokens, requests FROM daily ORDER BY ts, engine"
    ).fetchall()
    assert got == [(day, 0, 15, 3), (day, 1, 4, 4), (day + 86400, 0, 7, 3)]
    assert conn.execute(
        "SELECT applied_ts FROM migrations WHERE name = '0003_daily'"
    ).fetchone() == (NOW + 5,)


def test_a_transaction_commits_what_its_block_wrote(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE t (x INTEGER)")
    with transaction(conn) as same:
        assert same is conn and conn.in_transaction
        conn.execute("INSERT INTO t VALUES (1)")
    assert not conn.in_transaction
    assert conn.execute("SELECT x FROM t").fetchall() == [(1,)]


def test_a_failure_in_a_transaction_rolls_all_of_it_back_and_is_raised(
    conn: sqlite3.Connection,
) -> None:
    conn.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
    with pytest.raises(sqlite3.IntegrityError):
        with transaction(conn):
            conn.execute("INSERT INTO t VALUES (1)")
            conn.execute("INSERT INTO t VALUES (1)")
    assert not conn.in_transaction
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)
    with pytest.raises(KeyboardInterrupt):  # not only errors: anything leaving the block
        with transaction(conn):
            conn.execute("INSERT INTO t VALUES (2)")
            raise KeyboardInterrupt
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)


def test_a_failed_migration_leaves_no_table_and_no_record(
    conn: sqlite3.Connection,
) -> None:
    conn.execute("CREATE TABLE spans (x INTEGER)")  # in the way of 0001_initial's spans
    with pytest.raises(sqlite3.OperationalError, match="table spans already exists"):
        apply_migrations(conn, NOW)
    assert tables(conn) == {"spans", "migrations"}
    assert conn.execute("SELECT count(*) FROM migrations").fetchone() == (0,)
