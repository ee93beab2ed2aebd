"""vllm-ledger fleet: the five windows per host, per model and for the fleet, from Prometheus."""

from __future__ import annotations

import argparse
import sys

from vllm_ledger.commands._values import duration, text, url
from vllm_ledger.formats.command_json import SCHEMA, dumps
from vllm_ledger.formats.fleet import fleet_dict, render_text, whose_dict
from vllm_ledger.plan.fleet import LOOKBACK_S, STALE_AFTER_S, Fleet
from vllm_ledger.plan.fleet_read import read_fleet
from vllm_ledger.plan.fleet_whose import WHOSE_BY, FleetWhose, read_fleet_whose
from vllm_ledger.units import format_duration

NAME = "fleet"
HELP = "every host's exporter windows from Prometheus: per host, per model, fleet total"
EPILOG = """example:
  vllm-ledger fleet --prometheus http://prometheus.lan:9090
  vllm-ledger fleet --prometheus http://victoria.lan:8428 --job vllm-ledger --stale-after 1m --json
  vllm-ledger fleet --prometheus http://prometheus.lan:9090 --by key

exit status: 0 when every window of the fleet is complete, 1 when a host is missing, stale,
failing or incomplete, or the store called an answer partial or gave a warning with it (each is
named; with --by also when a host's rows do not add up to its figures), 2 a bad flag or
Prometheus could not be read
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--prometheus",
        required=True,
        type=url("--prometheus", "http://127.0.0.1:9090"),
        metavar="URL",
        help="Prometheus, or a store with its query API (VictoriaMetrics, Thanos, Mimir)",
    )
    p.add_argument(
        "--job",
        type=text("--job", "vllm-ledger"),
        metavar="NAME",
        help="only the exporters scraped by this job (default: every job serving vllm_ledger_*)",
    )
    p.add_argument(
        "--stale-after",
        type=duration("--stale-after", 1, 86400, "1m"),
        default=STALE_AFTER_S,
        metavar="DURATION",
        help=f"a host whose newest sample is older is stale (default "
        f"{format_duration(STALE_AFTER_S)}; "
        "give 2 x the scrape interval plus the remote-write delay)",
    )
    p.add_argument(
        "--lookback",
        type=duration("--lookback", 60, 90 * 86400, "1h"),
        default=LOOKBACK_S,
        metavar="DURATION",
        help="a host seen this far back and silent now is missing "
        f"(default {format_duration(LOOKBACK_S)})",
    )
    p.add_argument(
        "--by",
        choices=WHOSE_BY,
        help="whose tokens: each key's (adapter's, ...) windows summed across hosts, and what is "
        "not attributed, from the exporters' rows by that label (user and tenant only where "
        "the exporters serve them: exporter --attribution-labels; docs/fleet.md#whose-tokens)",
    )
    p.add_argument("--json", action="store_true", help="print JSON (schema 1, docs/json-schema.md)")


def run(args: argparse.Namespace) -> int:
    flags = {"job": args.job, "stale_after_s": args.stale_after, "lookback_s": args.lookback}
    if args.by is None:
        fleet, whose = read_fleet(args.prometheus, **flags), None
    else:
        fleet, whose = read_fleet_whose(args.prometheus, args.by, **flags)
    sys.stdout.write(fleet_json(fleet, whose) if args.json else render_text(fleet, whose))
    complete = whose.complete if whose is not None else fleet.complete
    return 0 if all(complete.values()) and not (whose and whose.incomplete) else 1


def fleet_json(fleet: Fleet, whose: FleetWhose | None) -> str:
    """``fleet --json``: ``schema`` first, the fleet's document (docs/fleet.md), ``by`` with
    ``--by`` (docs/json-schema.md, "fleet")."""
    doc = {"schema": SCHEMA, **fleet_dict(fleet)}
    if whose is not None:
        doc["by"] = whose_dict(whose)
    return dumps(doc)
