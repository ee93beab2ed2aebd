"""The maintenance pass: compact finished ledgers, then refresh the root's summary.

Run by ``vllm-ledger compact`` (cron) and, in the background, for the writer of API rank 0
a minute after start and every six hours, in a low-priority child process
(``python -m vllm_ledger.maintenance ROOT``, started by ``background.py``). A non-blocking
``flock`` on ``ROOT/.vllm-ledger-maintenance.lock`` keeps two passes from overlapping. It only ever
deletes per-second rows older than the compaction horizon from sound, finished files, and
rewrites the derived summary. Standard library only.

It sits above both sides: it compacts (write side) and reads facts and writes the summary of
finished files (read side). It never runs inside a vLLM process: the entry point
``vllm_ledger.plugin`` only spawns it, so no read-side module is imported into vLLM.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from vllm_ledger.read import summary, writer_state
from vllm_ledger.read.open_ledger import read_ledger
from vllm_ledger.read.snapshot import LedgerSnapshot
from vllm_ledger.write import compaction

LOCK_NAME = ".vllm-ledger-maintenance.lock"


@dataclass
class MaintenanceResult:
    compacted: list[compaction.CompactResult] = field(default_factory=list)
    summary_entries: int = 0
    files_read: int = 0
    skipped_locked: bool = False


@contextlib.contextmanager
def _lock(root: Path) -> Iterator[bool]:
    fd = os.open(str(root / LOCK_NAME), os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def _needs_compaction(snap: LedgerSnapshot, now_ts: float, horizon: int) -> bool:
    """A file whose writer is gone and that may hold seconds older than the horizon."""
    done = writer_state.finished(
        clean_close_ts=snap.clean_close_ts, last_proof_ts=snap.last_proof_ts, at_ts=now_ts
    )
    first = min((s for s, _ in snap.spans), default=math.inf)
    fresh = snap.compacted_before_ts is not None and snap.compacted_before_ts >= horizon
    return done and first < horizon and not fresh


def run(root: Path, clock: Callable[[], float] = time.time) -> MaintenanceResult:
    """Compact finished files and rewrite the summary, in one walk over the root.

    Each file is opened once to read its facts (none whose summary entry still matches); a file
    that needs compacting is then opened read-write by ``compaction.compact_file`` and read once
    more for its new summary entry.
    """
    result = MaintenanceResult()
    now = clock()
    horizon = compaction.horizon_ts(now)

    def compact(snap: LedgerSnapshot) -> LedgerSnapshot:
        if not _needs_compaction(snap, now, horizon):
            return snap
        result.compacted.append(compaction.compact_file(snap.path, now))
        return read_ledger(snap.path, [summary.EVERYTHING], now_ts=now)

    with _lock(root) as held:
        if not held:
            result.skipped_locked = True
            return result
        result.summary_entries, result.files_read = summary.refresh(root, now, prepare=compact)
    return result


def lower_priority() -> None:
    """The idle CPU class for this process: ``nice`` 19 and, where allowed, ``SCHED_IDLE``.

    IO priority follows the CPU nice level under Linux's IO schedulers (best effort, level
    7), so the pass also yields the disk. Never raises: an unchanged priority is no fault.
    """
    with contextlib.suppress(OSError, AttributeError):
        os.nice(19)
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def main(argv: list[str] | None = None) -> int:
    """``python -m vllm_ledger.maintenance ROOT``: one pass at idle priority (the child that
    the rank-0 writer spawns, ``background.py``). Exit 0 also when another pass holds the
    lock; an error is one line on stderr, exit 1."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m vllm_ledger.maintenance ROOT", file=sys.stderr)
        return 2
    lower_priority()
    try:
        run(Path(args[0]))
    except Exception as exc:
        print(f"maintenance pass failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
