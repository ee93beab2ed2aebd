"""vllm-ledger ramp: load a server step by step and find where throughput or KV cache bends."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vllm_ledger.errors import BadArgument
from vllm_ledger.plan.ramp import find_knee, render_table, run_ramp, write_outputs

NAME = "ramp"
HELP = "drive an OpenAI-compatible server at rising concurrency; chart throughput, TTFT, KV"
EPILOG = """example:
  vllm-ledger ramp --url http://127.0.0.1:8000 --model qwen3-8b --concurrency 1,2,4,8,16 \\
      --duration 60 --out ramp-2026-11-29
"""


def _concurrency(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list like 1,2,4,8") from exc
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: give positive integers like 1,2,4,8")
    return values


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", required=True, help="the server's base URL, e.g. http://127.0.0.1:8000")
    p.add_argument("--model", required=True, metavar="NAME", help="the served model name")
    p.add_argument(
        "--concurrency",
        type=_concurrency,
        default=[1, 2, 4, 8],
        metavar="LIST",
        help="concurrency steps (default 1,2,4,8)",
    )
    p.add_argument(
        "--duration",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds each step starts requests for (default 30)",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=64,
        metavar="N",
        help="output tokens per request (ignore_eos; default 64)",
    )
    p.add_argument("--prompt", help="the prompt (each request gets a unique prefix)")
    p.add_argument(
        "--metrics-url", metavar="URL", help="the server's /metrics (default URL/metrics)"
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path("ramp"),
        metavar="DIR",
        help="where ramp.png, ramp.html, ramp.json and ramp.csv go (default ./ramp)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    if args.duration <= 0 or args.max_tokens < 1:
        raise BadArgument("--duration must be above 0 and --max-tokens at least 1")
    extra = {} if args.prompt is None else {"prompt": args.prompt}
    steps = run_ramp(
        args.url,
        args.model,
        args.concurrency,
        args.duration,
        metrics_url=args.metrics_url,
        max_tokens=args.max_tokens,
        progress_bars=not args.no_progress,
        **extra,
    )
    knee = find_knee(steps)
    paths = write_outputs(steps, knee, args.out, f"Load ramp: {args.model} at {args.url}")
    sys.stdout.write(render_table(steps, knee))
    sys.stdout.write("wrote " + ", ".join(str(p) for p in paths.values()) + "\n")
    return 0
