"""vllm-ledger export: a period as rows of hour (or day) x model x instance, for finance."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable
from typing import IO
from zoneinfo import ZoneInfo

from vllm_ledger.commands._common import (
    TIME_FLAG_HELP,
    add_roots,
    add_tz,
    output_file,
    roots_of,
    say_wrote,
    since_until_flags,
    time_flag,
    typed,
    zone_of,
)
from vllm_ledger.commands.report import EXIT_NOTHING_MATCHED, note_nothing_matched
from vllm_ledger.errors import BadArgument
from vllm_ledger.formats import csvout
from vllm_ledger.formats.safe import printable
from vllm_ledger.outfile import writing
from vllm_ledger.read import whose_export
from vllm_ledger.read.export import FIELDS, ExportRow, export_rows, row_dict
from vllm_ledger.read.ledgerset import LedgerSet, nothing_matched
from vllm_ledger.read.periods import PERIOD_NAMES, period, resolve_time
from vllm_ledger.read.report import resolve_tz

NAME = "export"
HELP = "rows of hour, day or month x model x instance with coverage, as CSV or JSON lines"
EPILOG = """examples:
  vllm-ledger export --root /srv/artifacts/usage --since 2026-11-01T00:00:00+08:00 \\
      --until 2026-12-01T00:00:00+08:00 --output november.csv
  vllm-ledger export --root /srv/artifacts/usage --since 2026-11-30T00:00:00+08:00 \\
      --by day,model --format jsonl
  vllm-ledger export --root /srv/artifacts/usage --window last-month --by day --output oct.csv
  vllm-ledger export --root /srv/artifacts/usage --since 2026-11-01 --until 2026-12-01
  vllm-ledger export --root /srv/artifacts/usage --window this-month --by month,model
  vllm-ledger export --root /srv/artifacts/usage --window last-month --by key
  vllm-ledger export --root /srv/artifacts/usage --window this-month --by day,user --format jsonl
