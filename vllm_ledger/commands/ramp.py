"""vllm-ledger ramp: load a server step by step and find where throughput or KV cache bends."""

from __future__ import annotations

import argparse
import sys

from vllm_ledger.commands._common import (
    add_renamed,
    duration,
    number,
    output_dir,
    say_wrote,
    text,
    url,
)
from vllm_ledger.errors import BadArgument
from vllm_ledger.formats.ramp import OUTPUT_NAMES, render_files, render_table
from vllm_ledger.outfile import write_file
from vllm_ledger.plan.ramp import find_knee, run_ramp

NAME = "ramp"
HELP = "drive an OpenAI-compatible server at rising concurrency; chart throughput, TTFT, KV"
EPILOG = """example:
  vllm-ledger ramp --url http://127.0.0.1:8000 --model qwen3-8b --concurrency 1,2,4,8,16 \\
      --duration 1m --output ramp-2026-11-29
exit status: 0 written, 2 a bad flag or a server that cannot be reached, 1 the system
refused a write (a full disk, a denied folder)
"""


MAX_CONCURRENCY = 4096  # requests in flight at once (each a connection and a thread)
MAX_STEPS = 64
MAX_PROMPT_CHARS = 1_000_000


def _concurrency(value: str) -> list[int]:
    """``--concurrency``: 1 to 64 whole numbers from 1 to 4096, comma-separated."""
    example = "give whole numbers from 1 to 4096, e.g. --concurrency 1,2,4,8"
    parts = value.split(",")
    if len(value) > 1000 or len(parts) > MAX_STEPS:
        raise BadArgument(
            f"--concurrency {value[:40]!r}... has too many steps (at most 64): {example}"
        )
    step = number("--concurrency", 1, MAX_CONCURRENCY, "8", unit="whole numbers", integer=True)
    values = [int(step(x)) for x in parts if x.strip()]
    if not values:
        raise BadArgument(f"--concurrency {value!r} is empty: {example}")
    return values


def _prompt(value: str) -> str:
    if not value or len(value) > MAX_PROMPT_CHARS:
        raise BadArgument(
            f"--prompt is {'empty' if not value else 'longer than 1,000,000 characters'}: "
            "give a prompt, e.g. --prompt 'Write a story.'"
        )
    return value


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--url",
        required=True,
        type=url("--url", "http://127.0.0.1:8000"),
        help="the server's base URL, e.g. http://127.0.0.1:8000",
    )
    p.add_argument(
        "--model",
        required=True,
        type=text("--model", "qwen3-8b"),
        metavar="NAME",
        help="the served model name",
    )
    p.add_argument(
        "--concurrency",
        type=_concurrency,
        default=[1, 2, 4, 8],
        metavar="LIST",
        help="concurrency steps (default 1,2,4,8)",
    )
    p.add_argument(
        "--duration",
        type=duration("--duration", 0, 3600, "1m", lo_open=True),
        default=30.0,
        metavar="DURATION",
        help="how long each step starts requests for (default 30s)",
    )
    p.add_argument(
        "--max-tokens",
        type=number("--max-tokens", 1, 1_000_000, "64", unit="tokens", integer=True),
        default=64,
        metavar="N",
        help="output tokens per request (ignore_eos; default 64)",
    )
    p.add_argument("--prompt", type=_prompt, help="the prompt (each request gets a unique prefix)")
    p.add_argument(
        "--metrics-url",
        type=url("--metrics-url", "http://127.0.0.1:8000/metrics"),
        metavar="URL",
        help="the server's /metrics (default URL/metrics)",
    )
    p.add_argument(
        "--output",
        type=output_dir("--output", "ramp-2026-11-29", OUTPUT_NAMES),
        default="ramp",  # a string: argparse checks it as it checks a given one
        metavar="DIR",
        help="where ramp.png, ramp.html, ramp.json and ramp.csv go (default ./ramp); "
        "each a regular file, replaced whole",
    )
    out = output_dir("--out", "ramp-2026-11-29", OUTPUT_NAMES)
    add_renamed(p, "--out", "--output", dest="output", type=out)
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
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
    files = render_files(steps, knee, f"Load ramp: {args.model} at {args.url}")
    # Each written whole and only as a regular file: a directory, FIFO or device already at
    # one of those names is refused with one line.
    args.output.mkdir(parents=True, exist_ok=True)
    paths = [args.output / f"ramp.{key}" for key in files]
    for path, data in zip(paths, files.values(), strict=True):
        write_file(path, data, flag="--output", example="--output ramp-2026-11-29")
    sys.stdout.write(render_table(steps, knee))
    for path in paths:
        say_wrote(path)
    return 0
