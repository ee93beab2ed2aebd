"""The ledger exporter: Prometheus metrics built from the Report, in a process of its own.

The plugin inside vLLM opens no port; this process reads the ledgers (through
``build_report``, never the SQLite files) on each scrape, at most once per ``cache_seconds``,
and serves (docs/fleet.md has the table of every metric and label):

- restart-proof counters per (``ledger_instance``, ``model_name``) pair, from each ledger
  file's ``total``: ``vllm_ledger_{prompt,generation,cached,decode}_tokens_total``,
  ``vllm_ledger_requests_total``, ``vllm_ledger_decode_seconds_total``. They keep rising across
  vLLM restarts, where vLLM's own counters fall back to zero. ``ledger_instance`` is the
  instance as ``report --by instance`` names it (HOST:PORT), ``model_name`` the served model
  names as ``report --by model`` does; Prometheus's own ``instance`` stays the scrape target;
- window figures labelled ``window`` (today, 24h, 3d, 7d, total) and the pair: tokens,
  requests, decode tokens and seconds, hit rate, average and generation speed. Their ``sum()``
  is the report's figure: there is no unlabelled copy to count twice;
- window coverage (uncovered seconds, wall seconds, a complete flag, problem counts) per
  ``ledger_instance`` (the instance's own, as ``report --by instance``) and for the whole root
  (the series without ``ledger_instance``);
- coverage gauges per vLLM instance (``ledger_instance``): writers expected and alive in the
  instance's current run, and writers per state;
- GPU gauges from NVML (``observe.gpu``) where a GPU is present;
- whose tokens (``observe.whose``, read by ``observe.whose_read``): restart-proof counters per
  key and adapter (the user and tenant labels only when asked for: ``--attribution-labels``),
  what is not attributed by reason, and window figures by each label, bounded to
  ``--attribution-series`` label sets;
- budgets (``observe.budgets``, with ``--budgets FILE``): each budget's use, limit and fraction
  in its period so far, as the enforcer judges it, and whether hard budgets hold (the
  enforcer's over-budget file: its age, fresh or failing open).

The counters never go down while the exporter runs (``observe.counters``): each ledger file's
largest counts are remembered, so a run folder that is archived or moved away keeps its
contribution and is named (``vllm_ledger_runs_vanished``, the problem ``run_vanished`` in every
window its time overlaps, ``vllm_ledger_files_held{reason="vanished"}``), as does a file that
cannot be read for a moment (``reason="unreadable"``) or that holds less than before
(``reason="shrank"``). A run that comes back is counted once; compaction changes no figure.

``observe.families.families(report, gpus, pairs=...)`` is pure; ``observe.pairs.pair_rows``
cuts one read into pairs; here ``LedgerCollector`` adds the one read per scrape (a
``LedgerSet``), the cache, the clock and the counters' memory (kept per file, so per pair);
``start`` opens the HTTP port (``observe.server``: a listen backlog, a deadline per request, a
bound on connections) and ``serve`` runs it until interrupted.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from vllm_ledger.errors import BadArgument, LedgerError
from vllm_ledger.formats.safe import printable
from vllm_ledger.http.server import Handler
from vllm_ledger.observe.budgets import (
    BudgetWatch,
    budget_families,
    enforcer_looks,
    judge_budgets,
)
from vllm_ledger.observe.counters import CounterMemory, Held
from vllm_ledger.observe.coverage_gauges import RUN_VANISHED
from vllm_ledger.observe.families import families, prometheus_core
from vllm_ledger.observe.gpu import GpuReader
from vllm_ledger.observe.pairs import PairRow, pair_rows, sighting
from vllm_ledger.observe.server import MAX_CONNECTIONS, REQUEST_DEADLINE_S, MetricsServer
from vllm_ledger.observe.whose import AttributionConfig, SeriesBound, attribution_families
from vllm_ledger.observe.whose_read import (
    WIDTH,
    ClosedFiles,
    attribution_sighting,
    whose_windows,
)
from vllm_ledger.plan.budgets import BudgetState
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.report import Report, build_report, resolve_tz
from vllm_ledger.read.whose import WhoseWindow


def _say(line: str) -> None:
    print(f"vllm-ledger exporter: {line}", file=sys.stderr, flush=True)


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
        attribution: AttributionConfig | None = None,
        budgets: BudgetWatch | None = None,
    ) -> None:
        self.roots = list(roots)
        self.tz = tz
        self.gpu = gpu
        self.cache_seconds = cache_seconds
        self.clock = clock
        self.monotonic = monotonic
        self.say = say
        self.memory = memory if memory is not None else CounterMemory()
        # Whose tokens: the credits per label set, remembered per file as the counts are.
        self.attribution = attribution if attribution is not None else AttributionConfig()
        self.attr_memory = CounterMemory(width=WIDTH)
        self.bound = SeriesBound(self.attribution.max_series)
        self.closed = ClosedFiles()  # closed files' credits, kept while they are unchanged
        self._whose: dict[str, tuple[WhoseWindow, ...]] | None = None
        self.budgets = budgets  # None: no budgets file (the enforcer's files are still looked at)
        self._budget_states: list[BudgetState] | None = None
        self._cached: tuple[float, list[Any]] | None = None
        self._lock = threading.Lock()  # concurrent scrapes share one read
        self._last_error: str | None = None

    def _read(self) -> tuple[Report, tuple[PairRow, ...], Held]:
        resolve_tz(self.tz)  # a bad zone is refused before anything is read
        with LedgerSet.read(self.roots, clock=self.clock) as ledgers:
            report = build_report(ledgers, tz=self.tz, by="instance")
            pairs = pair_rows(ledgers, report)
            seen = sighting(ledgers, report)
            labels = self.attribution.labels
            attr_seen = attribution_sighting(ledgers, report, labels, seen, self.closed)
            self._whose = whose_windows(ledgers, report, labels, self.closed)
            if self.budgets is not None:
                self._budget_states = judge_budgets(ledgers, self.budgets, report.at_ts)
        held = self.memory.observe(seen)
        self.attr_memory.observe(attr_seen)
        self._say_changes(held)
        return report, pairs, held

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
        pairs: tuple[PairRow, ...] = ()
        held = self.memory.last
        self._whose = None
        self._budget_states = None
        try:
            report, pairs, held = self._read()
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
        out = families(report, gpus, pairs=pairs, report_seconds=took, held=held)
        attr = self.attr_memory.last
        counted = report is not None or attr.tracked_files or attr.folded_runs
        whose = self._whose if report is not None else None
        out.extend(
            attribution_families(
                prometheus_core(), self.attribution, attr if counted else None, self.bound, whose
            )
        )
        looks = enforcer_looks(self.roots, self.clock(), self.budgets is not None)
        states = self._budget_states if report is not None else None
        out.extend(budget_families(prometheus_core(), states, looks))
        return out

    def collect(self) -> Iterator[Any]:
        with self._lock:
            now = self.monotonic()
            if self._cached is None or now - self._cached[0] >= self.cache_seconds:
                self._cached = (now, self._build())
            cached = self._cached[1]
        yield from cached


def make_registry(collector: LedgerCollector) -> Any:
    prometheus_core()
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
    status: Handler | None = None,
) -> MetricsServer:
    """Listen on ``host:port`` (0: any free port) and serve ``collector`` on a daemon thread;
    ``server.stop()`` ends it. Raises ``BadArgument`` (``.argument`` ``address``, ``.value``
    ``(host, port)``) when the address cannot be listened on. ``status``: the ``/status``
    route (``observe/status_route.py``); None: ``/status`` is 404."""
    registry = make_registry(collector)
    try:
        server = MetricsServer(
            registry,
            host,
            port,
            request_deadline_s=request_deadline_s,
            max_connections=max_connections,
            on_error=collector.say,
            status=status,
        )
    except OSError as exc:
        raise BadArgument(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="pick another address",
            argument="address",
            value=(host, port),
        ) from exc
    server.start()
    return server


def serve(
    roots: Sequence[Path],
    *,
    host: str = "127.0.0.1",
    port: int = 9464,
    tz: str,
    tz_origin: str = "",
    gpu: bool = True,
    say: Callable[[str], None] = _say,
    attribution: AttributionConfig | None = None,
    budgets: BudgetWatch | None = None,
    status: Handler | None = None,
) -> None:
    """Serve /metrics until interrupted (the ``vllm-ledger exporter`` command). ``tz`` is the
    zone chosen once at start, and ``tz_origin`` where it came from (``from --tz``, ...)."""
    prometheus_core()
    reader = GpuReader(say=say) if gpu else None
    try:
        collector = LedgerCollector(
            roots, tz=tz, gpu=reader, say=say, attribution=attribution, budgets=budgets
        )
        server = start(collector, host=host, port=port, status=status)
        if reader is not None:
            reader.read()  # NVML's absence is said once, at start (a scrape may beat us to it)
        zone = f"{tz}, {printable(tz_origin)}" if tz_origin else tz
        say(
            f"serving http://{host}:{server.port}/metrics from {', '.join(str(r) for r in roots)}"
            f"; 'today' from midnight in {zone}"
            + (
                f"; {len(budgets.config.budgets)} budgets from "
                f"{printable(budgets.config.path)} (days and months in {budgets.zone})"
                if budgets is not None
                else ""
            )
            + ("; /status with its bearer token" if status is not None else "")
        )
        try:
            while server.serving:
                time.sleep(1.0)
        finally:
            server.stop()
    finally:
        if reader is not None:
            reader.close()


__all__ = [
    "LedgerCollector",
    "make_registry",
    "serve",
    "start",
]
