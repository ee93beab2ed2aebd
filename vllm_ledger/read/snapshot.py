"""One ledger file as the read side sees it: its facts, read once, and its sums per window.

A ``LedgerSnapshot`` holds what ``open_ledger.open_snapshot`` read of the file in one read
transaction (identity, spans, fault seconds) and answers every window sum later asked of it
from the same commit, memoised; a file that could not be read has a status (``unreadable``,
``busy``, ``denied``, ``never_committed``, ``starting``, ``bad_values``) instead of figures.
The SQL is in ``format/reads.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

from vllm_ledger import figures
from vllm_ledger.format import connect, reads
from vllm_ledger.format.identity import InstanceInfo
from vllm_ledger.read import values
from vllm_ledger.read.windows import Window
from vllm_ledger.units import SECONDS_PER_DAY as DAY
from vllm_ledger.units import SECONDS_PER_HOUR as HOUR

FileStatus = Literal[
    "ok", "unreadable", "busy", "denied", "never_committed", "starting", "bad_values"
]


@dataclass
@figures.with_figure_fields("name")
class Sums:
    """The sums of some rows (a window, an engine, a file), one field per figure, named as
    ``figures.Figure.name`` (the report's vocabulary); ``SUM_FIELDS`` is their list. A figure
    not declared here is a field all the same (``figures.with_figure_fields``)."""

    ADDED_FIGURES: ClassVar[tuple[str, ...]] = ()  # the figures' fields not declared here

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    requests: int = 0
    decode_tokens: int = 0  # sum(max(output - 1, 0)) of finished requests
    decode_us: int = 0  # their decode time, in microseconds

    def add(self, other: Sums) -> None:
        # Field by field, not through SUM_FIELDS: a report adds thousands of these; a figure
        # not declared above by name (tests/unit/read/test_snapshot.py adds every field).
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cached_tokens += other.cached_tokens
        self.requests += other.requests
        self.decode_tokens += other.decode_tokens
        self.decode_us += other.decode_us
        for f in self.ADDED_FIGURES:
            setattr(self, f, getattr(self, f) + getattr(other, f))

    def sub(self, other: Sums) -> None:
        for f in SUM_FIELDS:
            setattr(self, f, getattr(self, f) - getattr(other, f))

    def add_sums(self, sums: Mapping[str, int | None]) -> None:
        """Add sums by figure name (a ``reads.sum_by_engine`` group's), field by field as
        ``add`` does."""
        self.input_tokens += sums["input_tokens"] or 0
        self.output_tokens += sums["output_tokens"] or 0
        self.cached_tokens += sums["cached_tokens"] or 0
        self.requests += sums["requests"] or 0
        self.decode_tokens += sums["decode_tokens"] or 0
        self.decode_us += sums["decode_us"] or 0
        for f in self.ADDED_FIGURES:
            setattr(self, f, getattr(self, f) + (sums[f] or 0))

    def by_name(self) -> dict[str, int]:
        return {f: getattr(self, f) for f in SUM_FIELDS}

    def any(self) -> bool:
        return any(getattr(self, f) for f in SUM_FIELDS)

    def copy(self) -> Sums:
        return dataclasses.replace(self)

    # The summary file (``read/summary.py``) stores sums as a list in column order: the one
    # place a figure's position means anything on the read side.
    def as_list(self) -> list[int]:
        return [getattr(self, f) for f in SUM_FIELDS]

    @classmethod
    def from_list(cls, values: Sequence[int]) -> Sums:
        return cls(**dict(zip(SUM_FIELDS, values, strict=True)))


SUM_FIELDS: tuple[str, ...] = figures.names()

SumsByEngine = dict[int, Sums]


@dataclass
class LedgerSnapshot:
    """What one ledger file says, read once; ``window_sums`` answers any window from it."""

    path: Path
    status: FileStatus
    detail: str = ""
    run_id: str = ""
    writer_rank: int = -1
    generation: int = 0
    expected_writers: int = 1
    instance: InstanceInfo = field(default_factory=InstanceInfo)
    created_ts: float | None = None
    clean_close_ts: float | None = None
    last_seq: int = 0
    spans: list[tuple[float, float]] = field(default_factory=list)
    # (second, dropped, rejected, lost)
    problem_seconds: list[tuple[int, int, int, int]] = field(default_factory=list)
    first_bucket_ts: int | None = None  # the first second holding counts
    last_end_ts: float | None = None  # the end of the last second or hour holding counts
    compacted_before_ts: int | None = None
    has_daily: bool = False  # the file has day rows (migration 0003): long windows read them
    # From the sequence marker beside the file: commits the writer made that the file lacks.
    missing_commits: int = 0
    marker_ts: float | None = None
    # Where the sums come from: an open connection, or the summary's whole-file totals.
    _connect: Callable[[], sqlite3.Connection] | None = field(default=None, repr=False)
    _totals: SumsByEngine | None = field(default=None, repr=False)
    _memo: dict[tuple[int, int], SumsByEngine] = field(default_factory=dict, repr=False)
    _parts: dict[tuple[str, int, int], SumsByEngine] = field(default_factory=dict, repr=False)
    _stamp: connect.Stamp | None = field(default=None, repr=False)  # opened immutable
    _rollups: list[RollupMismatch] | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def writer_key(self) -> tuple[str, int]:
        return (self.run_id, self.writer_rank)

    @property
    def last_proof_ts(self) -> float | None:
        """The end of the writer's last committed span: the last instant it proved alive."""
        return max((e for _, e in self.spans), default=None)

    def window_sums(self, w: Window) -> SumsByEngine:
        """Sums per DP engine over ``[w.start_ts, w.cutoff_ts)``; empty for a bad file."""
        if not self.ok:
            return {}
        start = self._effective_start(w)
        key = (start, w.cutoff_ts)
        got = self._memo.get(key)
        if got is None:
            got = self._sums(start, w.cutoff_ts)
            self._memo[key] = got
        return got

    def rollup_mismatches(self) -> list[RollupMismatch]:
        """Daily rows that disagree with the hours they add up (``rollup_mismatches`` without
        the per-second scan ``check`` makes), found once per snapshot. A snapshot answered from
        the summary of finished files (whole-file totals, no connection of its own) is not
        looked at: its file was judged when the summary recorded it, and ``check`` opens every
        file."""
        if self._rollups is None:
            if not self.ok or self._totals is not None or self._connect is None:
                self._rollups = []
            else:
                self._rollups = rollup_mismatches(
                    self._connect(), self.compacted_before_ts, self.has_daily, against_seconds=False
                )
        return self._rollups

    def forget_sums(self) -> None:
        """Drop the memoised window sums (a long stream of windows keeps memory flat)."""
        self._memo.clear()
        self._parts.clear()

    def imprecise(self, w: Window) -> bool:
        """True when an edge second of ``w`` was folded into an hour by compaction."""
        cb, first = self.compacted_before_ts, self.first_bucket_ts
        if not self.ok or cb is None or first is None:
            return False
        return edge_imprecise(cb, first, w)

    def _effective_start(self, w: Window) -> int:
        # A window that starts at or before the file's first record holds all of its start:
        # read it from 0, so whole hours answer it even where compaction dropped the seconds.
        first = self.first_bucket_ts
        return 0 if first is not None and w.start_ts <= first else w.start_ts

    def _sums(self, start: int, cutoff: int) -> SumsByEngine:
        if self._totals is not None and self.last_end_ts is not None:
            first = self.first_bucket_ts if self.first_bucket_ts is not None else math.inf
            if self.last_end_ts <= start or cutoff <= first:
                return {}
            if start <= first and self.last_end_ts <= cutoff:
                return {e: s.copy() for e, s in self._totals.items()}
        out: SumsByEngine = {}
        seconds, hours, days = window_parts(start, cutoff, daily=self.has_daily)
        for a, b in seconds:
            _add(out, self._edge(a, b))
        for a, b in hours:
            _add(out, self._part("hourly", a, b))
        if days is not None:
            _add(out, self._part("daily", *days))
        return out

    def _edge(self, a: int, b: int) -> SumsByEngine:
        """The seconds ``[a, b)`` at a window's edge, hour by hour."""
        out: SumsByEngine = {}
        hour = a - a % HOUR
        while a < b:
            end = min(b, hour + HOUR)
            _add(out, self._within_hour(hour, a, end))
            a, hour = end, hour + HOUR
        return out

    def _within_hour(self, hour: int, a: int, b: int) -> SumsByEngine:
        """The seconds ``[a, b)`` inside the hour starting at ``hour``.

        More than half an hour of seconds is read as the hour's row less the seconds of the
        hour on either side, which is exact where the hour still has its seconds (not
        compacted): the hourly row and the seconds are written in one transaction.
        """
        cb = self.compacted_before_ts
        if b - a <= HOUR // 2 or (cb is not None and hour < cb):
            return self._part("buckets", a, b)
        out = {e: v.copy() for e, v in self._part("hourly", hour, hour + HOUR).items()}
        for lo, hi in ((hour, a), (b, hour + HOUR)):
            if hi > lo:
                for e, v in self._part("buckets", lo, hi).items():
                    out.setdefault(e, Sums()).sub(v)
        return {e: v for e, v in out.items() if v.any()}

    def _part(self, table: str, a: int, b: int) -> SumsByEngine:
        """One table's sums over ``[a, b)``, memoised: windows share their edges."""
        key = (table, a, b)
        got = self._parts.get(key)
        if got is None:
            if self._connect is None:  # pragma: no cover - a snapshot made by hand
                raise RuntimeError(f"{self.path}: no connection to answer a window")
            got = {}
            try:
                rows = reads.sum_by_engine(self._connect(), table, a, b)
            except sqlite3.OperationalError as exc:
                if "integer overflow" in str(exc):  # a sum past 2^63: values no engine makes
                    raise values.BadValues(f"{table}: counts overflow a 64-bit sum") from exc
                raise
            if not connect.unchanged(self.path, self._stamp):
                # Opened immutable (no -wal) and since changed: compaction or a writer opened
                # it, so what was just read may mix two states. Named busy, never added.
                raise sqlite3.OperationalError("database is busy: it changed while being read")
            for row in rows:
                engine, sums = values.check_sum_row(table, row)
                got.setdefault(engine, Sums()).add_sums(sums)
            self._parts[key] = got
        return got


MAX_ROLLUP_MISMATCHES = 100  # per table and file: enough to name, bounded to hold


@dataclass(frozen=True)
class RollupMismatch:
    """An hourly (daily) row whose sums are not those of its per-second (hourly) rows: the
    writer adds both in one transaction, so one of the two was changed or lost since."""

    table: str  # "hourly" or "daily"
    start_ts: int  # the hour's (day's) first second
    engine: int
    stored: dict[str, int] | None  # the row's figures by name; None: no row for the period
    summed: dict[str, int]  # its finer rows' sums by name

    @property
    def end_ts(self) -> int:
        return self.start_ts + (HOUR if self.table == "hourly" else DAY)

    def differing(self) -> list[tuple[str, int | None, int]]:
        """(figure name, stored, summed) of each figure that differs."""
        return [
            (name, None if self.stored is None else self.stored[name], n)
            for name, n in self.summed.items()
            if self.stored is None or self.stored[name] != n
        ]


def rollup_mismatches(
    conn: sqlite3.Connection,
    compacted_before_ts: int | None,
    has_daily: bool,
    *,
    against_seconds: bool = True,
) -> list[RollupMismatch]:
    """The rollup rows of one ledger that disagree with what they add up: each hour whose
    per-second rows are all still there (from ``compacted_before_ts``'s hour on) against the
    sum of those seconds, and each day against its hours (kept forever). The one judgement
    ``check`` names per file and the report counts as ``rollup_mismatch`` in its windows.

    ``against_seconds=False`` leaves out the hours against their seconds (a scan of up to eight
    days of per-second rows): the report judges only days against hours, a few thousand rows a
    year, so a read stays as cheap as its windows; ``check`` judges both."""
    since = 0 if compacted_before_ts is None else -(-compacted_before_ts // HOUR) * HOUR
    names = SUM_FIELDS
    n = len(names)
    out: list[RollupMismatch] = []
    for table, start in (("hourly", since), ("daily", 0)):
        if (table == "daily" and not has_daily) or (table == "hourly" and not against_seconds):
            continue
        try:
            if reads.rollup_totals_agree(conn, table, start):
                continue
            rows = reads.rollup_disagreements(conn, table, start, MAX_ROLLUP_MISMATCHES)
        except sqlite3.OperationalError as exc:
            if "integer overflow" in str(exc):  # as ``_part``: values no engine makes
                raise values.BadValues(f"{table}: counts overflow a 64-bit sum") from exc
            raise
        for row in rows:
            if any(v is not None and type(v) is not int for v in row):
                raise values.BadValues(f"{table}: a value that is not an integer")
            stored = row[2 : 2 + n]
            out.append(
                RollupMismatch(
                    table=table,
                    start_ts=row[0],
                    engine=row[1],
                    stored=None
                    if all(v is None for v in stored)
                    else {k: v or 0 for k, v in zip(names, stored, strict=True)},
                    summed={k: v or 0 for k, v in zip(names, row[2 + n :], strict=True)},
                )
            )
    return out


def _add(into: SumsByEngine, more: SumsByEngine) -> None:
    for e, v in more.items():
        into.setdefault(e, Sums()).add(v)


def edge_imprecise(compacted_before_ts: int, first_bucket_ts: int, w: Window) -> bool:
    """Whether an edge second of ``w`` lies where compaction folded a file's seconds into hours
    (before ``compacted_before_ts``) and after its first counted second: the window's figure
    for that file is then not exact."""
    start = 0 if w.start_ts <= first_bucket_ts else w.start_ts  # as ``_effective_start``
    return any(
        a < compacted_before_ts and b > first_bucket_ts
        for a, b in _edge_seconds(start, w.cutoff_ts)
    )


@functools.lru_cache(maxsize=1024)
def _edge_seconds(start: int, cutoff: int) -> tuple[tuple[int, int], ...]:
    # Many files share a window: its edge pieces are worked out once.
    return tuple(window_parts(start, cutoff)[0])


def window_parts(
    start: int, cutoff: int, *, daily: bool = False
) -> tuple[list[tuple[int, int]], list[tuple[int, int]], tuple[int, int] | None]:
    """Split ``[start, cutoff)`` into per-second pieces at the edges, whole hours next to them
    and (with ``daily``) whole UTC days between: ``(seconds, hours, days)``."""
    if cutoff <= start:
        return [], [], None
    h0 = -(-start // HOUR) * HOUR
    h1 = cutoff // HOUR * HOUR
    if h0 >= h1:
        return [(start, cutoff)], [], None
    seconds = [p for p in ((start, h0), (h1, cutoff)) if p[1] > p[0]]
    d0 = -(-h0 // DAY) * DAY
    d1 = h1 // DAY * DAY
    if not daily or d0 >= d1:
        return seconds, [(h0, h1)], None
    hours = [p for p in ((h0, d0), (d1, h1)) if p[1] > p[0]]
    return seconds, hours, (d0, d1)