Each row: start, end (ISO 8601 in --tz), instance, model, input, output, cached, requests,
decode_tokens, decode_seconds, uncovered_seconds, declared_seconds, complete, problems. A row
is exact when complete is true. Rows stream: a year of hours runs in constant memory.
With --by key (adapter, user, tenant), each step (the whole period when no hour, day or
month is given) has a row per value, kind credited, then one per reason, kind
not_attributed (untagged, ambiguous, copies, aborted, fault): they add up to the step's
figures exactly, as report --by key shows them (docs/attribution.md).
A period given as --window, a date or a local time is read in the zone, which one line on
stderr names.
exit status: 0 printed or written, 1 the --output file could not be written, 2 a bad flag,
3 nothing matched: no ledger under the roots, or no
run recorded in the period (two lines on stderr say so and list the models and
instances the roots hold; nothing is written); see `vllm-ledger report --help`
"""


def _by(value: str) -> str:
    typed("--by", whose_export.parse_by)(value)  # one line on what is wrong
    return value


def configure(p: argparse.ArgumentParser) -> None:
    add_roots(p)
    period = p.add_mutually_exclusive_group(required=True)
    period.add_argument(
        "--window",
        choices=PERIOD_NAMES,
        metavar="NAME",
        help="export this window, as report --window cuts it: " + ", ".join(PERIOD_NAMES),
    )
    period.add_argument(
        "--since",
        type=time_flag("--since"),
        metavar="TIME",
        help=f"or export from TIME: {TIME_FLAG_HELP}",
    )
    p.add_argument(
        "--until",
        type=time_flag("--until"),
        metavar="TIME",
        help="end of the --since period (not included; default: now), in the same forms",
    )
    p.add_argument(
        "--by",
        type=_by,
        default="hour,model,instance",
        metavar="KEYS",
        help="hour, day or month, and any of model, instance (default hour,model,instance);"
        " or key, adapter, user or tenant, alone (the period as one step) or with those",
    )
    p.add_argument("--format", choices=("csv", "jsonl"), default="csv", help="default csv")
    p.add_argument(
        "--output",
        type=output_file("--output", "usage.csv", stdout=True),
        default="-",
        metavar="FILE",
        help="write here, whole when done (default: standard output)",
    )
    add_tz(p, "the rows' hours and days")


def run(args: argparse.Namespace, clock: Callable[[], float] = time.time) -> int:
    if args.until is not None and args.since is None:
        raise BadArgument("--until needs --since: e.g. --since 2026-11-01 --until 2026-12-01")
    roots = roots_of(args)
    choice = zone_of(args, roots)
    zone = resolve_tz(choice.name)
    with LedgerSet.read(roots, clock=clock) as ls, since_until_flags():
        start, end = _period(args, ls, zone)
        nm = nothing_matched(ls, since_ts=start, until_ts=end)
        if nm is not None:
            note_nothing_matched(nm)
            return EXIT_NOTHING_MATCHED
        if _zone_read(args):  # rows carry offsets; a period read in the zone names it too
            sys.stderr.write(f"vllm-ledger: export: period read in {printable(choice.label)}\n")
        write = _writer(ls, start, end, args.by, zone, args.format)
        if args.output == "-":
            write(sys.stdout)
        else:
            with writing(args.output, flag="--output", example="--output usage.csv") as f:
                write(f)
            say_wrote(args.output)
    return 0


def _writer(
    ls: LedgerSet, start: int, end: int, by: str, zone: ZoneInfo, fmt: str
) -> Callable[[IO[str]], None]:
    """What writes the rows ``--by`` asks for: the plain export's, or whose tokens'."""
    if whose_export.parse_by(by).whose is None:
        rows = export_rows(ls, start, end, by=by, tz=zone)
        return lambda out: _write(rows, out, fmt, zone)
    whose_rows = whose_export.whose_export_rows(ls, start, end, by=by, tz=zone)
    return lambda out: _write_whose(whose_rows, out, fmt, zone)


def _write_whose(
    rows: Iterable[whose_export.WhoseExportRow], out: IO[str], fmt: str, zone: ZoneInfo
) -> None:
    """Whose tokens' rows, as ``_write`` writes the plain ones."""
    writer = csvout.CsvWriter(out, whose_export.FIELDS) if fmt == "csv" else None
    for row in rows:
        values = whose_export.row_dict(row, zone)
        if writer is not None:
            writer.row(values)
        else:
            for name in ("instance", "model", "value"):
                values[name] = printable(values[name])
            out.write(json.dumps(values, ensure_ascii=True) + "\n")


def _write(rows: Iterable[ExportRow], out: IO[str], fmt: str, zone: ZoneInfo) -> None:
    """CSV in the project's one dialect (formats/csvout.py), or JSON lines."""
    writer = csvout.CsvWriter(out, FIELDS) if fmt == "csv" else None
    for row in rows:
        values = row_dict(row, zone)
        if writer is not None:
            writer.row(values)
        else:
            values["instance"] = printable(values["instance"])
            values["model"] = printable(values["model"])
            out.write(json.dumps(values, ensure_ascii=True) + "\n")


def _zone_read(args: argparse.Namespace) -> bool:
    """Whether the period's edges depend on the zone (a window, a date, a local time)."""
    specs = (args.since, args.until)
    return args.window is not None or any(t is not None and t.kind != "instant" for t in specs)


def _period(args: argparse.Namespace, ls: LedgerSet, zone: ZoneInfo) -> tuple[int, int]:
    """``[start, end)`` in whole seconds: ``--window`` as the report cuts it as of now, or
    ``--since``/``--until`` resolved in the zone as of now (``--until`` defaults to now, its
    second included)."""
    now = int(ls.now_ts // 1)
    if args.window is not None:
        first = ls.coverage(ls.sources(), ls.now_ts).first_record_ts
        w = period(args.window, now + 1, zone, first)
        return w.start_ts, w.cutoff_ts
    since = resolve_time(args.since, now, zone, argument="since")
    until = None if args.until is None else resolve_time(args.until, now, zone, argument="until")
    if until is not None and until <= since:
        raise BadArgument(
            "--until must be after --since, e.g. --since 2026-11-01 --until 2026-12-01 "
            f"(got {since:.0f} .. {until:.0f})"
        )
    return int(since // 1), (now + 1 if until is None else int(until // 1))
