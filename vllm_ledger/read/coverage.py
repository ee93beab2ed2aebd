"""Which wall-clock time every expected writer can vouch for, and why the rest cannot. Pure.

A writer vouches for the spans its commits recorded (every commit, heartbeats included, ends
a span at the instant it was made): nothing after its last proof is proven, and the second
before it is not vouched for either (an event stamped then may still have been on its way to
the queue). A writer that has not closed cleanly and whose last proof is within
``STALE_AFTER_S`` of the report's clock is alive; older than that it is stale from its last
proof on (``writer_state`` decides, with the one set of thresholds).

A live report is cut at the watermark: the last instant *every* alive writer has proven.
Everything before it is exact; the seconds between it and the query are not reported at all
(the report says how far behind the query it is), so a writer whose commits fail holds the
cutoff back at its last proof for up to ``STALE_AFTER_S``, and is ``heartbeat_stale`` after.

A run is covered where *every* expected writer of it vouches (a writer that never came up
leaves its run uncovered). An instance is covered where any of its runs is covered; the
report is covered where every instance is. Seconds in which events were dropped, rejected
or lost are cut out of the covered time.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from vllm_ledger.read import intervals as iv
from vllm_ledger.read.snapshot import LedgerSnapshot
from vllm_ledger.read.windows import Window
from vllm_ledger.read.writer_state import WriterState, writer_state

TAIL_S = 1.0  # trimmed off the last span of a writer that died

PROBLEM_CODES: tuple[str, ...] = (
    "writer_missing",
    "heartbeat_stale",
    "unclean_exit",
    "queue_overflow",
    "rejected_input",
    "write_failed",
    "ledger_unreadable",
    "sequence_gap",
    "ledger_busy",
    "imprecise_edge",
    "no_ledger",
)


@dataclass
class WriterCoverage:
    run_id: str
    writer_rank: int
    expected_writers: int
    instance_key: str
    state: WriterState
    vouched: list[iv.Interval] = field(default_factory=list)
    first_ts: float | None = None
    last_ts: float | None = None
    files: int = 0


@dataclass
class CoverageModel:
    writers: list[WriterCoverage]
    covered: list[iv.Interval]
    problem_seconds: list[tuple[int, int, int, int]]
    # (since, until) of each file that could not be read: the time it may hide, from its run's
    # start (or -inf: unknown) to the next run of its instance (or inf: unknown).
    unreadable: list[tuple[float, float]]
    busy: int
    first_record_ts: int | None
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
        for wr in self.writers:
            if wr.state in ("alive", "closed"):
                continue
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
        for lo, hi, n in self.gaps:
            if lo < w.cutoff_ts and hi >= w.start_ts:
                counts["sequence_gap"] += n
        if self.busy:
            counts["ledger_busy"] += self.busy
        if imprecise:
            counts["imprecise_edge"] += 1
        if self.no_ledger:
            counts["no_ledger"] += 1
        return dict(sorted(counts.items()))


def _crash_effect_end(model: CoverageModel, wr: WriterCoverage, w: Window) -> float:
    # A crashed writer's lost tail runs from its last heartbeat to the next covered instant.
    last = wr.last_ts or 0.0
    for s, _e in model.covered:
        if s >= last:
            return s
    return w.cutoff_ts


def build(
    snapshots: Sequence[LedgerSnapshot],
    at_ts: float,
    no_ledger: bool = False,
    declared: Sequence[tuple[str, float, float]] = (),
) -> CoverageModel:
    """Coverage from the ledgers' spans, as seen at ``at_ts`` (the report's clock).

    ``no_ledger``: the roots hold nothing at all (not: nothing matched a filter).
    ``declared``: (instance key, from, until) stretches an operator declared stopped on purpose;
    only instances these ledgers know count.
    """
    ok = [s for s in snapshots if s.ok]
    by_writer: dict[tuple[str, int], list[LedgerSnapshot]] = defaultdict(list)
    for s in ok:
        by_writer[s.writer_key].append(s)
    runs: dict[str, dict[int, list[LedgerSnapshot]]] = defaultdict(dict)
    for (run_id, rank), snaps in by_writer.items():
        runs[run_id][rank] = snaps
    cutoff = math.floor(at_ts)
    # The latest run per instance: a non-closed writer of it is "stale", of older runs "crashed".
    run_start: dict[str, float] = {}
    run_instance: dict[str, str] = {}
    for run_id, ranks in runs.items():
        firsts = [sp[0][0] for snaps in ranks.values() for s in snaps for sp in [s.spans] if sp]
        run_start[run_id] = min(firsts) if firsts else math.inf
        any_snap = next(iter(ranks.values()))[0]
        run_instance[run_id] = any_snap.instance.key
    latest_for_instance: dict[str, str] = {}
    for run_id, inst in run_instance.items():
        cur = latest_for_instance.get(inst)
        if cur is None or run_start[run_id] > run_start[cur]:
            latest_for_instance[inst] = run_id

    # Writers with a file that could not be read: their vouched time is not fully known.
    doubtful = {(s.run_id, s.writer_rank) for s in snapshots if not s.ok and s.run_id}
    writers: list[WriterCoverage] = []
    instance_cover: dict[str, list[iv.Interval]] = defaultdict(list)
    instance_active: dict[str, list[iv.Interval]] = defaultdict(list)
    for run_id, ranks in sorted(runs.items()):
        expected = max(s.expected_writers for snaps in ranks.values() for s in snaps)
        inst = run_instance[run_id]
        latest = latest_for_instance[inst] == run_id
        present = {
            rank: _writer(snaps, run_id, rank, expected, inst, at_ts, cutoff, latest=latest)
            for rank, snaps in ranks.items()
        }
        ends = [
            cutoff if w.state in ("alive", "stale") else (w.last_ts or -math.inf)
            for w in present.values()
        ]
        run_end = float(max(ends, default=cutoff))
        run_sets: list[list[iv.Interval]] = []
        for rank in range(expected):
            wc = present.get(rank)
            if wc is None:
                start = run_start[run_id] if run_start[run_id] < math.inf else None
                writers.append(
                    WriterCoverage(
                        run_id, rank, expected, inst, "missing", first_ts=start, last_ts=run_end
                    )
                )
                run_sets.append([])
                continue
            writers.append(wc)
            # An API process serves nothing before its logger exists, so a writer that did
            # come up also vouches for the moments between its run's start and its own,
            # unless one of its files is unreadable or its first file is gone.
            vouched = wc.vouched
            first_generation = min(s.generation for s in ranks[rank])
            if (
                vouched
                and run_start[run_id] < vouched[0][0]
                and (run_id, rank) not in doubtful
                and first_generation == 0
            ):
                vouched = [(float(math.ceil(run_start[run_id])), vouched[0][1]), *vouched[1:]]
            run_sets.append(vouched)
        # Writers beyond the expected count matter for the figures, not for coverage.
        writers.extend(wc for rank, wc in sorted(present.items()) if rank >= expected)
        instance_cover[inst].extend(iv.intersect_all(run_sets))
        # An instance is there from its first run's start, gaps between its runs included
        # (a rollback to a container without the plugin is uncovered), until its latest run
        # closed every writer cleanly: then it may be gone for good (a replaced container, a
        # retired port), and only the other instances' coverage counts after that.
        if run_start[run_id] < math.inf:
            closed = all(
                present.get(r) is not None and present[r].state == "closed" for r in range(expected)
            )
            # Only the latest run decides where the instance ends.
            end = (run_end if closed else float(cutoff)) if latest else -math.inf
            instance_active[inst].append((run_start[run_id], end))
    for inst, spans_ in instance_active.items():
        first = min(s for s, _ in spans_)
        last = max(e for _, e in spans_)
        instance_active[inst] = [(first, last)] if last > first else []
    # A second is covered when some instance was there and every instance there could vouch.
    all_cover = iv.normalize(c for v in instance_cover.values() for c in v)
    not_vouched = iv.normalize(
        u
        for inst, active in instance_active.items()
        for u in iv.subtract(iv.normalize(active), iv.normalize(instance_cover[inst]))
    )
    covered = iv.subtract(all_cover, not_vouched)
    problem_seconds = sorted(ps for s in ok for ps in s.problem_seconds)
    bad = iv.normalize((ts, ts + 1) for ts, *_ in problem_seconds)
    covered = iv.subtract(covered, bad)
    # Declared idle: where each instance there either vouches or was declared stopped (and
    # one was declared), minus what is covered anyway. Whole seconds only.
    decl: dict[str, list[iv.Interval]] = defaultdict(list)
    for inst, lo, hi in declared:
        if inst in instance_active or inst in instance_cover:
            decl[inst].append((float(math.ceil(lo)), float(math.floor(hi))))
    declared_idle: list[iv.Interval] = []
    if decl:
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
        declared_idle = iv.subtract(iv.subtract(accounted, covered), bad)
    # "empty": a writer that never committed (no marker) holds no data to lose; its run shows
    # it as writer_missing instead.
    unreadable = [
        (
            _run_start_estimate(s.run_id, run_start),
            min(
                _next_launch(s.run_id, run_start, run_instance),
                _next_generation(s, by_writer.get(s.writer_key, [])),
            ),
        )
        for s in snapshots
        if s.status in ("unreadable", "denied", "bad_values")
    ]
    first_seconds: list[int] = [s.first_bucket_ts for s in ok if s.first_bucket_ts is not None]
    # An unreadable file's run start counts as a record: `total` must reach back over it.
    first_seconds += [math.floor(a) for a, _b in unreadable if math.isfinite(a)]
    first_seconds += [problem_seconds[0][0]] if problem_seconds else []
    first_seconds += [math.ceil(s.spans[0][0]) for s in ok if s.spans]
    first_record = min(first_seconds) if first_seconds else None
    alive_proofs = [w.last_ts for w in writers if w.state == "alive" and w.last_ts is not None]
    watermark = min(cutoff, math.floor(min(alive_proofs) - TAIL_S)) if alive_proofs else None
    return CoverageModel(
        declared=declared_idle,
        watermark_ts=watermark,
        writers=writers,
        covered=covered,
        problem_seconds=problem_seconds,
        unreadable=unreadable,
        gaps=[
            (
                max((e for _, e in s.spans), default=-math.inf),
                s.marker_ts or math.inf,
                s.missing_commits,
            )
            for s in ok
            if s.missing_commits
        ],
        busy=sum(1 for s in snapshots if s.status == "busy"),
        first_record_ts=first_record,
        no_ledger=no_ledger,
    )


def _writer(
    snaps: list[LedgerSnapshot],
    run_id: str,
    rank: int,
    expected: int,
    inst: str,
    at_ts: float,
    cutoff: int,
    latest: bool,
) -> WriterCoverage:
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
    return WriterCoverage(
        run_id, rank, expected, inst, state, iv.normalize(whole), first, last, files=len(snaps)
    )


def _next_launch(run_id: str, run_start: dict[str, float], run_instance: dict[str, str]) -> float:
    """Where a run's time ends at the latest: the start of its instance's next run (a port
    serves one launch at a time). Unknown (inf) when none of the run's files could be read."""
    inst = run_instance.get(run_id)
    if inst is None:
        return math.inf
    start = run_start.get(run_id, math.inf)
    later = [
        t for r, t in run_start.items() if run_instance.get(r) == inst and start < t < math.inf
    ]
    return min(later, default=math.inf)


def _next_generation(bad: LedgerSnapshot, same_writer: Sequence[LedgerSnapshot]) -> float:
    """A writer writes one file at a time: a damaged file's time ends where the same writer's
    next generation begins (its first proof). inf when there is none."""
    return min(
        (a for s in same_writer if s.generation > bad.generation for a, _b in s.spans),
        default=math.inf,
    )


def _run_start_estimate(run_id: str, run_start: dict[str, float]) -> float:
    """When a run whose file cannot be read began: from its other files or its id."""
    known = run_start.get(run_id, math.inf)
    if known < math.inf:
        return known
    try:
        stamp = datetime.strptime(run_id[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return -math.inf
    return stamp.timestamp()
