"""The ``storage`` check: what a storage failure does, and whether the roots would cause one.

First a self-test in a temporary place that refuses writes (a tiny full tmpfs where this
process may mount one, else a read-only directory, else a path under a regular file): the real
recorder must count the failed commits and the lost events and never raise. Then the ledger
roots themselves: writable, not read-only, not full, and no event of the newest run lost to a
failed write.

``SelfTest.flagged``, ``run_lost`` and ``storage_row`` are pure; the self-test, the roots'
``statvfs`` and the report are the edges.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from vllm_ledger import __version__
from vllm_ledger.doctor.base import Row, newest_run, quiet_ledger_log
from vllm_ledger.errors import LedgerError
from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.read.report import Report, build_report
from vllm_ledger.write.recorder import MAX_RETRIES, Recorder

# Below this much free space under a ledger root, the next commits may fail.
MIN_FREE_BYTES = 64 * 1024 * 1024
TMPFS_SIZE = "512k"  # room for a ledger and its WAL, then filled
SELFTEST_EVENTS = 3

StoragePlace = Literal["tmpfs", "read-only directory", "path under a regular file"]
PLACES: tuple[StoragePlace, ...] = ("tmpfs", "read-only directory", "path under a regular file")


@dataclass(frozen=True)
class SelfTest:
    place: StoragePlace
    raised: str | None
    commit_failures: int
    lost_events: int
    last_error: str | None

    @property
    def flagged(self) -> bool:
        """The recorder counted the failure as it must: every retry failed, every event lost,
        the error kept, nothing raised."""
        return (
            self.raised is None
            and self.commit_failures >= MAX_RETRIES
            and self.lost_events == SELFTEST_EVENTS
            and bool(self.last_error)
        )


def _mount_tmpfs(where: Path) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    p = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0700", "tmpfs", str(where)],
        capture_output=True,
        timeout=30,
        check=False,
    )
    return p.returncode == 0


def _fill(directory: Path) -> None:
    with open(directory / "filler.bin", "wb", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\xff" * 4096)
    with open(directory / "filler.bin", "ab", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\xff")


@contextlib.contextmanager
def refusing_place(
    base: Path, places: Sequence[StoragePlace] = PLACES
) -> Iterator[tuple[StoragePlace, Path, Callable[[], None]]]:
    """A ledger root under ``base`` that refuses writes, the first of ``places`` this process
    can make (a path under a regular file when none of them), and the call that makes it
    refuse (the tmpfs is healthy until it is filled)."""
    for place in places:
        if place == "tmpfs":
            mnt = base / "tmpfs"
            mnt.mkdir()
            if not _mount_tmpfs(mnt):
                mnt.rmdir()
                continue
            try:
                yield place, mnt / "ledger", functools.partial(_fill, mnt)
            finally:
                subprocess.run(["umount", "-l", str(mnt)], capture_output=True, check=False)
            return
        if place == "read-only directory":
            ro = base / "read-only"
            ro.mkdir(mode=0o555)
            ro.chmod(0o555)
            try:
                (ro / "probe").mkdir()
            except OSError:
                yield place, ro / "ledger", lambda: None
                return
            (ro / "probe").rmdir()  # this user writes anyway (root): try the next place
            continue
    # No user can create a directory under a regular file: the place every process can make.
    regular = base / "a-file"
    regular.write_bytes(b"")
    yield "path under a regular file", regular / "ledger", lambda: None


def storage_selftest(places: Sequence[StoragePlace] = PLACES) -> SelfTest:
    """The real recorder, pumped on a clock moved 5 s a time, over storage that refuses
    writes: ``SELFTEST_EVENTS`` events must be counted lost, each failed commit counted, and
    nothing raised."""
    base = Path(tempfile.mkdtemp(prefix="vllm-ledger-doctor-"))
    try:
        with quiet_ledger_log(), refusing_place(base, places) as (place, root, refuse):
            t = [time.time()]
            rec = Recorder(
                root,
                WriterIdentity(
                    "doctor-storage-selftest",
                    0,
                    1,
                    pid=os.getpid(),
                    instance=InstanceInfo(("doctor",), None, "doctor", "", __version__),
                ),
                clock=lambda: t[0],
            )
            raised = None
            try:
                if place == "tmpfs":
                    rec.submit((t[0] - 0.5, 0, 1, 1, 0, ()))
                    if not rec.pump():
                        raise RuntimeError(
                            f"a healthy tmpfs refused the first commit: {rec.last_error}"
                        )
                refuse()
                for j in range(SELFTEST_EVENTS):
                    rec.submit((t[0] + 0.5 + j / 100, 0, 2, 1, 0, ()))
                for _ in range(MAX_RETRIES):
                    t[0] += 5.0
                    rec.pump()
            except Exception as exc:
                raised = f"{type(exc).__name__}: {exc}"
            finally:
                with contextlib.suppress(Exception):
                    rec.abandon()
            return SelfTest(
                place, raised, rec.commit_failures_total, rec.lost_events_total, rec.last_error
            )
    finally:
        with contextlib.suppress(OSError):
            (base / "read-only").chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)
    raise AssertionError("unreachable: the last place always exists")  # pragma: no cover


def root_problems(root: Path, min_free_bytes: int = MIN_FREE_BYTES) -> list[str]:
    """Why ``root`` would refuse the ledger's next commits, if it would."""
    try:
        st = os.statvfs(root)
    except OSError as exc:
        return [f"{root}: {exc.strerror}"]
    out = []
    if st.f_flag & os.ST_RDONLY:
        out.append(f"{root} is on a read-only file system")
    free = st.f_bavail * st.f_frsize
    if free < min_free_bytes:
        out.append(f"{root} has {free:,} bytes free (under {min_free_bytes // 2**20} MiB)")
    if not os.access(root, os.W_OK | os.X_OK):
        out.append(f"{root} is not writable by this user")
    return out


