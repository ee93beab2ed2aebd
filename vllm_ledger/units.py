"""The one vocabulary every layer speaks: durations, instants, numbers, short texts, plain
paths, and the environment variables the project reads (HOST:PORT: ``hostport.py``; times as
people type them: ``timespec.py``).

Standard library only (the write side imports it inside vLLM), and below everything but
``errors.py``. A value that is not one raises ``BadArgument`` worded without a flag: the value,
what is wrong with it, a hint and ``.example`` (a good value). The commands put their flag in
front (``commands/_refusals.py``); a library caller sees the same line without one. See
docs/cli.md ("Vocabulary").
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Sequence
from datetime import datetime, tzinfo
from typing import Literal

from vllm_ledger.errors import BadArgument

# ---- environment variables -------------------------------------------------------------------

ROOT_ENV = "VLLM_LEDGER_DIR"  # the ledger root the plugin writes and commands read
WRITERS_ENV = "VLLM_LEDGER_WRITERS"  # how many API processes write a run
ZONE_ENV = "VLLM_LEDGER_TZ"  # the time zone of "today" (read/zone.py)
RUN_ID_ENV = "VLLM_LEDGER_RUN_ID"  # a run id chosen by the caller
PORT_ENV = "VLLM_LEDGER_PORT"  # the port a writer serves on, when its argv does not say
DISABLE_ENV = "VLLM_LEDGER_DISABLE"  # set (not 0): the plugin records nothing
MAINTENANCE_ENV = "VLLM_LEDGER_MAINTENANCE"  # 0: rank 0 runs no maintenance pass
TRACEBACK_ENV = "VLLM_LEDGER_TRACEBACK"  # 1: the CLI shows an unforeseen error's traceback
# Whose tokens (docs/attribution.md) and budgets (docs/budgets.md), read inside vLLM:
ATTRIBUTE_USER_ENV = "VLLM_LEDGER_ATTRIBUTE_USER"  # 1: the middleware reads the body's user
TENANT_HEADER_ENV = "VLLM_LEDGER_TENANT_HEADER"  # a header a trusted proxy sets: the tenant
KEY_NAMES_ENV = "VLLM_LEDGER_KEY_NAMES"  # a JSON file of name -> "sha256:<hex>" of a key
MAX_KEYS_ENV = "VLLM_LEDGER_MAX_KEYS"  # distinct keys kept by name per file and hour
MAX_USERS_ENV = "VLLM_LEDGER_MAX_USERS"  # distinct users ...
MAX_TENANTS_ENV = "VLLM_LEDGER_MAX_TENANTS"  # distinct tenants ...
BUDGETS_ENV = "VLLM_LEDGER_BUDGETS"  # the budgets file: rank 0 starts the enforcer
ENFORCER_ENV = "VLLM_LEDGER_ENFORCER"  # 0: rank 0 starts no enforcer (one runs elsewhere)
LOG_FORMAT_ENV = "VLLM_LEDGER_LOG_FORMAT"  # json: exporter and notifier log JSON lines
ENV_PREFIX = "VLLM_LEDGER_"  # every variable of the project starts so

# ---- numbers ---------------------------------------------------------------------------------

MAX_TEXT = 256  # a model name, run id, label, host: longer is a mistake


def number_text(x: float) -> str:
    """A number as messages show it: ``1e+06`` never, ``1000000`` and ``0.5``."""
    return f"{x:,.0f}".replace(",", "") if x == int(x) and abs(x) >= 1e6 else f"{x:g}"


def number(
    text: str,
    lo: float,
    hi: float,
    example: str,
    *,
    unit: str = "a number",
    lo_open: bool = False,
    integer: bool = False,
    fraction: bool = False,
) -> float:
    """A finite number in ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``).

    ``fraction``: a value in (1, 100] is refused as a percentage. ``integer``: whole numbers
    only (returned as ``int``).
    """
    low = f"above {number_text(lo)}" if lo_open else f"from {number_text(lo)}"
    wanted = f"give {unit} {low} to {number_text(hi)}"
    shown = f"{text!r}"

    def refuse(problem: str, hint: str = wanted, good: str = example) -> BadArgument:
        return BadArgument(f"{shown} {problem}", hint=hint, value=text, example=good)

    try:
        x = float(text)
    except (TypeError, ValueError):
        raise refuse("is not a number") from None
    if not math.isfinite(x):
        raise refuse("is not finite")
    if fraction and 1 < x <= 100 and lo < x / 100 <= hi:
        raise refuse("looks like a percentage", "give a fraction", f"{x / 100:g}")
    if x < lo or (lo_open and x == lo) or x > hi:
        raise refuse("is out of range")
    if integer:
        if x != int(x) or not re.fullmatch(r"\s*[+-]?\d+\s*", text):
            raise refuse("is not a whole number")
        return int(x)
    return x


def port(text: str, example: str = "8000", *, zero: bool = False) -> int:
    """A TCP port, 1-65535 (0 too with ``zero``: the system picks one)."""
    return int(number(text, 0 if zero else 1, 65535, example, unit="a port", integer=True))


def short_text(value: str, example: str, *, max_len: int = MAX_TEXT) -> str:
    """A short single-line value (a model name, run id, label): no control characters."""
    if not value or len(value) > max_len or not value.isprintable():
        what = "empty" if not value else "too long" if len(value) > max_len else "unprintable"
        raise BadArgument(
            f"{value[:40]!r} is {what}",
            hint=f"give up to {max_len} printable characters",
            value=value,
            example=example,
        )
    return value


# ---- durations -------------------------------------------------------------------------------

SECONDS_PER_MINUTE = 60
SECONDS_PER_HOUR = 3600
SECONDS_PER_DAY = 86400
SECONDS_PER_WEEK = 7 * SECONDS_PER_DAY

DURATION_FORMS = "30s, 10m, 7d, 1h30m or plain seconds"
DurationForm = Literal["units", "prometheus"]
_DURATION_UNITS: dict[str, float] = {
    "y": 365 * SECONDS_PER_DAY,  # Prometheus only
    "w": SECONDS_PER_WEEK,
    "d": SECONDS_PER_DAY,
    "h": SECONDS_PER_HOUR,
    "m": SECONDS_PER_MINUTE,
    "s": 1,
    "ms": 0.001,
}
_DURATION_TEXT: dict[DurationForm, re.Pattern[str]] = {
    "units": re.compile(r"(?:[0-9]{1,12}(?:\.[0-9]{1,9})?(?:ms|[wdhms]))+"),
    "prometheus": re.compile(r"(?:[0-9]{1,12}(?:ms|[ywdhms]))+"),
}
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|[ywdhms])")


def duration_seconds(text: str, *, form: DurationForm = "units") -> float | None:
    """A duration -> seconds; None if it is not one. Units at most once each, largest first.

    ``units`` (every command's form): ``30s``, ``10m``, ``7d``, ``1h30m``, ``1.5h``, ``500ms``
    (units w, d, h, m, s, ms; plain numbers are not taken here: the caller reads those as
    seconds). ``prometheus`` (an alert's ``for:``, a rule file): whole numbers only, units y,
    w, d, h, m, s, ms.
    """
    if len(text) > 40 or not _DURATION_TEXT[form].fullmatch(text):
        return None
    parts = _DURATION_PART.findall(text)
    sizes = [_DURATION_UNITS[unit] for _n, unit in parts]
    if any(a <= b for a, b in itertools.pairwise(sizes)):
        return None  # 1m1h, 1h1h: a typo, not a duration
    return sum(float(n) * _DURATION_UNITS[unit] for n, unit in parts)


def whole_duration(text: str, *, argument: str = "", example: str = "1h or 7d") -> int:
    """A duration of whole seconds above 0 in the ``units`` form (``90m``, ``1h30m``, ``7d``),
    as a library takes a window or a step; refused with one line (starting with ``argument``,
    the parameter's name, when given) otherwise."""
    seconds = duration_seconds(text.strip())
    if seconds is None or seconds <= 0 or seconds != int(seconds):
        raise BadArgument(
            f"{argument} {text!r} is not a duration".lstrip(),
            hint="give a number and a unit",
            argument=argument,
            value=text,
            example=example,
        )
    return int(seconds)


DurationStyle = Literal["compact", "unit", "unit-words", "words", "rounded", "prometheus", "range"]
_UNIT_SIZES = (
    ("w", SECONDS_PER_WEEK),
    ("d", SECONDS_PER_DAY),
    ("h", SECONDS_PER_HOUR),
    ("m", SECONDS_PER_MINUTE),
    ("s", 1),
)
_WORD_UNITS = (
    ("d", SECONDS_PER_DAY),
    ("h", SECONDS_PER_HOUR),
    ("min", SECONDS_PER_MINUTE),
    ("s", 1),
)


def format_duration(
    seconds: float,
    style: DurationStyle = "compact",
    *,
    units: Sequence[str] = ("s", "m", "h", "d"),
) -> str:
    """Seconds as text, the one way each kind of output shows them:

    - ``compact`` (help, errors, notes): ``90`` -> ``1m30s``, ``86400`` -> ``1d``, ``0.5`` ->
      ``500ms``, ``1.5`` -> ``1.5s``, ``0`` -> ``0s``.
    - ``prometheus`` (rule files): ``compact`` for whole seconds, else milliseconds: ``1.5`` ->
      ``1500ms``.
    - ``range`` (a PromQL range): whole seconds, at least 1: ``0.2`` -> ``1s``, ``90`` -> ``90s``.
    - ``unit`` (a timeline's window name): the largest unit that divides them, ``5400`` ->
      ``90m``, ``1209600`` -> ``2w``.
    - ``unit-words`` (a chart's caption): the same in words without weeks, ``5400`` -> ``90 min``.
    - ``words`` (every table and line a person reads): the two largest units, a zero second
      one left out: ``125`` -> ``2 min 5 s``, ``3600`` -> ``1 h``, ``3900`` -> ``1 h 5 min``,
      ``183600`` -> ``2 d 3 h``, ``59`` -> ``59 s``.
    - ``rounded`` (a chat message): rounded down to the largest unit reached, ``7200`` -> ``2h``,
      written with ``units`` (second, minute, hour, day: ``("秒", "分", "时", "天")``).
    """
    if style == "range":
        return f"{max(1, round(seconds))}s"
    if style == "prometheus":
        return format_duration(seconds) if seconds == int(seconds) else f"{round(seconds * 1000)}ms"
    if style == "compact":
        if seconds != int(seconds):
            ms = round(seconds * 1000, 6)
            return f"{int(ms)}ms" if seconds < 1 and ms == int(ms) else f"{seconds:g}s"
        n, parts = int(seconds), []
        for unit, size in _UNIT_SIZES[1:]:
            q, n = divmod(n, size)
            if q:
                parts.append(f"{q}{unit}")
        return "".join(parts) or "0s"
    n = int(seconds)
    if style == "unit":
        return next(f"{n // size}{unit}" for unit, size in _UNIT_SIZES if n % size == 0)
    if style == "unit-words":
        names = {"d": "d", "h": "h", "m": "min", "s": "s"}
        return next(f"{n // size} {names[unit]}" for unit, size in _UNIT_SIZES[1:] if n % size == 0)
    if style == "words":
        for (big, big_size), (small, small_size) in itertools.pairwise(_WORD_UNITS):
            if n >= big_size:
                rest = n % big_size // small_size
                return f"{n // big_size} {big}" + (f" {rest} {small}" if rest else "")
        return f"{n} s"
    # rounded
    s = max(0, round(seconds))
    for label, size, below in zip(
        units,
        (1, SECONDS_PER_MINUTE, SECONDS_PER_HOUR, SECONDS_PER_DAY),
        (SECONDS_PER_MINUTE, SECONDS_PER_HOUR, SECONDS_PER_DAY, math.inf),
        strict=True,
    ):
        if s < below:
            return f"{s // size}{label}"
    raise AssertionError("unreachable")


# ---- instants --------------------------------------------------------------------------------

EARLIEST_AT = 946_684_800.0  # 2000-01-01T00:00:00Z: no ledger is older
LATEST_AT = 4_102_444_800.0  # 2100-01-01T00:00:00Z
_INSTANT_HINT = "give Unix seconds or ISO 8601"
_INSTANT_EXAMPLE = "2026-11-29T08:00:00+08:00"


def format_instant(ts: float, tz: tzinfo) -> str:
    """An instant as every line a person reads shows it: the local time in ``tz`` with its
    offset, ``2026-12-01 08:00:00 +08:00`` (whole seconds, rounded down)."""
    local = datetime.fromtimestamp(math.floor(ts), tz)
    offset = local.strftime("%z")  # +0800
    return f"{local:%Y-%m-%d %H:%M:%S} {offset[:3]}:{offset[3:5]}"


def instant(value: str | float) -> float:
    """Unix seconds or ISO 8601 with an offset, between 2000 and 2100 (a float is checked as
    it is)."""

    def refuse(problem: str) -> BadArgument:
        return BadArgument(
            f"{value!r} {problem}", hint=_INSTANT_HINT, value=value, example=_INSTANT_EXAMPLE
        )

    try:
        ts = float(value)
    except ValueError:
        assert isinstance(value, str)
        ts = _iso_seconds(value, refuse)
    if not math.isfinite(ts):
        raise refuse("is not a time")
    if ts > LATEST_AT and digits_only(value) and EARLIEST_AT <= ts / 1000 <= LATEST_AT:
        raise BadArgument(
            f"{value!r} looks like milliseconds",
            hint="give seconds",
            value=value,
            example=f"{ts / 1000:.0f}",
        )
    if ts > LATEST_AT:  # 9999-12-31T23:59:59+14:00, 253402300799: not milliseconds
        raise BadArgument(
            f"{value!r} is after 2100-01-01",
            hint="give a time before it, as Unix seconds or ISO 8601",
            value=value,
            example=_INSTANT_EXAMPLE,
        )
    if ts < EARLIEST_AT:
        raise refuse("is outside 2000-2100")
    return ts


def digits_only(value: str | float) -> bool:
    """``value`` is written as milliseconds are: digits only (a whole number, given as one)."""
    if isinstance(value, str):
        return value.strip().isascii() and value.strip().isdigit()
    return value == int(value)


def _iso_seconds(value: str, refuse: Callable[[str], BadArgument]) -> float:
    try:
        # Python 3.10's fromisoformat does not take a trailing Z.
        dt = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
    except ValueError as exc:
        raise refuse("is not a time") from exc
    if dt.tzinfo is None:
        raise BadArgument(f"{value!r} has no UTC offset", hint="add one, e.g. +08:00", value=value)
    try:
        return dt.timestamp()
    except (OverflowError, OSError, ValueError) as exc:  # year 1 with an offset, say
        raise refuse("is outside 2000-2100") from exc


# ---- a duration ago ---------------------------------------------------------------------------


def ago(cutoff_ts: float, seconds: float, *, text: str = "", argument: str = "") -> float:
    """The instant ``seconds`` before ``cutoff_ts``: a duration ago (``--since 7d``, a window
    ending at the cutoff), bounded as every instant is. One before 2000-01-01 is refused with
    one line starting with ``argument`` (the parameter's name, when given) and ``text`` (the
    duration as typed)."""
    ts = cutoff_ts - seconds
    if not ts >= EARLIEST_AT:  # NaN too
        shown = text or (format_duration(seconds) if math.isfinite(seconds) else str(seconds))
        raise before_2000(shown, argument)
    return ts


def before_2000(text: str, argument: str = "") -> BadArgument:
    """The refusal of a duration that reaches back before 2000-01-01."""
    return BadArgument(
        f"{argument} {text[:60]!r} reaches back before 2000-01-01".lstrip(),
        hint="give a shorter duration",
        argument=argument,
        value=text,
        example="7d",
    )


# ---- plain paths -----------------------------------------------------------------------------

# An absolute path of letters, digits and ._+/@,- only: safe in a systemd unit, a shell line and
# a JSON Schema ``pattern`` (applied with re.fullmatch) without quoting.
PLAIN_PATH_PATTERN = "^/[A-Za-z0-9._+/@,-]*$"
_PLAIN_PATH = re.compile(PLAIN_PATH_PATTERN)


def is_plain_path(value: str) -> bool:
    """``value`` is an absolute path that needs no quoting anywhere (``PLAIN_PATH_PATTERN``)."""
    return _PLAIN_PATH.fullmatch(value) is not None


__all__ = [
    "ATTRIBUTE_USER_ENV",
    "BUDGETS_ENV",
    "DISABLE_ENV",
    "DURATION_FORMS",
    "EARLIEST_AT",
    "ENFORCER_ENV",
    "ENV_PREFIX",
    "KEY_NAMES_ENV",
    "LATEST_AT",
    "MAINTENANCE_ENV",
    "MAX_KEYS_ENV",
    "MAX_TENANTS_ENV",
    "MAX_TEXT",
    "MAX_USERS_ENV",
    "PLAIN_PATH_PATTERN",
    "PORT_ENV",
    "ROOT_ENV",
    "RUN_ID_ENV",
    "TENANT_HEADER_ENV",
    "TRACEBACK_ENV",
    "WRITERS_ENV",
    "ZONE_ENV",
    "DurationForm",
    "DurationStyle",
    "ago",
    "before_2000",
    "digits_only",
    "duration_seconds",
    "format_duration",
    "instant",
    "is_plain_path",
    "number",
    "number_text",
    "port",
    "short_text",
    "whole_duration",
]
