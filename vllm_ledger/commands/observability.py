"""vllm-ledger observability: write a ready Prometheus + Grafana + DCGM stack to a folder."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable

from vllm_ledger.commands._common import number, output_dir, seconds
from vllm_ledger.errors import BadArgument
from vllm_ledger.observe.alerts import Thresholds, check_duration
from vllm_ledger.observe.stack import (
    DCGM_SERVICE_TARGET,
    DEFAULT_EXPORTER_TARGET,
    DEFAULT_VLLM_TARGET,
    GRAFANA_PORT,
    StackSpec,
    check_target,
    documents,
    is_loopback,
    write_stack,
)
from vllm_ledger.outfile import check_target as check_output

NAME = "observability"
HELP = "write prometheus.yml, alerts.yml, a Grafana dashboard and compose.yaml to a folder"
EPILOG = f"""example:
  vllm-ledger observability ./monitoring --vllm 192.168.1.10:8000 --exporter 192.168.1.10:9464
  cd monitoring && docker compose up -d   # Grafana on http://HOST:{GRAFANA_PORT}

Targets are scraped from inside the Prometheus container: 127.0.0.1 there is the container
itself, so give the host's address or {DEFAULT_VLLM_TARGET.split(":")[0]}:PORT.
"""


def _fraction(flag: str, example: str) -> Callable[[str], float]:
    return number(flag, 0, 1, example, unit="a fraction", lo_open=True, fraction=True)


_PROM_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
_PROM_PART = re.compile(r"([0-9]+)(ms|s|m|h|d|w|y)")


def _duration(flag: str, lo_s: float, hi_s: float, example: str) -> Callable[[str], str]:
    """A Prometheus duration (30s, 5m, 1h30m) from ``lo_s`` to ``hi_s`` seconds long."""

    def parse(value: str) -> str:
        wanted = f"give a Prometheus duration like {example}, e.g. {flag} {example}"
        try:
            if len(value) > 40:
                raise ValueError(value)
            check_duration(value)
        except ValueError:
            raise BadArgument(
                f"{flag} {value[:40]!r} is not a Prometheus duration: {wanted}"
            ) from None
        total = sum(int(n) * _PROM_UNITS[u] for n, u in _PROM_PART.findall(value))
        if not lo_s <= total <= hi_s:
            raise BadArgument(
                f"{flag} {value!r} is out of range: give {lo_s:g} s to {hi_s / 86400:g} days, "
                f"e.g. {flag} {example}"
            )
        return value

    return parse


WEEK_S = 7 * 86400


def configure(p: argparse.ArgumentParser) -> None:
    d = Thresholds()
    p.add_argument(
        "out_dir",
        type=output_dir("OUT_DIR", "./monitoring", ()),
        metavar="OUT_DIR",
        help="folder to write the stack to",
    )
    p.add_argument(
        "--vllm",
        action="append",
        metavar="HOST:PORT",
        help=f"a vLLM server to scrape (repeatable; default {DEFAULT_VLLM_TARGET})",
    )
    p.add_argument(
        "--dcgm",
        metavar="HOST:PORT",
        help="an already running DCGM exporter (default: run one in the compose file, "
        f"scraped at {DCGM_SERVICE_TARGET})",
    )
    p.add_argument(
        "--no-dcgm",
        action="store_true",
        help="no DCGM at all (no GPU, or the exporter's NVML gauges are enough)",
    )
    p.add_argument(
        "--exporter",
        metavar="HOST:PORT",
        default=DEFAULT_EXPORTER_TARGET,
        help=f"the `vllm-ledger exporter` (default {DEFAULT_EXPORTER_TARGET})",
    )
    p.add_argument(
        "--scrape-interval",
        type=_duration("--scrape-interval", 1, 3600, "15s"),
        default="15s",
        metavar="DURATION",
        help="Prometheus scrape and rule interval (default 15s)",
    )
    a = p.add_argument_group("alert thresholds (defaults from the write-up)")
    a.add_argument(
        "--kv-cache-threshold",
        type=_fraction("--kv-cache-threshold", "0.90"),
        default=d.kv_cache_fraction,
        metavar="FRACTION",
        help=f"KV cache use that trips (default {d.kv_cache_fraction:.2f})",
    )
    a.add_argument(
        "--kv-cache-for",
        type=_duration("--kv-cache-for", 0, WEEK_S, "10m"),
        default=d.kv_cache_for,
        metavar="DURATION",
        help=f"averaged over and held for (default {d.kv_cache_for})",
    )
    a.add_argument(
        "--ttft-p99-seconds",
        type=seconds("--ttft-p99-seconds", 0, 600, "3", lo_open=True),
        default=d.ttft_p99_seconds,
        metavar="S",
        help=f"TTFT P99 that trips (default {d.ttft_p99_seconds:g})",
    )
    a.add_argument(
        "--ttft-for",
        type=_duration("--ttft-for", 0, WEEK_S, "5m"),
        default=d.ttft_for,
        metavar="DURATION",
        help=f"held for (default {d.ttft_for})",
    )
    a.add_argument(
        "--gpu-mem-threshold",
        type=_fraction("--gpu-mem-threshold", "0.95"),
        default=d.gpu_memory_fraction,
        metavar="FRACTION",
        help=f"GPU memory used that trips (default {d.gpu_memory_fraction:.2f})",
    )
    a.add_argument(
        "--gpu-mem-for",
        type=_duration("--gpu-mem-for", 0, WEEK_S, "5m"),
        default=d.gpu_memory_for,
        metavar="DURATION",
        help=f"held for (default {d.gpu_memory_for})",
    )
    a.add_argument(
        "--queue-waiting",
        type=number("--queue-waiting", 0, 1e6, "0", unit="requests"),
        default=d.queue_waiting,
        metavar="N",
        help=f"waiting requests above which the queue is building (default {d.queue_waiting:g})",
    )
    a.add_argument(
        "--queue-for",
        type=_duration("--queue-for", 0, WEEK_S, "5m"),
        default=d.queue_for,
        metavar="DURATION",
        help=f"held for (default {d.queue_for})",
    )
    a.add_argument(
        "--ledger-uncovered-seconds",
        type=seconds("--ledger-uncovered-seconds", 0, WEEK_S, "60"),
        default=d.ledger_uncovered_seconds,
        metavar="S",
        help=f"newly uncovered ledger seconds that trip (default {d.ledger_uncovered_seconds:g})",
    )
    a.add_argument(
        "--ledger-uncovered-range",
        type=_duration("--ledger-uncovered-range", 60, WEEK_S, "15m"),
        default=d.ledger_uncovered_range,
        metavar="DURATION",
        help=f"... within this range (default {d.ledger_uncovered_range})",
    )
    a.add_argument(
        "--ledger-writer-for",
        type=_duration("--ledger-writer-for", 0, WEEK_S, "5m"),
        default=d.ledger_writer_for,
        metavar="DURATION",
        help=f"a writer missing or stale for this long trips (default {d.ledger_writer_for})",
    )


def spec_of(args: argparse.Namespace) -> StackSpec:
    if args.no_dcgm and args.dcgm:
        raise BadArgument("--dcgm and --no-dcgm contradict each other: give one")
    vllm = tuple(check_target(t) for t in (args.vllm or [DEFAULT_VLLM_TARGET]))
    dcgm = None if args.no_dcgm else check_target(args.dcgm or DCGM_SERVICE_TARGET)
    return StackSpec(
        vllm_targets=vllm,
        exporter_target=check_target(args.exporter),
        dcgm_target=dcgm,
        dcgm_service=dcgm == DCGM_SERVICE_TARGET,
        scrape_interval=args.scrape_interval,
        thresholds=Thresholds(
            kv_cache_fraction=args.kv_cache_threshold,
            kv_cache_for=args.kv_cache_for,
            ttft_p99_seconds=args.ttft_p99_seconds,
            ttft_for=args.ttft_for,
            gpu_memory_fraction=args.gpu_mem_threshold,
            gpu_memory_for=args.gpu_mem_for,
            queue_waiting=args.queue_waiting,
            queue_for=args.queue_for,
            ledger_uncovered_seconds=args.ledger_uncovered_seconds,
            ledger_uncovered_range=args.ledger_uncovered_range,
            ledger_writer_for=args.ledger_writer_for,
        ),
    )


def run(args: argparse.Namespace) -> int:
    spec = spec_of(args)
    for rel in documents(spec):  # each file only ever a regular one (a FIFO would hang us)
        if (args.out_dir / rel).parent.is_dir():
            check_output(args.out_dir / rel, flag="OUT_DIR", example="OUT_DIR ./monitoring")
    written = write_stack(args.out_dir, spec)
    for path in written:
        print(path)
    targets = [*spec.vllm_targets, spec.exporter_target]
    if spec.dcgm_target:
        targets.append(spec.dcgm_target)
    for t in targets:
        if is_loopback(t):
            print(
                f"note: {t} is loopback: from inside the Prometheus container that is the "
                "container itself; fine for a Prometheus on the host",
                file=sys.stderr,
            )
    return 0
