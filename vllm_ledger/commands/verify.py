"""vllm-ledger verify: the current run's ledger against vLLM's live /metrics counters."""

from __future__ import annotations

import argparse

from vllm_ledger.commands._common import add_roots, duration, flag_names, roots_of, text, url
from vllm_ledger.read.verify import verify

NAME = "verify"
HELP = "compare the current run's ledger with vLLM's /metrics counters (after every upgrade)"
EPILOG = """example:
  vllm-ledger verify --metrics-url http://127.0.0.1:8000/metrics --root /srv/artifacts/usage
exit status: 0 match, 1 differences, 2 could not check
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


def run(args: argparse.Namespace) -> int:
    with flag_names(metrics_url="--metrics-url"):
        result = verify(
            roots_of(args),
            args.metrics_url,
            wait_s=args.wait,
            run_id=args.run,
            timeout_s=args.timeout,
        )
    if result.match:
        figures = ", ".join(f"{k} {v:,}" for k, v in result.ledger.items())
        print(f"match: run {result.run_id}: {figures}")
        return 0
    print(f"MISMATCH: run {result.run_id}")
    if result.other_server is not None:
        print(f"  {result.other_server.explain()}")
        return 1
    for d in result.differences:
        diff = d.ledger - d.vllm
        print(f"  {d.figure}: ledger {d.ledger:,} vs {d.metric} {d.vllm:,} (diff {diff:+,})")
    return 1
