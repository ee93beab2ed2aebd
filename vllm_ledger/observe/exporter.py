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

``families(report, gpus, pairs=...)`` is pure; ``pair_rows`` cuts one read into pairs;
``LedgerCollector`` adds the one read per scrape (a ``LedgerSet``), the cache, the clock and the
counters' memory (kept per file, so per pair); ``start`` opens the HTTP port
(``observe.server``: a listen backlog, a deadline per request, a bound on connections) and
``serve`` runs it until interrupted.
"""

from __future__ import annotations

import dataclasses
import operator
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_ledger.errors import BadArgument, LedgerError, MissingExtra
from vllm_ledger.figures import FIGURES
from vllm_ledger.formats.safe import printable
from vllm_ledger.http.server import Handler
from vllm_ledger.names import (
    GPU_LABELS,
    LEDGER_FILES_HELD,
    LEDGER_FILES_UNREADABLE,
    LEDGER_GPU_MEMORY_TOTAL_BYTES,
    LEDGER_GPU_MEMORY_USED_BYTES,
    LEDGER_GPU_POWER_WATTS,
    LEDGER_GPU_TEMPERATURE_CELSIUS,
    LEDGER_GPU_UTILIZATION_PERCENT,
    LEDGER_GPUS,
    LEDGER_INSTANCE_LABEL,
    LEDGER_REPORT_OK,
    LEDGER_REPORT_SECONDS,
    LEDGER_RUN_START,
    LEDGER_RUNS,
    LEDGER_RUNS_VANISHED,
    LEDGER_WINDOW_AVG_SPEED,
    LEDGER_WINDOW_COMPLETE,
    LEDGER_WINDOW_GEN_SPEED,
    LEDGER_WINDOW_HIT_RATIO,
    LEDGER_WINDOW_PROBLEMS,
    LEDGER_WINDOW_UNCOVERED_SECONDS,
    LEDGER_WINDOW_WALL_SECONDS,
    LEDGER_WRITERS,
    LEDGER_WRITERS_ALIVE,
    LEDGER_WRITERS_EXPECTED,
    MODEL_NAME_LABEL,
    PROBLEM_LABEL,
    REASON_LABEL,
    STATE_LABEL,
    WINDOW_LABEL,
)
from vllm_ledger.observe.budgets import (
    BudgetWatch,
    budget_families,
    enforcer_looks,
    judge_budgets,
)
from vllm_ledger.observe.counters import (
    COUNT_NAMES,
    HOLD_REASONS,
    NO_LABELS,
    CounterMemory,
    Counts,
    FileCounts,
    Held,
    Labels,
    Sighting,
    VanishedRun,
)
from vllm_ledger.observe.gpu import GpuReader, GpuReading
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
from vllm_ledger.read.report import (
    Report,
    WindowReport,
    build_report,
    report_figures,
    resolve_tz,
)
from vllm_ledger.read.snapshot import LedgerSnapshot, Sums
from vllm_ledger.read.whose import WhoseWindow
from vllm_ledger.read.windows import Window

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
        if is_open and start[run_id] > 0:
            out[inst]["start_ts"] = int(start[run_id])
        for state in WRITER_STATES:
            out[inst][state] = sum(
                1 for r in runs.values() for w in r if w.instance == inst and w.state == state
            )
    return out


def model_key(names: Sequence[str]) -> str:
    """The ``model_name`` label: the served model names as ``report --by model`` names them."""
    return ",".join(names) or "?"


@dataclass(frozen=True)
class PairRow:
    """One (ledger_instance, model_name) pair's five windows: its own figures, over the
    windows of its instance, with its instance's coverage (as ``report --by instance``)."""

    labels: Labels
    windows: tuple[WindowReport, ...]


