"""``format/reads.py``: a ledger's facts, on a fresh file and a filled one, and its sums per DP
engine with the checks a reader judges them by (rows written here by the write side's SQL, or
put in by hand where a writer never would)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vllm_ledger.figures import names as figure_names
from vllm_ledger.format.connect import open_for_write
from vllm_ledger.format.reads import Facts, read_facts, read_meta, sum_by_engine, sum_row
from vllm_ledger.format.schema import COUNT_COLUMNS
from vllm_ledger.format.writes import commit_batch, compact, write_meta

NOW = 1_764_400_000.5
HOUR = 1_764_396_000  # a whole hour
TABLES = frozenset(
    {"meta", "buckets", "hourly", "daily", "spans", "problem_seconds", "migrations"}
    | {"attr_dims", "attr_seconds", "attr_hourly", "attr_daily", "attr_folded"}  # whose tokens
)


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    c = open_for_write(tmp_path / "w0.g0.ledger.sqlite", NOW)
    yield c
    c.close()


def counts(**named: Any) -> tuple[Any, ...]:
    return tuple(named.get(c, 0) for c in COUNT_COLUMNS)


def put(conn: sqlite3.Connection, table: str, ts: int, engine: int, **named: Any) -> None:
    """A row as stored, whatever its values (a writer never stores some of these)."""
    cols = ", ".join(COUNT_COLUMNS)
    marks = ", ".join("?" * len(COUNT_COLUMNS))
    conn.execute(
        f"INSERT INTO {table} (ts, engine, {cols}) VALUES (?, ?, {marks})",
        (ts, engine, *counts(**named)),
    )


def flush(
    conn: sqlite3.Connection,
    rows: list[tuple[int, int, tuple[int, ...]]],
    span_id: int | None,
    now_ts: float,
    seq: int,
    problems: list[tuple[int, int, int, int]] | None = None,
) -> int:
    return commit_batch(
        conn,
        seconds=[(ts, e, *c) for ts, e, c in rows],
        hours=[(ts - ts % 3600, e, *c) for ts, e, c in rows],
        days=[(ts - ts % 86400, e, *c) for ts, e, c in rows],
        problems=problems or [],
        span_id=span_id,
        now_ts=now_ts,
        seq=seq,
        final=False,
    )


def named(row: tuple[Any, ...]) -> tuple[Any, dict[str, Any], tuple[Any, ...]]:
    """A ``sum_by_engine`` row as (engine, {figure name: sum}, checks) through ``sum_row``,
    the checks being (non-integer seen, lowest value, {unit: largest value},
    {(part, whole): part over whole seen})."""
    r = sum_row(row)
    most = {unit: value for unit, _bound, value in r.most}
    over = {(part.name, whole.name): value for part, whole, value in r.over}
    return r.engine, r.sums, (r.non_integer, r.lowest, most, over)


def sums(**given: Any) -> dict[str, Any]:
    """Every figure's sum, zero where not given."""
    return {name: given.get(name, 0) for name in figure_names()}


def checks(
    non_integer: Any = 0,
    lowest: Any = 0,
    tokens: Any = 0,
    requests: Any = 0,
    microseconds: Any = 0,
    cached_over_input: Any = 0,
) -> tuple[Any, ...]:
    return (
        non_integer,
        lowest,
        {"tokens": tokens, "requests": requests, "microseconds": microseconds},
        {("cached_tokens", "input_tokens"): cached_over_input},
    )


def test_a_fresh_file_has_its_tables_and_no_facts(conn: sqlite3.Connection) -> None:
    assert read_facts(conn) == Facts(TABLES, {}, [], [], None, None, None)
    assert read_meta(conn) == {}


def test_a_file_without_the_schema_has_no_facts(tmp_path: Path) -> None:
    bare = sqlite3.connect(str(tmp_path / "bare.sqlite"))
    try:
        assert read_facts(bare) == Facts(frozenset(), {}, [], [], None, None, None)
        bare.execute("CREATE TABLE other (x)")
        assert read_facts(bare) == Facts(frozenset({"other"}), {}, [], [], None, None, None)
    finally:
        bare.close()


def test_the_facts_of_a_filled_file(conn: sqlite3.Connection) -> None:
    write_meta(conn, {"run_id": "r1", "writer_rank": "0"})
    span = flush(conn, [(HOUR + 5, 0, counts(requests=1))], None, NOW, 1, [(HOUR + 5, 1, 0, 0)])
    flush(conn, [(HOUR + 3700, 1, counts(requests=2))], span, NOW + 10, 2)
    flush(conn, [], None, NOW + 100, 3, [(HOUR + 7, 0, 2, 3)])  # a second span
    facts = read_facts(conn)
    assert facts == Facts(
        tables=TABLES,
        meta={"run_id": "r1", "writer_rank": "0", "last_seq": "3"},
        spans=[(NOW, NOW + 10), (NOW + 100, NOW + 100)],
        problem_seconds=[(HOUR + 5, 1, 0, 0), (HOUR + 7, 0, 2, 3)],
        first_second_ts=HOUR + 5,
        first_hour_ts=HOUR,
        last_end_ts=float(HOUR + 3701),
    )
    assert isinstance(facts.last_end_ts, float)


