"""vllm-ledger timeline: a window in steps (7 days in hours by default), as a chart, JSON or CSV."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from vllm_ledger.commands._common import add_filters, add_roots, add_time, roots_of
from vllm_ledger.errors import BadArgument
from vllm_ledger.formats.timeline import render_csv, render_json, render_text
from vllm_ledger.read.timeline import (
    DEFAULT_STEP,
    DEFAULT_WINDOW,
    MAX_STEPS,
    TIMELINE_BREAKDOWN_KEYS,
    build_timeline,
    parse_duration,
)

NAME = "timeline"
HELP = "a window in steps: input, output, cached, hit rate, speed and uncovered time per step"
EPILOG = """example:
  vllm-ledger timeline --root /srv/artifacts/usage
  vllm-ledger timeline --root /srv/artifacts/usage --window 24h --step 1h --csv
  vllm-ledger timeline --root /srv/artifacts/usage --window today --by instance
  vllm-ledger timeline --root /srv/artifacts/usage --instance gpu1:8000 --json
"""


MAX_SPAN_S = 100 * 366 * 86400  # a century: no ledger is older (2000-2100)


def span(flag: str, *, named: tuple[str, ...] = ()) -> Callable[[str], str]:
    """``--window``/``--step``: a duration such as 90m, 24h or 7d, at most a century long
    (``named``: words taken as they are, such as today and total)."""

    def parse(value: str) -> str:
        value = value.strip()
        if value in named:
            return value
        if len(value) > 24:
            raise BadArgument(
                f"{flag} {value[:40]!r} is not a duration: give a number and a unit, e.g. 1h or 7d"
            )
        seconds = parse_duration(value, flag)  # one line naming the flag if not a duration
        if seconds > MAX_SPAN_S:
            raise BadArgument(f"{flag} {value!r} is longer than a century: give e.g. {flag} 7d")
        return value

    return parse


def check_steps(window: str, step: str) -> None:
    """Refuse a window that ``step`` would cut into more than MAX_STEPS before any ledger is
    read (``today`` and ``total`` are checked by the timeline, once their start is known)."""
    if window in ("today", "total"):
        return
    steps = -(-parse_duration(window, "--window") // parse_duration(step, "--step"))
    if steps > MAX_STEPS:
        raise BadArgument(
            f"--window {window} at --step {step} makes {steps} steps: "
            f"use a larger --step (at most {MAX_STEPS} steps)"
        )


def configure(p: argparse.ArgumentParser) -> None:
    add_roots(p)
    add_time(p)
    p.add_argument(
        "--window",
        default=DEFAULT_WINDOW,
        type=span("--window", named=("today", "total")),
        metavar="SPAN",
        help=f"today, total, or a span ending now such as 24h or 7d (default {DEFAULT_WINDOW})",
    )
    p.add_argument(
        "--step",
        default=DEFAULT_STEP,
        type=span("--step"),
        metavar="SPAN",
        help=f"step length such as 5m, 1h or 1d (default {DEFAULT_STEP})",
    )
    p.add_argument(
        "--by",
        choices=TIMELINE_BREAKDOWN_KEYS,
        help="add one row of steps per key (each with its own coverage)",
    )
    add_filters(p)
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print every step as JSON")
    out.add_argument("--csv", action="store_true", help="print every step as CSV")


def run(args: argparse.Namespace) -> int:
    check_steps(args.window, args.step)
    tl = build_timeline(
        roots_of(args),
        window=args.window,
        step=args.step,
        at_ts=args.at,
        tz=args.tz,
        instance=args.instance,
        model=args.model,
        by=args.by,
    )
    render = render_json if args.json else render_csv if args.csv else render_text
    sys.stdout.write(render(tl))
    return 0
