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

The counters never go down while the exporter runs (``observe.counters``): each ledger file's
largest counts are remembered, so a run folder that is archived or moved away keeps its
contribution and is named (``vllm_ledger_runs_vanished``, the problem ``run_vanished`` in every
window its time overlaps, ``vllm_ledger_files_held{reason="vanished"}``), as does a file that
cannot be read for a moment (``reason="unreadable"``) or that holds less than before
(``reason="shrank"``). A run that comes back is counted once; compaction changes no figure.

``families(report, gpus)`` is pure; ``LedgerCollector`` adds the one read per scrape (a
``LedgerSet``), the cache, the clock and the counters' memory; ``start`` opens the HTTP port
(``observe.server``: a listen backlog, a deadline per request, a bound on connections) and
``serve`` runs it until interrupted.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from vllm_ledger.errors import BadArgument, LedgerError, MissingExtra
from vllm_ledger.formats.safe import printable
from vllm_ledger.observe.counters import (
    COUNT_NAMES,
    HOLD_REASONS,
    CounterMemory,
    FileCounts,
    Held,
    Sighting,
    VanishedRun,
)
from vllm_ledger.observe.gpu import GpuReader, GpuReading
from vllm_ledger.observe.server import MAX_CONNECTIONS, REQUEST_DEADLINE_S, MetricsServer
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.report import Report, build_report, resolve_tz
from vllm_ledger.read.snapshot import Sums
from vllm_ledger.read.windows import Window

PREFIX = "vllm_ledger"
WRITER_STATES = ("alive", "closed", "stale", "crashed", "missing")
_OPEN_STATES = ("alive", "stale", "missing")
# A problem only a long-lived reader can see: a run it counted is no longer under the roots.
# (Not in read.coverage.PROBLEM_CODES: a single report never sees a run go.)
RUN_VANISHED = "run_vanished"


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
    report: Report | None,
    gpus: Sequence[GpuReading],
    *,
    report_seconds: float = 0.0,
    held: Held | None = None,
) -> list[Any]:
    """The metric families of one scrape. ``report`` is None when it could not be built.

    ``held``: what the exporter's counter memory serves; without it the counters are the
    report's ``total`` window (a single read, nothing held). With it, the counters are served
    even when this read failed, once anything was counted.
    """
    core = _client()
    gauge = core.GaugeMetricFamily
    out: list[Any] = []
    ok = gauge(f"{PREFIX}_report_ok", "1 when the ledgers were read for this scrape, else 0")
    ok.add_metric([], 1.0 if report is not None else 0.0)
    out.append(ok)
    took = gauge(f"{PREFIX}_report_seconds", "Seconds the last ledger read took")
    took.add_metric([], report_seconds)
    out.append(took)
    if held is not None and (report is not None or held.tracked_files or held.folded_runs):
        out.extend(_counter_families(core, held.counts))
    elif held is None and report is not None:
        total = report.window("total")
        out.extend(
            _counter_families(
                core,
                (total.input_tokens, total.output_tokens, total.cached_tokens, total.requests),
            )
        )
    out.extend(_held_families(core, held))
    if report is not None:
        out.extend(_report_families(core, report, held.vanished_runs if held else ()))
    out.extend(_gpu_families(core, gpus))
    return out


_COUNTERS: dict[str, tuple[str, str]] = {
    "input_tokens": ("prompt_tokens", "Prompt (input) tokens in every ledger, ever"),
    "output_tokens": ("generation_tokens", "Generated (output) tokens in every ledger, ever"),
    "cached_tokens": ("cached_tokens", "Prompt tokens served from the prefix cache, ever"),
    "requests": ("requests", "Finished requests in every ledger, ever"),
}


def _counter_families(core: Any, counts: Sequence[int]) -> list[Any]:
    out: list[Any] = []
    for field_name, value in zip(COUNT_NAMES, counts, strict=True):
        name, doc = _COUNTERS[field_name]
        c = core.CounterMetricFamily(f"{PREFIX}_{name}", doc + " (restart-proof)")
        c.add_metric([], float(value))
        out.append(c)
    return out


def _held_families(core: Any, held: Held | None) -> list[Any]:
    gauge = core.GaugeMetricFamily
    runs = gauge(
        f"{PREFIX}_runs_vanished",
        "Runs this exporter counted that are no longer under the roots; the counters keep them",
    )
    runs.add_metric([], float(len(held.vanished_runs)) if held else 0.0)
    files = gauge(
        f"{PREFIX}_files_held",
        "Ledger files whose largest counts the counters keep although the file now is gone "
        "(vanished), cannot be read (unreadable) or holds less (shrank)",
        labels=["reason"],
    )
    for reason in HOLD_REASONS:
        files.add_metric([reason], float(held.files_held[reason]) if held else 0.0)
    return [runs, files]


def _report_families(core: Any, report: Report, vanished: Sequence[VanishedRun] = ()) -> list[Any]:
    gauge = core.GaugeMetricFamily
    # A vanished run counts in the windows its time overlaps, and always in ``total``: the
    # counters (the total) still hold it, the root no longer does.
    gone = {
        w.name: sum(1 for v in vanished if w.name == "total" or v.overlaps(w.start_ts, w.cutoff_ts))
        for w in report.windows
    }
    out: list[Any] = []
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
            lambda w: 1.0 if w.complete and not gone[w.name] else 0.0,
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
        codes = dict(w.problems)
        if gone[w.name]:
            codes[RUN_VANISHED] = gone[w.name]
        for code, n in sorted(codes.items()):
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