def test_after_compaction_the_last_end_is_the_end_of_the_last_hour(
    conn: sqlite3.Connection,
) -> None:
    flush(
        conn,
        [(HOUR + 5, 0, counts(requests=1)), (HOUR + 3605, 0, counts(requests=1))],
        None,
        NOW,
        1,
    )
    compact(conn, HOUR + 3600)
    facts = read_facts(conn)
    assert (facts.first_second_ts, facts.first_hour_ts, facts.last_end_ts) == (
        HOUR + 3605,
        HOUR,
        float(HOUR + 3606),
    )
    assert facts.meta["first_second_ts"] == str(HOUR + 5)
    compact(conn, HOUR + 7200)
    facts = read_facts(conn)
    assert (facts.first_second_ts, facts.first_hour_ts, facts.last_end_ts) == (
        None,
        HOUR,
        float(HOUR + 7200),
    )


def test_sums_per_engine_over_a_half_open_window(conn: sqlite3.Connection) -> None:
    flush(
        conn,
        [
            (HOUR, 0, counts(prompt_tokens=100, generation_tokens=10, requests=1)),
            (HOUR + 1, 0, counts(prompt_tokens=50, cached_tokens=20, decode_seconds_micro=9)),
            (HOUR + 1, 1, counts(prompt_tokens=7, decode_tokens=3, dropped_events=5)),
            (HOUR + 2, 0, counts(prompt_tokens=1000)),  # past the window's end
        ],
        None,
        NOW,
        1,
    )
    got = sorted(named(r) for r in sum_by_engine(conn, "buckets", HOUR, HOUR + 2))
    assert got == [
        (
            0,
            sums(input_tokens=150, output_tokens=10, cached_tokens=20, requests=1, decode_us=9),
            checks(tokens=100, requests=1, microseconds=9),
        ),
        (1, sums(input_tokens=7, decode_tokens=3), checks(tokens=7)),
    ]
    assert sum_by_engine(conn, "buckets", HOUR + 3, HOUR + 10) == []
    hourly = sorted(named(r) for r in sum_by_engine(conn, "hourly", HOUR, HOUR + 3600))
    assert [(engine, s["input_tokens"]) for engine, s, _c in hourly] == [(0, 1150), (1, 7)]
    day = HOUR - HOUR % 86400
    daily = sorted(named(r) for r in sum_by_engine(conn, "daily", day, day + 86400))
    assert [(engine, s["input_tokens"]) for engine, s, _c in daily] == [(0, 1150), (1, 7)]


def test_the_checks_name_what_a_reader_refuses(conn: sqlite3.Connection) -> None:
    put(conn, "buckets", HOUR, 0, prompt_tokens=10, requests=3)
    put(conn, "buckets", HOUR + 1, 0, prompt_tokens=2.5)  # not an integer
    put(conn, "buckets", HOUR, 1, generation_tokens=-4)  # negative
    put(conn, "buckets", HOUR + 1, 1, prompt_tokens=5, cached_tokens=6)  # more cached than input
    put(conn, "buckets", HOUR, 2, requests="7")  # text that SQLite keeps as 7 (integer affinity)
    put(conn, "buckets", HOUR, 3, decode_seconds_micro="x")  # text that stays text
    rows = {r[0]: named(r) for r in sum_by_engine(conn, "buckets", HOUR, HOUR + 2)}
    assert rows[0] == (
        0,
        sums(input_tokens=12.5, requests=3),
        checks(non_integer=1, tokens=10, requests=3),
    )
    assert rows[1] == (
        1,
        sums(input_tokens=5, output_tokens=-4, cached_tokens=6),
        checks(lowest=-4, tokens=6, cached_over_input=1),
    )
    assert rows[2] == (2, sums(requests=7), checks(requests=7))
    _engine, _sums, (non_integer, _lowest, most, _over) = rows[3]
    assert non_integer == 1
    assert most["microseconds"] == "x"  # the largest "decode time" is the text, to refuse


def test_an_unknown_table_is_not_summed(conn: sqlite3.Connection) -> None:
    with pytest.raises(KeyError):
        sum_by_engine(conn, "meta", 0, 1)
