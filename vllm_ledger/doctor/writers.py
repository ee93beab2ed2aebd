"""The ``writers`` check: every expected writer of the newest run under the roots is alive and
its heartbeat moves while the doctor watches. A writer whose process died stops moving at once,
long before the 30 s after which the report calls it stale.

``run_writers``, ``heartbeats_moved``, ``still_unknown`` and ``writers_row`` are pure;
``check_writers`` reads the roots until every writer's state is known or the wait is over: a
writer that closed, went stale or crashed is known at once, a live one once its heartbeat has
moved, and a missing one at once when no writer of the run is still alive to be joined by it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from vllm_ledger.doctor.base import Row, newest_run
from vllm_ledger.errors import LedgerError
from vllm_ledger.read.report import WriterStatus, build_report
from vllm_ledger.units import format_duration

# A heartbeat every 5 s (recorder.HEARTBEAT_INTERVAL_S): two of them, and a second to commit.
HEARTBEAT_WAIT_S = 12.0
FIX_ROOT = "is vLLM running with the ledger on (VLLM_LEDGER_DIR) and is --root that folder?"


def run_writers(writers: Iterable[WriterStatus], run_id: str) -> dict[int, WriterStatus]:
    """One status per rank of ``run_id``: the file that proved alive last. Pure."""
    out: dict[int, WriterStatus] = {}
    for w in writers:
        if w.run_id != run_id:
            continue
        old = out.get(w.writer_rank)
        if old is None or (w.last_ts or 0) > (old.last_ts or 0):
            out[w.writer_rank] = w
    return out


def heartbeats_moved(
    first: Mapping[int, WriterStatus], latest: Mapping[int, WriterStatus]
) -> set[int]:
    """The ranks whose last heartbeat in ``latest`` is newer than in ``first`` (a rank that
    appeared since has moved). Pure."""
    moved = set()
    for r, w in latest.items():
        before = first.get(r)
        if w.last_ts is not None and w.last_ts > ((before.last_ts or 0) if before else 0):
            moved.add(r)
    return moved


def still_unknown(
    first: Mapping[int, WriterStatus], latest: Mapping[int, WriterStatus], expected: int
) -> set[int]:
    """The ranks whose state only a moving heartbeat can tell: alive but not moved since
    ``first``, or missing while another writer of the run is still alive (it may yet start).
    Empty when the watch can end. Pure."""
    moved = heartbeats_moved(first, latest)
    any_alive = any(w.state == "alive" for w in latest.values())
    unknown = set()
    for rank in range(max(expected, max(latest, default=-1) + 1)):
        w = latest.get(rank)
        if w is None or w.state == "missing":
            if any_alive:
                unknown.add(rank)
        elif w.state == "alive" and rank not in moved:
            unknown.add(rank)
    return unknown


def _ago(seconds: float) -> str:
    """``0.5 s ago`` under a minute (a heartbeat's age), else in words: ``1 h 5 min ago``."""
    if seconds < 60:
        return f"{seconds:.1f} s ago"
    return f"{format_duration(seconds, 'words')} ago"


def writers_row(
    run_id: str,
    first: Mapping[int, WriterStatus],
    latest: Mapping[int, WriterStatus],
    *,
    watched_s: float,
    now: float,
    expect_writers: int | None = None,
) -> Row:
    """The row for ``run_id``'s writers, watched ``watched_s`` from ``first`` to ``latest``
    (``first`` not empty). Pure."""
    expected = max(w.expected_writers for w in first.values())
    moved = heartbeats_moved(first, latest)
    named: list[str] = []
    bad: list[str] = []
    for rank in range(max(expected, max(latest, default=-1) + 1)):
        w = latest.get(rank)
        if w is None or w.state == "missing":
            text = f"w{rank} missing (no ledger file)"
        else:
            ago = _ago(now - w.last_ts) if w.last_ts is not None else "never"
            if w.state != "alive":
                text = f"w{rank} {w.state} (last heartbeat {ago})"
            elif rank not in moved:
                text = (
                    f"w{rank} silent: no heartbeat in {format_duration(watched_s, 'words')} "
                    f"(last {ago})"
                )
            else:
                named.append(f"w{rank} alive (heartbeat {ago})")
                continue
        named.append(text)
        bad.append(text)
    what = f"run {run_id}, {expected} expected writer{'s' if expected != 1 else ''}: "
    what += ", ".join(named)
    fixes: list[str] = []
    if bad:
        fixes.append(
            "an API process that is silent or gone is not recording: restart vLLM "
            "(a new run starts); a missing one never started its plugin: look for "
            "'vllm-ledger' in vLLM's log"
        )
    wrong_count = expect_writers is not None and expect_writers != expected
    if wrong_count:
        what += f"; you expect {expect_writers}"
        fixes.append(
            f"the run expects {expected}: launch with --api-server-count {expect_writers} "
            f"(and VLLM_LEDGER_WRITERS={expect_writers}), or pass --expect-writers {expected}"
        )
    return Row("writers", not bad and not wrong_count, what, "; ".join(fixes))


def check_writers(
    roots: Sequence[Path],
    *,
    wait_s: float = HEARTBEAT_WAIT_S,
    expect_writers: int | None = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> Row:
    try:
        report = build_report(roots, at_ts=clock(), clock=clock)
    except LedgerError as exc:
        return Row("writers", False, str(exc), FIX_ROOT)
    run_id = newest_run(report.writers)
    if run_id is None:
        return Row("writers", False, f"no writer under {', '.join(map(str, roots))}", FIX_ROOT)
    first = run_writers(report.writers, run_id)
    expected = max(w.expected_writers for w in first.values())
    start = clock()
    latest = first
    # Watch until every writer's state is known (a closed one at once), or the wait is over.
    while still_unknown(first, latest, expected) and clock() - start < wait_s:
        sleep(0.5)
        latest = run_writers(build_report(roots, at_ts=clock(), clock=clock).writers, run_id)
    now = clock()
    return writers_row(
        run_id, first, latest, watched_s=now - start, now=now, expect_writers=expect_writers
    )
