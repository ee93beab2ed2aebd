"""A run answered whole from the summary of finished files, without opening its files.

A run whose every writer closed cleanly never changes again, and its coverage depends on
nothing outside it (``run_coverage.ClosedRun``). The summary keeps, per such run, that coverage
and its files' counts added up, so a report over thousands of finished runs takes a handful of
facts per run instead of reading and merging every file.

A window that holds all of the run's counts, or none, is answered here; any other window is
answered by the run's files (``whole_sums`` returns None and the ``LedgerSet`` reads them).
Every figure is the one the files give: ``summarise`` only makes a record where that holds
(every file readable and summarised, each file's counts where its facts say), and
``from_record`` refuses any value the ledger reader would refuse (``values.py``), so a
damaged or hand-edited record means the files are read instead.

A record is a JSON array, its values in the order of ``RECORD_FIELDS`` (thousands of runs are
read per report: no key is repeated for each). Its instance is a place in a list of instance
facts that the summary holds once (``instances``); a writer column (state, first and last
proof) is one value where every writer of the run has it, else one per writer, for
ranks 0 .. expected-1 and then ``extra_ranks``.

Standard library only: the maintenance pass makes the records.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from vllm_ledger.format.identity import InstanceInfo
from vllm_ledger.read import values
from vllm_ledger.read.discovery import Found
from vllm_ledger.read.run_coverage import ClosedRun, RunCoverage, WriterStatus, closed_run
from vllm_ledger.read.snapshot import LedgerSnapshot, Sums, SumsByEngine, edge_imprecise
from vllm_ledger.read.windows import Window
from vllm_ledger.read.writer_state import WriterState

RECORD_FIELDS = (
    "run_id",
    "instance",  # a place in the summary's instance list
    "expected_writers",
    "start_ts",
    "end_ts",
    "closed",
    "extra_ranks",
    "writer_states",
    "writer_first_ts",
    "writer_last_ts",
    "vouched",
    "problem_seconds",
    "gaps",  # [last proof, marker time or null (none), commits lost]
    "first_record_ts",
    "totals",  # {"<engine>": [the six sums]}
    "counts",  # [first counted second, end of the last] or null
    "edges",  # [compacted_before_ts, first_bucket_ts] of each compacted file
)
WRITER_STATES = ("closed", "missing")  # the only states of a run whose coverage is fixed


@dataclass(eq=False)
class SummaryRun(ClosedRun):
    """One run as its summary record says, with the files it stands for."""

    instance: InstanceInfo
    # The whole-run sums per engine of the files whose counts a window can hold, where those
    # counts lie ([first_ts, last_end_ts); None when no file has any), and the
    # (compacted_before_ts, first_bucket_ts) of each compacted file.
    totals: SumsByEngine
    first_ts: int | None
    last_end_ts: float | None
    edges: list[tuple[int, int]]
    found: list[Found]  # its files on disk, as discovery found them

    status = "ok"
    ok = True

    @property
    def run_id(self) -> str:
        return self.coverage.run_id

    def whole_sums(self, w: Window) -> SumsByEngine | None:
        """The run's sums per engine over ``w`` when ``w`` holds all of its counts or none;
        None when ``w`` cuts into them (its files answer)."""
        first, last = self.first_ts, self.last_end_ts
        if first is None or last is None or last <= w.start_ts or w.cutoff_ts <= first:
            return {}
        if w.start_ts <= first and last <= w.cutoff_ts:
            return self.totals  # read, never changed, by whoever asks (as a file's memo)
        return None

    def imprecise(self, w: Window) -> bool:
        """True when an edge second of ``w`` was folded into an hour in one of its files."""
        return any(edge_imprecise(cb, first, w) for cb, first in self.edges)


def summarise(
    snaps: Sequence[LedgerSnapshot], totals: Sequence[SumsByEngine], instances: list[Any]
) -> list[Any] | None:
    """The summary record of a run from all of its files (readable, finished, each with its
    whole-file ``totals``), or None when the run cannot be answered whole: a writer that did
    not close cleanly, or counts a file's facts do not place (see ``whole_sums``). Its
    instance's facts are added to ``instances`` where they are not there yet."""
    closed = closed_run(snaps)
    if closed is None:
        return None
    merged: SumsByEngine = {}
    firsts: list[int] = []
    lasts: list[float] = []
    for s, t in zip(snaps, totals, strict=True):
        first, last = s.first_bucket_ts, s.last_end_ts
        if first is not None and last is not None:
            if not first < last:
                return None
            firsts.append(first)
            lasts.append(last)
            for e, v in t.items():
                merged.setdefault(e, Sums()).add(v)
        elif last is None and t:
            return None  # counts outside any row the facts know of: only the file can say
        # A file with a last second but no first holds nothing any window asks for.
    rc = closed.coverage
    writers = rc.writers
    expected = max(s.expected_writers for s in snaps)
    meta = snaps[0].instance.to_meta()
    if meta not in instances:
        instances.append(meta)
    record = {
        "run_id": snaps[0].run_id,
        "instance": instances.index(meta),
        "expected_writers": expected,
        "start_ts": rc.start_ts,
        "end_ts": rc.end_ts,
        "closed": rc.closed,
        "extra_ranks": [w.writer_rank for w in writers[expected:]],
        "writer_states": _column([w.state for w in writers]),
        "writer_first_ts": _column([w.first_ts for w in writers]),
        "writer_last_ts": _column([w.last_ts for w in writers]),
        "vouched": [list(i) for i in rc.vouched],
        "problem_seconds": [list(p) for p in closed.problem_seconds],
        "gaps": [[lo, None if hi == math.inf else hi, n] for lo, hi, n in closed.gaps],
        "first_record_ts": closed.first_record_ts,
        "totals": {str(e): s.as_list() for e, s in sorted(merged.items())},
        "counts": [min(firsts), max(lasts)] if firsts else None,
        "edges": sorted(
            {
                (s.compacted_before_ts, s.first_bucket_ts)
                for s in snaps
                if s.compacted_before_ts is not None and s.first_bucket_ts is not None
            }
        ),
    }
    return [record[f] for f in RECORD_FIELDS]


