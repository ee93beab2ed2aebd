"""The windows a report shows: the five, or named periods and a ``--since/--until`` one, or
one period cut into calendar steps (``--by day``) with a total row over it."""

from __future__ import annotations

from dataclasses import dataclass
from zoneinfo import ZoneInfo

from vllm_ledger.read.periods import period, period_between, resolve_time, steps
from vllm_ledger.read.windows import Window, windows_at
from vllm_ledger.timespec import TimeSpec

TOTAL_ROW = "total"  # with a calendar step, the row that sums the steps' period


@dataclass(frozen=True)
class ChosenWindows:
    """The windows a report shows: the five, or named periods and a --since/--until one."""

    periods: tuple[str, ...] = ()
    since: TimeSpec | None = None
    until: TimeSpec | None = None
    grain: str | None = None  # day or month: the one period cut into calendar steps

    def windows(self, cutoff: int, zone: ZoneInfo, first_record_ts: int | None) -> list[Window]:
        if self.grain is not None:
            # the one period (all recorded time by default), a row per step, a total row
            if self.since is not None:
                whole = period_between(self.since, self.until, cutoff, zone)
            else:
                whole = period((*self.periods, "total")[0], cutoff, zone, first_record_ts)
            rows = list(steps(whole.start_ts, whole.cutoff_ts, self.grain, zone))
            return [*rows, Window(TOTAL_ROW, whole.start_ts, whole.cutoff_ts)]
        if not self.periods and self.since is None:
            return windows_at(cutoff, zone, first_record_ts)
        out = [period(n, cutoff, zone, first_record_ts) for n in self.periods]
        if self.since is not None:
            out.append(period_between(self.since, self.until, cutoff, zone))
        return out

    def between(self, cutoff: int, zone: ZoneInfo) -> tuple[float | None, float | None]:
        """``since`` and ``until`` as Unix seconds (``None`` where not given)."""
        if self.since is None:
            return None, None
        since = resolve_time(self.since, cutoff, zone, argument="since")
        until = (
            None if self.until is None else resolve_time(self.until, cutoff, zone, argument="until")
        )
        return since, until


def time_spec(value: TimeSpec | float | None) -> TimeSpec | None:
    """``since`` or ``until`` as given: Unix seconds become an instant spec."""
    if value is None or isinstance(value, TimeSpec):
        return value
    return TimeSpec(f"{value:.0f}", "instant", ts=float(value))
