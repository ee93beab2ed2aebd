"""Readings for the capacity decision table (``plan/advise.py``): what it is walked over, from
one of three sources.

Gauges (KV usage, waiting, GPU utilisation, power) are means over the sample; TTFT P99 comes
from the histogram's increase over the sample; generation tokens/s is taken over the whole
sample and over each half (the table's "throughput flat"). A reading that cannot be taken (no
such metric, no request started in the sample) is None. A reading from a Prometheus answer the
store called partial or gave a warning with (``plan/partial.py``) may lack an engine's or a
GPU's series: ``Readings.said`` keeps what the store said of each reading's answers, and
``plan/advise.py`` judges no rule on such a reading.

``readings_from_snapshots`` (pure) turns timed ``/metrics`` texts into ``Readings``;
``sample_metrics`` takes those snapshots from live URLs; ``prometheus_readings`` asks a
Prometheus for the same readings over a range; ``take_readings`` picks one of the three
sources (recorded snapshot files, a live ``/metrics``, a Prometheus).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vllm_ledger.errors import BadArgument
from vllm_ledger.names import (
    GPU_POWER_LIMIT_METRICS,
    GPU_POWER_METRICS,
    GPU_UTILIZATION_METRICS,
    KV_CACHE_USAGE_METRICS,
    VLLM_GENERATION_TOKENS_TOTAL,
    VLLM_NUM_REQUESTS_RUNNING,
    VLLM_NUM_REQUESTS_WAITING,
    VLLM_TIME_TO_FIRST_TOKEN_SECONDS,
)
from vllm_ledger.plan import partial, prom
from vllm_ledger.promtext import Sample, has_metric, parse_samples, sum_metric
from vllm_ledger.units import format_duration


@dataclass(frozen=True)
class Readings:
    """What the table is walked over. None: not measured (no such metric, or no data)."""

    seconds: float
    kv_cache_usage: float | None  # 0..1, mean over engines and the sample
    num_waiting: float | None  # summed over engines, mean over the sample
    num_running: float | None
    gpu_util_percent: float | None  # mean over GPUs and the sample
    ttft_p99_seconds: float | None
    num_ttft: int  # requests whose first token fell in the sample
    power_watts: float | None  # summed over GPUs, mean over the sample
    power_limit_watts: float | None
    gen_tokens_per_s: float | None  # over the whole sample
    gen_tokens_per_s_halves: tuple[float, float] | None  # first half, second half
    source: str = ""
    # what the store said of each reading's answers, by the reading's field (a Prometheus only)
    said: Mapping[str, prom.Said] = field(default_factory=dict)

    @property
    def told(self) -> dict[str, prom.Said]:
        """The readings (by field) whose answers the store called partial or gave a warning
        with: not complete figures."""
        return partial.told(self.said)


# Each reading in words: the text's rows and the rules' "no reading of ..." name them so.
READING_NAMES = {
    "kv_cache_usage": "KV-cache usage",
    "num_waiting": "waiting requests",
    "num_running": "running requests",
    "gpu_util_percent": "GPU utilisation",
    "ttft_p99_seconds": "TTFT P99",
    "num_ttft": "TTFT requests",
    "power_watts": "power",
    "power_limit_watts": "power limit",
    "gen_tokens_per_s": "throughput",
    "gen_tokens_per_s_halves": "throughput trend",
}
PARTIAL_DOC = "docs/cost-and-capacity.md#a-partial-answer"
MISSING = "an engine's or a GPU's series"  # what a partial answer of a reading may lack


def told_lines(r: Readings) -> tuple[str, ...]:
    """Each reading's answer the store called partial or gave a warning with, in its words."""
    named = {f"the {READING_NAMES[name]} query": s for name, s in r.told.items()}
    return partial.told_lines(named, MISSING, PARTIAL_DOC)


# ---- readings from /metrics snapshots (pure) ------------------------------------------------


def _first_present(samples: list[Sample], names: Sequence[str]) -> str | None:
    return next((n for n in names if has_metric(samples, n)), None)


def _mean_of(samples: list[Sample], names: Sequence[str]) -> float | None:
    name = _first_present(samples, names)
    if name is None:
        return None
    vals = [v for n, _l, v in samples if n == name and not math.isnan(v)]
    return statistics.fmean(vals) if vals else None


def _sum_of(samples: list[Sample], names: Sequence[str]) -> float | None:
    name = _first_present(samples, names)
    return None if name is None else sum_metric(samples, name)


def _buckets(samples: list[Sample], name: str) -> dict[float, float]:
    out: dict[float, float] = {}
    for n, labels, v in samples:
        if n == name + "_bucket" and "le" in labels and not math.isnan(v):
            le = float(labels["le"])
            out[le] = out.get(le, 0.0) + v
    return out


