"""The argparse types of a flag's value, each checked at parse time.

Each ``type=`` function here refuses a bad value with one line that names the flag and gives
an example of a good value (``--deadline 'nan' is not finite: give a duration above 0s to
1h (30s, 10m, 7d, 1h30m or plain seconds), e.g. --deadline 20s``). They raise
``BadArgument`` (``_refusals``), which reaches ``cli.main`` and is printed as one line, exit 2.
Values are checked before any ledger, config or URL is touched, so a bad flag costs nothing and
can make nothing hang.

Rules shared by every number: NaN and infinities are refused; so is a value outside the flag's
range, and a seconds flag given what looks like milliseconds (above its range, and in range
once divided by 1000) is refused with the seconds it probably meant.

One vocabulary for every command (docs/cli.md, "Vocabulary"): every span of time is a
``duration`` (``30s``, ``10m``, ``7d``, ``1h30m`` or plain seconds); a listen address is
``listen`` (``HOST:PORT``); a folder written is ``--output DIR`` (``_files.add_output_folder``);
an old spelling is kept for one release by ``_renamed``.

What a value is (a duration, an instant, HOST:PORT, a number, a short text) is decided once, in
``vllm_ledger/units.py``, below every layer; here each is an argparse ``type`` whose refusal names
the flag (``_refusals.flagged``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from vllm_ledger import units
from vllm_ledger.commands._refusals import typed
from vllm_ledger.errors import BadArgument
from vllm_ledger.hostport import Address, host_port
from vllm_ledger.http.urls import url_problem
from vllm_ledger.read.zone import (
    zone_hint,
    zone_problem,
)
from vllm_ledger.units import (
    DURATION_FORMS,
    MAX_TEXT,
    duration_seconds,
    format_duration,
)

# ---- numbers -------------------------------------------------------------------------------------


def number(
    flag: str,
    lo: float,
    hi: float,
    example: str,
    *,
    unit: str = "a number",
    lo_open: bool = False,
    integer: bool = False,
    fraction: bool = False,
) -> Callable[[str], float]:
    """An argparse ``type`` for a finite number in ``[lo, hi]`` (``units.number``)."""
    return typed(
        flag,
        lambda text: units.number(
            text,
            lo,
            hi,
            example,
            unit=unit,
            lo_open=lo_open,
            integer=integer,
            fraction=fraction,
        ),
    )


def port(flag: str, example: str = "8000", *, zero: bool = False) -> Callable[[str], float]:
    """A TCP port, 1-65535 (0 too with ``zero``: the system picks one)."""
    return typed(flag, lambda text: units.port(text, example, zero=zero))


# ---- durations -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Duration:
    """An argparse ``type`` for a duration flag: ``30s``, ``10m``, ``7d``, ``1h30m`` or plain
    seconds (``units.duration_seconds``), finite, in ``[lo, hi]`` seconds (``(lo, hi]`` with
    ``lo_open``); a plain number above ``hi`` that is in range once divided by 1000 is refused as
    milliseconds. Returns seconds (an ``int`` with ``integer``). Every duration flag of every
    command uses this one type."""

    flag: str
    lo: float
    hi: float
    example: str
    lo_open: bool = False
    integer: bool = False

    def __call__(self, value: str) -> float:
        flag, lo, hi = self.flag, self.lo, self.hi
        low = f"above {format_duration(lo)}" if self.lo_open else f"from {format_duration(lo)}"
        whole = "a duration in whole seconds" if self.integer else "a duration"
        tail = f"give {whole} {low} to {format_duration(hi)} ({DURATION_FORMS})"
        shown = f"{flag} {value[:40]!r}"
        example = f"{flag} {self.example}"
        text = value.strip()
        try:
            x = float(text)
        except ValueError:
            seconds = duration_seconds(text)
            if seconds is None:
                raise BadArgument(
                    f"{shown} is not a duration", hint=tail, example=example
                ) from None
            x = seconds
        else:
            if not math.isfinite(x):
                raise BadArgument(f"{shown} is not finite", hint=tail, example=example)
            if x > hi and lo < x / 1000 <= hi:
                raise BadArgument(
                    f"{shown} looks like milliseconds",
                    hint="give seconds",
                    example=f"{flag} {units.number_text(x / 1000)}",
                )
        if x < lo or (self.lo_open and x == lo) or x > hi:
            raise BadArgument(f"{shown} is out of range", hint=tail, example=example)
        if self.integer:
            if x != int(x):
                raise BadArgument(
                    f"{shown} is not a whole number of seconds", hint=tail, example=example
                )
            return int(x)
        return x


def duration(
    flag: str,
    lo: float,
    hi: float,
    example: str,
    *,
    lo_open: bool = False,
    integer: bool = False,
) -> Duration:
    """The duration type for ``flag`` (see ``Duration``)."""
    return Duration(flag, lo, hi, example, lo_open, integer)


# ---- listen addresses ----------------------------------------------------------------------------


def listen(flag: str = "--listen", example: str = "127.0.0.1:9464") -> Callable[[str], Address]:
    """A listen address, ``HOST:PORT`` (``hostport.host_port``: ``[::1]:9464`` for IPv6; port 0:
    the system picks one), returned as ``(host, port)``. A bare ``:PORT`` is refused."""
    return typed(flag, lambda value: host_port(value, example=example))


# ---- text ----------------------------------------------------------------------------------------


def text(flag: str, example: str, *, max_len: int = MAX_TEXT) -> Callable[[str], str]:
    """A short single-line value (a model name, run id, label): no control characters."""
    return typed(flag, lambda value: units.short_text(value, example, max_len=max_len))


def instance(flag: str = "--instance") -> Callable[[str], int | str]:
    """An instance as ``report --by instance`` prints it (``gpu1:8000``; ``HOST:MODEL`` for a
    writer that knew no port), returned as given; or a bare port (``8000``), returned as an
    int, which selects the instances on that port on every host."""
    as_port = port(flag, "8000")
    as_text = text(flag, "gpu1:8000")

    def parse(value: str) -> int | str:
        if ":" not in value and _numeral(value):
            return int(as_port(value))  # a port, or one line on why the number is not one
        if ":" not in value or value.startswith(":"):
            as_text(value)  # an unprintable or overlong value gets that line first
            raise BadArgument(
                f"{flag} {value[:40]!r} is neither HOST:PORT nor a port: give an instance as "
                f"`report --by instance` prints it, e.g. {flag} gpu1:8000, or a port, "
                f"e.g. {flag} 8000"
            )
        return as_text(value)

    return parse


def _numeral(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def url(flag: str, example: str) -> Callable[[str], str]:
    """An http(s) URL with a host (and a valid port, if any)."""

    def parse(value: str) -> str:
        problem = url_problem(value)
        if len(value) > 2048 or not value.isprintable() or any(c.isspace() for c in value):
            problem = "is not a URL"
        if problem:
            raise BadArgument(f"{flag} {value[:80]!r} {problem}: give e.g. {flag} {example}")
        return value

    return parse


def tz_name(flag: str = "--tz") -> Callable[[str], str]:
    """An IANA region zone (Region/City) that this machine's zone database knows, or UTC."""

    def parse(value: str) -> str:
        problem = zone_problem(value)
        if problem is not None:
            raise BadArgument(
                f"{flag} {value[:70]!r} {problem}: {zone_hint(value)}, e.g. {flag} Asia/Shanghai"
            )
        return value

    return parse
