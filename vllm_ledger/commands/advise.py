"""vllm-ledger advise: walk the write-up's capacity decision table over live readings."""

from __future__ import annotations

import argparse
import sys

from vllm_ledger.commands._common import input_file, number, seconds, url
from vllm_ledger.errors import BadArgument
from vllm_ledger.formats.advise import render_json, render_text
from vllm_ledger.plan.advise import Thresholds, advise, take_readings

NAME = "advise"
HELP = "read KV cache, queue, GPU, TTFT, power and throughput; say which capacity rule is met"
EPILOG = """example:
  vllm-ledger advise --metrics-url http://127.0.0.1:8000/metrics \\
      --gpu-metrics-url http://127.0.0.1:9400/metrics --sample-seconds 30
  vllm-ledger advise --prometheus http://127.0.0.1:9090 --range 1800
  vllm-ledger advise --snapshot m0.txt --snapshot m1.txt --snapshot m2.txt --interval 15
"""


MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
MAX_SAMPLES = 3600  # --sample-seconds / --interval: snapshots held in memory at once


def configure(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--metrics-url",
        type=url("--metrics-url", "http://127.0.0.1:8000/metrics"),
        metavar="URL",
        help="a vLLM /metrics to sample live",
    )
    src.add_argument(
        "--prometheus",
        type=url("--prometheus", "http://127.0.0.1:9090"),
        metavar="URL",
        help="a Prometheus that scrapes vLLM (and GPUs)",
    )
    src.add_argument(
        "--snapshot",
        action="append",
        type=input_file("--snapshot", "m0.txt", max_bytes=MAX_SNAPSHOT_BYTES),
        metavar="FILE",
        help="recorded /metrics texts taken --interval seconds apart, oldest first "
        "(repeat, at least twice; GPU lines may be appended to each)",
    )
    p.add_argument(
        "--gpu-metrics-url",
        action="append",
        type=url("--gpu-metrics-url", "http://127.0.0.1:9400/metrics"),
        default=[],
        metavar="URL",
        help="also sample this /metrics for GPU readings (DCGM exporter or "
        "`vllm-ledger exporter`; repeatable)",
    )
    p.add_argument(
        "--sample-seconds",
        type=seconds("--sample-seconds", 1, 3600, "30"),
        default=10.0,
        metavar="S",
        help="how long to sample --metrics-url (default 10)",
    )
    p.add_argument(
        "--interval",
        type=seconds("--interval", 0.1, 3600, "15"),
        default=1.0,
        metavar="S",
        help="seconds between samples (default 1)",
    )
    p.add_argument(
        "--range",
        type=seconds("--range", 5, 30 * 86400, "1800"),
        default=600.0,
        metavar="S",
        help="seconds of Prometheus history to read (default 600)",
    )
    p.add_argument(
        "--power-limit-watts",
        type=number("--power-limit-watts", 0, 1e6, "2800", unit="watts", lo_open=True),
        metavar="W",
        help="the GPUs' power limit, summed (default: read from the GPU metrics)",
    )
    p.add_argument(
        "--ttft-p99-seconds",
        type=seconds("--ttft-p99-seconds", 0, 600, "3", lo_open=True),
        default=Thresholds.ttft_p99_seconds,
        metavar="S",
        help="TTFT P99 above this is high (default 3, the write-up's alert)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    if args.metrics_url and args.sample_seconds / args.interval > MAX_SAMPLES:
        raise BadArgument(
            f"--sample-seconds {args.sample_seconds:g} at --interval {args.interval:g} is more "
            f"than {MAX_SAMPLES} samples: use a larger --interval, e.g. --interval 1"
        )
    readings = take_readings(
        snapshots=args.snapshot or (),
        metrics_url=args.metrics_url,
        prometheus_url=args.prometheus,
        gpu_metrics_urls=args.gpu_metrics_url,
        sample_seconds=args.sample_seconds,
        interval_s=args.interval,
        range_s=args.range,
        power_limit_watts=args.power_limit_watts,
    )
    advice = advise(readings, Thresholds(ttft_p99_seconds=args.ttft_p99_seconds))
    sys.stdout.write(render_json(advice) if args.json else render_text(advice))
    return 0