def histogram_quantile(q: float, buckets: dict[float, float]) -> float | None:
    """Prometheus' histogram_quantile over cumulative bucket counts keyed by ``le``."""
    les = sorted(buckets)
    if not les or not math.isinf(les[-1]):
        return None
    total = buckets[les[-1]]
    if total <= 0:
        return None
    rank = q * total
    prev_le, prev_count = 0.0, 0.0
    for le in les:
        count = buckets[le]
        if count >= rank:
            if math.isinf(le):
                return prev_le
            if count == prev_count:
                return le
            return prev_le + (le - prev_le) * (rank - prev_count) / (count - prev_count)
        prev_le, prev_count = le, count
    return None  # pragma: no cover - the +Inf bucket always holds the total


def _mean(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return statistics.fmean(got) if got else None


def readings_from_snapshots(snaps: Sequence[tuple[float, str]], source: str = "") -> Readings:
    """Readings from /metrics texts taken at the given (monotonic) seconds, oldest first."""
    if len(snaps) < 2:
        raise ValueError("need at least two snapshots")
    parsed = [(t, parse_samples(text)) for t, text in snaps]
    (t0, first), (t1, last) = parsed[0], parsed[-1]
    seconds = t1 - t0
    gen = [(t, _sum_of(s, (VLLM_GENERATION_TOKENS_TOTAL,))) for t, s in parsed]
    rate = halves = None
    if gen[0][1] is not None and gen[-1][1] is not None and seconds > 0:
        rate = (gen[-1][1] - gen[0][1]) / seconds
        if len(gen) >= 3:
            mid = min(range(1, len(gen) - 1), key=lambda i: abs(gen[i][0] - (t0 + seconds / 2)))
            (ta, a), (tm, m), (tb, b) = gen[0], gen[mid], gen[-1]
            if a is not None and m is not None and b is not None and tm > ta and tb > tm:
                halves = ((m - a) / (tm - ta), (b - m) / (tb - tm))
    ttft = VLLM_TIME_TO_FIRST_TOKEN_SECONDS
    b0, b1 = _buckets(first, ttft), _buckets(last, ttft)
    delta = {le: b1[le] - b0.get(le, 0.0) for le in b1}
    num_ttft = int(max(delta.values())) if delta else 0
    limits = [_sum_of(s, GPU_POWER_LIMIT_METRICS) for _t, s in parsed]
    return Readings(
        seconds=seconds,
        kv_cache_usage=_mean([_mean_of(s, KV_CACHE_USAGE_METRICS) for _t, s in parsed]),
        num_waiting=_mean([_sum_of(s, (VLLM_NUM_REQUESTS_WAITING,)) for _t, s in parsed]),
        num_running=_mean([_sum_of(s, (VLLM_NUM_REQUESTS_RUNNING,)) for _t, s in parsed]),
        gpu_util_percent=_mean([_mean_of(s, GPU_UTILIZATION_METRICS) for _t, s in parsed]),
        ttft_p99_seconds=histogram_quantile(0.99, delta) if num_ttft > 0 else None,
        num_ttft=num_ttft,
        power_watts=_mean([_sum_of(s, GPU_POWER_METRICS) for _t, s in parsed]),
        power_limit_watts=_mean(limits),
        gen_tokens_per_s=rate,
        gen_tokens_per_s_halves=halves,
        source=source,
    )


# ---- the edges: live /metrics and Prometheus -------------------------------------------------


def sample_metrics(
    urls: Sequence[str],
    seconds: float,
    interval_s: float = 1.0,
    fetch: prom.Fetch = prom.http_get,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[tuple[float, str]]:
    """Snapshots of the URLs' /metrics (texts joined) every ``interval_s`` for ``seconds``."""
    out: list[tuple[float, str]] = []
    start = clock()
    n = max(2, math.ceil(seconds / interval_s) + 1)
    for i in range(n):
        wait = start + i * interval_s - clock()
        if wait > 0:
            sleep(wait)
        t = clock()
        out.append((t, "\n".join(fetch(u).decode("utf-8", "replace") for u in urls)))
    return out


def prometheus_readings(
    url: str, range_s: float, at_ts: float | None = None, fetch: prom.Fetch = prom.http_get
) -> Readings:
    """The same readings from a Prometheus over [at - range, at], with what the store said of
    each reading's answers (a reading's fallbacks and the two halves' merged into one)."""
    rng = format_duration(range_s, "range")
    half = format_duration(range_s / 2, "range")
    said: dict[str, list[prom.Said]] = {}

    def one(name: str, *exprs: str) -> float | None:
        got, asked = prom.first_answer(url, list(exprs), at_ts, fetch)
        said.setdefault(name, []).extend(asked.values())
        return None if got is None else got[0]

    kv = one("kv_cache_usage", *(f"avg(avg_over_time({m}[{rng}]))" for m in KV_CACHE_USAGE_METRICS))
    halves = "gen_tokens_per_s_halves"
    first = one(halves, f"sum(rate({VLLM_GENERATION_TOKENS_TOTAL}[{half}] offset {half}))")
    second = one(halves, f"sum(rate({VLLM_GENERATION_TOKENS_TOTAL}[{half}]))")
    ttft_count = one("num_ttft", f"sum(increase({VLLM_TIME_TO_FIRST_TOKEN_SECONDS}_count[{rng}]))")
    return Readings(
        seconds=float(max(1, round(range_s))),
        kv_cache_usage=kv,
        num_waiting=one("num_waiting", f"sum(avg_over_time({VLLM_NUM_REQUESTS_WAITING}[{rng}]))"),
        num_running=one("num_running", f"sum(avg_over_time({VLLM_NUM_REQUESTS_RUNNING}[{rng}]))"),
        gpu_util_percent=one(
            "gpu_util_percent",
            *(f"avg(avg_over_time({m}[{rng}]))" for m in GPU_UTILIZATION_METRICS),
        ),
        ttft_p99_seconds=one(
            "ttft_p99_seconds",
            "histogram_quantile(0.99, sum by (le) "
            f"(increase({VLLM_TIME_TO_FIRST_TOKEN_SECONDS}_bucket[{rng}])))",
        ),
        num_ttft=round(ttft_count or 0),
        power_watts=one(
            "power_watts", *(f"sum(avg_over_time({m}[{rng}]))" for m in GPU_POWER_METRICS)
        ),
        power_limit_watts=one(
            "power_limit_watts",
            *(f"sum(avg_over_time({m}[{rng}]))" for m in GPU_POWER_LIMIT_METRICS),
        ),
        gen_tokens_per_s=one(
            "gen_tokens_per_s", f"sum(rate({VLLM_GENERATION_TOKENS_TOTAL}[{rng}]))"
        ),
        gen_tokens_per_s_halves=None if first is None or second is None else (first, second),
        source=f"Prometheus {url}, last {rng}",
        said={name: partial.merged(said[name]) for name in READING_NAMES if name in said},
    )


def take_readings(
    *,
    snapshots: Sequence[Path] = (),
    metrics_url: str | None = None,
    prometheus_url: str | None = None,
    gpu_metrics_urls: Sequence[str] = (),
    sample_seconds: float = 10.0,
    interval_s: float = 1.0,
    range_s: float = 600.0,
    power_limit_watts: float | None = None,
    fetch: prom.Fetch = prom.http_get,
) -> Readings:
    """Readings from the first source given; ``power_limit_watts``, if given, replaces the one read.

    The sources: snapshot files taken ``interval_s`` apart (oldest first), ``metrics_url`` (with
    ``gpu_metrics_urls``) sampled for ``sample_seconds``, or a Prometheus over the last ``range_s``.
    A refusal is a ``BadArgument`` whose ``.argument`` names the parameter.
    """
    for name, seconds in (
        ("sample_seconds", sample_seconds),
        ("interval_s", interval_s),
        ("range_s", range_s),
    ):
        if not seconds > 0:
            raise BadArgument(f"{name} {seconds!r} is not above 0", argument=name, value=seconds)
    if snapshots:
        if len(snapshots) < 2:
            raise BadArgument(
                "snapshots holds one file: rates need two readings",
                hint="give at least two",
                argument="snapshots",
                value=tuple(snapshots),
            )
        snaps = []
        for i, path in enumerate(snapshots):
            try:
                snaps.append((i * interval_s, path.read_text()))
            except OSError as exc:
                raise BadArgument(
                    f"cannot read {path}: {exc.strerror}", argument="snapshots", value=path
                ) from exc
        readings = readings_from_snapshots(snaps, source=f"{len(snaps)} recorded snapshots")
    elif metrics_url:
        snaps = sample_metrics(
            [metrics_url, *gpu_metrics_urls], sample_seconds, interval_s, fetch=fetch
        )
        readings = readings_from_snapshots(snaps, source=metrics_url)
    elif prometheus_url is not None:
        readings = prometheus_readings(prometheus_url, range_s, fetch=fetch)
    else:
        raise BadArgument(
            "no source of readings",
            hint="give snapshots (two or more), metrics_url or prometheus_url",
        )
    if power_limit_watts is not None:  # given: what the store said of its own no longer counts
        said = {k: v for k, v in readings.said.items() if k != "power_limit_watts"}
        readings = dataclasses.replace(readings, power_limit_watts=power_limit_watts, said=said)
    return readings


__all__ = [
    "MISSING",
    "PARTIAL_DOC",
    "READING_NAMES",
    "Readings",
    "histogram_quantile",
    "prometheus_readings",
    "readings_from_snapshots",
    "sample_metrics",
    "take_readings",
    "told_lines",
]
