"""vllm-ledger advise: walk the capacity decision table (docs/cost-and-capacity.md) over live
readings."""

from __future__ import annotations

import argparse
import sys

from vllm_ledger.commands._files import input_file
from vllm_ledger.commands._refusals import file_flag, flag_names
from vllm_ledger.commands._renamed import add_renamed_duration
from vllm_ledger.commands._values import duration, number, url
from vllm_ledger.commands._zones import add_local_tz, local_zone_of
from vllm_ledger.errors import BadArgument, RemoteError
from vllm_ledger.formats.advise import (
    flags_line,
    render_baseline_json,
    render_baseline_text,
    render_json,
    render_text,
)
from vllm_ledger.plan.advise import Thresholds, advise
from vllm_ledger.plan.advise_readings import take_readings
from vllm_ledger.plan.baseline import (
    derive,
    history_warning,
    no_thresholds_reason,
    read_baseline,
    told_lines,
)
from vllm_ledger.units import format_duration

NAME = "advise"
HELP = "read KV cache, queue, GPU, TTFT, power and throughput; say which capacity rule is met"
EPILOG = """example:
  vllm-ledger advise --metrics-url http://127.0.0.1:8000/metrics \\
      --gpu-metrics-url http://127.0.0.1:9400/metrics --sample-for 30s
  vllm-ledger advise --prometheus http://127.0.0.1:9090 --range 30m
  vllm-ledger advise --snapshot m0.txt --snapshot m1.txt --snapshot m2.txt --interval 15s
  vllm-ledger advise --baseline 3d --prometheus http://127.0.0.1:9090
  vllm-ledger observability ./monitoring $(vllm-ledger advise --baseline 3d \\
      --prometheus http://127.0.0.1:9090 --emit-flags | cut -d' ' -f3-)
The rules, their thresholds and the actions, and how a baseline's thresholds are derived:
docs/cost-and-capacity.md. A baseline's window is shown with its offset, in --tz, else
$VLLM_LEDGER_TZ, else this machine's zone ($TZ, /etc/localtime, UTC). When Prometheus holds
less history than --baseline asks, a warning line says how much it had ("baseline: asked 3
days, had 2 min of history"); under 1 hour of history no threshold is proposed (the text
says why; --emit-flags prints no flag, so observability keeps its defaults). An answer the
store calls partial (isPartial, warnings) is named in its words: a reading from it judges no
rule, and --baseline proposes no threshold from it (docs/cost-and-capacity.md).
exit status: 0 printed, 2 a bad flag or Prometheus/metrics could not be read
"""


MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
MAX_SAMPLES = 3600  # --sample-for / --interval: snapshots held in memory at once


