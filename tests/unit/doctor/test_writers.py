"""doctor/writers.py and the newest run (doctor/base.py), pure: writer statuses as a report
gives them, before and after the watch. Real writer processes are tests/test_doctor.py's."""

from __future__ import annotations

from vllm_ledger.doctor.base import newest_run
from vllm_ledger.doctor.writers import heartbeats_moved, run_writers, writers_row
from vllm_ledger.read.report import WriterStatus

T = 1_800_000_000.0


def _w(
    rank: int,
    last: float | None,
    *,
    state: str = "alive",
    run: str = "run-1",
    expected: int = 2,
    first: float | None = T - 100,
) -> WriterStatus:
    return WriterStatus(run, rank, expected, "h:8000", state, first, last)  # type: ignore[arg-type]


def test_the_newest_run_is_the_one_started_last() -> None:
    writers = [_w(0, T, run="old", first=T - 900), _w(0, T, run="new", first=T - 5)]
    assert newest_run(writers) == "new"
    assert newest_run([_w(0, None, first=None)]) is None
    assert newest_run([]) is None


def test_one_status_per_rank_the_file_alive_last() -> None:
    older, newer = _w(0, T - 50), _w(0, T - 1)
    got = run_writers([older, newer, _w(1, T, run="other")], "run-1")
    assert got == {0: newer}


def test_a_heartbeat_moved_when_it_is_newer_than_at_the_start() -> None:
    first = {0: _w(0, T), 1: _w(1, T)}
    latest = {0: _w(0, T + 5), 1: _w(1, T), 2: _w(2, T + 5)}
    assert heartbeats_moved(first, latest) == {0, 2}  # rank 2 appeared while watched


def test_every_writer_alive_and_moving_passes() -> None:
    first = {0: _w(0, T), 1: _w(1, T)}
    latest = {0: _w(0, T + 5), 1: _w(1, T + 4.5)}
    row = writers_row("run-1", first, latest, watched_s=5.2, now=T + 5.5)
    assert (row.check, row.passed, row.fix) == ("writers", True, "")
    assert row.checked == (
        "run run-1, 2 expected writers: w0 alive (heartbeat 0.5 s ago), "
        "w1 alive (heartbeat 1.0 s ago)"
    )


def test_silent_stale_and_missing_writers_are_named() -> None:
    first = {0: _w(0, T, expected=3), 1: _w(1, T - 40, expected=3)}
    latest = {0: _w(0, T, expected=3), 1: _w(1, T - 40, state="stale", expected=3)}
    row = writers_row("run-1", first, latest, watched_s=12.3, now=T + 12)
    assert not row.passed
    assert row.checked == (
        "run run-1, 3 expected writers: w0 silent: no heartbeat in 12 s (last 12.0 s ago), "
        "w1 stale (last heartbeat 52.0 s ago), w2 missing (no ledger file)"
    )
    assert row.fix.startswith("an API process that is silent or gone is not recording")


def test_a_count_other_than_expected_fails_with_both_ways_out() -> None:
    first = {0: _w(0, T, expected=1)}
    row = writers_row("run-1", first, {0: _w(0, T + 5, expected=1)}, watched_s=5, now=T + 5)
    assert row.passed
    assert row.checked == "run run-1, 1 expected writer: w0 alive (heartbeat 0.0 s ago)"
    row = writers_row(
        "run-1", first, {0: _w(0, T + 5, expected=1)}, watched_s=5, now=T + 5, expect_writers=8
    )
    assert not row.passed and row.checked.endswith("; you expect 8")
    assert row.fix == (
        "the run expects 1: launch with --api-server-count 8 (and VLLM_LEDGER_WRITERS=8), "
        "or pass --expect-writers 1"
    )
