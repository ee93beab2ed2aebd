"""vllm-ledger verify: the current run's ledger against vLLM's live /metrics counters."""

from __future__ import annotations

import argparse
import sys

from vllm_ledger.commands._ledger_flags import add_roots, roots_of
from vllm_ledger.commands._refusals import flag_names
from vllm_ledger.commands._values import duration, text, url
from vllm_ledger.commands._zones import add_tz, zone_of
from vllm_ledger.formats.safe import printable
from vllm_ledger.read.report import resolve_tz
from vllm_ledger.read.verify import verify
from vllm_ledger.units import format_duration

NAME = "verify"
HELP = "compare the current run's ledger with vLLM's /metrics counters (after every upgrade)"
EPILOG = """example:
  vllm-ledger verify --metrics-url http://127.0.0.1:8000/metrics --root /srv/artifacts/usage
  vllm-ledger verify --metrics-url http://127.0.0.1:8000/metrics --json
A difference in a run whose writers have all closed is printed at once (its ledger cannot
change); while a writer is alive, one line on stderr says how long it waits, and why.
exit status: 0 match, 1 differences (or another server's /metrics), 2 a bad flag or could not
check (no ledger, /metrics unreachable or not vLLM's)
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--metrics-url",
        required=True,
        type=url("--metrics-url", "http://127.0.0.1:8000/metrics"),
        metavar="URL",
        help="vLLM's /metrics URL",
    )
    add_roots(p)
    add_tz(p)
    p.add_argument(
        "--wait",
        type=duration("--wait", 0, 600, "10s"),
        default=10.0,
        metavar="DURATION",
        help="re-check for up to this long while the ledger catches up (default 10s)",
    )
    p.add_argument(
        "--timeout",
        type=duration("--timeout", 0, 300, "10s", lo_open=True),
        default=10.0,
        metavar="DURATION",
        help="each read of /metrics, whole (connect, headers, body), ends within this "
        "(default 10s)",
    )
    p.add_argument(
        "--run",
        type=text("--run", "20261129-080000-a1b2"),
        metavar="RUN_ID",
        help="compare this run instead of the newest",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print JSON (schema 1, docs/json-schema.md); the waiting line stays on stderr",
    )


def _say_waiting(seconds: float, why: str) -> None:
    print(
        f"waiting up to {format_duration(seconds, 'words')} for the ledger to agree: "
        f"{printable(why)}",
        file=sys.stderr,
        flush=True,
    )


def run(args: argparse.Namespace) -> int:
    roots = roots_of(args)
    tz = resolve_tz(zone_of(args, roots).name)  # the report's rule, for the times it names
    with flag_names(metrics_url="--metrics-url"):
        result = verify(
            roots,
            args.metrics_url,
            wait_s=args.wait,
            run_id=args.run,
            timeout_s=args.timeout,
            on_wait=_say_waiting,
        )
    if args.json:
        from vllm_ledger.formats.command_json import dumps, verify_dict

        sys.stdout.write(dumps(verify_dict(result)))
        return 0 if result.match else 1
    if result.match:
        figures = ", ".join(f"{k} {v:,}" for k, v in result.ledger.items())
        print(f"match: run {result.run_id}: {figures}")
        return 0
    print(f"MISMATCH: run {result.run_id}")
    if result.other_server is not None:
        print(f"  {result.other_server.explain(tz)}")
        return 1
    for d in result.differences:
        diff = d.ledger - d.vllm
        print(f"  {d.figure}: ledger {d.ledger:,} vs {d.metric} {d.vllm:,} (diff {diff:+,})")
    return 1