def pair_rows(ledgers: LedgerSet, report: Report) -> tuple[PairRow, ...]:
    """The figures of every (instance, model) pair over the windows of the instance's row in
    ``report`` (built ``by="instance"`` from ``ledgers``); sums are the set's memoised ones, so
    the pairs of an instance add up to its row, and all pairs to the report's windows."""
    rows = {row.key: row for row in report.breakdown} if report.breakdown_by == "instance" else {}
    groups: dict[Labels, list[LedgerSnapshot]] = {}
    for s in ledgers.snapshots:
        if s.ok:
            pair: Labels = (s.instance.key, model_key(s.instance.served_model_names))
            groups.setdefault(pair, []).append(s)
    out: list[PairRow] = []
    for labels in sorted(groups):
        row = rows.get(labels[0])
        if row is None:  # not in the report (a file that failed since): left out this scrape
            continue
        windows = []
        for w in row.windows:
            window = Window(w.name, w.start_ts, w.cutoff_ts)
            sums, _imprecise = ledgers.total(groups[labels], window)
            windows.append(dataclasses.replace(w, **report_figures(sums)))
        out.append(PairRow(labels, tuple(windows)))
    return tuple(out)


def families(
    report: Report | None,
    gpus: Sequence[GpuReading],
    *,
    pairs: Sequence[PairRow] | None = None,
    report_seconds: float = 0.0,
    held: Held | None = None,
) -> list[Any]:
    """The metric families of one scrape. ``report`` is None when it could not be built.

    ``pairs``: the per (instance, model) figures (``pair_rows``); without them (a report
    alone) the report's own windows are served as one pair with empty labels.
    ``held``: what the exporter's counter memory serves; without it the counters are the
    pairs' ``total`` windows (a single read, nothing held). With it, the counters are served
    even when this read failed, once anything was counted.
    """
    core = _client()
    gauge = core.GaugeMetricFamily
    out: list[Any] = []
    ok = gauge(LEDGER_REPORT_OK, "1 when the ledgers were read for this scrape, else 0")
    ok.add_metric([], 1.0 if report is not None else 0.0)
    out.append(ok)
    took = gauge(LEDGER_REPORT_SECONDS, "Seconds the last ledger read took")
    took.add_metric([], report_seconds)
    out.append(took)
    if report is not None and pairs is None:
        pairs = (PairRow(NO_LABELS, report.windows),)
    if held is not None and (report is not None or held.tracked_files or held.folded_runs):
        out.extend(_counter_families(core, held.by_labels))
    elif held is None and pairs is not None:
        out.extend(_counter_families(core, [(p.labels, _total_counts(p)) for p in pairs]))
    out.extend(_held_families(core, held))
    if report is not None:
        out.extend(_report_families(core, report, pairs or (), held.vanished_runs if held else ()))
    out.extend(_gpu_families(core, gpus))
    return out


def _total_counts(pair: PairRow) -> Counts:
    t = next(w for w in pair.windows if w.name == "total")
    return tuple(f.stored_value(getattr(t, f.report_name)) for f in FIGURES)


# COUNT_NAMES field -> (counter name, help, scale to the unit), from figures.py.
# prometheus_client names the family without ``_total`` and its sample with it.
_COUNTERS: dict[str, tuple[str, str, float]] = {
    f.name: (f.counter, f.counter_help, 1.0 / f.report_divisor) for f in FIGURES
}
PAIR_LABELS = [LEDGER_INSTANCE_LABEL, MODEL_NAME_LABEL]


def _counter_families(core: Any, by_labels: Sequence[tuple[Labels, Counts]]) -> list[Any]:
    out: list[Any] = []
    for i, field_name in enumerate(COUNT_NAMES):
        name, doc, scale = _COUNTERS[field_name]
        c = core.CounterMetricFamily(name, doc + " (restart-proof)", labels=PAIR_LABELS)
        for labels, counts in by_labels:
            c.add_metric(list(labels), counts[i] * scale if scale != 1.0 else float(counts[i]))
        out.append(c)
    return out


def _held_families(core: Any, held: Held | None) -> list[Any]:
    gauge = core.GaugeMetricFamily
    runs = gauge(
        LEDGER_RUNS_VANISHED,
        "Runs this exporter counted that are no longer under the roots; the counters keep them",
    )
    runs.add_metric([], float(len(held.vanished_runs)) if held else 0.0)
    files = gauge(
        LEDGER_FILES_HELD,
        "Ledger files whose largest counts the counters keep although the file now is gone "
        "(vanished), cannot be read (unreadable) or holds less (shrank)",
        labels=[REASON_LABEL],
    )
    for reason in HOLD_REASONS:
        files.add_metric([reason], float(held.files_held[reason]) if held else 0.0)
    return [runs, files]


