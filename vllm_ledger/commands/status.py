"""vllm-ledger status: the bounded status JSON the bot reads over SSH (one line, < 60 KiB)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from vllm_ledger.bot.health import probe_local
from vllm_ledger.bot.host import asked, budgets_block
from vllm_ledger.bot.message import render_host
from vllm_ledger.bot.message_words import LANGS
from vllm_ledger.bot.usage_text import HostAnswer, Pricing, digest_text, usage_text
from vllm_ledger.commands._files import input_file
from vllm_ledger.commands._ledger_flags import add_filters, add_roots, roots_of
from vllm_ledger.commands._refusals import file_flag
from vllm_ledger.commands._times import add_time, at_of
from vllm_ledger.commands._zones import zone_of
from vllm_ledger.commands.report import EXIT_NOTHING_MATCHED
from vllm_ledger.errors import BadArgument
from vllm_ledger.formats import status as status_format
from vllm_ledger.formats import status_render
from vllm_ledger.formats.safe import printable
from vllm_ledger.formats.status_asked import ASKS, Ask, ask_of_original
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.ports import port_rows
from vllm_ledger.read.report import BREAKDOWN_KEYS, Report, build_report
from vllm_ledger.read.whose import WhoseWindow, whose
from vllm_ledger.read.windows import Window
from vllm_ledger.units import BUDGETS_ENV

NAME = "status"
HELP = "print the bounded status JSON for the bot (numbers only, per port, < 60 KiB)"
EPILOG = """example:
  vllm-ledger status --root /srv/artifacts/usage
  vllm-ledger status --root /srv/artifacts/usage --instance gpu1:8000
  vllm-ledger status --root /srv/artifacts/usage --text --lang en
  vllm-ledger status --root /srv/artifacts/usage --budgets /etc/vllm-ledger/budgets.toml
  vllm-ledger status --root /srv/artifacts/usage --text --digest --prices prices.toml
  vllm-ledger status --root /srv/artifacts/usage --text --ask usage:adapter:7d --lang en

This is the only command the poller runs remotely (with --root, and --budgets where the
usage entry names the host's budgets file); see `vllm-ledger ssh-key-line`. The document
always carries the figures per API port ("instances", at most 16), which the bot picks by
node port, and each row's health: this host's own GET 127.0.0.1:PORT/health (--no-health
skips it); where the ledgers keep whose tokens, the top 5 keys of today ("keys_today");
with a budgets file, where each budget stands ("budgets").
--text prints the bot's message for this host instead, as a person reads it: the reply the
bot makes of this very document, a block per port (docs/bot-status.md); with --digest or
--ask, the digest or the usage reply the notifier posts of it (docs/notifier.md).
Under a forced command the ask is also read from the end of the command the client sent
(SSH_ORIGINAL_COMMAND: "... --ask WORD"); nothing else of it is read.
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
    p.add_argument(
        "--budgets",
        metavar="FILE",
        default=None,
        help=f"add where each budget of this budgets file stands (default: ${BUDGETS_ENV}; "
        "docs/budgets.md); a file that cannot be used is one warning line, the figures still come",
    )
    p.add_argument(
        "--ask",
        choices=tuple(ASKS),
        metavar="WHAT",
        help="add the answer to an ask: digest (yesterday), digest-week (the 7 days before "
        "today) or usage:BY:WINDOW (BY key, adapter or user; WINDOW today, 7d or month); "
        "with --text, print it as the notifier posts it",
    )
    p.add_argument(
        "--digest",
        nargs="?",
        const="day",
        choices=("day", "week"),
        help="the same as --ask digest (day, the default) or --ask digest-week (week)",
    )
    p.add_argument(
        "--prices",
        type=input_file("--prices", "prices.toml", max_bytes=1024 * 1024),
        metavar="FILE",
        help="with --text and a digest: its cost at this price file's cloud_*_price rates",
    )


def _ask(args: argparse.Namespace) -> Ask | None:
    """The ask: --ask, --digest, else the end of the client's command under a forced one."""
    if args.ask is not None and args.digest is not None:
        raise BadArgument("give --ask or --digest, not both")
    if args.ask is not None:
        return ASKS[args.ask]
    if args.digest is not None:
        return ASKS["digest" if args.digest == "day" else "digest-week"]
    return ask_of_original(os.environ.get("SSH_ORIGINAL_COMMAND"))


def run(args: argparse.Namespace) -> int:
    roots = roots_of(args)
    zone = zone_of(args, roots)  # the forced command passes no --tz: env or ROOT/zone
    ask = _ask(args)
    pricing = _pricing(args, ask)
    budgets_path = args.budgets or os.environ.get(BUDGETS_ENV, "").strip() or None
    budgets: dict[str, Any] | None = None
    at_ts = at_of(args, zone.name)
    with LedgerSet.read(roots) as ledgers:  # one read: the whole and every port
        report = build_report(
            ledgers,
            at_ts=at_ts,
            tz=zone.name,
            by=args.by,
            instance=args.instance,
            model=args.model,
        )
        ports = port_rows(ledgers, report)
        keys = _keys_today(ledgers, report, args)
        if budgets_path is not None:
            budgets, why = budgets_block(ledgers, Path(budgets_path), report.at_ts, zone.name)
            if why is not None:
                print(f"vllm-ledger: warning: budgets: {printable(why)}", file=sys.stderr)
        answer = None
        if ask is not None and report.nothing_matched is None:
            answer = asked(
                ledgers,
                ask,
                at_ts=report.at_ts,
                tz=zone.name,
                instance=args.instance,
                model=args.model,
            )
    health = None if args.no_health else probe_local([r.port for r in ports.rows])
    document = status_render.render(
        report, ports, health, tz_source=zone.source, keys=keys, budgets=budgets, asked=answer
    )
    if args.text:  # the bot's own renderer, over the document as the bot parses it
        doc = status_format.parse(document.encode("ascii"))
        message = _text(doc, ask, args.lang, pricing)
        document = "".join(printable(line) + "\n" for line in message.splitlines())
    sys.stdout.write(document)
    return 0 if report.nothing_matched is None else EXIT_NOTHING_MATCHED


def _pricing(args: argparse.Namespace, ask: Ask | None) -> Pricing | None:
    if args.prices is None:
        return None
    if not args.text or ask is None or not ask.digest:
        raise BadArgument("--prices prices the digest's text: give it with --text --digest")
    from vllm_ledger.bot.pricing import load_pricing

    with file_flag("config", "--prices FILE"):
        return load_pricing(Path(args.prices))


def _text(doc: status_format.StatusDoc, ask: Ask | None, lang: str, pricing: Pricing | None) -> str:
    """The status reply, or the digest or usage text the notifier posts of this document."""
    if ask is None:
        return render_host(doc, lang=lang)
    where = ", ".join(f":{i.port}" for i in doc.instances or ()) or "(this host)"
    host = [HostAnswer(where, "ok", doc)]
    return digest_text(host, ask, lang, pricing) if ask.digest else usage_text(host, ask, lang)


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
