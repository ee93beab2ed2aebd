"""``format/writes.py``: the recorder's SQL on a real ledger file: meta, one flush as one
transaction (counts added to what is there, a span started or extended, ``last_seq``, the
clean close) and compaction of the per-second rows."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from vllm_ledger.format.connect import open_for_write
from vllm_ledger.format.schema import COUNT_COLUMNS
from vllm_ledger.format.writes import commit_batch, compact, write_meta

NOW = 1_764_400_000.5
SECOND = 1_764_399_999
HOUR = SECOND - SECOND % 3600
DAY = SECOND - SECOND % 86400


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    c = open_for_write(tmp_path / "w0.g0.ledger.sqlite", NOW)
    yield c
    c.close()


def counts(**named: int) -> tuple[int, ...]:
    """A row's counts in ``COUNT_COLUMNS`` order, zero where not named."""
    unknown = set(named) - set(COUNT_COLUMNS)
    assert not unknown, unknown
    return tuple(named.get(c, 0) for c in COUNT_COLUMNS)


def flush(
    conn: sqlite3.Connection,
    rows: list[tuple[int, int, tuple[int, ...]]],
    *,
    span_id: int | None,
    now_ts: float,
    seq: int,
    final: bool = False,
    problems: list[tuple[int, int, int, int]] | None = None,
) -> int:
    """``commit_batch`` with each (second, engine, counts) row given as its hour and day too."""
    return commit_batch(
        conn,
        seconds=[(ts, engine, *c) for ts, engine, c in rows],
        hours=[(ts - ts % 3600, engine, *c) for ts, engine, c in rows],
        days=[(ts - ts % 86400, engine, *c) for ts, engine, c in rows],
        problems=problems or [],
        span_id=span_id,
        now_ts=now_ts,
        seq=seq,
        final=final,
    )


def stored(conn: sqlite3.Connection, table: str) -> list[tuple[int, ...]]:
    cols = ", ".join(COUNT_COLUMNS)
    return conn.execute(f"SELECT ts, engine, {cols} FROM {table} ORDER BY ts, engine").fetchall()


def meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


def test_write_meta_sets_and_replaces_keys(conn: sqlite3.Connection) -> None:
    write_meta(conn, {"run_id": "r1", "writer_rank": "0"})
    write_meta(conn, {"run_id": "r2"})
    assert meta(conn) == {"run_id": "r2", "writer_rank": "0"}
    assert not conn.in_transaction


def test_the_first_flush_starts_a_span_and_writes_every_table(conn: sqlite3.Connection) -> None:
    c = counts(prompt_tokens=100, generation_tokens=20, requests=1, decode_seconds_micro=7)
    span = flush(conn, [(SECOND, 0, c)], span_id=None, now_ts=NOW, seq=1)
    assert span == 1
    assert stored(conn, "buckets") == [(SECOND, 0, *c)]
    assert stored(conn, "hourly") == [(HOUR, 0, *c)]
    assert stored(conn, "daily") == [(DAY, 0, *c)]
    assert conn.execute("SELECT id, start_ts, end_ts, last_seq FROM spans").fetchall() == [
        (1, NOW, NOW, 1)
    ]
    assert meta(conn) == {"last_seq": "1"}


def test_a_later_flush_adds_to_the_rows_and_extends_its_span(conn: sqlite3.Connection) -> None:
    span = flush(
        conn, [(SECOND, 0, counts(prompt_tokens=100, requests=1))], span_id=None, now_ts=NOW, seq=1
    )
    again = flush(
        conn,
        [
            (SECOND, 0, counts(prompt_tokens=5, cached_tokens=3)),
            (SECOND + 1, 1, counts(requests=2)),
        ],
        span_id=span,
        now_ts=NOW + 2,
        seq=2,
    )
    assert again == span
    assert stored(conn, "buckets") == [
        (SECOND, 0, *counts(prompt_tokens=105, cached_tokens=3, requests=1)),
        (SECOND + 1, 1, *counts(requests=2)),
    ]
    assert stored(conn, "hourly") == [
        (HOUR, 0, *counts(prompt_tokens=105, cached_tokens=3, requests=1)),
        (HOUR, 1, *counts(requests=2)),
    ]
    assert conn.execute("SELECT id, start_ts, end_ts, last_seq FROM spans").fetchall() == [
        (span, NOW, NOW + 2, 2)
    ]
    assert meta(conn) == {"last_seq": "2"}