def _column(column: list[Any]) -> Any:
    """A writer column: its one value when every writer has it (the usual run), else a list."""
    first = column[0]
    return first if all(v == first and type(v) is type(first) for v in column) else column


def from_record(record: Any, instances: Sequence[InstanceInfo], found: list[Found]) -> SummaryRun:
    """The run a summary record describes (``instances``: the summary's instance facts, checked);
    ``BadValues`` (or ``KeyError``, ``TypeError``, ``ValueError``) when any value is not what
    ``summarise`` writes."""
    (
        run_id,
        instance_at,
        expected,
        start_ts,
        end_ts,
        closed,
        extra,
        states,
        firsts,
        lasts,
        vouched,
        problems,
        gaps,
        first_record,
        totals,
        counts,
        edges,
    ) = record
    values.check_text("run id", run_id)
    instance = instances[values.check_count("instance", instance_at, len(instances) - 1)]
    if type(expected) is not int or not 1 <= expected <= values.MAX_EXPECTED_WRITERS:
        raise values.BadValues(
            f"expected writers {expected!r:.40} is not 1 to {values.MAX_EXPECTED_WRITERS}"
        )
    start_ts = values.check_instant("run start", start_ts)
    end_ts = values.check_instant("run end", end_ts)
    values.check_bool("closed", closed)
    values.check_counts("writer rank", extra, values.MAX_WRITER_RANK)
    if extra and any(r <= prev for prev, r in zip([expected - 1, *extra], extra, strict=False)):
        raise values.BadValues(f"extra writer ranks {extra!r:.40} are not above the expected")
    n = expected + len(extra)
    key = instance.key
    writers = [
        WriterStatus(run_id, rank, expected, key, state, first, last)
        for rank, state, first, last in zip(
            range(expected) if not extra else [*range(expected), *extra],
            _states(states, n),
            _instants("writer first proof", firsts, n),
            _instants("writer last proof", lasts, n),
            strict=True,
        )
    ]
    if counts is None:
        first_ts, last_end_ts = None, None
    else:
        a, b = counts
        first_ts = values.check_second("first counted second", a)
        last_end_ts = values.check_instant("last counted second", b)
        if not first_ts < last_end_ts:
            raise values.BadValues(f"counts end ({b!r}) before they start ({a!r})")
    return SummaryRun(
        coverage=RunCoverage(
            run_id=run_id,
            instance_key=key,
            start_ts=start_ts,
            end_ts=end_ts,
            writers=writers,
            vouched=values.check_intervals("vouched", vouched),
            closed=closed,
        ),
        problem_seconds=values.check_problem_seconds(_rows(problems)) if problems else [],
        gaps=[_gap(g) for g in _rows(gaps)],
        first_record_ts=values.check_optional_second("first record", first_record),
        instance=instance,
        totals={e: Sums.from_list(v) for e, v in values.check_totals(totals).items()},
        first_ts=first_ts,
        last_end_ts=last_end_ts,
        edges=[
            (values.check_second("compacted before", cb), values.check_second("first second", f))
            for cb, f in _rows(edges)
        ],
        found=found,
    )


def instance_from(meta: Any) -> InstanceInfo:
    """One of the summary's instance facts, checked as a ledger's meta is."""
    return InstanceInfo.from_meta(values.check_meta("instance", meta))


def _rows(rows: Any) -> list[Any]:
    if type(rows) is not list:
        raise values.BadValues(f"{rows!r:.40} is not a list")
    return rows


def _gap(row: Any) -> tuple[float, float, int]:
    lo, hi, n = row
    return (
        values.check_instant("gap start", lo),
        math.inf if hi is None else values.check_instant("gap end", hi),
        values.check_count("lost commits", n, values.MAX_COUNT),
    )


def _states(value: Any, n: int) -> list[WriterState]:
    if type(value) is str and value in WRITER_STATES:
        return [cast(WriterState, value)] * n
    if (
        type(value) is list
        and len(value) == n
        and all(type(v) is str and v in WRITER_STATES for v in value)
    ):
        return cast(list[WriterState], value)
    raise values.BadValues(f"writer states {value!r:.40} are not {n} of {WRITER_STATES}")


def _instants(name: str, value: Any, n: int) -> list[float]:
    if type(value) is list:
        if len(value) != n:
            raise values.BadValues(f"{name}: {len(value)} for {n} writers")
        return values.check_instants(name, value)
    return [values.check_instant(name, value)] * n
