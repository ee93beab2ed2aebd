"""vllm-ledger exporter: serve the ledgers as Prometheus metrics, in a process of its own."""

from __future__ import annotations

import argparse

from vllm_ledger.commands._common import add_roots, add_tz, port, roots_of, text
from vllm_ledger.observe.exporter import serve

NAME = "exporter"
HELP = "serve restart-proof token counters, windows, coverage and GPU readings on /metrics"
EPILOG = """example:
  vllm-ledger exporter --root /srv/artifacts/usage --port 9464 --host 0.0.0.0
  curl -s http://127.0.0.1:9464/metrics | grep '^vllm_ledger_generation_tokens_total'
"""


def configure(p: argparse.ArgumentParser) -> None:
    add_roots(p)
    p.add_argument(
        "--port",
        type=port("--port", "9464", zero=True),
        default=9464,
        help="port to listen on (default 9464)",
    )
    p.add_argument(
        "--host",
        type=text("--host", "0.0.0.0"),
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; 0.0.0.0 for a remote Prometheus)",
    )
    add_tz(p, "the 'today' window")
    p.add_argument("--no-gpu", action="store_true", help="do not read GPUs through NVML")


def run(args: argparse.Namespace) -> int:
    serve(roots_of(args), host=args.host, port=args.port, tz=args.tz, gpu=not args.no_gpu)
    return 0
