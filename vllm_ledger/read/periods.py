"""Billing periods beyond the five windows: yesterday, this and last month, 30 days, and an
arbitrary ``--since/--until``. Pure functions over integer Unix seconds and a zone.

Every period is a half-open ``Window`` ``[start_ts, cutoff_ts)`` whose edges fall on whole
seconds at local midnights (months and days follow the zone's calendar, so a day across a DST
change is 23 or 25 hours long, exactly). A period never reaches past the report's cutoff: a
period still running (``this-month``) or one the cutoff has not yet passed ends there, so a
period is only ever as complete as the seconds the ledgers have proven.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from vllm_ledger.errors import BadArgument
from vllm_ledger.read.windows import ROLLING_HOURS, Window, local_midnight_ts

# Every window name a command accepts, in one order (the five of the report first).
PERIOD_NAMES: tuple[str, ...] = (
    "today",
    "yesterday",
    "24h",
    "3d",
    "7d",
    "30d",
    "this-month",
    "last-month",
    "total",
)
_ROLLING = {**ROLLING_HOURS, "30d": 720}


def _local_midnight(year: int, month: int, day: int, tz: ZoneInfo) -> int:
    """The first instant of a local calendar day (a day whose midnight a DST jump skips starts
    at the first instant that exists)."""
    return local_midnight_ts(int(datetime(year, month, day, 12, tzinfo=tz).timestamp()), tz)


def month_start_ts(ts: int, tz: ZoneInfo, months_back: int = 0) -> int:
    """The local midnight starting the month ``ts`` falls in, or ``months_back`` months before."""
    local = datetime.fromtimestamp(ts, tz)
    index = local.year * 12 + (local.month - 1) - months_back
    return _local_midnight(index // 12, index % 12 + 1, 1, tz)


def period(name: str, cutoff_ts: int, tz: ZoneInfo, first_record_ts: int | None) -> Window:
    """The window ``name`` (one of ``PERIOD_NAMES``) as of ``cutoff_ts``, ending at it at most."""
    if name == "today":
        return Window(name, local_midnight_ts(cutoff_ts, tz), cutoff_ts)
    if name == "yesterday":
        today = local_midnight_ts(cutoff_ts, tz)
        noon_before = datetime.fromtimestamp(today, tz) - timedelta(hours=12)
        start = _local_midnight(noon_before.year, noon_before.month, noon_before.day, tz)
        return Window(name, start, min(today, cutoff_ts))
    if name in _ROLLING:
        return Window(name, cutoff_ts - _ROLLING[name] * 3600, cutoff_ts)
    if name == "this-month":
        return Window(name, month_start_ts(cutoff_ts, tz), cutoff_ts)
    if name == "last-month":
        this = month_start_ts(cutoff_ts, tz)
        return Window(name, month_start_ts(cutoff_ts, tz, 1), min(this, cutoff_ts))
    if name == "total":
        start = cutoff_ts if first_record_ts is None else min(first_record_ts, cutoff_ts)
        return Window(name, start, cutoff_ts)
    raise BadArgument(f"unknown window {name!r}: use one of {', '.join(PERIOD_NAMES)}")


def since_until(since_ts: float, until_ts: float | None, cutoff_ts: int) -> Window:
    """``[since, until)`` in whole seconds (``until`` defaults to the cutoff), ending at the
    cutoff at most: seconds not yet proven are never part of a period."""
    start = int(since_ts // 1)
    end = cutoff_ts if until_ts is None else min(int(until_ts // 1), cutoff_ts)
    if until_ts is not None and until_ts <= since_ts:
        raise BadArgument(
            "until must be after since",
            hint=f"got {since_ts:.0f} .. {until_ts:.0f}",
            argument="until",
            value=until_ts,
            example="since 2026-11-01T00:00:00+08:00, until 2026-12-01T00:00:00+08:00",
        )
    return Window("period", start, max(start, end))
