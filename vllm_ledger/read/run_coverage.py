"""One run's coverage: each writer's state and vouched seconds, and what the run vouches for. Pure.

A writer vouches for the spans its commits recorded, in whole seconds; nothing after its last
proof is proven, and unless it closed cleanly, not the second before it either (``TAIL_S``).
A run vouches where *every* expected writer does: a writer that never came up (``missing``)
leaves the whole run uncovered. ``coverage.build`` combines the runs of an instance and the
instances of a root.

A run whose every expected writer closed cleanly (``RunCoverage.closed``) depends on nothing
outside its own files: not on the report's clock, nor on which run of its instance is the
latest. The summary of finished files keeps such a run's coverage as computed here, so a report
over thousands of finished runs adds them up without redoing it (``ClosedRun``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from vllm_ledger.read import intervals as iv
from vllm_ledger.read.snapshot import LedgerSnapshot
from vllm_ledger.read.writer_state import WriterState, writer_state

TAIL_S = 1.0  # trimmed off the last span of a writer that died


@dataclass(frozen=True, init=False)
class WriterStatus:
    """One writer of a run as coverage judged it: its state and its first and last proof
    (a missing writer: its run's start and end). The report lists these as they are."""

    run_id: str
    writer_rank: int
    expected_writers: int
    instance: str  # the instance's key
    state: WriterState
    first_ts: float | None
    last_ts: float | None

    def __init__(
        self,
        run_id: str,
        writer_rank: int,
        expected_writers: int,
        instance: str,
        state: WriterState,
        first_ts: float | None,
        last_ts: float | None,
    ) -> None:
        # A report over years of restarts makes thousands: the fields go straight into the
        # instance's dict (in field order, so it stays a shared-key dict), not through the
        # frozen dataclass's object.__setattr__ call per field (twice as slow).
        fields = self.__dict__
        fields["run_id"] = run_id
        fields["writer_rank"] = writer_rank
        fields["expected_writers"] = expected_writers
        fields["instance"] = instance
        fields["state"] = state
        fields["first_ts"] = first_ts
        fields["last_ts"] = last_ts


@dataclass(slots=True)
class RunCoverage:
    """What one run's writers vouch for, as seen at one instant."""

    run_id: str
    instance_key: str
    start_ts: float  # the first span of its earliest file; inf when no file has a span
    end_ts: float  # where the run ends: its last proof, or the cutoff while it may go on
    writers: list[WriterStatus]  # ranks 0 .. expected-1 (missing ones too), then any beyond
    vouched: list[iv.Interval]  # the seconds every expected writer vouches for
    closed: bool  # every expected writer is there and closed cleanly


@dataclass(slots=True)
class ClosedRun:
    """A run whose coverage is fixed (``RunCoverage.closed``), with what else coverage takes
    from its files: fault seconds, lost commits and the first second it records."""

    coverage: RunCoverage
    problem_seconds: list[tuple[int, int, int, int]]
    gaps: list[tuple[float, float, int]]  # (last proof, marker time or inf, commits lost)
    first_record_ts: int | None


def run_start_ts(snaps: Iterable[LedgerSnapshot]) -> float:
    """When a run began: the first span of its earliest file (inf when none has a span)."""
    firsts = [s.spans[0][0] for s in snaps if s.spans]
    return min(firsts) if firsts else math.inf


def gaps(snaps: Iterable[LedgerSnapshot]) -> list[tuple[float, float, int]]:
    """(last proof, marker time or inf, commits) of each file that lacks commits its writer
    made (the sequence marker beside it is ahead)."""
    return [
        (
            max((e for _, e in s.spans), default=-math.inf),
            s.marker_ts or math.inf,
            s.missing_commits,
        )
        for s in snaps
        if s.missing_commits
    ]


def first_record_seconds(snaps: Iterable[LedgerSnapshot]) -> list[int]:
    """The first counted second and the first proof (whole) of each file."""
    out = [s.first_bucket_ts for s in snaps if s.first_bucket_ts is not None]
    out += [math.ceil(s.spans[0][0]) for s in snaps if s.spans]
    return out


def run_coverage(
    run_id: str,
    ranks: Mapping[int, Sequence[LedgerSnapshot]],
    *,
    start_ts: float,
    instance_key: str,
    at_ts: float,
    cutoff: int,
    latest: bool,
    doubtful: Collection[tuple[str, int]] = (),
) -> RunCoverage:
    """The coverage of one run from its readable files by writer rank.

    ``start_ts``: the run's start (``run_start_ts``); ``latest``: whether it is its instance's
    newest run (a silent writer of it is stale, of an older run crashed); ``doubtful``: writers
    (run id, rank) with a file that could not be read.
    """
    expected = max(s.expected_writers for snaps in ranks.values() for s in snaps)
    present: dict[int, WriterStatus] = {}
    vouched_by: dict[int, list[iv.Interval]] = {}
    for rank, snaps in ranks.items():
        present[rank], vouched_by[rank] = writer_coverage(
            snaps, run_id, rank, expected, instance_key, at_ts, latest=latest
        )
    ends = [
        cutoff if w.state in ("alive", "stale") else (w.last_ts or -math.inf)
        for w in present.values()
    ]
    run_end = float(max(ends, default=cutoff))
    writers: list[WriterStatus] = []
    run_sets: list[list[iv.Interval]] = []
    for rank in range(expected):
        wc = present.get(rank)
        if wc is None:
            start = start_ts if start_ts < math.inf else None
            writers.append(
                WriterStatus(run_id, rank, expected, instance_key, "missing", start, run_end)
            )
            run_sets.append([])
            continue
        writers.append(wc)
        # An API process serves nothing before its logger exists, so a writer that did
        # come up also vouches for the moments between its run's start and its own,
        # unless one of its files is unreadable or its first file is gone.
        vouched = vouched_by[rank]
        first_generation = min(s.generation for s in ranks[rank])
        if (
            vouched
            and start_ts < vouched[0][0]
            and (run_id, rank) not in doubtful
            and first_generation == 0
        ):
            vouched = [(float(math.ceil(start_ts)), vouched[0][1]), *vouched[1:]]
        run_sets.append(vouched)
    # Writers beyond the expected count matter for the figures, not for coverage.
    writers.extend(wc for rank, wc in sorted(present.items()) if rank >= expected)
    closed = all(
        present.get(r) is not None and present[r].state == "closed" for r in range(expected)
    )
    return RunCoverage(
        run_id=run_id,
        instance_key=instance_key,
        start_ts=start_ts,
        end_ts=run_end,
        writers=writers,
        vouched=iv.intersect_all(run_sets),
        closed=closed,
    )


def writer_coverage(
    snaps: Sequence[LedgerSnapshot],
    run_id: str,
    rank: int,
    expected: int,
    inst: str,
    at_ts: float,
    latest: bool,
) -> tuple[WriterStatus, list[iv.Interval]]:
    """One writer's state and the whole seconds it vouches for, from its readable files."""
    raw = [sp for s in snaps for sp in s.spans]
    spans = iv.normalize(raw)  # drops zero-length spans: a single heartbeat vouches for nothing
    newest = max(snaps, key=lambda s: (s.generation, s.last_seq))
    # ...but it does say the writer was alive then.
    last = max((e for _, e in raw), default=None)
    first = min((s for s, _ in raw), default=None)
    state = writer_state(
        clean_close_ts=newest.clean_close_ts, last_proof_ts=last, at_ts=at_ts, latest_run=latest
    )
    if state != "closed" and spans:
        # Nothing after a writer's last proof is proven, alive or not, and events stamped just
        # before it may still have been on their way to the queue (or queued, not committed,
        # when the writer died): its last second before the proof is not vouched for either.
        # A live report is exact up to the watermark instead (``CoverageModel.watermark_ts``).
        spans = iv.normalize([*spans[:-1], (spans[-1][0], spans[-1][1] - TAIL_S)])
    # Vouch only for whole seconds: a partial second at either end is not vouched for.
    whole = [(float(math.ceil(s)), float(math.floor(e))) for s, e in spans]
    return WriterStatus(run_id, rank, expected, inst, state, first, last), iv.normalize(whole)


def closed_run(snaps: Sequence[LedgerSnapshot]) -> ClosedRun | None:
    """The fixed coverage of one run's readable files, or None when it is not fixed: a writer
    that did not close cleanly (its state depends on the clock), a file without a span, or
    files that disagree on the run or its instance.

    ``snaps`` must be every file of the run, each readable, none a copy of another (one file
    per writer and generation).
    """
    if not snaps or any(not s.ok or not s.spans for s in snaps):
        return None
    run_id = snaps[0].run_id
    instance = snaps[0].instance
    if any(s.run_id != run_id or s.instance != instance for s in snaps):
        return None
    if len({(s.writer_rank, s.generation) for s in snaps}) != len(snaps):
        return None
    ranks: dict[int, list[LedgerSnapshot]] = {}
    for s in snaps:
        ranks.setdefault(s.writer_rank, []).append(s)
    start = run_start_ts(snaps)
    # The clock and the run's place among its instance's runs only matter for writers that
    # did not close; a fixed run has none.
    rc = run_coverage(
        run_id,
        ranks,
        start_ts=start,
        instance_key=instance.key,
        at_ts=start,
        cutoff=math.floor(start),
        latest=True,
    )
    if any(w.state not in ("closed", "missing") for w in rc.writers):
        return None
    firsts = first_record_seconds(snaps)
    return ClosedRun(
        coverage=rc,
        problem_seconds=sorted(ps for s in snaps for ps in s.problem_seconds),
        gaps=gaps(snaps),
        first_record_ts=min(firsts) if firsts else None,
    )
