"""Billing periods beyond the five windows: yesterday, this and last month, 30 days, and an
arbitrary ``--since/--until``. Pure functions over integer Unix seconds and a zone.

``--since/--until`` arrive as ``timespec.TimeSpec`` (parsed before the zone is known) and are
resolved here, once the zone and the cutoff are: a date is its local midnight, a local time
is read in the zone (one that a DST jump skips is refused; one that happens twice is the
earlier), ``today``/``yesterday`` are local midnights as of the cutoff, ``7d`` is the cutoff
minus seven days.

Every period is a half-open ``Window`` ``[start_ts, cutoff_ts)`` whose edges fall on whole
seconds at local midnights (months and days follow the zone's calendar, so a day across a DST
change is 23 or 25 hours long, exactly). A period never reaches past the report's cutoff: a
period still running (``this-month``) or one the cutoff has not yet passed ends there, so a
period is only ever as complete as the seconds the ledgers have proven.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from vllm_ledger.errors import BadArgument
from vllm_ledger.read.windows import ROLLING_HOURS, Window, local_midnight_ts
from vllm_ledger.timespec import TimeSpec
from vllm_ledger.units import ago, format_instant

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
# The steps a period is cut into (export rows, report --by day|month): each starts where the
# local clock of the zone starts an hour, a day or a month.
GRAINS: tuple[str, ...] = ("hour", "day", "month")
CALENDAR_GRAINS: tuple[str, ...] = GRAINS  # report --by, timeline --by: the same words
MAX_STEPS = 24 * 366 * 5  # five years of hours


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


def since_until(
    since_ts: float, until_ts: float | None, cutoff_ts: int, tz: ZoneInfo | None = None
) -> Window:
    """``[since, until)`` in whole seconds (``until`` defaults to the cutoff), ending at the
    cutoff at most: seconds not yet proven are never part of a period. An ``until`` not after
    ``since`` is refused in ``tz``'s words (``reversed_range``)."""
    start = int(since_ts // 1)
    end = cutoff_ts if until_ts is None else min(int(until_ts // 1), cutoff_ts)
    if until_ts is not None and until_ts <= since_ts:
        raise reversed_range(since_ts, until_ts, tz)
    return Window("period", start, max(start, end))


def reversed_range(
    since_ts: float,
    until_ts: float,
    tz: ZoneInfo | None,
    names: tuple[str, str] = ("since", "until"),
) -> BadArgument:
    """The refusal of an end not after its start, both said as every line a person reads says
    an instant (``units.format_instant``, in ``tz``; UTC when no zone is known), never in Unix
    seconds: ``until 2026-11-01 00:00:00 +08:00 is not after since 2026-12-01 00:00:00
    +08:00``. ``names``: the two parameters (``from``, ``until`` for a declared stop)."""
    zone = tz or timezone.utc
    first, last = names
    return BadArgument(
        f"{last} {format_instant(until_ts, zone)} is not after "
        f"{first} {format_instant(since_ts, zone)}",
        hint=f"give an {last} later than {first}",
        argument=last,
        value=until_ts,
        example=f"{first} 2026-11-01 {last} 2026-12-01",
    )


def is_future(since_ts: float, cutoff_ts: int) -> bool:
    """Whether a period starting at ``since_ts`` lies wholly after the cutoff (the last second
    the ledgers have proven): nothing can be recorded there yet, so it is said, not shown as an
    empty period."""
    return since_ts >= cutoff_ts


def resolve_time(spec: TimeSpec, cutoff_ts: int, tz: ZoneInfo, *, argument: str = "") -> float:
    """``spec`` as Unix seconds in ``tz`` as of ``cutoff_ts``; a local time that ``tz`` skips
    (a DST gap), or a duration ago that reaches back before 2000 (``units.ago``), is refused
    naming ``argument``; a local time ``tz`` repeats (a fold) is the earlier."""
    if spec.kind == "instant":
        return spec.ts
    if spec.kind == "ago":
        return ago(cutoff_ts, spec.seconds, text=spec.text, argument=argument)
    if spec.kind == "day":
        name = "yesterday" if spec.days_back else "today"
        return float(period(name, cutoff_ts, tz, None).start_ts)
    local = spec.local
    assert local is not None
    if spec.date_only:
        return float(_local_midnight(local.year, local.month, local.day, tz))
    earlier = local.replace(tzinfo=tz, fold=0).timestamp()
    later = local.replace(tzinfo=tz, fold=1).timestamp()
    ts = min(earlier, later)
    if datetime.fromtimestamp(ts, tz).replace(tzinfo=None) != local:
        raise BadArgument(
            f"{argument} {spec.text!r} does not exist in {tz.key}: the clocks skip it "
            "(a DST change)".lstrip(),
            hint="give a time outside the gap, or one with an offset",
            argument=argument,
            value=spec.text,
            example=datetime.fromtimestamp(max(earlier, later), tz).isoformat(),
        )
    return ts


def period_between(since: TimeSpec, until: TimeSpec | None, cutoff_ts: int, tz: ZoneInfo) -> Window:
    """The ``--since/--until`` window (``since_until``) with both ends resolved in ``tz`` as of
    ``cutoff_ts`` (``resolve_time``): the one way every command reads them."""
    since_ts = resolve_time(since, cutoff_ts, tz, argument="since")
    until_ts = None if until is None else resolve_time(until, cutoff_ts, tz, argument="until")
    return since_until(since_ts, until_ts, cutoff_ts, tz)


def steps(start_ts: int, end_ts: int, grain: str, tz: ZoneInfo) -> Iterator[Window]:
    """``[start, end)`` cut where the local clock starts an hour, a day or a month (one of
    ``GRAINS``); each step named as ``step_name`` names it. More than ``MAX_STEPS`` is refused."""
    if grain not in GRAINS:
        raise BadArgument(f"unknown step {grain!r}: use one of {', '.join(GRAINS)}")
    t, n = start_ts, 0
    while t < end_ts:
        nxt = next_edge(t, grain, tz)
        yield Window(step_name(t, grain, tz), t, min(nxt, end_ts))
        t = nxt
        n += 1
        if n > MAX_STEPS:
            raise BadArgument(
                f"more than {MAX_STEPS} steps", hint="ask for a shorter period or a coarser step"
            )


def step_name(ts: int, grain: str, tz: ZoneInfo) -> str:
    """The calendar name of the step ``ts`` falls in: ``2026-11-30`` (a day), ``2026-11`` (a
    month), ``2026-11-30 14:00`` (an hour)."""
    local = datetime.fromtimestamp(ts, tz)
    if grain == "month":
        return f"{local:%Y-%m}"
    if grain == "day":
        return f"{local:%Y-%m-%d}"
    return f"{local:%Y-%m-%d %H}:00"


def is_edge(ts: int, grain: str, tz: ZoneInfo) -> bool:
    """Whether ``ts`` is where a local hour, day or month starts (the step before it ends
    there): a period starting or ending elsewhere makes a partial first or last step."""
    return next_edge(ts - 1, grain, tz) == ts


def next_edge(ts: int, grain: str, tz: ZoneInfo) -> int:
    """Where the step ``ts`` falls in ends: the next local hour, midnight or first day."""
    if grain == "month":
        local = datetime.fromtimestamp(ts, tz)
        index = local.year * 12 + local.month  # the next month, zero-based
        return _local_midnight(index // 12, index % 12 + 1, 1, tz)
    if grain == "day":
        noon_next = datetime.fromtimestamp(local_midnight_ts(ts, tz), tz) + timedelta(hours=36)
        return local_midnight_ts(int(noon_next.timestamp()), tz)
    offset = datetime.fromtimestamp(ts, tz).utcoffset() or timedelta(0)
    local_s = ts + int(offset.total_seconds())
    return ts + (3600 - local_s % 3600)