def test_a_flush_without_a_span_starts_a_second_one(conn: sqlite3.Connection) -> None:
    first = flush(conn, [], span_id=None, now_ts=NOW, seq=1)
    second = flush(conn, [], span_id=None, now_ts=NOW + 100, seq=2)
    assert (first, second) == (1, 2)
    assert conn.execute(
        "SELECT id, start_ts, end_ts, last_seq FROM spans ORDER BY id"
    ).fetchall() == [
        (1, NOW, NOW, 1),
        (2, NOW + 100, NOW + 100, 2),
    ]
    assert stored(conn, "buckets") == []


def test_fault_seconds_add_up_per_second(conn: sqlite3.Connection) -> None:
    span = flush(conn, [], span_id=None, now_ts=NOW, seq=1, problems=[(SECOND, 1, 0, 0)])
    flush(
        conn,
        [],
        span_id=span,
        now_ts=NOW + 1,
        seq=2,
        problems=[(SECOND, 2, 3, 4), (SECOND + 1, 0, 0, 9)],
    )
    assert conn.execute("SELECT * FROM problem_seconds ORDER BY ts").fetchall() == [
        (SECOND, 3, 3, 4),
        (SECOND + 1, 0, 0, 9),
    ]


def test_only_the_final_flush_records_the_clean_close(conn: sqlite3.Connection) -> None:
    span = flush(conn, [], span_id=None, now_ts=NOW, seq=1)
    assert "clean_close_ts" not in meta(conn)
    flush(conn, [], span_id=span, now_ts=NOW + 0.125, seq=2, final=True)
    assert meta(conn) == {"last_seq": "2", "clean_close_ts": repr(NOW + 0.125)}
    assert float(meta(conn)["clean_close_ts"]) == NOW + 0.125


def test_a_flush_that_fails_inside_leaves_nothing(conn: sqlite3.Connection) -> None:
    span = flush(conn, [(SECOND, 0, counts(requests=1))], span_id=None, now_ts=NOW, seq=1)
    before = {t: stored(conn, t) for t in ("buckets", "hourly", "daily")}
    with pytest.raises(sqlite3.ProgrammingError):
        commit_batch(
            conn,
            seconds=[(SECOND, 0, *counts(requests=5))],
            hours=[(HOUR, 0, *counts(requests=5))],
            days=[(DAY, 0, *counts(requests=5))],
            problems=[(SECOND, 1, 2)],  # type: ignore[list-item]  # one value short: fails last
            span_id=span,
            now_ts=NOW + 1,
            seq=2,
            final=True,
        )
    assert not conn.in_transaction
    assert {t: stored(conn, t) for t in ("buckets", "hourly", "daily")} == before
    assert conn.execute("SELECT count(*) FROM problem_seconds").fetchone() == (0,)
    assert conn.execute("SELECT end_ts, last_seq FROM spans").fetchall() == [(NOW, 1)]
    assert meta(conn) == {"last_seq": "1"}


