"""The SQL the read side runs on a ledger: its facts (meta, spans, fault seconds, first and last
rows) and its sums per DP engine with the checks a reader judges them by. Returns rows as
stored, named by figure (``figures.py``); ``read/values.py`` decides what counts. Standard
library only.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vllm_ledger import figures


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


@dataclass(frozen=True)
class SumRow:
    """One ``sum_by_engine`` group, by name, as stored: the sums and, beside them, what the
    reader judges the group's rows by before it adds the sums (``read/values.py``)."""

    engine: Any
    sums: dict[str, Any]  # by figure name (``figures.Figure.name``)
    non_integer: Any  # whether a value of a row is not an integer
    lowest: Any  # the smallest value of a row
    # The largest value of a row, per group of ``figures.limits`` (unit, bound, figures).
    most: tuple[tuple[figures.Unit, int, Any], ...]
    # Whether a row holds more of a part than of its whole, per ``figures.parts``.
    over: tuple[tuple[figures.Figure, figures.Figure, Any], ...]


def checks_sql(figs: Sequence[figures.Figure] = figures.FIGURES) -> tuple[str, ...]:
    """The checks computed beside each group's sums, in ``SumRow``'s order: any value that is
    not an integer, the smallest value, the largest of each unit's figures (``figures.limits``)
    and whether a part exceeds its whole in a row (``figures.parts``)."""
    cols = figures.columns(figs)
    return (
        "max(" + " OR ".join(f"typeof({c}) != 'integer'" for c in cols) + ")",
        f"min(min({', '.join(cols)}))",
        *(_most_sql(fs) for _unit, _most, fs in figures.limits(figs)),
        *(f"max({part.column} > {whole.column})" for part, whole in figures.parts(figs)),
    )


def _most_sql(figs: Sequence[figures.Figure]) -> str:
    """The largest value of these figures' columns in any row (``max`` of one column alone:
    SQLite takes ``max(max(x))`` for a nested aggregate)."""
    if len(figs) == 1:
        return f"max({figs[0].column})"
    return f"max(max({', '.join(f.column for f in figs)}))"


def sum_query(table: str, figs: Sequence[figures.Figure] = figures.FIGURES) -> str:
    sums = ", ".join(f"sum({c})" for c in figures.columns(figs))
    return (
        f"SELECT engine, {sums}, {', '.join(checks_sql(figs))} FROM {table}"
        " WHERE ts >= ? AND ts < ? GROUP BY engine"
    )


def sum_row(row: Sequence[Any], figs: Sequence[figures.Figure] = figures.FIGURES) -> SumRow:
    """A ``sum_query`` row by name."""
    names, limits, parts = LAYOUT if figs is figures.FIGURES else _layout(tuple(figs))
    n = len(names)
    checks = row[1 + n :]
    most = checks[2 : 2 + len(limits)]
    over = checks[2 + len(limits) :]
    return SumRow(
        engine=row[0],
        sums=dict(zip(names, row[1 : 1 + n], strict=True)),
        non_integer=checks[0],
        lowest=checks[1],
        most=tuple((u, m, v) for (u, m, _fs), v in zip(limits, most, strict=True)),
        over=tuple((p, w, v) for (p, w), v in zip(parts, over, strict=True)),
    )


@functools.lru_cache(maxsize=8)
def _layout(
    figs: tuple[figures.Figure, ...],
) -> tuple[
    tuple[str, ...],
    tuple[tuple[figures.Unit, int, tuple[figures.Figure, ...]], ...],
    tuple[tuple[figures.Figure, figures.Figure], ...],
]:
    return figures.names(figs), figures.limits(figs), figures.parts(figs)


_SUM_QUERIES = {table: sum_query(table) for table in ("buckets", "hourly", "daily")}


def sum_by_engine(
    conn: sqlite3.Connection, table: str, start_ts: int, end_ts: int
) -> list[tuple[Any, ...]]:
    """``(engine, *SUM_COLUMNS, *checks)`` rows over ``[start_ts, end_ts)`` of ``buckets``,
    ``hourly`` or ``daily``, as stored (``sum_row`` names them): the checks (``checks_sql``) are
    for the reader to judge each group before it adds the sums."""
    return conn.execute(_SUM_QUERIES[table], (start_ts, end_ts)).fetchall()


