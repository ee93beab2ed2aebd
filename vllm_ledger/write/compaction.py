"""Keep ledgers small at any age: per-second rows only where a window edge can fall.

Every commit writes each second twice: into ``buckets`` (per second) and ``hourly``. Report
windows other than ``total`` reach back at most 168 hours, so per-second rows older than the
horizon (8 days and an hour, hour-aligned) are never needed for an exact report as of now;
compaction deletes them, in one transaction, and records ``compacted_before_ts``. The hourly
rows and the ``problem_seconds`` and ``spans`` tables are never compacted, so every window and
every coverage figure stays exact to the token and to the second.

A file is compacted only by its own writer (on the writer's thread) or, once its writer has
closed or gone, by a maintenance pass, and only if ``PRAGMA quick_check`` says it is sound.
A SIGKILL mid-compaction rolls the transaction back: nothing is lost.

Standard library only: the writer compacts its own file inside vLLM.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from vllm_ledger.format import connect, writes
from vllm_ledger.units import SECONDS_PER_DAY as DAY
from vllm_ledger.units import SECONDS_PER_HOUR as HOUR

HORIZON_S = 8 * DAY + HOUR


def horizon_ts(now_ts: float) -> int:
    """Per-second rows before this (hour-aligned) instant may go."""
    t = int(now_ts) - HORIZON_S
    return t - t % HOUR


def compact_connection(conn: sqlite3.Connection, horizon: int) -> int:
    """Delete per-second rows before ``horizon`` in one transaction; returns rows deleted."""
    return writes.compact(conn, horizon)


@dataclass(frozen=True)
class CompactResult:
    path: Path
    status: str  # compacted | unchanged | skipped
    rows_deleted: int = 0
    detail: str = ""


def compact_file(path: Path, now_ts: float) -> CompactResult:
    """Compact a ledger whose writer is gone. Never touches a file that is not sound."""
    verdict = connect.quick_check(path)
    if verdict != "ok":
        return CompactResult(path, "skipped", detail=f"quick_check: {verdict}")
    try:
        conn = connect.open_for_write(path, now_ts)
    except sqlite3.Error as exc:
        return CompactResult(path, "skipped", detail=str(exc))
    try:
        deleted = compact_connection(conn, horizon_ts(now_ts))
    except sqlite3.Error as exc:
        return CompactResult(path, "skipped", detail=str(exc))
    finally:
        conn.close()
    return CompactResult(path, "compacted" if deleted else "unchanged", deleted)
