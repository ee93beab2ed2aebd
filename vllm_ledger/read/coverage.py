"""Which wall-clock time every expected writer can vouch for, and why the rest cannot. Pure.

A writer vouches for the spans its commits recorded (every commit, heartbeats included, ends
a span at the instant it was made): nothing after its last proof is proven, and the second
before it is not vouched for either (an event stamped then may still have been on its way to
the queue). A writer that has not closed cleanly and whose last proof is within
``HEARTBEAT_STALE_AFTER_S`` of the report's clock is alive; older than that it is stale from
its last proof on (``writer_state`` decides, with the one set of thresholds).

A live report is cut at the watermark: the last instant *every* alive writer has proven.
Everything before it is exact; the seconds between it and the query are not reported at all
(the report says how far behind the query it is), so a writer whose commits fail holds the
cutoff back at its last proof for up to ``HEARTBEAT_STALE_AFTER_S``, and is
``heartbeat_stale`` after.

A run is covered where *every* expected writer of it vouches (a writer that never came up
leaves its run uncovered). An instance is covered where any of its runs is covered; the
report is covered where every instance is. Seconds in which events were dropped, rejected
or lost are cut out of the covered time. Each run's part is ``run_coverage``'s; a run whose
writers all closed cleanly may come ready-made from the summary of finished files.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from vllm_ledger.read import intervals as iv
from vllm_ledger.read.hidden_time import never_committed_spans, unreadable_spans
from vllm_ledger.read.run_coverage import (
    TAIL_S,
    ClosedRun,
    RunCoverage,
    WriterStatus,
    first_record_seconds,
    gaps,
    run_coverage,
    run_start_ts,
)
from vllm_ledger.read.snapshot import LedgerSnapshot
from vllm_ledger.read.windows import Window

PROBLEM_CODES: tuple[str, ...] = (
    "writer_missing",
    "heartbeat_stale",
    "unclean_exit",
    "queue_overflow",
    "rejected_input",
    "write_failed",
    "ledger_unreadable",
    "never_committed",
    "sequence_gap",
    "rollup_mismatch",
    "ledger_busy",
    "imprecise_edge",
    "no_ledger",
)


@dataclass
class CoverageModel:
    writers: list[WriterStatus]
    covered: list[iv.Interval]
    problem_seconds: list[tuple[int, int, int, int]]
    # (since, until) of each file that could not be read: the time it may hide, from its run's
    # start (or -inf: unknown) to the next run of its instance (or inf: unknown).
    unreadable: list[tuple[float, float]]
    busy: int
    first_record_ts: int | None
    # (since, until) of each file its writer created and never committed to (a full disk, no
    # permission, a crash before the first commit): from its creation to where its writer's
    # time ends at the latest (``_never_committed_until``); its instance's tokens are unknown.
    never_committed: list[tuple[float, float]] = field(default_factory=list)
    # (from, to, commits): commits a writer made that its file no longer holds
    gaps: list[tuple[float, float, int]] = field(default_factory=list)
    # Nothing at all under the roots (no ledger file, nothing unreadable): the plugin is off,
    # never wrote, or the root is the wrong one. Named in every window, never read as zero.
    no_ledger: bool = False
    # The last instant every alive writer has proven (a whole second, at most the query's
    # cutoff): a live report ends here, so everything it calls complete is exact. None when no
    # writer is alive (closed, stale and crashed writers never move it).
    watermark_ts: int | None = None
    # Seconds not covered, but declared idle (an operator declared those instances stopped on
    # purpose, and every other instance there vouched): never counted as covered, nor as
    # uncovered.
    declared: list[iv.Interval] = field(default_factory=list)
    # (start, end) of each hour or day whose rollup row disagrees with the rows it adds up
    # (``snapshot.rollup_mismatches``): a window over it is not exact, whichever it read.
    rollups: list[tuple[int, int]] = field(default_factory=list)
    _troubled: list[WriterStatus] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def recorded_in(self, lo: float, hi: float) -> bool:
        """Whether some writer recorded in ``[lo, hi)``: a writer counts from its first proof
        to its last (an alive or stale one, or one with no proof: to the end of time)."""
        for w in self.writers:
            first = -math.inf if w.first_ts is None else w.first_ts
            last = math.inf if w.state in ("alive", "stale") or w.last_ts is None else w.last_ts
            if first < hi and last >= lo:
                return True
        return False

    def nothing_recorded(self, w: Window) -> bool:
        """No writer recorded in the window, and no file that could not be read (or was never
        committed to) may hold it: its zeros are "nothing recorded", said as such."""
        if self.recorded_in(w.start_ts, w.cutoff_ts):
            return False
        hidden = [*self.unreadable, *self.never_committed]
        return not any(a < w.cutoff_ts and b > w.start_ts for a, b in hidden)

    def declared_seconds(self, w: Window) -> int:
        return round(iv.measure(iv.clip(self.declared, w.start_ts, w.cutoff_ts)))

    def cutoff_at(self, at_ts: float) -> int:
        """The report cutoff for a query at ``at_ts``: its second, or the watermark if earlier."""
        cutoff = math.floor(at_ts)
        return cutoff if self.watermark_ts is None else min(cutoff, self.watermark_ts)

    def uncovered_seconds(self, w: Window) -> int:
        covered = iv.measure(iv.clip(self.covered, w.start_ts, w.cutoff_ts))
        declared = iv.measure(iv.clip(self.declared, w.start_ts, w.cutoff_ts))
        return max(0, math.ceil(w.seconds - covered - declared - 1e-6))

    def problems(self, w: Window, imprecise: bool = False) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        if self._troubled is None:  # thousands of writers, almost all fine: looked at once
            self._troubled = [wr for wr in self.writers if wr.state not in ("alive", "closed")]
        for wr in self._troubled:
            lo = wr.first_ts if wr.first_ts is not None else -math.inf
            if wr.state == "stale":
                hi = float(w.cutoff_ts)
            elif wr.state == "missing":  # for as long as its run ran
                hi = wr.last_ts if wr.last_ts is not None else float(w.cutoff_ts)
            else:  # crashed: its lost tail runs to the next covered instant
                hi = _crash_effect_end(self, wr, w)
            if hi >= w.start_ts and lo < w.cutoff_ts:
                code = {
                    "missing": "writer_missing",
                    "stale": "heartbeat_stale",
                    "crashed": "unclean_exit",
                }[wr.state]
                counts[code] += 1
        for ts, dropped, rejected, lost in self.problem_seconds:
            if w.start_ts <= ts < w.cutoff_ts:
                if dropped:
                    counts["queue_overflow"] += dropped
                if rejected:
                    counts["rejected_input"] += rejected
                if lost:
                    counts["write_failed"] += lost
        for since, until in self.unreadable:
            # Another instance vouching, or a later run's proof, says nothing of what the file
            # holds: only its own instance's next launch bounds it.
            if since < w.cutoff_ts and until > w.start_ts:
                counts["ledger_unreadable"] += 1
        for since, until in self.never_committed:
            if since < w.cutoff_ts and until > w.start_ts:
                counts["never_committed"] += 1
        for lo, hi, n in self.gaps:
            if lo < w.cutoff_ts and hi >= w.start_ts:
                counts["sequence_gap"] += n
        for lo_ts, hi_ts in self.rollups:
            if lo_ts < w.cutoff_ts and hi_ts > w.start_ts:
                counts["rollup_mismatch"] += 1
        if self.busy:
            counts["ledger_busy"] += self.busy
        if imprecise:
            counts["imprecise_edge"] += 1
        if self.no_ledger:
            counts["no_ledger"] += 1
        return dict(sorted(counts.items()))


def _crash_effect_end(model: CoverageModel, wr: WriterStatus, w: Window) -> float:
    # A crashed writer's lost tail runs from its last heartbeat to the next covered instant.
    last = wr.last_ts or 0.0
    for s, _e in model.covered:
        if s >= last:
            return s
    return w.cutoff_ts


def build(
    ledgers: Sequence[LedgerSnapshot | ClosedRun],
    at_ts: float,
    no_ledger: bool = False,
    declared: Sequence[tuple[str, float, float]] = (),
    rollups: Sequence[tuple[int, int]] = (),
) -> CoverageModel:
    """Coverage from the ledgers' spans, as seen at ``at_ts`` (the report's clock).

    ``ledgers``: files, and runs whose coverage is already known (``ClosedRun``, from the
    summary of finished files; no file of such a run is among the files).
    ``no_ledger``: the roots hold nothing at all (not: nothing matched a filter).
    ``declared``: (instance key, from, until) stretches an operator declared stopped on purpose;
    only instances these ledgers know count.
    ``rollups``: (start, end) of each hour or day whose rollup row disagrees with its seconds
    (hours) in a file of ``ledgers`` (``snapshot.rollup_mismatches``).
    """
    snapshots = [x for x in ledgers if isinstance(x, LedgerSnapshot)]
    closed_runs = [x for x in ledgers if isinstance(x, ClosedRun)]
    ok = [s for s in snapshots if s.ok]
    cutoff = math.floor(at_ts)
    runs = _runs_of(ledgers, ok)
    # Writers with a file that could not be read: their vouched time is not fully known.
    doubtful = {(s.run_id, s.writer_rank) for s in snapshots if not s.ok and s.run_id}
    writers, cover, active = _instances(runs, at_ts, cutoff, doubtful)
    problem_seconds = sorted(
        ps
        for x in ledgers
        for ps in (x.problem_seconds if isinstance(x, ClosedRun) or x.ok else ())
    )
    bad = iv.normalize((ts, ts + 1) for ts, *_ in problem_seconds)
    covered = iv.subtract(_covered(cover, active), bad)
    never_committed = never_committed_spans(snapshots, runs.start, runs.instance, runs.by_writer)
    unreadable = unreadable_spans(snapshots, runs.start, runs.instance, runs.by_writer)
    first_seconds = first_record_seconds(ok)
    first_seconds += [c.first_record_ts for c in closed_runs if c.first_record_ts is not None]
    # An unreadable file's run start counts as a record: `total` must reach back over it.
    first_seconds += [math.floor(a) for a, _b in unreadable if math.isfinite(a)]
    first_seconds += [math.floor(a) for a, _b in never_committed if math.isfinite(a)]
    first_seconds += [problem_seconds[0][0]] if problem_seconds else []
    alive_proofs = [w.last_ts for w in writers if w.state == "alive" and w.last_ts is not None]
    watermark = min(cutoff, math.floor(min(alive_proofs) - TAIL_S)) if alive_proofs else None
    return CoverageModel(
        declared=_declared_idle(declared, cover, active, covered, bad),
        watermark_ts=watermark,
        writers=writers,
        covered=covered,
        problem_seconds=problem_seconds,
        unreadable=unreadable,
        gaps=[g for x in ledgers for g in (x.gaps if isinstance(x, ClosedRun) else gaps([x]))],
        busy=sum(1 for s in snapshots if s.status == "busy"),
        never_committed=never_committed,
        first_record_ts=min(first_seconds) if first_seconds else None,
        no_ledger=no_ledger,
        rollups=sorted(rollups),
    )


@dataclass
class _Runs:
    """The runs the ledgers name: each writer's readable files, each run's files by rank, its
    start and instance, the coverage already known of closed runs, and each instance's latest
    run (a non-closed writer of it is "stale", of older runs "crashed")."""

    by_writer: dict[tuple[str, int], list[LedgerSnapshot]]
    files: dict[str, dict[int, list[LedgerSnapshot]]]
    start: dict[str, float]
    instance: dict[str, str]
    known: dict[str, RunCoverage]
    latest: dict[str, str]


def _runs_of(ledgers: Sequence[LedgerSnapshot | ClosedRun], ok: Sequence[LedgerSnapshot]) -> _Runs:
    by_writer: dict[tuple[str, int], list[LedgerSnapshot]] = defaultdict(list)
    for s in ok:
        by_writer[s.writer_key].append(s)
    runs: dict[str, dict[int, list[LedgerSnapshot]]] = defaultdict(dict)
    for (run_id, rank), snaps in by_writer.items():
        runs[run_id][rank] = snaps
    # Each run's start and instance, in the order the ledgers name them (the first of two runs
    # of an instance that start together counts as the earlier).
    run_start: dict[str, float] = {}
    run_instance: dict[str, str] = {}
    known: dict[str, RunCoverage] = {}
    for x in ledgers:
        if isinstance(x, ClosedRun):
            rc = x.coverage
            known[rc.run_id] = rc
            run_start[rc.run_id], run_instance[rc.run_id] = rc.start_ts, rc.instance_key
        elif x.ok and x.run_id not in run_instance:
            ranks = runs[x.run_id]
            run_start[x.run_id] = run_start_ts(s for snaps in ranks.values() for s in snaps)
            run_instance[x.run_id] = x.instance.key
    latest_for_instance: dict[str, str] = {}
    for run_id, inst in run_instance.items():
        cur = latest_for_instance.get(inst)
        if cur is None or run_start[run_id] > run_start[cur]:
            latest_for_instance[inst] = run_id
    return _Runs(by_writer, runs, run_start, run_instance, known, latest_for_instance)


def _instances(
    runs: _Runs, at_ts: float, cutoff: int, doubtful: set[tuple[str, int]]
) -> tuple[list[WriterStatus], dict[str, list[iv.Interval]], dict[str, list[iv.Interval]]]:
    """Every writer's status, and per instance the time its runs vouch for and the stretch it
    was there (from its first run's start to where its latest run ends)."""
    writers: list[WriterStatus] = []
    instance_cover: dict[str, list[iv.Interval]] = defaultdict(list)
    instance_active: dict[str, list[iv.Interval]] = defaultdict(list)
    for run_id in sorted(runs.instance):
        inst = runs.instance[run_id]
        latest = runs.latest[inst] == run_id
        rc = runs.known.get(run_id) or run_coverage(
            run_id,
            runs.files[run_id],
            start_ts=runs.start[run_id],
            instance_key=inst,
            at_ts=at_ts,
            cutoff=cutoff,
            latest=latest,
            doubtful=doubtful,
        )
        writers.extend(rc.writers)
        instance_cover[inst].extend(rc.vouched)
        # An instance is there from its first run's start, gaps between its runs included
        # (a rollback to a container without the plugin is uncovered), until its latest run
        # closed every writer cleanly: then it may be gone for good (a replaced container, a
        # retired port), and only the other instances' coverage counts after that.
        if rc.start_ts < math.inf:
            # Only the latest run decides where the instance ends.
            end = (rc.end_ts if rc.closed else float(cutoff)) if latest else -math.inf
            instance_active[inst].append((rc.start_ts, end))
    for inst, spans_ in instance_active.items():
        first = min(s for s, _ in spans_)
        last = max(e for _, e in spans_)
        instance_active[inst] = [(first, last)] if last > first else []
    return writers, instance_cover, instance_active


def _covered(
    instance_cover: dict[str, list[iv.Interval]], instance_active: dict[str, list[iv.Interval]]
) -> list[iv.Interval]:
    """A second is covered when some instance was there and every instance there could vouch."""
    all_cover = iv.normalize(c for v in instance_cover.values() for c in v)
    not_vouched = iv.normalize(
        u
        for inst, active in instance_active.items()
        for u in iv.subtract(iv.normalize(active), iv.normalize(instance_cover[inst]))
    )
    return iv.subtract(all_cover, not_vouched)


def _declared_idle(
    declared: Sequence[tuple[str, float, float]],
    instance_cover: dict[str, list[iv.Interval]],
    instance_active: dict[str, list[iv.Interval]],
    covered: list[iv.Interval],
    bad: list[iv.Interval],
) -> list[iv.Interval]:
    """Declared idle: where each instance there either vouches or was declared stopped (and
    one was declared), minus what is covered anyway and the problem seconds. Whole seconds
    only; only instances the ledgers know count."""
    decl: dict[str, list[iv.Interval]] = defaultdict(list)
    for inst, lo, hi in declared:
        if inst in instance_active or inst in instance_cover:
            decl[inst].append((float(math.ceil(lo)), float(math.floor(hi))))
    if not decl:
        return []
    ok_by_inst = {
        inst: iv.normalize([*instance_cover.get(inst, []), *decl.get(inst, [])])
        for inst in set(instance_active) | set(decl)
    }
    accounted = iv.subtract(
        iv.normalize(c for v in ok_by_inst.values() for c in v),
        iv.normalize(
            u
            for inst, active in instance_active.items()
            for u in iv.subtract(iv.normalize(active), ok_by_inst.get(inst, []))
        ),
    )
    return iv.subtract(iv.subtract(accounted, covered), bad)
