"""vllm-ledger status: the bounded status JSON the bot reads over SSH (one line, < 60 KiB)."""

from __future__ import annotations

import argparse
import sys

from vllm_ledger.bot.health import probe_local
from vllm_ledger.bot.message import LANGS, render_host
from vllm_ledger.commands._common import add_filters, add_roots, add_time, roots_of, zone_of
from vllm_ledger.commands.report import EXIT_NOTHING_MATCHED
from vllm_ledger.formats import status as status_format
from vllm_ledger.formats.safe import printable
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.ports import port_rows
from vllm_ledger.read.report import BREAKDOWN_KEYS, Report, build_report
from vllm_ledger.read.whose import WhoseWindow, whose
from vllm_ledger.read.windows import Window

NAME = "status"
HELP = "print the bounded status JSON for the bot (numbers only, per port, < 60 KiB)"
EPILOG = """example:
  vllm-ledger status --root /srv/artifacts/usage
  vllm-ledger status --root /srv/artifacts/usage --instance gpu1:8000
  vllm-ledger status --root /srv/artifacts/usage --text --lang en

This is the only command the poller runs remotely (with --root only); see
`vllm-ledger ssh-key-line`. The document always carries the figures per API port
("instances", at most 16), which the bot picks by node port, and each row's
health: this host's own GET 127.0.0.1:PORT/health (--no-health skips it); where the
ledgers keep whose tokens, the top 5 keys of today ("keys_today").
--text prints the bot's message for this host instead, as a person reads it: the reply the
bot makes of this very document, a block per port (docs/bot-status.md).
exit status: 0 printed, 2 a bad flag, 3 nothing matched: no ledger under the roots, or
none of --instance or --model; the document is printed all the same and carries
"nothing_matched" (what the roots hold; docs/bot-status.md)
"""


def configure(p: argparse.ArgumentParser) -> None:
    add_roots(p)
    add_time(p)
    p.add_argument(
        "--by",
        choices=BREAKDOWN_KEYS,
        help="add a breakdown by this key (at most 16 rows; the bot does not read it)",
    )
    add_filters(p)
    p.add_argument(
        "--no-health",
        action="store_true",
        help="do not probe 127.0.0.1:PORT/health for each port row (by default each row "
        "carries its instance's health, within 2 s)",
    )
    p.add_argument(
        "--text",
        action="store_true",
        help="print the bot's message for this host (what the bot makes of the JSON) instead",
    )
    p.add_argument(
        "--lang", choices=LANGS, default="zh", help="with --text: message language (default zh)"
    )


def run(args: argparse.Namespace) -> int:
    roots = roots_of(args)
    zone = zone_of(args, roots)  # the forced command passes no --tz: env or ROOT/zone
    with LedgerSet.read(roots) as ledgers:  # one read: the whole and every port
        report = build_report(
            ledgers,
            at_ts=args.at,
            tz=zone.name,
            by=args.by,
            instance=args.instance,
            model=args.model,
        )
        ports = port_rows(ledgers, report)
        keys = _keys_today(ledgers, report, args)
    health = None if args.no_health else probe_local([r.port for r in ports.rows])
    document = status_format.render(report, ports, health, tz_source=zone.source, keys=keys)
    if args.text:  # the bot's own renderer, over the document as the bot parses it
        message = render_host(status_format.parse(document.encode("ascii")), lang=args.lang)
        document = "".join(printable(line) + "\n" for line in message.splitlines())
    sys.stdout.write(document)
    return 0 if report.nothing_matched is None else EXIT_NOTHING_MATCHED


def _keys_today(ledgers: LedgerSet, report: Report, args: argparse.Namespace) -> WhoseWindow | None:
    """Today's rows by key over the report's sources; None where no file keeps whose tokens."""
    if report.nothing_matched is not None:
        return None
    today = report.window("today")
    sources = ledgers.sources(args.instance, args.model)
    credits = ledgers.credits(sources, Window(today.name, today.start_ts, today.cutoff_ts))
    if credits.files == credits.without:
        return None
    return whose(today, credits, "key")
