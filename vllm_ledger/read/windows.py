"""The five report windows for an instant and a time zone. Pure functions.

All instants are integer wall-clock seconds (Unix time). A window is the half-open
interval ``[start_ts, cutoff_ts)``; the cutoff is the start of the current second, so the
unfinished second is never included.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

WINDOW_NAMES: tuple[str, ...] = ("today", "24h", "3d", "7d", "total")
ROLLING_HOURS = {"24h": 24, "3d": 72, "7d": 168}
DEFAULT_TZ = "Asia/Shanghai"


@dataclass(frozen=True)
class Window:
    name: str
    start_ts: int
    cutoff_ts: int

    @property
    def seconds(self) -> int:
        return max(0, self.cutoff_ts - self.start_ts)


def cutoff_for(at_ts: float) -> int:
    """The start of the second ``at_ts`` falls in."""
    return math.floor(at_ts)


def local_midnight_ts(cutoff_ts: int, tz: ZoneInfo) -> int:
    """The most recent midnight in ``tz`` at or before ``cutoff_ts``."""
    local = datetime.fromtimestamp(cutoff_ts, tz)
    midnight = datetime(local.year, local.month, local.day, tzinfo=tz)
    # A zone whose midnight does not exist that day (a DST jump at 00:00) starts the day at
    # the first instant that does; fold handling in zoneinfo makes this exact.
    ts = int(midnight.timestamp())
    if ts > cutoff_ts:  # pragma: no cover - only in zones with odd transitions
        ts = int((midnight - timedelta(days=1)).timestamp())
    return ts


def windows_at(at_ts: float, tz: ZoneInfo, first_record_ts: int | None) -> list[Window]:
    """today / 24h / 3d / 7d / total as of ``at_ts``.

    ``total`` starts at the first record (or is empty when there is none).
    """
    cutoff = cutoff_for(at_ts)
    out = [Window("today", local_midnight_ts(cutoff, tz), cutoff)]
    for name, hours in ROLLING_HOURS.items():
        out.append(Window(name, cutoff - hours * 3600, cutoff))
    start_total = cutoff if first_record_ts is None else min(first_record_ts, cutoff)
    out.append(Window("total", start_total, cutoff))
    return out
