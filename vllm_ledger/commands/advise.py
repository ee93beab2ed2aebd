"""vllm-ledger advise: walk the write-up's capacity decision table over live readings."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from vllm_ledger.errors import BadArgument
from vllm_ledger.plan.advise import (
    Advice,
    Thresholds,
    advise,
    prometheus_readings,
    readings_from_snapshots,
    sample_metrics,
)

NAME = "advise"
HELP = "read KV cache, queue, GPU, TTFT, power and throughput; say which capacity rule is met"
EPILOG = """example:
  vllm-ledger advise --metrics-url http://127.0.0.1:8000/metrics \\
      --gpu-metrics-url http://127.0.0.1:9400/metrics --sample-seconds 30
  vllm-ledger advise --prometheus http://127.0.0.1:9090 --range 1800
  vllm-ledger advise --snapshot m0.txt --snapshot m1.txt --snapshot m2.txt --interval 15
"""


def configure(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--metrics-url", metavar="URL", help="a vLLM /metrics to sample live")
    src.add_argument(
        "--prometheus", metavar="URL", help="a Prometheus that scrapes vLLM (and GPUs)"
    )
    src.add_argument(
        "--snapshot",
        action="append",
        type=Path,
        metavar="FILE",
        help="recorded /metrics texts taken --interval seconds apart, oldest first "
        "(repeat, at least twice; GPU lines may be appended to each)",
    )
    p.add_argument(
        "--gpu-metrics-url",
        action="append",
        default=[],
        metavar="URL",
        help="also sample this /metrics for GPU readings (DCGM exporter or "
        "`vllm-ledger exporter`; repeatable)",
    )
    p.add_argument(
        "--sample-seconds",
        type=float,
        default=10.0,
        metavar="S",
        help="how long to sample --metrics-url (default 10)",
    )
    p.add_argument(
        "--interval",
        type=float,
        default=1.0,
        metavar="S",
        help="seconds between samples (default 1)",
    )
    p.add_argument(
        "--range",
        type=float,
        default=600.0,
        metavar="S",
        help="seconds of Prometheus history to read (default 600)",
    )
    p.add_argument(
        "--power-limit-watts",
        type=float,
        metavar="W",
        help="the GPUs' power limit, summed (default: read from the GPU metrics)",
    )
    p.add_argument(
        "--ttft-p99-seconds",
        type=float,
        default=Thresholds.ttft_p99_seconds,
        metavar="S",
        help="TTFT P99 above this is high (default 3, the write-up's alert)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def _r(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(x, digits)


def render_text(a: Advice) -> str:
    r = a.readings
    pct = None if r.kv_cache_usage is None else r.kv_cache_usage * 100
    halves = r.gen_tokens_per_s_halves
    rows = [
        ("KV-cache usage", "n/a" if pct is None else f"{pct:.1f} %"),
        ("waiting requests", "n/a" if r.num_waiting is None else f"{r.num_waiting:.2f}"),
        ("running requests", "n/a" if r.num_running is None else f"{r.num_running:.2f}"),
        ("GPU utilisation", "n/a" if r.gpu_util_percent is None else f"{r.gpu_util_percent:.1f} %"),
        (
            "TTFT P99",
            "n/a"
            if r.ttft_p99_seconds is None
            else f"{r.ttft_p99_seconds:.3f} s ({r.num_ttft} requests)",
        ),
        (
            "power",
            "n/a"
            if r.power_watts is None
            else f"{r.power_watts:.0f} W"
            + ("" if r.power_limit_watts is None else f" of {r.power_limit_watts:.0f} W limit"),
        ),
        (
            "throughput",
            "n/a"
            if r.gen_tokens_per_s is None
            else f"{r.gen_tokens_per_s:.1f} generation tokens/s"
            + ("" if halves is None else f" (halves {halves[0]:.1f} -> {halves[1]:.1f})"),
        ),
    ]
    lines = [f"readings over {r.seconds:.1f} s from {r.source}"]
    lines += [f"  {k:<18}{v}" for k, v in rows]
    lines.append("")
    for v in a.verdicts:
        lines.append(f"[{v.state}] {v.rule.name}: {v.rule.when} ({v.why})")
        if v.state == "met":
            lines.append(f"    diagnosis: {v.rule.diagnosis}; action: {v.rule.action}")
    lines.append("")
    if a.met:
        lines.append("met: " + ", ".join(v.rule.name for v in a.met))
    else:
        lines.append("met: none of the judged rules")
    if a.not_judgeable:
        lines.append(
            "not judgeable: " + ", ".join(f"{v.rule.name} ({v.why})" for v in a.not_judgeable)
        )
    return "\n".join(lines) + "\n"


def render_json(a: Advice) -> str:
    r = a.readings
    doc: dict[str, Any] = {
        "source": r.source,
        "seconds": _r(r.seconds, 3),
        "readings": {
            "kv_cache_usage": _r(r.kv_cache_usage),
            "num_waiting": _r(r.num_waiting),
            "num_running": _r(r.num_running),
            "gpu_util_percent": _r(r.gpu_util_percent),
            "ttft_p99_seconds": _r(r.ttft_p99_seconds, 6),
            "num_ttft": r.num_ttft,
            "power_watts": _r(r.power_watts),
            "power_limit_watts": _r(r.power_limit_watts),
            "gen_tokens_per_s": _r(r.gen_tokens_per_s),
            "gen_tokens_per_s_halves": None
            if r.gen_tokens_per_s_halves is None
            else [_r(x) for x in r.gen_tokens_per_s_halves],
        },
        "rules": [
            {
                "rule": v.rule.name,
                "state": v.state,
                "why": v.why,
                "diagnosis": v.rule.diagnosis,
                "action": v.rule.action,
            }
            for v in a.verdicts
        ],
        "met": [v.rule.name for v in a.met],
    }
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def run(args: argparse.Namespace) -> int:
    if args.sample_seconds <= 0 or args.interval <= 0 or args.range <= 0:
        raise BadArgument("--sample-seconds, --interval and --range must be above 0")
    if args.snapshot:
        if len(args.snapshot) < 2:
            raise BadArgument("give --snapshot at least twice: rates need two readings")
        snaps = []
        for i, path in enumerate(args.snapshot):
            try:
                snaps.append((i * args.interval, path.read_text()))
            except OSError as exc:
                raise BadArgument(f"cannot read --snapshot {path}: {exc.strerror}") from exc
        readings = readings_from_snapshots(snaps, source=f"{len(snaps)} recorded snapshots")
    elif args.metrics_url:
        snaps = sample_metrics(
            [args.metrics_url, *args.gpu_metrics_url], args.sample_seconds, args.interval
        )
        readings = readings_from_snapshots(snaps, source=args.metrics_url)
    else:
        readings = prometheus_readings(args.prometheus, args.range)
    if args.power_limit_watts is not None:
        readings = dataclasses.replace(readings, power_limit_watts=args.power_limit_watts)
    advice = advise(readings, Thresholds(ttft_p99_seconds=args.ttft_p99_seconds))
    sys.stdout.write(render_json(advice) if args.json else render_text(advice))
    return 0