def configure(p: argparse.ArgumentParser) -> None:
    _add_sources(p)
    _add_sampling(p)
    _add_judging(p)
    _add_baseline(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    add_local_tz(p, "the window --baseline prints")


def _add_sources(p: argparse.ArgumentParser) -> None:
    """Where the readings come from: one of a live /metrics, a Prometheus, recorded files."""
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
        help="recorded /metrics texts taken --interval apart, oldest first "
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


def _add_sampling(p: argparse.ArgumentParser) -> None:
    """How long and how often to sample, and how much Prometheus history to read."""
    sample = duration("--sample-for", 1, 3600, "30s")
    p.add_argument(
        "--sample-for",
        type=sample,
        default=10.0,
        metavar="DURATION",
        help="how long to sample --metrics-url (default 10s)",
    )
    add_renamed_duration(p, "--sample-seconds", "--sample-for", dest="sample_for", like=sample)
    p.add_argument(
        "--interval",
        type=duration("--interval", 0.1, 3600, "15s"),
        default=1.0,
        metavar="DURATION",
        help="time between samples, and between the --snapshot files (default 1s)",
    )
    p.add_argument(
        "--range",
        type=duration("--range", 5, 30 * 86400, "30m"),
        default=600.0,
        metavar="DURATION",
        help="how much Prometheus history to read (default 10m)",
    )


def _add_judging(p: argparse.ArgumentParser) -> None:
    """What the rules judge against: the power limit, and when TTFT P99 is high."""
    p.add_argument(
        "--power-limit-watts",
        type=number("--power-limit-watts", 0, 1e6, "2800", unit="watts", lo_open=True),
        metavar="W",
        help="the GPUs' power limit, summed (default: read from the GPU metrics)",
    )
    p.add_argument(
        "--ttft-p99-seconds",
        type=duration("--ttft-p99-seconds", 0, 600, "3", lo_open=True),
        default=Thresholds.ttft_p99_seconds,
        metavar="DURATION",
        help="TTFT P99 above this is high (default 3s, the TTFT alert of docs/observability.md)",
    )


def _add_baseline(p: argparse.ArgumentParser) -> None:
    """--baseline: alert thresholds derived from history instead of the rules."""
    p.add_argument(
        "--baseline",
        type=duration("--baseline", 3600, 90 * 86400, "3d"),
        metavar="DURATION",
        help="instead of the rules: read this much history from --prometheus (TTFT P99, "
        "KV-cache and queue P99 per server) and print alert thresholds derived from it; "
        "less history than asked is a warning, under 1h of history no thresholds",
    )
    p.add_argument(
        "--emit-flags",
        action="store_true",
        help="with --baseline: print only the `vllm-ledger observability` flags",
    )


def _baseline(args: argparse.Namespace) -> int:
    if args.prometheus is None:
        raise BadArgument(
            "--baseline reads history from a Prometheus: add --prometheus URL, "
            "e.g. --prometheus http://127.0.0.1:9090"
        )
    if args.emit_flags and args.json:
        raise BadArgument("give --emit-flags or --json, not both")
    tz = local_zone_of(args)[0]
    base = read_baseline(args.prometheus, args.baseline)
    if not base.groups:
        raise RemoteError(
            f"Prometheus at {args.prometheus} has no vLLM TTFT, KV-cache or queue series over "
            f"the last {format_duration(args.baseline)}: check that it scrapes vLLM and has kept "
            "that much history (--storage.tsdb.retention.time)"
            + "".join(f"; {line}" for line in told_lines(base)),
            args.prometheus,
        )
    thresholds = () if no_thresholds_reason(base) else derive(base)
    if args.emit_flags:
        # Only flags on stdout (it is pasted into observability's command line): what the
        # history lacked goes to stderr.
        for note in (history_warning(base), no_thresholds_reason(base), *told_lines(base)):
            if note is not None:
                sys.stderr.write(f"vllm-ledger advise: {note}\n")
        out = flags_line(thresholds) + "\n"
    elif args.json:
        out = render_baseline_json(base, thresholds)
    else:
        out = render_baseline_text(base, thresholds, tz)
    sys.stdout.write(out)
    return 0


def run(args: argparse.Namespace) -> int:
    if args.baseline is not None:
        return _baseline(args)
    if args.emit_flags:
        raise BadArgument("--emit-flags prints a baseline's thresholds: add --baseline 3d")
    if args.metrics_url and args.sample_for / args.interval > MAX_SAMPLES:
        raise BadArgument(
            f"--sample-for {format_duration(args.sample_for)} at --interval "
            f"{format_duration(args.interval)} is more than {MAX_SAMPLES} samples: use a larger "
            "--interval, e.g. --interval 1s"
        )
    if args.snapshot is not None and len(args.snapshot) < 2:
        raise BadArgument("give --snapshot at least twice: rates need two readings")
    with (
        file_flag("snapshots", "--snapshot FILE"),
        flag_names(sample_seconds="--sample-for", interval_s="--interval", range_s="--range"),
    ):
        readings = take_readings(
            snapshots=args.snapshot or (),
            metrics_url=args.metrics_url,
            prometheus_url=args.prometheus,
            gpu_metrics_urls=args.gpu_metrics_url,
            sample_seconds=args.sample_for,
            interval_s=args.interval,
            range_s=args.range,
            power_limit_watts=args.power_limit_watts,
        )
    advice = advise(readings, Thresholds(ttft_p99_seconds=args.ttft_p99_seconds))
    sys.stdout.write(render_json(advice) if args.json else render_text(advice))
    return 0
