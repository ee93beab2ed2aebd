"""vllm-ledger timeline: a window in steps (7 days in hours by default), as a chart, JSON or CSV."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from typing import Any

from vllm_ledger.commands._ledger_flags import add_filters, add_roots, add_zeros, roots_of
from vllm_ledger.commands._refusals import flag_names, typed
from vllm_ledger.commands._renamed import deprecate
from vllm_ledger.commands._times import add_time, at_of
from vllm_ledger.commands._values import duration
from vllm_ledger.commands._zones import zone_of
from vllm_ledger.commands.report import EXIT_NOTHING_MATCHED, note_nothing_matched
from vllm_ledger.errors import BadArgument, TooManySteps
from vllm_ledger.formats.text import nothing_matched_lines
from vllm_ledger.formats.timeline import render_csv, render_json, render_text
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.matched import nothing_matched
from vllm_ledger.read.periods import GRAINS, PERIOD_NAMES
from vllm_ledger.read.timeline import (
    DEFAULT_STEP,
    DEFAULT_WINDOW,
    MAX_STEPS,
    TIMELINE_BREAKDOWN_KEYS,
    build_timeline,
    parse_by,
)
from vllm_ledger.read.zone import zone_info
from vllm_ledger.units import format_duration, whole_duration

NAME = "timeline"
HELP = "a window in steps: input, output, cached, hit rate, speed and uncovered time per step"
EPILOG = """example:
  vllm-ledger timeline --root /srv/artifacts/usage
  vllm-ledger timeline --root /srv/artifacts/usage --window 24h --step 1h --csv
  vllm-ledger timeline --root /srv/artifacts/usage --window today --by instance
  vllm-ledger timeline --root /srv/artifacts/usage --window last-month --by day --csv
  vllm-ledger timeline --root /srv/artifacts/usage --window 7d --by day,model
  vllm-ledger timeline --root /srv/artifacts/usage --instance gpu1:8000 --json

--by day (hour, month) cuts the window where the zone's clock starts a day (an hour, a
month): the rows of report --by day and export --by day (--window 7d: 8 rows, the first
and last partial days, said under the table; in --csv and --json their start and cutoff
show where); --step DURATION cuts it into steps of that length on the local clock instead
(5m, 1h, 1d). A step whose every second is
uncovered and that counted nothing has its figures unknown: ? in text, empty in --csv, null
in --json ("figures": "unknown"), never 0; --zeros prints 0 there.

exit status: 0 printed, 2 a bad flag, 3 nothing matched: no ledger under the roots, or
none of --instance or --model (the first line says so and lists what the roots hold; with
--json or --csv on stderr); see `vllm-ledger report --help`
"""


MAX_SPAN_S = 100 * 366 * 86400  # a century: no ledger is older (2000-2100)
_ONE_UNIT = re.compile(r"[0-9]+[smhdw]")  # a window or step as the timeline names it


def span(flag: str, *, named: tuple[str, ...] = ()) -> Callable[[str], str]:
    """``--window``/``--step``: a duration as every command takes one (90m, 1h30m, 7d, plain
    seconds), whole seconds from 1 s to a century, passed on in one unit as the timeline names
    it (``1h30m`` -> ``90m``); ``named``: window names taken as they are (today, this-month,
    ...)."""
    seconds = duration(flag, 1, MAX_SPAN_S, "7d" if flag == "--window" else "1h", integer=True)

    def parse(value: str) -> str:
        value = value.strip()
        if value in named:
            return value
        n = int(seconds(value))  # one line naming the flag if not a duration
        return value if _ONE_UNIT.fullmatch(value) else format_duration(n, "unit")

    return parse


def check_steps(window: str, step: str) -> None:
    """Refuse a window that ``step`` would cut into more than MAX_STEPS before any ledger is
    read (calendar windows such as today and total, and calendar steps, are checked by the
    timeline, once their start is known)."""
    if not _ONE_UNIT.fullmatch(window) or step in GRAINS:
        return
    steps = -(-whole_duration(window) // whole_duration(step))
    if steps > MAX_STEPS:
        raise too_many(TooManySteps(steps, MAX_STEPS, window=window, step=step))


def too_many(exc: TooManySteps) -> BadArgument:
    """A timeline's refusal of its step count, worded with the flags."""
    if exc.by is not None:
        return BadArgument(
            f"--by {exc.by} makes {exc.rows} rows of {exc.steps} steps: use a larger --step, a "
            f"shorter --window, --instance or --model (at most {exc.limit} in all)"
        )
    count = f"at least {exc.steps}" if exc.at_least else f"{exc.steps}"
    return BadArgument(
        f"--window {exc.window} at --step {exc.step} makes {count} steps: "
        f"use a larger --step (at most {exc.limit} steps)"
    )


