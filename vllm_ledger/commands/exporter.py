"""vllm-ledger exporter: serve the ledgers as Prometheus metrics, in a process of its own."""

from __future__ import annotations

import argparse

from vllm_ledger.commands._common import add_roots, roots_of
from vllm_ledger.observe.exporter import serve
from vllm_ledger.read.windows import DEFAULT_TZ

NAME = "exporter"
HELP = "serve restart-proof token counters, windows, coverage and GPU readings on /metrics"
EPILOG = """example:
  vllm-ledger exporter --root /srv/artifacts/usage --port 9464 --host 0.0.0.0
  curl -s http://127.0.0.1:9464/metrics | grep '^vllm_ledger_generation_tokens_total'
"""


def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number") from None
    if not 0 <= port < 65536:
        raise argparse.ArgumentTypeError(f"{value} is not a port number (0-65535)")
    return port


def configure(p: argparse.ArgumentParser) -> None:
    add_roots(p)
    p.add_argument("--port", type=_port, default=9464, help="port to listen on (default 9464)")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; 0.0.0.0 for a remote Prometheus)",
    )
    p.add_argument(
        "--tz",
        default=DEFAULT_TZ,
        metavar="ZONE",
        help=f"time zone for the 'today' window (default {DEFAULT_TZ})",
    )
    p.add_argument("--no-gpu", action="store_true", help="do not read GPUs through NVML")


def run(args: argparse.Namespace) -> int:
    serve(roots_of(args), host=args.host, port=args.port, tz=args.tz, gpu=not args.no_gpu)
    return 0
