"""One run's coverage from its files' snapshots (built here as they are read): each writer's
state and whole vouched seconds, the run's shared seconds, and a closed run's fixed record."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from vllm_ledger.format.identity import InstanceInfo
from vllm_ledger.read.run_coverage import (
    TAIL_S,
    WriterStatus,
    closed_run,
    first_record_seconds,
    gaps,
    run_coverage,
    run_start_ts,
    writer_coverage,
)
from vllm_ledger.read.snapshot import LedgerSnapshot

T = 1_800_000_000.0
INST = InstanceInfo(("tiny",), 8000, "h")


def snap(rank: int, spans: list[tuple[float, float]], **kw: Any) -> LedgerSnapshot:
    fields: dict[str, Any] = {"run_id": "run-a", "instance": INST, "spans": spans, **kw}
    return LedgerSnapshot(Path(f"run-a/w{rank}.ledger.sqlite"), "ok", writer_rank=rank, **fields)


def test_a_closed_writer_vouches_for_its_whole_seconds() -> None:
    s = snap(
        0, [(T + 0.5, T + 10.2), (T + 10.2, T + 20.7), (T + 30, T + 30)], clean_close_ts=T + 30
    )
    status, vouched = writer_coverage([s], "run-a", 0, 1, "h:8000", T + 99, latest=True)
    assert status == WriterStatus("run-a", 0, 1, "h:8000", "closed", T + 0.5, T + 30)
    assert vouched == [(T + 1, T + 20)]  # the lone heartbeat at T+30 vouches for nothing


def test_a_writer_that_did_not_close_loses_the_second_before_its_last_proof() -> None:
    assert TAIL_S == 1.0
    s = snap(0, [(T, T + 20.5)])
    alive, vouched = writer_coverage([s], "run-a", 0, 1, "h:8000", T + 21, latest=True)
    assert (alive.state, vouched) == ("alive", [(T, T + 19)])
    stale, _ = writer_coverage([s], "run-a", 0, 1, "h:8000", T + 60, latest=True)
    crashed, _ = writer_coverage([s], "run-a", 0, 1, "h:8000", T + 60, latest=False)
    assert (stale.state, crashed.state) == ("stale", "crashed")


def test_the_newest_generation_says_whether_the_writer_closed() -> None:
    older = snap(0, [(T, T + 10)], generation=0, clean_close_ts=T + 10)
    newer = snap(0, [(T + 10, T + 20)], generation=1)
    status, vouched = writer_coverage([older, newer], "run-a", 0, 1, "i", T + 21, latest=True)
    assert (status.state, vouched) == ("alive", [(T, T + 19)])


def test_a_run_vouches_where_every_expected_writer_does() -> None:
    ranks = {
        0: [snap(0, [(T, T + 100)], expected_writers=2, clean_close_ts=T + 100)],
        1: [snap(1, [(T + 10, T + 50)], expected_writers=2, clean_close_ts=T + 50)],
    }
    rc = run_coverage(
        "run-a",
        ranks,
        start_ts=T,
        instance_key="h:8000",
        at_ts=T + 200,
        cutoff=int(T + 200),
        latest=True,
    )
    # rank 1 came up after the run began: it vouches from the run's start
    assert rc.vouched == [(T, T + 50)]
    assert (rc.start_ts, rc.end_ts, rc.closed) == (T, T + 100, True)
    assert [w.state for w in rc.writers] == ["closed", "closed"]
    doubtful = run_coverage(
        "run-a",
        ranks,
        start_ts=T,
        instance_key="h:8000",
        at_ts=T + 200,
        cutoff=int(T + 200),
        latest=True,
        doubtful={("run-a", 1)},
    )
    assert doubtful.vouched == [(T + 10, T + 50)]


def test_a_missing_writer_leaves_the_run_uncovered_and_a_live_one_reaches_the_cutoff() -> None:
    ranks = {0: [snap(0, [(T, T + 100)], expected_writers=2)]}
    rc = run_coverage(
        "run-a",
        ranks,
        start_ts=T,
        instance_key="h:8000",
        at_ts=T + 101,
        cutoff=int(T + 101),
        latest=True,
    )
    assert rc.vouched == [] and not rc.closed
    assert rc.end_ts == T + 101
    assert rc.writers[1] == WriterStatus("run-a", 1, 2, "h:8000", "missing", T, T + 101)


def test_start_first_records_and_lost_commits() -> None:
    a = snap(0, [(T + 5.5, T + 9)], first_bucket_ts=int(T + 7))
    b = snap(1, [(T + 2.25, T + 3)], missing_commits=3, marker_ts=T + 8)
    c = snap(2, [], missing_commits=1)
    assert run_start_ts([a, b, c]) == T + 2.25
    assert run_start_ts([c]) == math.inf
    assert first_record_seconds([a, b, c]) == [T + 7, T + 6, T + 3]
    assert gaps([a, b, c]) == [(T + 3, T + 8, 3), (-math.inf, math.inf, 1)]


def test_a_closed_run_keeps_its_coverage_faults_and_first_record() -> None:
    w0 = snap(
        0,
        [(T, T + 100)],
        expected_writers=2,
        clean_close_ts=T + 100,
        problem_seconds=[(int(T) + 9, 1, 0, 0)],
    )
    w1 = snap(
        1,
        [(T + 0.5, T + 60)],
        expected_writers=2,
        clean_close_ts=T + 60,
        first_bucket_ts=int(T) + 3,
        problem_seconds=[(int(T) + 4, 0, 2, 0)],
    )
    fixed = closed_run([w1, w0])
    assert fixed is not None
    assert fixed.coverage.closed and fixed.coverage.vouched == [(T, T + 60)]
    assert fixed.problem_seconds == [(int(T) + 4, 0, 2, 0), (int(T) + 9, 1, 0, 0)]
    assert (fixed.gaps, fixed.first_record_ts) == ([], int(T))


def test_a_run_that_is_not_fixed_has_no_closed_record() -> None:
    closed = snap(0, [(T, T + 10)], clean_close_ts=T + 10)
    assert closed_run([]) is None
    assert closed_run([snap(0, [(T, T + 10)])]) is None  # did not close
    assert closed_run([snap(0, [], clean_close_ts=T)]) is None  # no span
    assert closed_run([LedgerSnapshot(Path("x"), "bad_values")]) is None
    other_run = snap(1, [(T, T + 10)], clean_close_ts=T + 10, run_id="run-b")
    assert closed_run([closed, other_run]) is None
    assert closed_run([closed, closed]) is None  # a copy of one file
    missing = snap(0, [(T, T + 10)], expected_writers=2, clean_close_ts=T + 10)
    record = closed_run([missing])  # a missing writer is fixed as well: never coming up
    assert record is not None and record.coverage.vouched == [] and not record.coverage.closed
