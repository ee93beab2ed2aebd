"""vllm-ledger report: the five windows over every ledger under the roots."""

from __future__ import annotations

import argparse
import sys
from zoneinfo import ZoneInfo

from vllm_ledger import names
from vllm_ledger.commands._files import output_file, say_wrote
from vllm_ledger.commands._ledger_flags import add_filters, add_roots, add_zeros, roots_of
from vllm_ledger.commands._refusals import flag_names, typed
from vllm_ledger.commands._times import add_since_until, add_time, at_of, since_until_flags
from vllm_ledger.commands._values import number
from vllm_ledger.commands._zones import zone_of
from vllm_ledger.errors import BadArgument
from vllm_ledger.formats import json as json_format
from vllm_ledger.formats import text as text_format
from vllm_ledger.formats import whose_text
from vllm_ledger.formats.whose_text import DEFAULT_TOP
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.matched import NothingMatched
from vllm_ledger.read.periods import PERIOD_NAMES
from vllm_ledger.read.whose_report import REPORT_BY_KEYS, WhoseReport, parse_by, report_by
from vllm_ledger.read.zone import zone_info

NAME = "report"
HELP = "sum every ledger into today / 24h / 3d / 7d / total, with coverage"
EPILOG = """example:
  vllm-ledger report --root /srv/artifacts/usage
  vllm-ledger report --root /srv/artifacts/usage --json --at 2026-11-29T08:00:00+08:00
  vllm-ledger report --root /srv/artifacts/usage --by instance
  vllm-ledger report --root /srv/artifacts/usage --instance gpu1:8000
  vllm-ledger report --root /srv/artifacts/usage --window yesterday --window last-month --csv
  vllm-ledger report --root /srv/artifacts/usage --since 2026-11-01T00:00:00+08:00 \\
      --until 2026-12-01T00:00:00+08:00 --by model
  vllm-ledger report --root /srv/artifacts/usage --since 2026-11-01 --until 2026-12-01
  vllm-ledger report --root /srv/artifacts/usage --since yesterday --tz America/New_York
  vllm-ledger report --root /srv/artifacts/usage --since 36h --json
  vllm-ledger report --root /srv/artifacts/usage --since 2026-11 --until 2026-12 --by day
  vllm-ledger report --root /srv/artifacts/usage --by day --window last-month
  vllm-ledger report --root /srv/artifacts/usage --by month --since 2026-01-01 --csv
  vllm-ledger report --root /srv/artifacts/usage --by day,model --since 7d
  vllm-ledger report --root /srv/artifacts/usage --by hour --window yesterday --csv
  vllm-ledger report --root /srv/artifacts/usage --by key
  vllm-ledger report --root /srv/artifacts/usage --by day,user --window this-month --csv

--by day (hour, month) cuts one period (--window NAME, --since/--until, or all recorded
time) where the zone's clock starts a day (an hour, a month) into one row per step, each
with its own coverage, and ends with a total row over the whole period; a first or last
row that covers only part of its day (--since 7d: 8 rows, the first and last partial) is
said under the table, and in --csv and --json its start or cutoff shows where.

Unknown is never printed as zero: where no second of a window is vouched for and nothing
was counted, its figures are ? in text, empty in --csv and null in --json, beside its
coverage ("figures": "unknown"); --zeros prints 0 there instead (docs/ledger.md).

--by key (adapter, user, tenant) shows whose tokens: per window, a row per API key (LoRA
adapter or served name, end user, tenant) with most input first, one "not attributed" row
with its reasons (untagged, ambiguous, n > 1 copies, aborted; middleware faults), and the
window's total, which they add up to exactly (docs/attribution.md). The text shows the
--top rows of each window and sums the rest in one row; --json and --csv show every row.

When the roots hold no ledger, or --instance, --model or --since/--until match none (a
period after the cutoff too: --since 2027-01-01), the first line says "nothing matched"
and the next lists the models and instances the roots do hold (with --json or --csv these
lines go to stderr; the JSON carries "nothing_matched", docs/json-schema.md).
exit status: 0 printed, 1 the --html file could not be written, 2 a bad flag, 3 nothing
matched (the same in timeline, export, cost and status)
"""