# The layout of the figures every reader uses, found once (a read judges thousands of rows):
# their names, the bounds by unit and the parts with their wholes, in ``checks_sql``'s order.
LAYOUT = _layout(figures.FIGURES)


def _rollup_sql(table: str, parts: str, unit: int, figs: Sequence[figures.Figure]) -> str:
    """Rows of ``table`` (one period of ``unit`` seconds per engine) whose sums differ from the
    sums of ``parts`` over the same period, from ``:since`` on, and periods ``parts`` has rows
    for that ``table`` lacks: ``(ts, engine, *stored, *summed)``, stored NULL where missing."""
    cols = figures.columns(figs)
    summed = ", ".join(f"sum({c}) AS {c}" for c in cols)
    stored = ", ".join(f"r.{c}" for c in cols)
    from_parts = ", ".join(f"coalesce(p.{c}, 0)" for c in cols)
    differs = " OR ".join(f"coalesce(r.{c}, 0) != coalesce(p.{c}, 0)" for c in cols)
    nulls = ", ".join("NULL" for _c in cols)
    plain = ", ".join(f"p.{c}" for c in cols)
    return (
        f"WITH p AS (SELECT ts - ts % {unit} AS period, engine, {summed} FROM {parts}"
        " WHERE ts >= :since GROUP BY period, engine)"
        f" SELECT r.ts, r.engine, {stored}, {from_parts} FROM {table} r"
        " LEFT JOIN p ON p.period = r.ts AND p.engine = r.engine"
        f" WHERE r.ts >= :since AND ({differs})"
        f" UNION ALL SELECT p.period, p.engine, {nulls}, {plain} FROM p"
        f" WHERE NOT EXISTS (SELECT 1 FROM {table} r WHERE r.ts = p.period"
        " AND r.engine = p.engine)"
        " ORDER BY 1, 2 LIMIT :most"
    )


_ROLLUP_QUERIES = {
    "hourly": _rollup_sql("hourly", "buckets", 3600, figures.FIGURES),
    "daily": _rollup_sql("daily", "hourly", 86400, figures.FIGURES),
}


def rollup_disagreements(
    conn: sqlite3.Connection, table: str, since_ts: int, most: int
) -> list[tuple[Any, ...]]:
    """``(ts, engine, *stored, *summed)`` for each ``hourly`` (or ``daily``) row from
    ``since_ts`` on whose sums differ from its per-second (hourly) rows', and each period the
    finer rows have and the table lacks (stored NULL); at most ``most``, by time. ``since_ts``
    must be where the finer rows are still complete (a whole hour or day)."""
    return conn.execute(_ROLLUP_QUERIES[table], {"since": since_ts, "most": most}).fetchall()


def _totals_sql(table: str, parts: str, figs: Sequence[figures.Figure]) -> str:
    cols = figures.columns(figs)
    return (
        f"SELECT {', '.join(f'coalesce(sum({c}), 0)' for c in cols)} FROM {table}"
        " WHERE ts >= :since"
        f" UNION ALL SELECT {', '.join(f'coalesce(sum({c}), 0)' for c in cols)} FROM {parts}"
        " WHERE ts >= :since"
    )


_TOTALS_QUERIES = {
    "hourly": _totals_sql("hourly", "buckets", figures.FIGURES),
    "daily": _totals_sql("daily", "hourly", figures.FIGURES),
}


def rollup_totals_agree(conn: sqlite3.Connection, table: str, since_ts: int) -> bool:
    """Whether ``hourly`` (or ``daily``) from ``since_ts`` on adds up to the same totals as the
    finer rows it folds: one pass over each table, no grouping, so a read can afford it; only
    where they differ is ``rollup_disagreements`` asked which periods."""
    rollup, parts = conn.execute(_TOTALS_QUERIES[table], {"since": since_ts}).fetchall()
    return bool(rollup == parts)
