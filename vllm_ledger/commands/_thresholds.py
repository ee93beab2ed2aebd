"""The alert-threshold flags of ``vllm-ledger observability``: one per ``Thresholds`` field (where
an alert trips and how long it must hold), each with its parser, its default and its help, and
the ``Thresholds`` they give back.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from vllm_ledger.commands._values import duration, number
from vllm_ledger.observe.alert_rule import Thresholds
from vllm_ledger.units import duration_seconds, format_duration

WEEK_S = 7 * 86400


def fraction_flag(flag: str, example: str) -> Callable[[str], float]:
    return number(flag, 0, 1, example, unit="a fraction", lo_open=True, fraction=True)


def duration_flag(flag: str, lo_s: float, hi_s: float, example: str) -> Callable[[str], str]:
    """A duration as every command takes one (30s, 5m, 1h30m, plain seconds), from ``lo_s`` to
    ``hi_s`` seconds, written as Prometheus reads it: as given when it already is a Prometheus
    duration, else in its units (``90`` -> ``1m30s``, ``1.5s`` -> ``1500ms``)."""
    seconds = duration(flag, lo_s, hi_s, example)

    def parse(value: str) -> str:
        x = seconds(value)
        text = value.strip()
        if duration_seconds(text, form="prometheus") is not None:
            return text
        return format_duration(x, "prometheus")

    return parse


def add_threshold_flags(p: argparse.ArgumentParser, d: Thresholds) -> None:
    """The group of threshold flags, each defaulting to ``d``'s value."""
    a = p.add_argument_group("alert thresholds (defaults: docs/observability.md, the alerts)")
    _add_first_three(a, d)
    _add_serving(a, d)
    _add_ledger(a, d)
    _add_host(a, d)


def _add_first_three(a: argparse._ArgumentGroup, d: Thresholds) -> None:
    """The three to start with: KV cache, time to first token, GPU memory."""
    a.add_argument(
        "--kv-cache-threshold",
        type=fraction_flag("--kv-cache-threshold", "0.90"),
        default=d.kv_cache_fraction,
        metavar="FRACTION",
        help=f"KV cache use that trips (default {d.kv_cache_fraction:.2f})",
    )
    a.add_argument(
        "--kv-cache-for",
        type=duration_flag("--kv-cache-for", 0, WEEK_S, "10m"),
        default=d.kv_cache_for,
        metavar="DURATION",
        help=f"averaged over and held for (default {d.kv_cache_for})",
    )
    a.add_argument(
        "--ttft-p99-seconds",
        type=duration("--ttft-p99-seconds", 0, 600, "3", lo_open=True),
        default=d.ttft_p99_seconds,
        metavar="DURATION",
        help=f"TTFT P99 that trips (default {d.ttft_p99_seconds:g})",
    )
    a.add_argument(
        "--ttft-for",
        type=duration_flag("--ttft-for", 0, WEEK_S, "5m"),
        default=d.ttft_for,
        metavar="DURATION",
        help=f"held for (default {d.ttft_for})",
    )
    a.add_argument(
        "--gpu-mem-threshold",
        type=fraction_flag("--gpu-mem-threshold", "0.95"),
        default=d.gpu_memory_fraction,
        metavar="FRACTION",
        help=f"GPU memory used that trips (default {d.gpu_memory_fraction:.2f})",
    )
    a.add_argument(
        "--gpu-mem-for",
        type=duration_flag("--gpu-mem-for", 0, WEEK_S, "5m"),
        default=d.gpu_memory_for,
        metavar="DURATION",
        help=f"held for (default {d.gpu_memory_for})",
    )


def _add_serving(a: argparse._ArgumentGroup, d: Thresholds) -> None:
    """The queue, a target down, GPU heat, the HTTP error share."""
    a.add_argument(
        "--queue-waiting",
        type=number("--queue-waiting", 0, 1e6, "0", unit="requests"),
        default=d.queue_waiting,
        metavar="N",
        help=f"waiting requests above which the queue is building (default {d.queue_waiting:g})",
    )
    a.add_argument(
        "--queue-for",
        type=duration_flag("--queue-for", 0, WEEK_S, "5m"),
        default=d.queue_for,
        metavar="DURATION",
        help=f"held for (default {d.queue_for})",
    )
    a.add_argument(
        "--down-for",
        type=duration_flag("--down-for", 0, WEEK_S, "1m"),
        default=d.down_for,
        metavar="DURATION",
        help=f"a vLLM or exporter target not answering for this long trips (default {d.down_for})",
    )
    a.add_argument(
        "--gpu-temp-celsius",
        type=number("--gpu-temp-celsius", 1, 200, "85", unit="degrees Celsius"),
        default=d.gpu_temperature_celsius,
        metavar="C",
        help=f"GPU temperature that trips (default {d.gpu_temperature_celsius:g})",
    )
    a.add_argument(
        "--gpu-temp-for",
        type=duration_flag("--gpu-temp-for", 0, WEEK_S, "3m"),
        default=d.gpu_temperature_for,
        metavar="DURATION",
        help=f"held for (default {d.gpu_temperature_for})",
    )
    a.add_argument(
        "--error-threshold",
        type=fraction_flag("--error-threshold", "0.05"),
        default=d.error_fraction,
        metavar="FRACTION",
        help=f"share of HTTP requests answered 5xx that trips (default {d.error_fraction:g})",
    )
    a.add_argument(
        "--error-for",
        type=duration_flag("--error-for", 0, WEEK_S, "5m"),
        default=d.error_for,
        metavar="DURATION",
        help=f"held for (default {d.error_for})",
    )


