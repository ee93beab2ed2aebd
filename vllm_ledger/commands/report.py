"""vllm-ledger report: the five windows over every ledger under the roots."""

from __future__ import annotations

import argparse
import sys

from vllm_ledger.commands._common import add_roots, add_time, output_file, port, roots_of, text
from vllm_ledger.formats import json as json_format
from vllm_ledger.formats import text as text_format
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.report import BREAKDOWN_KEYS, build_report

NAME = "report"
HELP = "sum every ledger into today / 24h / 3d / 7d / total, with coverage"
EPILOG = """example:
  vllm-ledger report --root /srv/artifacts/usage
  vllm-ledger report --root /srv/artifacts/usage --json --at 2026-11-29T08:00:00+08:00
"""


def configure(p: argparse.ArgumentParser) -> None:
    add_roots(p)
    add_time(p)
    p.add_argument("--json", action="store_true", help="print the schema-1 JSON document")
    p.add_argument("--by", choices=BREAKDOWN_KEYS, help="break every window down by this key")
    p.add_argument(
        "--instance", type=port("--instance"), metavar="PORT", help="only the instance on this port"
    )
    p.add_argument(
        "--model",
        type=text("--model", "qwen3-8b"),
        metavar="NAME",
        help="only runs serving this model name",
    )
    p.add_argument(
        "--html",
        type=output_file("--html", "usage.html"),
        metavar="FILE",
        help="also write a self-contained HTML page (a regular file; replaced whole)",
    )


def run(args: argparse.Namespace) -> int:
    with LedgerSet.read(roots_of(args)) as ledgers:  # one read feeds the report and the page
        report = build_report(
            ledgers,
            at_ts=args.at,
            tz=args.tz,
            by=args.by,
            instance=args.instance,
            model=args.model,
        )
        if args.html:
            from vllm_ledger.formats import html as html_format  # only for --html
            from vllm_ledger.read.page import build_page

            html_format.write(build_page(ledgers, report), args.html)
    sys.stdout.write(json_format.render(report) if args.json else text_format.render(report))
    return 0
