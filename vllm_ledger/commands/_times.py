"""The flags that take a time (``--since``, ``--until``, ``--at``, ``--from``): one grammar
(``timespec.TIME_FORMS``), resolved in the command's zone, refusals worded with the flags."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from vllm_ledger import timespec
from vllm_ledger.commands._refusals import flag_names, flagged, typed, with_flags
from vllm_ledger.commands._zones import add_tz
from vllm_ledger.errors import BadArgument
from vllm_ledger.read.zone import zone_info


def add_time(p: argparse.ArgumentParser) -> None:
    add_tz(p)
    p.add_argument(
        "--at",
        type=time_flag("--at"),
        metavar="TIME",
        help=f"report as of TIME (default: now): {TIME_FLAG_HELP}",
    )


def time_flag(flag: str) -> Callable[[str], timespec.TimeSpec]:
    """Every flag that takes a time (``--since``, ``--until``, ``--at``, ``--from``) as
    argparse's ``type``: ``timespec.time_spec`` (every form of ``timespec.TIME_FORMS``),
    resolved once the zone and the cutoff are known (``resolve_flag``,
    ``read.periods.period_between``); one line naming ``flag`` otherwise."""
    return typed(flag, timespec.time_spec)


def resolve_flag(
    spec: timespec.TimeSpec | None, flag: str, zone: str, now_ts: float | None = None
) -> float | None:
    """A time flag's value (``time_flag``) as Unix seconds: read in ``zone`` and, for ``7d``,
    ``today`` and ``yesterday``, as of ``now_ts`` (default: the clock); None when not given. A
    refusal (a local time the zone skips, a duration reaching back before 2000) names
    ``flag``."""
    if spec is None:
        return None
    import time

    from vllm_ledger.read.periods import resolve_time

    now = math.floor(time.time() if now_ts is None else now_ts)
    argument = flag.lstrip("-")
    with flag_names(**{argument: flag}):
        return resolve_time(spec, now, zone_info(zone), argument=argument)


def at_of(args: argparse.Namespace, zone: str) -> float | None:
    """``--at`` as Unix seconds in the command's zone (None: now)."""
    return resolve_flag(getattr(args, "at", None), "--at", zone)


TIME_FLAG_HELP = (
    "a date (2026-12-01, 20261201), a month (2026-12: its first day), a local time "
    "(2026-12-01T08:00) in the zone, ISO 8601 with an offset, Unix seconds, today, yesterday, or "
    "a duration ago (7d); see docs/ledger.md"
)


def add_since_until(p: argparse.ArgumentParser, start: str, *, required: bool = False) -> None:
    """``--since TIME`` (``start``: what it starts) and ``--until TIME``."""
    p.add_argument(
        "--since",
        type=time_flag("--since"),
        required=required,
        metavar="TIME",
        help=f"{start} from TIME: {TIME_FLAG_HELP}",
    )
    p.add_argument(
        "--until",
        type=time_flag("--until"),
        metavar="TIME",
        help="end of the --since period (not included; default: the cutoff), in the same forms",
    )


TIME_FLAGS = {"since": "--since", "until": "--until", "from": "--from", "at": "--at"}


@contextmanager
def since_until_flags(flags: Mapping[str, str] = TIME_FLAGS) -> Iterator[None]:
    """Within the block, a refusal of a time as it was resolved (a local time a DST change
    skips, a duration reaching back before 2000, an end not after its start) is worded with the
    flags (``--until 2026-11-01 00:00:00 +08:00 is not after --since ...``)."""
    try:
        yield
    except BadArgument as exc:
        if exc.argument not in flags:
            raise
        if exc.what.startswith(f"{exc.argument} ") and " is not after " in exc.what:
            said = [with_flags(t, flags) for t in (exc.what, exc.hint, exc.example)]
            raise BadArgument(
                said[0], hint=said[1], argument=exc.argument, value=exc.value, example=said[2]
            ) from None
        raise flagged(exc, flags[exc.argument]) from None
