"""The exporter's metric families of one scrape, pure: built from a ``Report`` (its windows per
(``ledger_instance``, ``model_name``) pair, ``observe.pairs``), the counters' memory
(``observe.counters``) and the GPU readings (``observe.gpu``); coverage and writers come from
``observe.coverage_gauges``. docs/fleet.md has the table of every metric and label."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from vllm_ledger.errors import MissingExtra
from vllm_ledger.figures import FIGURES
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
    LEDGER_RUNS,
    LEDGER_RUNS_VANISHED,
    LEDGER_WINDOW_AVG_SPEED,
    LEDGER_WINDOW_GEN_SPEED,
    LEDGER_WINDOW_HIT_RATIO,
    MODEL_NAME_LABEL,
    REASON_LABEL,
    WINDOW_LABEL,
)
from vllm_ledger.observe.counters import (
    COUNT_NAMES,
    HOLD_REASONS,
    NO_LABELS,
    Counts,
    Held,
    Labels,
    VanishedRun,
)
from vllm_ledger.observe.coverage_gauges import coverage_families, writer_families
from vllm_ledger.observe.gpu import GpuReading
from vllm_ledger.observe.pairs import PairRow
from vllm_ledger.read.report import Report, WindowReport


def prometheus_core() -> Any:
    """``prometheus_client.core``; ``MissingExtra`` without the ``exporter`` extra."""
    try:
        import prometheus_client.core as core
    except ImportError as exc:
        raise MissingExtra("prometheus_client", "exporter") from exc
    return core


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
    core = prometheus_core()
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


def _report_families(
    core: Any,
    report: Report,
    pairs: Sequence[PairRow],
    vanished: Sequence[VanishedRun] = (),
) -> list[Any]:
    gauge = core.GaugeMetricFamily
    out = _figure_families(gauge, pairs)
    out.extend(coverage_families(gauge, report, vanished))
    out.extend(writer_families(gauge, report))
    runs = gauge(LEDGER_RUNS, "vLLM launches (runs) found in the ledgers")
    runs.add_metric([], float(report.runs))
    out.append(runs)
    bad = gauge(LEDGER_FILES_UNREADABLE, "Ledger files that could not be read")
    bad.add_metric([], float(len(report.files)))
    out.append(bad)
    return out


def _figure_families(gauge: Any, pairs: Sequence[PairRow]) -> list[Any]:
    """Each window figure (``_FIGURES``) per window and pair; a figure that is absent (no
    prompt tokens, no hit rate) has no sample."""
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
    return out


# GPU gauge -> (help, the reading's value), labelled like DCGM's (``names.GPU_LABELS``).
_GPU_GAUGES: tuple[tuple[str, str, Callable[[GpuReading], float | None]], ...] = (
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
)


def _gpu_families(core: Any, gpus: Sequence[GpuReading]) -> list[Any]:
    gauge = core.GaugeMetricFamily
    labels = list(GPU_LABELS)
    count = gauge(LEDGER_GPUS, "NVIDIA GPUs read through NVML (0 without NVML)")
    count.add_metric([], float(len(gpus)))
    out: list[Any] = [count]
    for name, doc, get in _GPU_GAUGES:
        fam = gauge(name, doc, labels=labels)
        for g in gpus:
            v = get(g)
            if v is not None:
                fam.add_metric([str(g.index), g.uuid, g.name], float(v))
        out.append(fam)
    return out
