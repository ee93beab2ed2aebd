"""vllm-ledger timeline: a window in steps (7 days in hours by default), as a chart, JSON or CSV."""

from __future__ import annotations

import argparse
import sys

from vllm_ledger.commands._common import add_roots, add_time, parse_at, roots_of
from vllm_ledger.formats.timeline import render_csv, render_json, render_text
from vllm_ledger.read.timeline import DEFAULT_STEP, DEFAULT_WINDOW, build_timeline

NAME = "timeline"
HELP = "a window in steps: input, output, cached, hit rate, speed and uncovered time per step"
EPILOG = """example:
  vllm-ledger timeline --root /srv/artifacts/usage
  vllm-ledger timeline --root /srv/artifacts/usage --window 24h --step 1h --csv
"""


def configure(p: argparse.ArgumentParser) -> None:
    add_roots(p)
    add_time(p)
    p.add_argument(
        "--window",
        default=DEFAULT_WINDOW,
        metavar="SPAN",
        help=f"today, total, or a span ending now such as 24h or 7d (default {DEFAULT_WINDOW})",
    )
    p.add_argument(
        "--step",
        default=DEFAULT_STEP,
        metavar="SPAN",
        help=f"step length such as 5m, 1h or 1d (default {DEFAULT_STEP})",
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print every step as JSON")
    out.add_argument("--csv", action="store_true", help="print every step as CSV")


def run(args: argparse.Namespace) -> int:
    tl = build_timeline(
        roots_of(args), window=args.window, step=args.step, at_ts=parse_at(args.at), tz=args.tz
    )
    render = render_json if args.json else render_csv if args.csv else render_text
    sys.stdout.write(render(tl))
    return 0
