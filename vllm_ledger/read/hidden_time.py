"""The time a ledger file the reader cannot count may hide: one that could not be read (from
its run's start to its instance's next launch or its writer's next generation) and one its
writer created and never committed to (from its creation on). Pure; coverage names both."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timezone

from vllm_ledger.read.snapshot import LedgerSnapshot

Span = tuple[float, float]


def unreadable_spans(
    snapshots: Sequence[LedgerSnapshot],
    run_start: dict[str, float],
    run_instance: dict[str, str],
    by_writer: dict[tuple[str, int], list[LedgerSnapshot]],
) -> list[Span]:
    """(since, until) of each file that could not be read: from its run's start (or -inf:
    unknown) to the next run of its instance or its writer's next generation (or inf)."""
    return [
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


def never_committed_spans(
    snapshots: Sequence[LedgerSnapshot],
    run_start: dict[str, float],
    run_instance: dict[str, str],
    by_writer: dict[tuple[str, int], list[LedgerSnapshot]],
) -> list[Span]:
    """(since, until) of each file its writer created and never committed to."""
    return [
        _never_committed_span(s, run_start, run_instance, by_writer)
        for s in snapshots
        if s.status == "never_committed"
    ]


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


def _never_committed_span(
    s: LedgerSnapshot,
    run_start: dict[str, float],
    run_instance: dict[str, str],
    by_writer: dict[tuple[str, int], list[LedgerSnapshot]],
) -> tuple[float, float]:
    """The time a writer that never committed may hide: from its file's creation (else its
    run's start) to its next generation's first proof, its instance's next launch or, while no
    file of its run says which instance it served, the next launch on the host its run id
    names (inf: unknown, it may be failing still)."""
    since = s.created_ts if s.created_ts is not None else _run_start_estimate(s.run_id, run_start)
    end = _next_generation(s, by_writer.get(s.writer_key, []))
    if s.run_id in run_instance:
        return since, min(end, _next_launch(s.run_id, run_start, run_instance))
    host = _run_host(s.run_id)
    later = [
        t
        for r, t in run_start.items()
        if host is not None and _run_host(r) == host and since < t < math.inf
    ]
    return since, min(end, min(later, default=math.inf))


def _run_host(run_id: str) -> str | None:
    """The host part of a run id as the plugin derives it (``STAMP-HOST-PID``), else None."""
    stamp, _, rest = run_id.partition("-")
    host, _, pid = rest.rpartition("-")
    return host if len(stamp) == 16 and host and pid.isdigit() else None


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
