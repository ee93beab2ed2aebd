"""Times as people type them: every flag that takes a time (``--since``, ``--until``, ``--at``,
``--from``) parses its value into a ``TimeSpec`` before the zone and the cutoff are known.

Standard library only, beside ``units.py`` (whose durations, instants and bounds it speaks). A
value that is not one raises ``BadArgument`` worded without a flag, as ``units.py`` does;
``read.periods.resolve_time`` turns a ``TimeSpec`` into Unix seconds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from vllm_ledger.errors import BadArgument
from vllm_ledger.units import EARLIEST_AT, LATEST_AT, before_2000, digits_only, duration_seconds

TIME_FORMS = (
    "a date (2026-12-01 or 20261201), a month (2026-12), a local time (2026-12-01T08:00), "
    "ISO 8601 with an offset, Unix seconds, today, yesterday or a duration ago (7d)"
)
TimeKind = Literal["instant", "local", "day", "ago"]
_DATE8 = re.compile(r"[0-9]{8}")  # YYYYMMDD (ccusage's form): never Unix seconds, all before 2000
_MONTH = re.compile(r"([0-9]{4})-([0-9]{2})")
_SECONDS = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_TIME_EXAMPLE = "2026-11-29"


@dataclass(frozen=True)
class TimeSpec:
    """A point in time as typed, before the zone and the cutoff are known (``time_spec``).

    ``kind``: ``instant`` (``ts``, Unix seconds), ``local`` (``local``, a wall-clock time in the
    report's zone; ``date_only`` for a date or a month, meaning its first instant), ``day``
    (``days_back``: 0 today, 1 yesterday, from local midnight) or ``ago`` (``seconds`` before
    the cutoff, at most a century). ``read.periods.resolve_time`` turns it into Unix seconds
    (``ago`` for a duration: one that reaches back before 2000-01-01 is refused, as a date
    before 2000 is)."""

    text: str
    kind: TimeKind
    ts: float = 0.0
    local: datetime | None = None
    date_only: bool = False
    days_back: int = 0
    seconds: float = 0.0


def time_spec(value: str) -> TimeSpec:
    """Every flag that takes a time (``--since``, ``--until``, ``--at``, ``--from``), as people
    type it (``TIME_FORMS``): ``2026-12-01`` or ``20261201`` (a date: its local midnight),
    ``2026-12`` (a month: its first local midnight), ``2026-12-01T08:00`` or ``2026-12-01
    08:00`` (any ISO 8601 time without an offset: a local time), ``2026-12-01T08:00:00+08:00``
    or ``...Z``, ``1796000000`` (Unix seconds), ``today``, ``yesterday``, ``7d`` (a duration in
    the ``units`` form, ago). Everything within 2000-2100; refused with one line otherwise (a
    duration longer than 2000-2100 at once). A local time is checked against the zone, and a
    duration against 2000-01-01, when it is resolved (``read.periods.resolve_time``)."""
    text = value.strip()

    def refuse(problem: str) -> BadArgument:
        return BadArgument(
            f"{value[:60]!r} {problem}",
            hint=f"give {TIME_FORMS}",
            value=value,
            example=_TIME_EXAMPLE,
        )

    if text in ("today", "yesterday"):
        return TimeSpec(text, "day", days_back=0 if text == "today" else 1)
    seconds = duration_seconds(text)
    if seconds is not None:
        if seconds <= 0:
            raise refuse("is not a duration above 0")
        if seconds > LATEST_AT - EARLIEST_AT:  # before 2000 from any cutoff
            raise before_2000(text)
        return TimeSpec(text, "ago", seconds=seconds)
    if _DATE8.fullmatch(text) or _MONTH.fullmatch(text):
        digits = text.replace("-", "")  # YYYYMMDD or YYYYMM
        year, month, day = int(digits[:4]), int(digits[4:6]), int(digits[6:] or 1)
        try:
            local = datetime(year, month, day)
        except ValueError:
            raise refuse("is not a date") from None
        return TimeSpec(text, "local", local=_in_bounds(local, refuse), date_only=True)
    if _SECONDS.fullmatch(text):
        return TimeSpec(text, "instant", ts=_bounded(float(text), value, refuse))
    try:
        # Python 3.10's fromisoformat does not take a trailing Z.
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        date = re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text)
        raise refuse("is not a date" if date else "is not a time") from None
    if parsed.tzinfo is None:
        date_only = "T" not in text and " " not in text  # a date alone: its midnight
        return TimeSpec(text, "local", local=_in_bounds(parsed, refuse), date_only=date_only)
    try:
        ts = parsed.timestamp()
    except (OverflowError, OSError, ValueError):  # year 1 with an offset, say
        raise refuse("is outside 2000-2100") from None
    return TimeSpec(text, "instant", ts=_bounded(ts, value, refuse))


def _in_bounds(local: datetime, refuse: Callable[[str], BadArgument]) -> datetime:
    if not 2000 <= local.year < 2100:
        raise refuse("is outside 2000-2100")
    return local


def _bounded(ts: float, value: str | float, refuse: Callable[[str], BadArgument]) -> float:
    """``ts`` if it is an instant within 2000-2100; one written as milliseconds are (digits
    only, in range once divided by 1000) is refused as such, the rest as outside."""
    if not math.isfinite(ts):
        raise refuse("is not a time")
    if ts > LATEST_AT and digits_only(value) and EARLIEST_AT <= ts / 1000 <= LATEST_AT:
        raise BadArgument(
            f"{value!r} looks like milliseconds",
            hint="give seconds",
            value=value,
            example=f"{ts / 1000:.0f}",
        )
    if not EARLIEST_AT <= ts <= LATEST_AT:
        raise refuse("is outside 2000-2100")
    return ts


__all__ = ["TIME_FORMS", "TimeKind", "TimeSpec", "time_spec"]