def sighting(ledgers: LedgerSet, report: Report) -> Sighting:
    """What one read saw, file by file: each readable file's counts over the report's ``total``
    window (the same memoised sums the report added up, so they add up to its total), and what
    could not be read."""
    total = report.window("total")
    w = Window(total.name, total.start_ts, total.cutoff_ts)
    roots = set(ledgers.roots)
    files: list[FileCounts] = []
    unreadable: set[tuple[str, int, int]] = set()
    runs: set[str] = set()
    unknown = False
    for snap in ledgers.snapshots:
        if snap.ok:
            sums = Sums()
            for by_engine in ledgers.sums(snap, w).values():
                sums.add(by_engine)
            if snap.ok:  # it may have failed just now
                files.append(
                    FileCounts(
                        snap.run_id,
                        snap.writer_rank,
                        snap.generation,
                        (sums.input_tokens, sums.output_tokens, sums.cached_tokens, sums.requests),
                        snap.spans[0][0] if snap.spans else snap.first_bucket_ts,
                        snap.last_proof_ts if snap.spans else snap.last_end_ts,
                    )
                )
                continue
        if snap.run_id and snap.writer_rank >= 0:
            unreadable.add((snap.run_id, snap.writer_rank, snap.generation))
        elif not snap.run_id or snap.path in roots:
            unknown = True  # a root that could not be listed: any run may be behind it
        else:  # a run folder that could not be listed, or a file in one that could not be seen
            runs.add(snap.run_id)
            if snap.path.parent not in roots:
                runs.add(snap.path.parent.name)
    return Sighting(files, frozenset(unreadable), frozenset(runs), unknown)


class LedgerCollector:
    """A prometheus_client collector: one read per scrape, reused for ``cache_seconds``, and
    the counters' memory across scrapes."""

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
        memory: CounterMemory | None = None,
    ) -> None:
        self.roots = list(roots)
        self.tz = tz
        self.gpu = gpu
        self.cache_seconds = cache_seconds
        self.clock = clock
        self.monotonic = monotonic
        self.say = say
        self.memory = memory if memory is not None else CounterMemory()
        self._cached: tuple[float, list[Any]] | None = None
        self._lock = threading.Lock()  # concurrent scrapes share one read
        self._last_error: str | None = None

    def _read(self) -> tuple[Report, Held]:
        resolve_tz(self.tz)  # a bad zone is refused before anything is read
        with LedgerSet.read(self.roots, clock=self.clock) as ledgers:
            report = build_report(ledgers, tz=self.tz)
            seen = sighting(ledgers, report)
        held = self.memory.observe(seen)
        self._say_changes(held)
        return report, held

    def _say_changes(self, held: Held) -> None:
        for run_id in held.newly_vanished:
            self.say(
                f"run {printable(run_id)} is no longer under the roots; the counters keep "
                f"what it counted ({RUN_VANISHED})"
            )
        for run_id in held.returned:
            self.say(f"run {printable(run_id)} is back under the roots; it is counted once")
        for run_id, rank, generation in held.newly_shrank:
            self.say(
                f"run {printable(run_id)} writer {rank} generation {generation} holds fewer "
                "counts than before; the counters keep the larger figures"
            )

    def _build(self) -> list[Any]:
        started = self.monotonic()
        report: Report | None
        held = self.memory.last
        try:
            report, held = self._read()
        except Exception as exc:  # any failure is report_ok 0, never an HTTP 500
            report = None
            why = str(exc) if isinstance(exc, LedgerError) else f"{type(exc).__name__}: {exc}"
            if why != self._last_error:  # say each distinct failure once
                self.say(f"cannot read the ledgers: {printable(why)}")
            self._last_error = why
        else:
            self._last_error = None
        took = self.monotonic() - started
        gpus = self.gpu.read() if self.gpu is not None else []
        return families(report, gpus, report_seconds=took, held=held)

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


def start(
    collector: LedgerCollector,
    *,
    host: str = "127.0.0.1",
    port: int = 9464,
    request_deadline_s: float = REQUEST_DEADLINE_S,
    max_connections: int = MAX_CONNECTIONS,
) -> MetricsServer:
    """Listen on ``host:port`` (0: any free port) and serve ``collector`` on a daemon thread;
    ``server.stop()`` ends it. Raises ``BadArgument`` when the address cannot be listened on."""
    registry = make_registry(collector)
    try:
        server = MetricsServer(
            registry,
            host,
            port,
            request_deadline_s=request_deadline_s,
            max_connections=max_connections,
            on_error=collector.say,
        )
    except OSError as exc:
        raise BadArgument(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; pick another --port or --host"
        ) from exc
    server.start()
    return server


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
    reader = GpuReader(say=say) if gpu else None
    try:
        server = start(LedgerCollector(roots, tz=tz, gpu=reader, say=say), host=host, port=port)
        if reader is not None:
            reader.read()  # NVML's absence is said once, at start (a scrape may beat us to it)
        say(f"serving http://{host}:{server.port}/metrics from {', '.join(str(r) for r in roots)}")
        try:
            while server.serving:
                time.sleep(1.0)
        finally:
            server.stop()
    finally:
        if reader is not None:
            reader.close()


__all__ = [
    "RUN_VANISHED",
    "LedgerCollector",
    "families",
    "make_registry",
    "serve",
    "sighting",
    "start",
]
