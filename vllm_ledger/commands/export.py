"""vllm-ledger export: a period as rows of hour (or day) x model x instance, for finance."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable
from typing import IO
from zoneinfo import ZoneInfo

from vllm_ledger.commands._files import output_file, say_wrote
from vllm_ledger.commands._ledger_flags import add_roots, add_zeros, roots_of
from vllm_ledger.commands._refusals import typed
from vllm_ledger.commands._renamed import add_renamed
from vllm_ledger.commands._times import TIME_FLAG_HELP, since_until_flags, time_flag
from vllm_ledger.commands._zones import add_tz, zone_of
from vllm_ledger.commands.report import EXIT_NOTHING_MATCHED, note_nothing_matched
from vllm_ledger.errors import BadArgument
from vllm_ledger.formats import csvout
from vllm_ledger.formats.safe import printable
from vllm_ledger.outfile import writing
from vllm_ledger.read import whose_export
from vllm_ledger.read.export import FIELDS, ExportRow, export_rows, row_dict
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.matched import period_matched
from vllm_ledger.read.periods import GRAINS, PERIOD_NAMES, period, period_between
from vllm_ledger.read.report import resolve_tz
from vllm_ledger.units import duration_seconds

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
  vllm-ledger export --root /srv/artifacts/usage --since 2026-11 --until 2026-12 --by day
Each row: start, end (ISO 8601 in --tz), instance, model, input, output, cached, requests,
decode_tokens, decode_seconds, uncovered_seconds, declared_seconds, complete, figures,
problems. A row is exact when complete is true; where no second of it is vouched for and
nothing was counted its figures are unknown: empty (null in jsonl), figures "unknown", never
0 (--zeros prints 0 there). With --by hour, day or month alone, every step of the period
has its row, the rows of report --by day. Rows stream: a year of hours in constant memory.
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


DEFAULT_BY = "hour,model,instance"


def _by(value: str) -> str:
    typed("--by", whose_export.parse_by)(value)  # one line on what is wrong
    return value


def _step(value: str) -> str:
    """``--step``, the timeline's word, kept as a deprecated spelling of ``--by``'s step: hour,
    day or month (or 1h, 1d)."""
    word = value.strip()
    seconds = duration_seconds(word)
    word = {3600.0: "hour", 86400.0: "day"}.get(seconds or 0.0, word)
    if word not in GRAINS:
        raise BadArgument(
            f"--step {value[:40]!r} is not a step export cuts by: give --by hour, day or month "
            "(and any of model, instance), e.g. --by day"
        )
    return word


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
        metavar="KEYS",
        help=f"hour, day or month, and any of model, instance (default {DEFAULT_BY});"
        " or key, adapter, user or tenant, alone (the period as one step) or with those",
    )
    add_renamed(p, "--step", "--by", dest="step", type=_step, show=lambda g: f"{g},model,instance")
    add_zeros(p)
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
    by = _by_of(args)
    roots = roots_of(args)
    choice = zone_of(args, roots)
    zone = resolve_tz(choice.name)
    with LedgerSet.read(roots, clock=clock) as ls, since_until_flags():
        cutoff, start, end = _period(args, ls, zone)
        since = start if args.since is not None else None
        until = end if args.until is not None else None
        nm = period_matched(ls, cutoff, since_ts=since, until_ts=until)
        if nm is not None:
            note_nothing_matched(nm, zone, cutoff)
            return EXIT_NOTHING_MATCHED
        if _zone_read(args):  # rows carry offsets; a period read in the zone names it too
            sys.stderr.write(f"vllm-ledger: export: period read in {printable(choice.label)}\n")
        write = _writer(ls, start, end, by, zone, args.format, args.zeros)
        if args.output == "-":
            write(sys.stdout)
        else:
            with writing(args.output, flag="--output", example="--output usage.csv") as f:
                write(f)
            say_wrote(args.output)
    return 0


def _by_of(args: argparse.Namespace) -> str:
    """``--by``, or the default with the deprecated ``--step``'s step."""
    step = getattr(args, "step", None)
    if step is None:
        return args.by or DEFAULT_BY
    if args.by is not None:
        raise BadArgument(
            f"--step {step} and --by {args.by}: give the step in --by alone, e.g. --by {step},model"
        )
    return f"{step},model,instance"


def _writer(
    ls: LedgerSet, start: int, end: int, by: str, zone: ZoneInfo, fmt: str, zeros: bool
) -> Callable[[IO[str]], None]:
    """What writes the rows ``--by`` asks for: the plain export's, or whose tokens'."""
    if whose_export.parse_by(by).whose is None:
        rows = export_rows(ls, start, end, by=by, tz=zone)
        return lambda out: _write(rows, out, fmt, zone, zeros)
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


def _write(
    rows: Iterable[ExportRow], out: IO[str], fmt: str, zone: ZoneInfo, zeros: bool = False
) -> None:
    """CSV in the project's one dialect (formats/csvout.py), or JSON lines; unknown figures
    empty or null (``zeros``: 0)."""
    writer = csvout.CsvWriter(out, FIELDS) if fmt == "csv" else None
    for row in rows:
        values = row_dict(row, zone, zeros)
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


def _period(args: argparse.Namespace, ls: LedgerSet, zone: ZoneInfo) -> tuple[int, int, int]:
    """The cutoff and ``[start, end)`` in whole seconds, as the report cuts them: ``--window``
    as of the cutoff, or ``--since``/``--until`` resolved in the zone as of the cutoff
    (``--until`` defaults to it)."""
    now = ls.now_ts
    model = ls.coverage(ls.sources(), now)
    cutoff = model.cutoff_at(now)
    if args.window is not None:
        w = period(args.window, cutoff, zone, model.first_record_ts)
    else:
        w = period_between(args.since, args.until, cutoff, zone)
    return cutoff, w.start_ts, w.cutoff_ts