def configure(p: argparse.ArgumentParser) -> None:
    add_roots(p)
    add_time(p)
    p.add_argument(
        "--window",
        default=DEFAULT_WINDOW,
        type=span("--window", named=PERIOD_NAMES),
        metavar="NAME",
        help="the window: " + ", ".join(PERIOD_NAMES) + ", or any duration ending now such as "
        f"90m or 2w (default {DEFAULT_WINDOW})",
    )
    p.add_argument(
        "--step",
        type=span("--step", named=GRAINS),
        action=_Step,
        metavar="DURATION",
        help=f"fixed step length such as 5m, 1h or 1d on the local clock (default "
        f"{DEFAULT_STEP}); a calendar step is --by hour, day or month",
    )
    p.add_argument(
        "--by",
        type=_by,
        metavar="KEY",
        help="a step in the zone's calendar (" + ", ".join(GRAINS) + "), as report --by day "
        "cuts it, and/or one row of steps per key (" + ", ".join(TIMELINE_BREAKDOWN_KEYS) + "; "
        "each with its own coverage): day,model",
    )
    add_filters(p)
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print every step as JSON")
    out.add_argument("--csv", action="store_true", help="print every step as CSV")
    add_zeros(p)


class _Step(argparse.Action):
    """``--step DURATION``; ``--step day`` (hour, month), the calendar step's older spelling,
    is ``--by day`` and says so in one note (docs/cli.md, "Vocabulary")."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if values in GRAINS:
            deprecate(namespace, f"--step {values}", f"--by {values}")
        setattr(namespace, self.dest, values)


def _by(value: str) -> str:
    typed("--by", parse_by)(value)  # one line on what is wrong
    return value


def step_of(args: argparse.Namespace) -> tuple[str, str | None]:
    """The step (``--by``'s calendar step, else ``--step``, else the default) and the key."""
    grain, key = parse_by(args.by)
    if grain is not None and args.step is not None and args.step != grain:
        raise BadArgument(
            f"--by {args.by} and --step {args.step}: give one step, e.g. --by {grain} or "
            f"--step {args.step}"
        )
    return grain or args.step or DEFAULT_STEP, key


def run(args: argparse.Namespace) -> int:
    step, key = step_of(args)
    check_steps(args.window, step)
    roots = roots_of(args)
    zone = zone_of(args, roots)
    at_ts = at_of(args, zone.name)
    with LedgerSet.read(roots) as ls, flag_names(window="--window"):
        try:
            tl = build_timeline(
                ls,
                window=args.window,
                step=step,
                at_ts=at_ts,
                tz=zone.name,
                instance=args.instance,
                model=args.model,
                by=key,
            )
        except TooManySteps as exc:
            raise too_many(exc) from None
        nm = nothing_matched(ls, instance=args.instance, model=args.model, at_ts=at_ts)
    tz = zone_info(zone.name)
    if args.json or args.csv:
        note_nothing_matched(nm, tz, tl.cutoff_ts)
    elif nm is not None:
        lines = nothing_matched_lines(nm, tz, tl.cutoff_ts)
        sys.stdout.write("\n".join([*lines, ""]) + "\n")
    render = render_json if args.json else render_csv if args.csv else render_text
    sys.stdout.write(render(tl, zone, zeros=args.zeros))
    return 0 if nm is None else EXIT_NOTHING_MATCHED