_FIGURES: list[tuple[str, str, Callable[[WindowReport], float | None]]] = [
    *((f.window_gauge, f.window_help, operator.attrgetter(f.report_name)) for f in FIGURES),
    (
        LEDGER_WINDOW_HIT_RATIO,
        "Cached / prompt tokens (absent when no prompt tokens)",
        lambda w: w.hit_rate,
    ),
    (
        LEDGER_WINDOW_AVG_SPEED,
        "Generated tokens per wall second of the window",
        lambda w: w.avg_speed,
    ),
    (
        LEDGER_WINDOW_GEN_SPEED,
        "Decode-time-weighted generation speed of requests",
        lambda w: w.gen_speed,
    ),
]


def _vanished_counts(
    windows: Sequence[WindowReport], vanished: Sequence[VanishedRun]
) -> dict[str, int]:
    """Vanished runs per window: those whose time overlaps it, and every one in ``total`` (the
    counters still hold it, the root no longer does)."""
    return {
        w.name: sum(1 for v in vanished if w.name == "total" or v.overlaps(w.start_ts, w.cutoff_ts))
        for w in windows
    }


def _report_families(
    core: Any,
    report: Report,
    pairs: Sequence[PairRow],
    vanished: Sequence[VanishedRun] = (),
) -> list[Any]:
    gauge = core.GaugeMetricFamily
    out: list[Any] = []
    figure_labels = [WINDOW_LABEL, *PAIR_LABELS]
    for name, doc, get in _FIGURES:
        g = gauge(name, doc, labels=figure_labels)
        for pair in pairs:
            for w in pair.windows:
                v = get(w)
                if v is not None:
                    g.add_metric([w.name, *pair.labels], float(v))
        out.append(g)

    # Coverage: per instance (its own, as report --by instance) and for the whole root (the
    # series without ledger_instance).
    coverage_labels = [WINDOW_LABEL, LEDGER_INSTANCE_LABEL]
    uncovered = gauge(
        LEDGER_WINDOW_UNCOVERED_SECONDS,
        "Seconds of the window no writer could vouch for",
        labels=coverage_labels,
    )
    wall = gauge(
        LEDGER_WINDOW_WALL_SECONDS,
        "Length of the window in seconds",
        labels=coverage_labels,
    )
    complete = gauge(
        LEDGER_WINDOW_COMPLETE,
        "1 when every second of the window is vouched for and problem-free",
        labels=coverage_labels,
    )
    problems = gauge(
        LEDGER_WINDOW_PROBLEMS,
        "Problem counts per window and code",
        labels=[WINDOW_LABEL, PROBLEM_LABEL, LEDGER_INSTANCE_LABEL],
    )
    scopes: list[tuple[str | None, Sequence[WindowReport], Sequence[VanishedRun]]] = [
        (None, report.windows, vanished)
    ]
    rows = report.breakdown if report.breakdown_by == "instance" else ()
    for row in rows:
        scopes.append((row.key, row.windows, [v for v in vanished if row.key in v.instances]))
    for lost in sorted({i for v in vanished for i in v.instances} - {r.key for r in rows}):
        # An instance whose every run has gone: only what the counters still hold is known.
        lost_runs = [v for v in vanished if lost in v.instances]
        for w in report.windows:
            n = _vanished_counts([w], lost_runs)[w.name]
            if n:
                complete.add_metric([w.name, lost], 0.0)
                problems.add_metric([w.name, RUN_VANISHED, lost], float(n))
    for inst, windows, gone_runs in scopes:
        gone = _vanished_counts(windows, gone_runs)
        for w in windows:
            codes = dict(w.problems)
            if gone[w.name]:
                codes[RUN_VANISHED] = gone[w.name]
            values = (
                (uncovered, float(w.uncovered_seconds)),
                (wall, float(w.wall_seconds)),
                (complete, 1.0 if w.complete and not gone[w.name] else 0.0),
            )
            for fam, v in values:
                if inst is None:
                    fam.add_sample(fam.name, {WINDOW_LABEL: w.name}, v)
                else:
                    fam.add_metric([w.name, inst], v)
            for code, n in sorted(codes.items()):
                if inst is None:
                    problems.add_sample(
                        problems.name, {WINDOW_LABEL: w.name, PROBLEM_LABEL: code}, n
                    )
                else:
                    problems.add_metric([w.name, code, inst], float(n))
    out.extend([uncovered, wall, complete, problems])

    writers = _writer_gauges(report)
    expected = gauge(
        LEDGER_WRITERS_EXPECTED,
        "Writers the current run of the instance expects (0 once it closed)",
        labels=[LEDGER_INSTANCE_LABEL],
    )
    alive = gauge(
        LEDGER_WRITERS_ALIVE,
        "Writers of the instance's current run now alive",
        labels=[LEDGER_INSTANCE_LABEL],
    )
    by_state = gauge(
        LEDGER_WRITERS,
        "Writers of every run of the instance, by state",
        labels=[LEDGER_INSTANCE_LABEL, STATE_LABEL],
    )
    run_start = gauge(
        LEDGER_RUN_START,
        "When the instance's open run started (unix seconds; none once it closed)",
        labels=[LEDGER_INSTANCE_LABEL],
    )
    for inst, counts in writers.items():
        if "start_ts" in counts:
            run_start.add_metric([inst], float(counts["start_ts"]))
        expected.add_metric([inst], float(counts["expected"]))
        alive.add_metric([inst], float(counts["alive"]))
        for state in WRITER_STATES:
            by_state.add_metric([inst, state], float(counts[state]))
    out.extend([expected, alive, by_state, run_start])
    runs = gauge(LEDGER_RUNS, "vLLM launches (runs) found in the ledgers")
    runs.add_metric([], float(report.runs))
    out.append(runs)
    bad = gauge(LEDGER_FILES_UNREADABLE, "Ledger files that could not be read")
    bad.add_metric([], float(len(report.files)))
    out.append(bad)
    return out


