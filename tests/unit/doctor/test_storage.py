"""doctor/storage.py, pure: the self-test's verdict, the newest run's lost events, the row. The
self-test in each of its places and real refusing roots are tests/test_doctor.py's."""

from __future__ import annotations

from pathlib import Path

from vllm_ledger.doctor.storage import SELFTEST_EVENTS, SelfTest, run_lost, storage_row
from vllm_ledger.read.report import BreakdownRow, Report, WindowReport, WriterStatus

FLAGGED = SelfTest("tmpfs", None, 3, SELFTEST_EVENTS, "OSError: [Errno 28] No space left")
ROOT = Path("/srv/usage")


def test_the_selftest_is_flagged_only_when_everything_was_counted() -> None:
    assert FLAGGED.flagged
    assert not SelfTest("tmpfs", "OSError: boom", 3, 3, "x").flagged  # it raised
    assert not SelfTest("tmpfs", None, 1, 3, "x").flagged  # a failed commit not counted
    assert not SelfTest("tmpfs", None, 3, 2, "x").flagged  # an event not counted lost
    assert not SelfTest("tmpfs", None, 3, 3, None).flagged  # no error kept


def test_a_flagged_selftest_and_healthy_roots_pass() -> None:
    row = storage_row(FLAGGED, [ROOT], [])
    assert (row.check, row.passed, row.fix) == ("storage", True, "")
    assert row.checked == (
        "self-test on a tmpfs: 3 failed commits and 3 lost events counted, nothing raised; "
        "/srv/usage writable with room, no write failures recorded"
    )


def test_each_problem_is_named_with_its_fix() -> None:
    row = storage_row(
        SelfTest("read-only directory", "RuntimeError: x", 0, 0, None),
        [ROOT],
        ["/srv/usage is on a read-only file system"],
        run_id="run-1",
        lost=1200,
    )
    assert not row.passed
    assert row.checked == (
        "self-test on a read-only directory: the recorder did not flag the failure (it raised "
        "RuntimeError: x); /srv/usage is on a read-only file system; run run-1 lost 1,200 "
        "events to failed writes"
    )
    assert row.fix.split("; ")[:2] == [
        "the recorder must count failures and never raise: report it as a bug",
        "free space, remount read-write, or fix the owner and mode of the root",
    ]
    assert row.fix.endswith("those seconds stay uncovered (docs/faults.md)")


def test_the_newest_runs_write_failures_over_its_whole_life() -> None:
    def total(lost: int) -> WindowReport:
        return WindowReport("total", 0, 0, 0, 0, 0, 0, 0, 0.0, 0, False, {"write_failed": lost})

    report = Report(
        schema=1, generated_ts=0.0, at_ts=0.0, cutoff_ts=0, tz="UTC", roots=(), windows=(),
        writers=(
            WriterStatus("run-1", 0, 1, "h", "closed", 100.0, 200.0),
            WriterStatus("run-2", 0, 1, "h", "alive", 300.0, 400.0),
        ),
        files=(), runs=2, breakdown_by="run",
        breakdown=(BreakdownRow("run-1", (total(5),)), BreakdownRow("run-2", (total(12),))),
    )  # fmt: skip
    assert run_lost(report) == ("run-2", 12)