def _add_ledger(a: argparse._ArgumentGroup, d: Thresholds) -> None:
    """The ledger's own: uncovered seconds, a writer missing."""
    a.add_argument(
        "--ledger-uncovered-seconds",
        type=duration("--ledger-uncovered-seconds", 0, WEEK_S, "60"),
        default=d.ledger_uncovered_seconds,
        metavar="DURATION",
        help=f"newly uncovered ledger seconds that trip (default {d.ledger_uncovered_seconds:g})",
    )
    a.add_argument(
        "--ledger-uncovered-range",
        type=duration_flag("--ledger-uncovered-range", 60, WEEK_S, "15m"),
        default=d.ledger_uncovered_range,
        metavar="DURATION",
        help=f"... within this range (default {d.ledger_uncovered_range})",
    )
    a.add_argument(
        "--ledger-writer-for",
        type=duration_flag("--ledger-writer-for", 0, WEEK_S, "5m"),
        default=d.ledger_writer_for,
        metavar="DURATION",
        help=f"a writer missing or stale for this long trips (default {d.ledger_writer_for})",
    )


def _add_host(a: argparse._ArgumentGroup, d: Thresholds) -> None:
    """The host's: the ledger's disk, the memory available."""
    a.add_argument(
        "--disk-free-threshold",
        type=fraction_flag("--disk-free-threshold", "0.10"),
        default=d.disk_free_fraction,
        metavar="FRACTION",
        help=f"free share of the ledger's file system below which it trips "
        f"(default {d.disk_free_fraction:g})",
    )
    a.add_argument(
        "--disk-for",
        type=duration_flag("--disk-for", 0, WEEK_S, "10m"),
        default=d.disk_for,
        metavar="DURATION",
        help=f"held for (default {d.disk_for})",
    )
    a.add_argument(
        "--memory-available-threshold",
        type=fraction_flag("--memory-available-threshold", "0.05"),
        default=d.memory_available_fraction,
        metavar="FRACTION",
        help=f"available share of the host's memory below which it trips "
        f"(default {d.memory_available_fraction:g})",
    )
    a.add_argument(
        "--memory-for",
        type=duration_flag("--memory-for", 0, WEEK_S, "5m"),
        default=d.memory_for,
        metavar="DURATION",
        help=f"held for (default {d.memory_for})",
    )


def thresholds_of(args: argparse.Namespace) -> Thresholds:
    """The thresholds the flags give (``--ledger-mountpoint`` is among the command's own)."""
    return Thresholds(
        kv_cache_fraction=args.kv_cache_threshold,
        kv_cache_for=args.kv_cache_for,
        ttft_p99_seconds=args.ttft_p99_seconds,
        ttft_for=args.ttft_for,
        gpu_memory_fraction=args.gpu_mem_threshold,
        gpu_memory_for=args.gpu_mem_for,
        queue_waiting=args.queue_waiting,
        queue_for=args.queue_for,
        down_for=args.down_for,
        gpu_temperature_celsius=args.gpu_temp_celsius,
        gpu_temperature_for=args.gpu_temp_for,
        error_fraction=args.error_threshold,
        error_for=args.error_for,
        ledger_uncovered_seconds=args.ledger_uncovered_seconds,
        ledger_uncovered_range=args.ledger_uncovered_range,
        ledger_writer_for=args.ledger_writer_for,
        disk_free_fraction=args.disk_free_threshold,
        disk_for=args.disk_for,
        ledger_mountpoint=args.ledger_mountpoint,
        memory_available_fraction=args.memory_available_threshold,
        memory_for=args.memory_for,
    )


__all__ = ["WEEK_S", "add_threshold_flags", "duration_flag", "fraction_flag", "thresholds_of"]