def run_lost(report: Report) -> tuple[str | None, int]:
    """The newest run of ``report`` (made ``by="run"``) and the events it lost to failed
    writes over its whole life. Pure."""
    run_id = newest_run(report.writers)
    row = next((r for r in report.breakdown if r.key == run_id), None)
    if row is None:
        return run_id, 0
    total = next(w for w in row.windows if w.name == "total")
    return run_id, total.problems.get("write_failed", 0)


def storage_row(
    test: SelfTest,
    roots: Sequence[Path],
    roots_refuse: Sequence[str],
    *,
    run_id: str | None = None,
    lost: int = 0,
) -> Row:
    """The row for a self-test, what the roots would refuse (``root_problems``) and the events
    the newest run lost. Pure."""
    problems: list[str] = []
    fixes: list[str] = []
    if not test.flagged:
        why = (
            f"it raised {test.raised}"
            if test.raised
            else (
                f"{test.commit_failures} failed commits and {test.lost_events} of "
                f"{SELFTEST_EVENTS} events counted lost"
            )
        )
        problems.append(
            f"self-test on a {test.place}: the recorder did not flag the failure ({why})"
        )
        fixes.append("the recorder must count failures and never raise: report it as a bug")
    problems.extend(roots_refuse)
    if roots_refuse:
        fixes.append("free space, remount read-write, or fix the owner and mode of the root")
    if lost:
        problems.append(f"run {run_id} lost {lost:,} events to failed writes")
        fixes.append(
            "that storage refused the ledger's commits (full, read-only or "
            "unwritable): fix it; those seconds stay uncovered (docs/faults.md)"
        )
    selftest = (
        f"self-test on a {test.place}: {test.commit_failures} failed commits and "
        f"{test.lost_events} lost events counted, nothing raised"
        if test.flagged
        else ""
    )
    if problems:
        text = "; ".join([*([selftest] if selftest else []), *problems])
        return Row("storage", False, text, "; ".join(fixes))
    where = ", ".join(map(str, roots))
    return Row(
        "storage", True, f"{selftest}; {where} writable with room, no write failures recorded"
    )


def check_storage(
    roots: Sequence[Path],
    *,
    clock: Callable[[], float] = time.time,
    places: Sequence[StoragePlace] = PLACES,
) -> Row:
    test = storage_selftest(places)
    refuse = [p for root in roots for p in root_problems(root)]
    try:
        report = build_report(roots, at_ts=clock(), by="run", clock=clock)
    except LedgerError:
        return storage_row(test, roots, refuse)
    run_id, lost = run_lost(report)
    return storage_row(test, roots, refuse, run_id=run_id, lost=lost)
