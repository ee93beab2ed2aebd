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
    add_roots,
    add_tz,
    instant,
    output_file,
    roots_of,
    typed,
    zone_of,
)
from vllm_ledger.commands.report import EXIT_NOTHING_MATCHED, note_nothing_matched
from vllm_ledger.errors import BadArgument
from vllm_ledger.formats import csvout
from vllm_ledger.formats.safe import printable
from vllm_ledger.outfile import writing
from vllm_ledger.read.export import FIELDS, ExportRow, export_rows, parse_by, row_dict
from vllm_ledger.read.ledgerset import LedgerSet, nothing_matched
from vllm_ledger.read.report import resolve_tz

NAME = "export"
HELP = "rows of hour or day x model x instance with coverage, as CSV or JSON lines (billing)"
EPILOG = """examples:
  vllm-ledger export --root /srv/artifacts/usage --since 2026-11-01T00:00:00+08:00 \\
      --until 2026-12-01T00:00:00+08:00 --output november.csv
  vllm-ledger export --root /srv/artifacts/usage --since 2026-11-30T00:00:00+08:00 \\
      --by day,model --format jsonl
Each row: start, end (ISO 8601 in --tz), instance, model, input, output, cached, requests,
decode_tokens, decode_seconds, uncovered_seconds, declared_seconds, complete, problems. A row
is exact when complete is true. Rows stream: a year of hours runs in constant memory.
exit status: 0 written, 2 a bad flag, 3 nothing matched: no ledger under the roots, or no
run recorded from --since to --until (two lines on stderr say so and list the models and
instances the roots hold; nothing is written); see `vllm-ledger report --help`
"""


def _by(value: str) -> str:
    typed("--by", parse_by)(value)  # one line on what is wrong
    return value


def configure(p: argparse.ArgumentParser) -> None:
    add_roots(p)
    p.add_argument(
        "--since",
        required=True,
        type=instant("--since"),
        metavar="TIME",
        help="start: Unix seconds or ISO 8601 with an offset",
    )
    p.add_argument(
        "--until",
        type=instant("--until"),
        metavar="TIME",
        help="end (not included; default: the report cutoff, now)",
    )
    p.add_argument(
        "--by",
        type=_by,
        default="hour,model,instance",
        metavar="KEYS",
        help="hour or day, and any of model, instance (default hour,model,instance)",
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
    roots = roots_of(args)
    zone = resolve_tz(zone_of(args, roots).name)
    if args.until is not None and args.until <= args.since:
        raise BadArgument("--until must be after --since, e.g. --since 2026-11-01T00:00:00+08:00")
    with LedgerSet.read(roots, clock=clock) as ls:
        nm = nothing_matched(ls, since_ts=args.since, until_ts=args.until)
        if nm is not None:
            note_nothing_matched(nm)
            return EXIT_NOTHING_MATCHED
        until = int(args.until // 1) if args.until is not None else int(ls.now_ts // 1) + 1
        rows = export_rows(ls, int(args.since // 1), until, by=args.by, tz=zone)
        if args.output == "-":
            _write(rows, sys.stdout, args.format, zone)
        else:
            with writing(args.output, flag="--output", example="--output usage.csv") as f:
                _write(rows, f, args.format, zone)
    return 0


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
