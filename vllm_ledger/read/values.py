"""What a value read from a ledger must be before it counts: its type and its physical range.

The disk is not trusted: a file may have been edited, damaged in a way SQLite cannot see, or
written by something else. A file with any value outside these bounds is refused whole (status
``bad_values``): nothing from it is added and the time it may cover is uncovered.

The bounds are the one table in ``bounds.py``, which the write side checks every value against
before it counts (so no sound writer ever writes a row this gate refuses):

- tokens per second per DP engine, requests, decode time, as each figure's
  ``per_engine_second`` (``figures.py``, from ``bounds.py``); an hourly row may hold 3,600
  times that, a daily row 86,400 times;
- cached tokens never exceed input tokens in a second (they are part of it);
- instants (spans, fault seconds, creation, clean close) lie between 2000-01-01 and 2100-01-01
  and are finite; a span ends at or after its start;
- an engine index 0 to ``MAX_ENGINE``; expected writers 1 to ``MAX_EXPECTED_WRITERS``; writer
  ranks and generations as the file names allow (4 and 6 digits).

The same gate judges what another host's exporter reports (``plan/fleet.py`` reads its window
gauges back from Prometheus): a figure is finite, from 0 to ``MAX_COUNT`` in the ledger's own
unit (no ledger sum can hold more) and whole where that unit is the reported one
(``check_reported``); any other number is finite and within its own range (``check_number``);
a sample's time is at most a tolerance after the instant it was asked at
(``check_sample_time``: a later one means that host's clock is ahead).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from vllm_ledger import strictjson

# The bounds come from the one table (bounds.py), re-exported for this module's callers.
from vllm_ledger.bounds import MAX_COUNT as MAX_COUNT
from vllm_ledger.bounds import MAX_ENGINE as MAX_ENGINE
from vllm_ledger.bounds import MAX_EXPECTED_WRITERS as MAX_EXPECTED_WRITERS
from vllm_ledger.bounds import MAX_GENERATION as MAX_GENERATION
from vllm_ledger.bounds import MAX_TEXT_CHARS as MAX_TEXT_CHARS
from vllm_ledger.bounds import MAX_WRITER_RANK as MAX_WRITER_RANK
from vllm_ledger.errors import BadValues as BadValues  # raised by the checks here
from vllm_ledger.figures import Figure, Unit
from vllm_ledger.format.reads import LAYOUT
from vllm_ledger.format.schema import SUM_COLUMNS
from vllm_ledger.units import EARLIEST_AT, LATEST_AT

ROW_SECONDS = {"buckets": 1, "hourly": 3600, "daily": 86400}


# How an error message names an amount of each unit.
_AMOUNT: dict[Unit, str] = {
    "tokens": "tokens",
    "requests": "requests",
    "microseconds": "us of decode time",
}


def _per_second(most: int) -> str:
    """`` (at most 10^8 per second)`` for a power of ten, else nothing."""
    k = len(str(most)) - 1
    return f" (at most 10^{k} per second)" if most == 10**k else ""


_NAMES, _LIMITS, _PARTS = LAYOUT
_N = len(_NAMES)
_FIRST_MOST = 1 + _N + 2  # after the engine, the sums, "not an integer" and "lowest"
_FIRST_OVER = _FIRST_MOST + len(_LIMITS)


def check_sum_row(table: str, stored: Sequence[Any]) -> tuple[int, dict[str, int]]:
    """``(engine, sums by figure name)`` of one ``reads.sum_by_engine`` row (``reads.sum_row``'s
    layout, unpacked here once per row: a long window judges tens of thousands), or
    ``BadValues``."""
    engine = stored[0]
    if type(engine) is not int or not 0 <= engine <= MAX_ENGINE:
        raise BadValues(f"{table}: engine {engine!r} is not a DP rank")
    if stored[1 + _N]:
        raise BadValues(f"{table}: a count that is not an integer")
    lowest = stored[2 + _N]
    if lowest is not None and lowest < 0:
        raise BadValues(f"{table}: a negative count ({lowest})")
    span = ROW_SECONDS[table]
    for (unit, most, _figs), seen in zip(_LIMITS, stored[_FIRST_MOST:_FIRST_OVER], strict=True):
        if seen is not None and seen > most * span:
            raise BadValues(f"{table}: {seen} {_AMOUNT[unit]} in one row{_per_second(most)}")
    for (part, whole), over in zip(_PARTS, stored[_FIRST_OVER:], strict=True):
        if over:
            raise BadValues(
                f"{table}: more {part.key} than {whole.key} {_AMOUNT[whole.unit]} in a row"
            )
    sums = stored[1 : 1 + _N]
    if any(type(v) is not int for v in sums):  # pragma: no cover - no empty group
        raise BadValues(f"{table}: a sum that is not an integer")
    return engine, dict(zip(_NAMES, sums, strict=True))


def check_instant(name: str, value: Any) -> float:
    if type(value) not in (int, float) or not math.isfinite(value):
        raise BadValues(f"{name} {value!r} is not a time")
    if not EARLIEST_AT <= value <= LATEST_AT:
        raise BadValues(f"{name} {value!r} is outside 2000-2100")
    return float(value)


def check_count(name: str, value: Any, most: int) -> int:
    if type(value) is not int or not 0 <= value <= most:
        raise BadValues(f"{name} {value!r} is not a count from 0 to {most}")
    return value


def check_spans(spans: Sequence[tuple[Any, Any]]) -> list[tuple[float, float]]:
    out = []
    for start, end in spans:
        a, b = check_instant("span start", start), check_instant("span end", end)
        if b < a:
            raise BadValues(f"a span ends ({b!r}) before it starts ({a!r})")
        out.append((a, b))
    return out


def check_problem_seconds(
    rows: Sequence[tuple[Any, Any, Any, Any]],
) -> list[tuple[int, int, int, int]]:
    out = []
    for ts, dropped, rejected, lost in rows:
        check_instant("fault second", ts)
        if type(ts) is not int:
            raise BadValues(f"fault second {ts!r} is not a whole second")
        out.append(
            (
                ts,
                check_count("dropped events", dropped, 2**53),
                check_count("rejected events", rejected, 2**53),
                check_count("lost events", lost, 2**53),
            )
        )
    return out


# ---- the summary of finished files: its values pass the same gate ---------------------------


def check_second(name: str, value: Any) -> int:
    """A whole second between 2000 and 2100."""
    if type(value) is not int or not EARLIEST_AT <= value <= LATEST_AT:
        raise BadValues(f"{name} {value!r:.40} is not a whole second in 2000-2100")
    return value


def check_optional_instant(name: str, value: Any) -> float | None:
    return None if value is None else check_instant(name, value)


def check_optional_second(name: str, value: Any) -> int | None:
    return None if value is None else check_second(name, value)


def check_counts(name: str, rows: Any, most: int) -> list[int]:
    """A list of counts from 0 to ``most``."""
    if type(rows) is not list or not all(type(v) is int and 0 <= v <= most for v in rows):
        raise BadValues(f"{name}s {rows!r:.40} are not counts from 0 to {most}")
    return rows


def check_instants(name: str, rows: Any) -> list[float]:
    """A list of instants between 2000 and 2100, as floats."""
    if type(rows) is not list or not all(
        (type(v) is float or type(v) is int) and EARLIEST_AT <= v <= LATEST_AT for v in rows
    ):
        raise BadValues(f"{name}s {rows!r:.40} are not times in 2000-2100")
    return [float(v) for v in rows]


def check_intervals(name: str, rows: Any) -> list[tuple[float, float]]:
    """Sorted, disjoint, non-empty intervals of instants (what ``intervals.normalize`` makes)."""
    if type(rows) is not list:
        raise BadValues(f"{name} {rows!r:.40} is not a list of intervals")
    out: list[tuple[float, float]] = []
    for start, end in rows:
        a, b = check_instant(f"{name} start", start), check_instant(f"{name} end", end)
        if not a < b or (out and not out[-1][1] < a):
            raise BadValues(f"{name}: [{a!r}, {b!r}) is empty, out of order or overlaps")
        out.append((a, b))
    return out


def check_bool(name: str, value: Any) -> bool:
    if type(value) is not bool:
        raise BadValues(f"{name} {value!r:.40} is not true or false")
    return value


def check_text(name: str, value: Any) -> str:
    if type(value) is not str or len(value) > MAX_TEXT_CHARS:
        raise BadValues(f"{name} {value!r:.40} is not a short string")
    return value


def check_meta(name: str, value: Any) -> dict[str, str]:
    """A small mapping of strings to strings (a file's instance facts)."""
    if (
        type(value) is not dict
        or len(value) > 64
        or not all(type(k) is str and type(v) is str for k, v in value.items())
        or not all(len(v) <= MAX_TEXT_CHARS for v in value.values())
    ):
        raise BadValues(f"{name} {value!r:.40} is not a mapping of short strings")
    return value


def check_totals(value: Any) -> dict[int, list[int]]:
    """Sums per DP engine, ``{"<engine>": [one count per schema.SUM_COLUMNS]}``."""
    if type(value) is not dict:
        raise BadValues(f"totals {value!r:.40} are not sums per engine")
    out: dict[int, list[int]] = {}
    for key, sums in value.items():
        if not (type(key) is str and 1 <= len(key) <= 5 and key.isascii() and key.isdigit()):
            raise BadValues(f"engine {key!r:.40} is not a DP rank")
        engine = check_count("engine", int(key), MAX_ENGINE)
        if len(check_counts("total", sums, MAX_COUNT)) != len(SUM_COLUMNS):
            raise BadValues(f"totals of engine {engine}: {len(sums)} sums, not {len(SUM_COLUMNS)}")
        out[engine] = sums
    return out


# ---- what another host reports: an exporter's samples read back from a time-series store -----


def check_number(name: str, value: Any, *, most: float, whole: bool = False) -> float:
    """A finite number from 0 to ``most`` (a whole one where ``whole``), or ``BadValues``
    saying which it is not."""
    if not strictjson.is_number(value):  # the one test of a decoded number, then the reason
        if type(value) is float and math.isinf(value):
            raise BadValues(f"{name} {value!r} is not finite")
        raise BadValues(f"{name} {value!r:.40} is not a number")
    if value < 0:
        raise BadValues(f"{name} {value:g} is negative")
    if whole and value != math.floor(value):
        raise BadValues(f"{name} {value:g} is not a whole number")
    if value > most:
        raise BadValues(f"{name} {value:g} is above {most:g}, the most it can be")
    return float(value)


def check_reported(name: str, value: Any, figure: Figure) -> float:
    """A figure as an exporter reports it (``figure.report_name``, in reported units): at most
    ``MAX_COUNT`` in the ledger's unit, whole where the ledger's unit is the reported one."""
    divisor = figure.report_divisor
    most = MAX_COUNT / divisor
    return check_number(name, value, most=most, whole=divisor == 1)


def check_sample_time(name: str, ts: Any, *, at_ts: float, ahead_s: float) -> float:
    """A sample's time: an instant in 2000-2100, at most ``ahead_s`` after ``at_ts`` (the
    instant a store was asked at); a later one names how far ahead that host's clock is."""
    when = check_instant(name, ts)
    if when > at_ts + ahead_s:
        raise BadValues(
            f"{name} is stamped {when - at_ts:,.0f} s after the time it was asked at "
            f"(at most {ahead_s:g} s allowed): that host's clock is ahead"
        )
    return when
