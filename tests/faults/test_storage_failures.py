"""Storage that fails under the recorder, for real: a full tmpfs, a read-only remount, an
immutable (chattr +i) directory, a directory the writer's user cannot write. The recorder keeps
serving, each batch it gives up is counted as lost in its seconds (write_failed), and the
report is incomplete meanwhile."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.helpers import (
    WriterProc,
    fill_disk,
    ledger_files,
    pumped_recorder,
    quick_check,
    snapshot,
    tmpfs,
)
from tests.ledgers import ev
from vllm_ledger.read.report import build_report

T0 = 1_800_000_000.0


def _report(root: Path, at: float):
    return build_report([root], at_ts=at, clock=lambda: at, tz="UTC")


def test_full_disk_loses_batches_counted_and_recovers() -> None:
    # 512 KiB leaves room for the WAL: frames of failed commits stay in it until it is reset.
    with tmpfs("512k") as mnt:
        root = mnt / "ledger"
        rec, clock = pumped_recorder(root, "run-1", T0)
        for k in range(3):  # healthy: T0, T0+5, T0+10
            clock.t = T0 + 5 * k
            rec.submit(ev(clock.t - 0.5, prompt=7, gen=1))
            assert rec.pump()
        filler = fill_disk(mnt)

        rec.submit(ev(T0 + 14.5, prompt=3))
        rec.submit(ev(T0 + 14.6, prompt=3))
        for k, t in enumerate((T0 + 15, T0 + 20, T0 + 25)):
            clock.t = t
            if k == 1:
                for j in range(10):
                    assert rec.submit(ev(T0 + 17.5 + j / 100, prompt=3))  # still accepted
            assert rec.pump() is False  # never raises
        assert rec.commit_failures_total == 3
        assert rec.lost_events_total == 12
        assert "full" in (rec.last_error or "")
        (path,) = ledger_files(root)
        assert quick_check(path) == "ok"  # the failed batch left nothing half-written

        # Meanwhile the report cannot vouch past the last good heartbeat.
        during = _report(root, T0 + 41).window("total")
        assert during.input_tokens == 21
        assert during.problems == {"heartbeat_stale": 1}
        assert during.complete is False
        # The first event's second, then since T0+10 (its last vouched second trimmed: the
        # writer is stale, and a stale writer's last second is not vouched for).
        assert during.uncovered_seconds == 1 + 31 + 1

        filler.unlink()
        for t in (T0 + 30, T0 + 35, T0 + 40):
            clock.t = t
            assert rec.pump(final=t == T0 + 40)
        snap = snapshot(path)
        assert sorted(snap.problem_seconds) == [
            (int(T0 + 14), 0, 0, 2),
            (int(T0 + 17), 0, 0, 10),
        ]
        total = _report(root, T0 + 40).window("total")
        assert total.input_tokens == 21 and total.output_tokens == 3
        assert total.problems == {"write_failed": 12}
        assert total.uncovered_seconds == 1 + 20  # T0+10..T0+30: no commit landed
        assert total.complete is False


@pytest.fixture
def ro_mount() -> Iterator[tuple[Path, list[str], list[str]]]:
    with tmpfs("1m") as mnt:
        yield (
            mnt / "ledger",
            ["mount", "-o", "remount,ro", str(mnt)],
            [
                "mount",
                "-o",
                "remount,rw",
                str(mnt),
            ],
        )


@pytest.fixture
def immutable_dir(tmp_path: Path) -> Iterator[tuple[Path, list[str], list[str]]]:
    root = tmp_path / "ledger"
    root.mkdir()
    yield root, ["chattr", "+i", str(root)], ["chattr", "-i", str(root)]
    subprocess.run(["chattr", "-i", str(root)], check=False)


@pytest.mark.parametrize("fault", ["ro_mount", "immutable_dir"])
def test_unwritable_at_start_then_recovers(fault: str, request: pytest.FixtureRequest) -> None:
    root, on, off = request.getfixturevalue(fault)
    if fault == "ro_mount":
        root.mkdir()
    subprocess.run(on, check=True)
    rec, clock = pumped_recorder(root, "run-1", T0)
    for j in range(5):
        assert rec.submit(ev(T0 - 0.5 + j / 100, prompt=4))
    for t in (T0, T0 + 5, T0 + 10):
        clock.t = t
        assert rec.pump() is False
    assert rec.lost_events_total == 5
    assert ledger_files(root) == []
    # Nothing on disk: no figure is shown as complete.
    empty = _report(root, T0 + 11)
    assert all(not w.complete for w in empty.windows)
    assert empty.writers == ()

    subprocess.run(off, check=True)
    for t in (T0 + 15, T0 + 20):
        clock.t = t
        assert rec.pump(final=t == T0 + 20)
    total = _report(root, T0 + 20).window("total")
    assert total.input_tokens == 0
    assert total.problems == {"write_failed": 5}
    assert total.start_ts == int(T0) - 1
    assert total.uncovered_seconds == 16  # from the lost second until the first commit
    assert total.complete is False


def test_directory_not_writable_by_the_writers_user() -> None:
    """vLLM running as an unprivileged user, the ledger root owned by root (0755)."""
    base = Path(tempfile.mkdtemp(prefix="ledger-nobody-", dir="/tmp"))
    try:
        base.chmod(0o755)
        root = base / "ledger"
        root.mkdir(mode=0o755)
        w = WriterProc.start(
            "--root",
            str(root),
            "--run-id",
            "run-1",
            "--events",
            "50",
            "--burst",
            "50",
            "--wait-lost",
            "--close",
            user="65534",
        )
        rc, err = w.finish(timeout_s=60)
        assert rc == 0, err[-2000:]
        assert "Traceback" not in err
        assert w.wait_line("LOST") == "LOST 50"
        assert w.wait_line("CLOSED") == "CLOSED False 0 50"
        assert "Permission denied" in err  # logged once, as a warning
        assert os.listdir(root) == []
    finally:
        shutil.rmtree(base)


def test_a_writer_that_keeps_failing_logs_an_error_at_most_once_a_minute(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """150 s of failing commits (the root is a file: nothing can be created) on a fake clock:
    three errors in vLLM's log (at 0, 60 and 120 s), each counting the failures since the last."""
    root = tmp_path / "not-a-dir"
    root.write_text("")
    rec, clock = pumped_recorder(root, "run-1", T0)
    rec.monotonic = clock  # the log's minute on the same fake clock
    caplog.set_level("WARNING", logger="vllm.ledger.recorder")
    for k in range(150):
        clock.t = T0 + k
        rec.submit(ev(clock.t - 0.5, prompt=1))
        assert rec.pump() is False
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 3, errors
    assert [m.split("(")[1].split(" ")[0] for m in errors] == ["1", "60", "60"]
    assert all("Not a directory" in m or "File exists" in m for m in errors), errors
    assert rec.commit_failures_total == 150
    assert root.read_text() == ""  # nothing written anywhere