EXIT_NOTHING_MATCHED = names.EXIT_NOTHING_MATCHED  # the same in timeline, export, cost, status


def _by(value: str) -> str:
    typed("--by", parse_by)(value)  # one line on what is wrong
    return value


def configure(p: argparse.ArgumentParser) -> None:
    add_roots(p)
    add_time(p)
    p.add_argument("--json", action="store_true", help="print the schema-1 JSON document")
    p.add_argument(
        "--by",
        type=_by,
        metavar="KEY",
        help="break every window down by a key ("
        + ", ".join(REPORT_BY_KEYS)
        + "), or show a row per hour, day or month of one period in the zone, with a total"
        " row (hour, day, month), or both: day,model",
    )
    p.add_argument(
        "--top",
        type=number("--top", 0, 1_000_000, "50", unit="a count of rows", integer=True),
        default=DEFAULT_TOP,
        metavar="N",
        help=f"with --by key, adapter, user or tenant: the rows the text names per window, the"
        f" rest summed in one row (default {DEFAULT_TOP}; 0: all)",
    )
    add_filters(p)
    p.add_argument(
        "--window",
        action="append",
        choices=PERIOD_NAMES,
        metavar="NAME",
        help="show this window instead of the five (repeatable): " + ", ".join(PERIOD_NAMES),
    )
    add_since_until(p, "show a window named 'period'")
    p.add_argument(
        "--strict",
        action="store_true",
        help="ignore declared stops (declare-stop): every stop counts as uncovered",
    )
    p.add_argument("--csv", action="store_true", help="print the windows as CSV rows")
    add_zeros(p)
    p.add_argument(
        "--html",
        type=output_file("--html", "usage.html"),
        metavar="FILE",
        help="also write a self-contained HTML page (a regular file; replaced whole)",
    )


def run(args: argparse.Namespace) -> int:
    if args.until is not None and args.since is None:
        raise BadArgument("--until needs --since: e.g. --since 2026-11-01 --until 2026-12-01")
    if args.json and args.csv:
        raise BadArgument("--json and --csv: choose one")
    roots = roots_of(args)
    zone = zone_of(args, roots)
    at_ts = at_of(args, zone.name)
    # one read feeds the report and the page
    with LedgerSet.read(roots) as ledgers, since_until_flags(), flag_names(by="--by"):
        report = report_by(
            ledgers,
            at_ts=at_ts,
            tz=zone.name,
            by=args.by,
            instance=args.instance,
            model=args.model,
            strict=args.strict,
            periods=tuple(args.window or ()),
            since=args.since,
            until=args.until,
            # The text table names --top rows: only those are made; --json and --csv, every one.
            top=0 if args.json or args.csv or args.html else args.top,
        )
        if args.html:
            from vllm_ledger.formats import html as html_format  # only for --html
            from vllm_ledger.read.page import build_page

            html_format.write(build_page(ledgers, report), args.html)
            say_wrote(args.html)
    nm = report.nothing_matched
    tz = zone_info(zone.name)
    if args.csv:
        from vllm_ledger.formats import csvout

        note_nothing_matched(nm, tz, report.cutoff_ts)
        sys.stdout.write(csvout.render_report(report, args.zeros))
    elif args.json:
        note_nothing_matched(nm, tz, report.cutoff_ts)
        sys.stdout.write(json_format.render(report, zone, args.zeros))
    elif isinstance(report, WhoseReport):
        sys.stdout.write(whose_text.render(report, zone, args.top))
    else:
        sys.stdout.write(text_format.render(report, zone, args.zeros))
    return 0 if nm is None else EXIT_NOTHING_MATCHED


def note_nothing_matched(
    nm: NothingMatched | None, tz: ZoneInfo | None = None, cutoff_ts: int | None = None
) -> None:
    """Where stdout is for a program (JSON, CSV), the "nothing matched" lines go to stderr,
    their instants in ``tz`` (``cutoff_ts``: the cutoff, for a period after it)."""
    if nm is not None:
        lines = text_format.nothing_matched_lines(nm, tz, cutoff_ts)
        sys.stderr.write("\n".join(lines) + "\n")