def _gpu_families(core: Any, gpus: Sequence[GpuReading]) -> list[Any]:
    gauge = core.GaugeMetricFamily
    labels = list(GPU_LABELS)
    count = gauge(LEDGER_GPUS, "NVIDIA GPUs read through NVML (0 without NVML)")
    count.add_metric([], float(len(gpus)))
    out: list[Any] = [count]
    for name, doc, get in (
        (LEDGER_GPU_POWER_WATTS, "GPU power draw in watts", lambda g: g.power_watts),
        (
            LEDGER_GPU_UTILIZATION_PERCENT,
            "GPU utilisation in percent",
            lambda g: g.utilization_percent,
        ),
        (LEDGER_GPU_MEMORY_USED_BYTES, "GPU memory used in bytes", lambda g: g.memory_used_bytes),
        (LEDGER_GPU_MEMORY_TOTAL_BYTES, "GPU memory in bytes", lambda g: g.memory_total_bytes),
        (
            LEDGER_GPU_TEMPERATURE_CELSIUS,
            "GPU temperature in degrees Celsius",
            lambda g: g.temperature_celsius,
        ),
    ):
        fam = gauge(name, doc, labels=labels)
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
                        tuple(getattr(sums, name) for name in COUNT_NAMES),
                        snap.spans[0][0] if snap.spans else snap.first_bucket_ts,
                        snap.last_proof_ts if snap.spans else snap.last_end_ts,
                        (snap.instance.key, model_key(snap.instance.served_model_names)),
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
                _client(), self.attribution, attr if counted else None, self.bound, whose
            )
        )
        looks = enforcer_looks(self.roots, self.clock(), self.budgets is not None)
        states = self._budget_states if report is not None else None
        out.extend(budget_families(_client(), states, looks))
        return out

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
    _client()
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
    "PAIR_LABELS",
    "RUN_VANISHED",
    "LedgerCollector",
    "PairRow",
    "families",
    "make_registry",
    "model_key",
    "pair_rows",
    "serve",
    "sighting",
    "start",
]
