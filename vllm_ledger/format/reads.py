"""The SQL the read side runs on a ledger: its facts (meta, spans, fault seconds, first and last
rows) and its sums per DP engine with the checks a reader judges them by. Returns rows as
stored; ``read/values.py`` decides what counts. Standard library only.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from vllm_ledger.format.schema import SUM_COLUMNS


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


@dataclass(frozen=True)
class Facts:
    """What a reader needs of one ledger besides its sums, as stored (not yet validated)."""

    tables: frozenset[str]
    meta: dict[str, str]
    spans: list[tuple[float, float]]
    problem_seconds: list[tuple[int, int, int, int]]  # (second, dropped, rejected, lost)
    first_second_ts: int | None  # min(ts) of the per-second rows
    first_hour_ts: int | None  # min(ts) of the hourly rows
    last_end_ts: float | None  # end of the last second or hour holding counts


def read_facts(conn: sqlite3.Connection) -> Facts:
    """Everything but the sums, on the connection's current read transaction."""
    tables = frozenset(
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
    )
    if "meta" not in tables:
        return Facts(tables, {}, [], [], None, None, None)
    meta = read_meta(conn)
    spans = [
        (s, e) for s, e in conn.execute("SELECT start_ts, end_ts FROM spans ORDER BY start_ts")
    ]
    problems: list[tuple[int, int, int, int]] = []
    if "problem_seconds" in tables:
        problems = [
            (r[0], r[1], r[2], r[3])
            for r in conn.execute(
                "SELECT ts, dropped_events, rejected_events, lost_events FROM problem_seconds"
            )
        ]
    # One aggregate per statement: SQLite answers a lone min() or max() from the primary key's
    # end, but scans the whole table for min() and max() together.
    first_s, last_s, first_h, last_h = (
        conn.execute(q).fetchone()[0]
        for q in (
            "SELECT min(ts) FROM buckets",
            "SELECT max(ts) FROM buckets",
            "SELECT min(ts) FROM hourly",
            "SELECT max(ts) FROM hourly",
        )
    )
    # Compaction deletes a prefix of the per-second rows, so where any remain the last one is
    # the last counted second; otherwise only its hour is known.
    last_end = last_s + 1 if last_s is not None else last_h + 3600 if last_h is not None else None
    return Facts(
        tables,
        meta,
        spans,
        problems,
        first_s,
        first_h,
        None if last_end is None else float(last_end),
    )


_SUMS = ", ".join(f"sum({c})" for c in SUM_COLUMNS)


_TOKEN_COLUMNS = ("prompt_tokens", "generation_tokens", "cached_tokens", "decode_tokens")


# Beside each group's sums, what the reader needs to refuse rows it must not add: any value
# that is not an integer, the smallest value, the largest token count, the largest request
# count and the largest decode time of a row, and whether a row has more cached than input.
_CHECKS = ", ".join(
    [
        "max(" + " OR ".join(f"typeof({c}) != 'integer'" for c in SUM_COLUMNS) + ")",
        f"min(min({', '.join(SUM_COLUMNS)}))",
        f"max(max({', '.join(_TOKEN_COLUMNS)}))",
        "max(requests)",
        "max(decode_seconds_micro)",
        "max(cached_tokens > prompt_tokens)",
    ]
)


_SUM_QUERIES = {
    table: f"SELECT engine, {_SUMS}, {_CHECKS} FROM {table}"
    " WHERE ts >= ? AND ts < ? GROUP BY engine"
    for table in ("buckets", "hourly", "daily")
}


def sum_by_engine(
    conn: sqlite3.Connection, table: str, start_ts: int, end_ts: int
) -> list[tuple[Any, ...]]:
    """``(engine, *SUM_COLUMNS, *checks)`` rows over ``[start_ts, end_ts)`` of ``buckets``,
    ``hourly`` or ``daily``, as stored: the checks (non-integer seen, lowest value, most tokens,
    most requests, most decode microseconds, cached over input seen) are for the reader to
    judge each group before it adds the sums."""
    return conn.execute(_SUM_QUERIES[table], (start_ts, end_ts)).fetchall()
