"""The ledger exporter: Prometheus metrics built from the Report, in a process of its own.

The plugin inside vLLM opens no port; this process reads the ledgers (through
``build_report``, never the SQLite files) on each scrape, at most once per ``cache_seconds``,
and serves:

- restart-proof counters from the ``total`` window: ``vllm_ledger_prompt_tokens_total``,
  ``vllm_ledger_generation_tokens_total``, ``vllm_ledger_cached_tokens_total``,
  ``vllm_ledger_requests_total``. They keep rising across vLLM restarts, where vLLM's own
  counters fall back to zero;
- window gauges labelled ``window`` (today, 24h, 3d, 7d, total): tokens, requests, hit rate,
  average and generation speed, uncovered seconds, a complete flag, problem counts;
- coverage gauges per vLLM instance (``ledger_instance``): writers expected and alive in the
  instance's current run, and writers per state;
- GPU gauges from NVML (``observe.gpu``) where a GPU is present.

``families(report, gpus)`` is pure; ``LedgerCollector`` adds the cache and the clock;
``serve`` opens the HTTP port.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from vllm_ledger.errors import BadArgument, LedgerError, MissingExtra
from vllm_ledger.observe.gpu import GpuReader, GpuReading
from vllm_ledger.read.report import Report, build_report

PREFIX = "vllm_ledger"
WRITER_STATES = ("alive", "closed", "stale", "crashed", "missing")
_OPEN_STATES = ("alive", "stale", "missing")


def _say(line: str) -> None:
    print(f"vllm-ledger exporter: {line}", file=sys.stderr, flush=True)


def _client() -> Any:
    try:
        import prometheus_client.core as core
    except ImportError as exc:
        raise MissingExtra("prometheus_client", "exporter") from exc
    return core


def _writer_gauges(report: Report) -> dict[str, dict[str, int]]:
    """Per instance: writers expected and alive in its current run, and writers per state.

    The current run of an instance is the one that started last. It counts as expected only
    while it is open (a writer alive, stale or missing): a run whose writers all closed was
    stopped on purpose and expects nobody.
    """
    runs: dict[str, list[Any]] = {}
    for w in report.writers:
        runs.setdefault(w.run_id, []).append(w)
    current: dict[str, str] = {}
    start: dict[str, float] = {}
    for run_id, ws in runs.items():
        start[run_id] = min((w.first_ts for w in ws if w.first_ts is not None), default=0.0)
        inst = ws[0].instance
        if inst not in current or start[run_id] > start[current[inst]]:
            current[inst] = run_id
    out: dict[str, dict[str, int]] = {}
    for inst, run_id in sorted(current.items()):
        ws = runs[run_id]
        is_open = any(w.state in _OPEN_STATES for w in ws)
        out[inst] = {
            "expected": max(w.expected_writers for w in ws) if is_open else 0,
            "alive": sum(1 for w in ws if w.state == "alive"),
        }
        for state in WRITER_STATES:
            out[inst][state] = sum(
                1 for r in runs.values() for w in r if w.instance == inst and w.state == state
            )
    return out


def families(
    report: Report | None, gpus: Sequence[GpuReading], *, report_seconds: float = 0.0
) -> list[Any]:
    """The metric families of one scrape. ``report`` is None when it could not be built."""
    core = _client()
    gauge = core.GaugeMetricFamily
    out: list[Any] = []
    ok = gauge(f"{PREFIX}_report_ok", "1 when the ledgers were read for this scrape, else 0")
    ok.add_metric([], 1.0 if report is not None else 0.0)
    out.append(ok)
    took = gauge(f"{PREFIX}_report_seconds", "Seconds the last ledger read took")
    took.add_metric([], report_seconds)
    out.append(took)
    if report is not None:
        out.extend(_report_families(core, report))
    out.extend(_gpu_families(core, gpus))
    return out


def _report_families(core: Any, report: Report) -> list[Any]:
    gauge, counter = core.GaugeMetricFamily, core.CounterMetricFamily
    total = report.window("total")
    out: list[Any] = []
    for name, value, doc in (
        ("prompt_tokens", total.input_tokens, "Prompt (input) tokens in every ledger, ever"),
        (
            "generation_tokens",
            total.output_tokens,
            "Generated (output) tokens in every ledger, ever",
        ),
        ("cached_tokens", total.cached_tokens, "Prompt tokens served from the prefix cache, ever"),
        ("requests", total.requests, "Finished requests in every ledger, ever"),
    ):
        c = counter(f"{PREFIX}_{name}", doc + " (restart-proof)")
        c.add_metric([], float(value))
        out.append(c)

    per_window: list[tuple[str, str, Callable[[Any], float | None]]] = [
        ("input_tokens", "Prompt tokens in the window", lambda w: w.input_tokens),
        ("output_tokens", "Generated tokens in the window", lambda w: w.output_tokens),
        ("cached_tokens", "Prefix-cache hit tokens in the window", lambda w: w.cached_tokens),
        ("requests", "Finished requests in the window", lambda w: w.requests),
        (
            "hit_ratio",
            "Cached / prompt tokens (absent when no prompt tokens)",
            lambda w: w.hit_rate,
        ),
        (
            "avg_speed_tokens_per_second",
            "Generated tokens per wall second of the window",
            lambda w: w.avg_speed,
        ),
        (
            "gen_speed_tokens_per_second",
            "Decode-time-weighted generation speed of requests",
            lambda w: w.gen_speed,
        ),
        (
            "uncovered_seconds",
            "Seconds of the window no writer could vouch for",
            lambda w: w.uncovered_seconds,
        ),
        ("wall_seconds", "Length of the window in seconds", lambda w: w.wall_seconds),
        (
            "complete",
            "1 when every second of the window is vouched for and problem-free",
            lambda w: 1.0 if w.complete else 0.0,
        ),
    ]
    for suffix, doc, get in per_window:
        g = gauge(f"{PREFIX}_window_{suffix}", doc, labels=["window"])
        for w in report.windows:
            v = get(w)
            if v is not None:
                g.add_metric([w.name], float(v))
        out.append(g)
    problems = gauge(
        f"{PREFIX}_window_problems",
        "Problem counts per window and code",
        labels=["window", "problem"],
    )
    for w in report.windows:
        for code, n in sorted(w.problems.items()):
            problems.add_metric([w.name, code], float(n))
    out.append(problems)

    writers = _writer_gauges(report)
    expected = gauge(
        f"{PREFIX}_writers_expected",
        "Writers the current run of the instance expects (0 once it closed)",
        labels=["ledger_instance"],
    )
    alive = gauge(
        f"{PREFIX}_writers_alive",
        "Writers of the instance's current run now alive",
        labels=["ledger_instance"],
    )
    by_state = gauge(
        f"{PREFIX}_writers",
        "Writers of every run of the instance, by state",
        labels=["ledger_instance", "state"],
    )
    for inst, counts in writers.items():
        expected.add_metric([inst], float(counts["expected"]))
        alive.add_metric([inst], float(counts["alive"]))
        for state in WRITER_STATES:
            by_state.add_metric([inst, state], float(counts[state]))
    out.extend([expected, alive, by_state])
    runs = gauge(f"{PREFIX}_runs", "vLLM launches (runs) found in the ledgers")
    runs.add_metric([], float(report.runs))
    out.append(runs)
    bad = gauge(f"{PREFIX}_files_unreadable", "Ledger files that could not be read")
    bad.add_metric([], float(len(report.files)))
    out.append(bad)
    return out


def _gpu_families(core: Any, gpus: Sequence[GpuReading]) -> list[Any]:
    gauge = core.GaugeMetricFamily
    labels = ["gpu", "UUID", "modelName"]
    count = gauge(f"{PREFIX}_gpus", "NVIDIA GPUs read through NVML (0 without NVML)")
    count.add_metric([], float(len(gpus)))
    out: list[Any] = [count]
    for suffix, doc, get in (
        ("power_watts", "GPU power draw in watts", lambda g: g.power_watts),
        ("utilization_percent", "GPU utilisation in percent", lambda g: g.utilization_percent),
        ("memory_used_bytes", "GPU memory used in bytes", lambda g: g.memory_used_bytes),
        ("memory_total_bytes", "GPU memory in bytes", lambda g: g.memory_total_bytes),
        (
            "temperature_celsius",
            "GPU temperature in degrees Celsius",
            lambda g: g.temperature_celsius,
        ),
    ):
        fam = gauge(f"{PREFIX}_gpu_{suffix}", doc, labels=labels)
        for g in gpus:
            v = get(g)
            if v is not None:
                fam.add_metric([str(g.index), g.uuid, g.name], float(v))
        out.append(fam)
    return out


class LedgerCollector:
    """A prometheus_client collector: one Report per scrape, reused for ``cache_seconds``."""

    def __init__(
        self,
        roots: Sequence[Path],
        *,
        tz: str,
        gpu: GpuReader | None = None,
        cache_seconds: float = 1.5,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        say: Callable[[str], None] = _say,
    ) -> None:
        self.roots = list(roots)
        self.tz = tz
        self.gpu = gpu
        self.cache_seconds = cache_seconds
        self.clock = clock
        self.monotonic = monotonic
        self.say = say
        self._cached: tuple[float, list[Any]] | None = None
        self._lock = threading.Lock()  # concurrent scrapes share one read
        self._last_error: str | None = None

    def _build(self) -> list[Any]:
        started = self.monotonic()
        report: Report | None
        try:
            report = build_report(self.roots, tz=self.tz, clock=self.clock)
        except LedgerError as exc:
            report = None
            if str(exc) != self._last_error:  # say each distinct failure once
                self.say(f"cannot read the ledgers: {exc}")
            self._last_error = str(exc)
        else:
            self._last_error = None
        took = self.monotonic() - started
        gpus = self.gpu.read() if self.gpu is not None else []
        return families(report, gpus, report_seconds=took)

    def collect(self) -> Iterator[Any]:
        with self._lock:
            now = self.monotonic()
            if self._cached is None or now - self._cached[0] >= self.cache_seconds:
                self._cached = (now, self._build())
            cached = self._cached[1]
        yield from cached


def make_registry(collector: LedgerCollector) -> Any:
    _client()
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


def serve(
    roots: Sequence[Path],
    *,
    host: str = "127.0.0.1",
    port: int = 9464,
    tz: str,
    gpu: bool = True,
    say: Callable[[str], None] = _say,
) -> None:
    """Serve /metrics until interrupted (the ``vllm-ledger exporter`` command)."""
    _client()
    from prometheus_client import start_http_server

    reader = GpuReader(say=say) if gpu else None
    collector = LedgerCollector(roots, tz=tz, gpu=reader, say=say)
    registry = make_registry(collector)
    try:
        server, thread = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise BadArgument(
            f"cannot listen on {host}:{port}: {exc.strerror}; pick another --port or --host"
        ) from exc
    if reader is not None:
        reader.read()  # NVML's absence is said once, at start (a scrape may beat us to it)
    say(
        f"serving http://{host}:{server.server_port}/metrics from "
        f"{', '.join(str(r) for r in roots)}"
    )
    try:
        while thread.is_alive():
            thread.join(1.0)
    finally:
        server.shutdown()
        if reader is not None:
            reader.close()


__all__ = ["LedgerCollector", "families", "make_registry", "serve"]