def test_compact_deletes_only_seconds_before_the_horizon(conn: sqlite3.Connection) -> None:
    horizon = HOUR + 3600
    seconds = [HOUR + 10, HOUR + 3599, horizon, horizon + 5]
    span = None
    for i, ts in enumerate(seconds):
        span = flush(
            conn, [(ts, 0, counts(prompt_tokens=i + 1))], span_id=span, now_ts=NOW + i, seq=i + 1
        )
    hourly = stored(conn, "hourly")
    daily = stored(conn, "daily")
    assert compact(conn, horizon) == 2
    assert [r[0] for r in stored(conn, "buckets")] == [horizon, horizon + 5]
    assert (
        stored(conn, "hourly")
        == hourly
        == [
            (HOUR, 0, *counts(prompt_tokens=3)),
            (horizon, 0, *counts(prompt_tokens=7)),
        ]
    )
    assert stored(conn, "daily") == daily
    assert meta(conn)["first_second_ts"] == str(HOUR + 10)
    assert meta(conn)["compacted_before_ts"] == str(horizon)
    assert not conn.in_transaction


def test_a_second_compaction_with_an_older_horizon_deletes_nothing(
    conn: sqlite3.Connection,
) -> None:
    flush(
        conn,
        [
            (HOUR + 1, 0, counts(requests=1)),
            (HOUR + 2, 0, counts(requests=1)),
            (HOUR + 9, 0, counts(requests=1)),
        ],
        span_id=None,
        now_ts=NOW,
        seq=1,
    )
    assert compact(conn, HOUR + 2) == 1
    assert compact(conn, HOUR + 2) == 0
    assert compact(conn, HOUR) == 0
    assert meta(conn)["compacted_before_ts"] == str(HOUR + 2)
    assert compact(conn, HOUR + 10) == 2
    # the first second is the one seen at the first compaction, not the oldest left now
    assert meta(conn)["first_second_ts"] == str(HOUR + 1)
    assert meta(conn)["compacted_before_ts"] == str(HOUR + 10)
    assert stored(conn, "buckets") == []


def test_compacting_a_file_without_seconds_records_only_the_horizon(
    conn: sqlite3.Connection,
) -> None:
    assert compact(conn, HOUR) == 0
    assert meta(conn) == {"compacted_before_ts": str(HOUR)}


def test_compaction_gives_every_freed_page_back(conn: sqlite3.Connection) -> None:
    rows = [(HOUR - 86400 * 9 + i, 0, counts(prompt_tokens=i)) for i in range(20_000)]
    flush(conn, rows, span_id=None, now_ts=NOW, seq=1)
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    assert compact(conn, HOUR) == 20_000
    assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0
    assert conn.execute("PRAGMA page_count").fetchone()[0] < pages / 2


def test_attribution_rows_are_added_per_second_hour_and_day_and_compacted(
    conn: sqlite3.Connection,
) -> None:
    dims = ("team-a", "tiny", "alice", "", "")
    ids: dict[tuple[str, ...], int] = {}
    for seq, second in enumerate((SECOND - 1, SECOND), start=1):
        commit_batch(
            conn,
            seconds=[],
            hours=[],
            days=[],
            problems=[],
            span_id=None,
            now_ts=NOW,
            seq=seq,
            final=False,
            attribution=[(second, dims, 10, 2, 4, 1, 0)],
            folded=[(HOUR, "user", seq)],
            dim_ids=ids,
        )
    (dim,) = ids.values()
    assert conn.execute("SELECT * FROM attr_dims").fetchall() == [(dim, *dims)]
    assert conn.execute("SELECT * FROM attr_seconds ORDER BY ts").fetchall() == [
        (SECOND - 1, dim, 10, 2, 4, 1, 0),
        (SECOND, dim, 10, 2, 4, 1, 0),
    ]
    assert conn.execute("SELECT * FROM attr_hourly").fetchall() == [(HOUR, dim, 20, 4, 8, 2, 0)]
    assert conn.execute("SELECT * FROM attr_daily").fetchall() == [(DAY, dim, 20, 4, 8, 2, 0)]
    assert conn.execute("SELECT * FROM attr_folded").fetchall() == [(HOUR, "user", 2)]
    compact(conn, SECOND)
    assert conn.execute("SELECT ts FROM attr_seconds").fetchall() == [(SECOND,)]
