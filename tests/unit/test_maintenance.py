"""One maintenance pass over a root: finished files past the horizon compacted once, the
summary written, a second pass kept off by the lock, and the child's exit codes."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from tests.ledgers import ev, second_rows, write_ledger
from vllm_ledger import maintenance
from vllm_ledger.read import summary
from vllm_ledger.units import SECONDS_PER_DAY as DAY

NOW = 1_800_000_000.0


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """run-old closed ten days ago; run-new closed an hour ago; run-live still writing."""
    for run, start, clean in (
        ("run-old", NOW - 10 * DAY, True),
        ("run-new", NOW - 3700, True),
        ("run-live", NOW - 60, False),
    ):
        write_ledger(
            tmp_path,
            run,
            start_ts=start,
            end_ts=start + 40,
            clean=clean,
            events=[ev(start + 5, prompt=3)],
            heartbeat_every_s=20,
        )
    return tmp_path


def test_a_pass_compacts_old_finished_files_and_writes_the_summary(root: Path) -> None:
    rows = second_rows(root)
    result = maintenance.run(root, clock=lambda: NOW)
    assert [(c.path.parent.name, c.status) for c in result.compacted] == [("run-old", "compacted")]
    assert second_rows(root) == rows - result.compacted[0].rows_deleted
    assert (result.summary_entries, result.files_read, result.skipped_locked) == (2, 3, False)
    assert sorted(summary.load(root)) == [
        "run-new/w0.g0.ledger.sqlite",
        "run-old/w0.g0.ledger.sqlite",
    ]
    again = maintenance.run(root, clock=lambda: NOW)
    assert (again.compacted, again.summary_entries, again.files_read) == ([], 2, 1)


def test_a_pass_while_another_holds_the_lock_does_nothing(root: Path) -> None:
    fd = os.open(root / maintenance.LOCK_NAME, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = maintenance.run(root, clock=lambda: NOW)
    finally:
        os.close(fd)
    assert result == maintenance.MaintenanceResult(skipped_locked=True)
    assert not (root / summary.SUMMARY_NAME).exists()


def test_the_child_says_its_usage_and_its_failure_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert maintenance.main([]) == 2
    assert capsys.readouterr().err == "usage: python -m vllm_ledger.maintenance ROOT\n"
    monkeypatch.setattr(maintenance, "lower_priority", lambda: None)  # not this test process
    assert maintenance.main([str(tmp_path / "missing")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("maintenance pass failed: FileNotFoundError: ") and err.count("\n") == 1
    assert maintenance.main([str(tmp_path)]) == 0
