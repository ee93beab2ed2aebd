"""Alert thresholds from a baseline: what a Prometheus saw over the last days, not a guess.

The practice (docs/cost-and-capacity.md#thresholds-from-a-baseline): run three days first,
note each metric's everyday range, and derive the alert thresholds from it. Three readings,
per ``(instance, model_name)``, all instant queries at the window's end ``at`` over
``[at - window, at]``:

===============  ==============================================================================
reading          PromQL (W = the window, e.g. 3d)
===============  ==============================================================================
TTFT P99         ``histogram_quantile(0.99, sum by (instance, model_name, le)
                 (increase(vllm:time_to_first_token_seconds_bucket[W])))``: the P99 of every
                 request whose first token fell in the window (Prometheus' interpolation)
KV-cache P99     ``max by (instance, model_name) (quantile_over_time(0.99,
                 vllm:kv_cache_usage_perc[W]))``: the level each engine stays under 99 % of
                 its samples, the highest engine's (``vllm:gpu_cache_usage_perc`` when the
                 0.32 name has no data)
waiting P99      ``sum by (instance, model_name) (quantile_over_time(0.99,
                 vllm:num_requests_waiting[W]))``: each engine's P99 queue, summed as the
                 QueueBuildUp alert sums engines
===============  ==============================================================================

The thresholds (``derive``, pure), from the highest baseline over the groups, because each of
``observability``'s rules has one threshold for every server:

- TTFT P99: baseline x 1.5, rounded up to 0.01 s (at least 0.01 s);
- KV cache: halfway from the baseline to full, ``b + (1 - b) / 2``, rounded up to 0.01;
- waiting: baseline x 1.5, rounded up to a whole request (0 stays 0: any queue is news).

"Rounded up" never lands below the exact figure, so a threshold is never inside the baseline.

How much history the window really held: the first and last sample of vLLM's waiting-requests
gauge in it (``min``/``max`` over a subquery of ``timestamp()``, at most ``HISTORY_POINTS``
steps, so exact to a step: 1 s for an hour, 52 s for three days). A history shorter than
``COVERED_FRACTION`` of the window asked is a warning (``history_warning``); one shorter than
``MIN_HISTORY_S`` (1 hour) proposes no thresholds (``no_thresholds_reason``): the P99 of a few
minutes is one moment's load, not an everyday range, and a threshold just above it would fire
on the first busy hour. Nor does an answer the store called partial or gave a warning with
(``plan/partial.py``): a server's series may be missing from it, the highest among them, and a
threshold under that server's everyday range fires all day.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from vllm_ledger.names import (
    KV_CACHE_USAGE_METRICS,
    VLLM_NUM_REQUESTS_WAITING,
    VLLM_TIME_TO_FIRST_TOKEN_SECONDS,
)
from vllm_ledger.plan import partial, prom
from vllm_ledger.units import format_duration

GROUP = ("instance", "model_name")
MIN_HISTORY_S = 3600.0  # under this much history: no thresholds (docs/cost-and-capacity.md)
COVERED_FRACTION = 0.95  # a history shorter than this share of the window asked: a warning
HISTORY_POINTS = 5000  # the subquery's steps over the window, at most
HISTORY_METRIC = VLLM_NUM_REQUESTS_WAITING  # a gauge every vLLM serves, each scrape
QUANTILE = 0.99
TTFT_FACTOR = 1.5
WAITING_FACTOR = 1.5
# The answers read, by the key the JSON gives each (a group's, or ``history``), in words.
ANSWER_NAMES = {
    "ttft_p99_seconds": "TTFT P99",
    "kv_cache_p99": "KV-cache P99",
    "kv_samples": "KV samples",
    "waiting_p99": "waiting P99",
    "history": "history",
}
PARTIAL_DOC = "docs/cost-and-capacity.md#a-partial-answer"
MISSING = "a server's series"  # what a partial answer may lack


@dataclass(frozen=True)
class GroupBaseline:
    """One server's readings over the window; None: no data for it."""

    instance: str
    model_name: str
    ttft_p99_seconds: float | None
    kv_cache_p99: float | None  # 0..1
    waiting_p99: float | None
    kv_samples: int  # samples of the KV gauge in the window, summed over engines


@dataclass(frozen=True)
class Baseline:
    url: str
    window_seconds: float
    end_ts: float
    groups: tuple[GroupBaseline, ...]
    kv_metric: str | None  # the KV gauge that answered
    queries: tuple[str, ...]
    first_ts: float | None = None  # the window's first and last sample of HISTORY_METRIC
    last_ts: float | None = None
    # what the store said of the answers read, by ANSWER_NAMES' keys (a reading's fallbacks
    # and the history's two queries merged)
    said: Mapping[str, prom.Said] = field(default_factory=dict)

    @property
    def told(self) -> dict[str, prom.Said]:
        """The answers the store called partial or gave a warning with."""
        return partial.told(self.said)

    @property
    def history_seconds(self) -> float | None:
        """How much history the window held; None: no sample to tell by."""
        if self.first_ts is None or self.last_ts is None or self.last_ts < self.first_ts:
            return None
        return self.last_ts - self.first_ts

    def highest(self, field: str) -> float | None:
        got = [getattr(g, field) for g in self.groups if getattr(g, field) is not None]
        return max(got) if got else None


@dataclass(frozen=True)
class Threshold:
    """One alert threshold and the baseline figure it came from."""

    name: str  # ttft_p99_seconds | kv_cache_threshold | queue_waiting
    flag: str  # observability's flag for it
    baseline: float | None  # None: no data in the window (keep observability's default)
    value: float | None
    rule: str  # how value follows from baseline, in words


def _up(x: float, step: float) -> float:
    """``x`` rounded up to a multiple of ``step``; float noise (1.65 -> 1.6500000000000001)
    does not push it a whole step up."""
    n = math.ceil(round(x / step, 6))
    return round(n * step, 6)


def derive(b: Baseline) -> tuple[Threshold, ...]:
    """The three thresholds from the highest baseline over the groups. Pure."""
    ttft = b.highest("ttft_p99_seconds")
    kv = b.highest("kv_cache_p99")
    wait = b.highest("waiting_p99")
    return (
        Threshold(
            "ttft_p99_seconds",
            "--ttft-p99-seconds",
            ttft,
            None if ttft is None else max(0.01, _up(ttft * TTFT_FACTOR, 0.01)),
            f"baseline x {TTFT_FACTOR:g}, rounded up to 0.01 s",
        ),
        Threshold(
            "kv_cache_threshold",
            "--kv-cache-threshold",
            kv,
            None if kv is None else min(1.0, max(0.01, _up(kv + (1 - kv) / 2, 0.01))),
            "halfway from the baseline to full, rounded up to 0.01",
        ),
        Threshold(
            "queue_waiting",
            "--queue-waiting",
            wait,
            None if wait is None else float(math.ceil(round(wait * WAITING_FACTOR, 6))),
            f"baseline x {WAITING_FACTOR:g}, rounded up to a whole request",
        ),
    )


def _span(seconds: float) -> str:
    """A window or a history in words: ``3 days``, ``1 day``, else ``2 min``, ``1 h 30 min``."""
    days = seconds / 86400
    if days == int(days) and days >= 1:
        return f"{days:g} day{'s' if days != 1 else ''}"
    return format_duration(round(seconds), "words")


def window_words(b: Baseline) -> str:
    return _span(b.window_seconds)


def history_warning(b: Baseline) -> str | None:
    """``baseline: asked 3 days, had 2 min of history``, when the history held is shorter than
    ``COVERED_FRACTION`` of the window asked (or unknown); None when it covers the window."""
    had = b.history_seconds
    if had is None:
        return (
            f"baseline: asked {window_words(b)}, found no sample of {HISTORY_METRIC} to "
            "tell how much history Prometheus holds"
        )
    if had >= COVERED_FRACTION * b.window_seconds:
        return None
    return f"baseline: asked {window_words(b)}, had {_span(had)} of history"


def told_lines(b: Baseline) -> tuple[str, ...]:
    """Each answer the store called partial or gave a warning with, in its words."""
    named = {f"the {ANSWER_NAMES[name]} query": s for name, s in b.told.items()}
    return partial.told_lines(named, MISSING, PARTIAL_DOC)


def _told_reason(b: Baseline) -> str:
    names = [ANSWER_NAMES[name] for name in b.told]
    if len(names) == 1:
        return (
            f"the store called its answer to the {names[0]} query partial or gave a warning "
            f"with it ({MISSING} may be missing)"
        )
    return (
        f"the store called its answers to the {', '.join(names)} queries partial or gave a "
        f"warning with them ({MISSING} may be missing)"
    )


def no_thresholds_reason(b: Baseline) -> str | None:
    """Why no threshold is proposed (an answer the store called partial or gave a warning
    with; under ``MIN_HISTORY_S`` of history, or none known), or None when every answer was
    whole and the history is long enough to derive them."""
    had = b.history_seconds
    short = had is None or had < MIN_HISTORY_S
    if not short and not b.told:
        return None
    reasons = [_told_reason(b)] if b.told else []
    asks = ["once every node of the store answers"] if b.told else []
    if short:
        much = "no known history" if had is None else f"{_span(had)} of history"
        reasons.append(
            f"{much} is under the {_span(MIN_HISTORY_S)} minimum (a short span is one moment's "
            "load, not an everyday range)"
        )
        asks.append(f"when Prometheus has scraped vLLM for {window_words(b)}")
    return (
        f"no thresholds: {'; '.join(reasons)}: keep observability's defaults and ask again "
        + " and ".join(asks)
    )


def observability_flags(thresholds: Sequence[Threshold]) -> list[str]:
    """``vllm-ledger observability``'s flags for the thresholds that have a value."""
    out: list[str] = []
    for t in thresholds:
        if t.value is not None:
            out += [t.flag, f"{t.value:g}"]
    return out


def queries(window: str) -> dict[str, str]:
    """The PromQL of each reading over ``window`` (a PromQL duration, e.g. ``259200s``)."""
    by = ", ".join(GROUP)
    return {
        "ttft": f"histogram_quantile({QUANTILE}, sum by ({by}, le) "
        f"(increase({VLLM_TIME_TO_FIRST_TOKEN_SECONDS}_bucket[{window}])))",
        **{
            f"kv:{m}": f"max by ({by}) (quantile_over_time({QUANTILE}, {m}[{window}]))"
            for m in KV_CACHE_USAGE_METRICS
        },
        **{
            f"kv_count:{m}": f"sum by ({by}) (count_over_time({m}[{window}]))"
            for m in KV_CACHE_USAGE_METRICS
        },
        "waiting": (
            f"sum by ({by}) (quantile_over_time({QUANTILE}, {VLLM_NUM_REQUESTS_WAITING}[{window}]))"
        ),
    }


def history_queries(window_s: float) -> tuple[str, str]:
    """The PromQL of the window's first and last sample of ``HISTORY_METRIC``: the earliest
    and latest ``timestamp()`` over a subquery of at most ``HISTORY_POINTS`` steps."""
    window = format_duration(window_s, "range")
    step = f"{max(1, math.ceil(window_s / HISTORY_POINTS))}s"
    ts = f"timestamp({HISTORY_METRIC})[{window}:{step}]"
    return f"min(min_over_time({ts}))", f"max(max_over_time({ts}))"


def _history(
    url: str, window_s: float, end: float, fetch: prom.Fetch
) -> tuple[float | None, float | None, tuple[str, str], prom.Said]:
    """The first and last sample instants of the window (None: no sample), the queries, and
    what the store said of their answers."""
    asked = history_queries(window_s)
    got: list[float | None] = []
    said: list[prom.Said] = []
    for expr in asked:
        series, told = prom.vector_answer(url, expr, end, fetch)
        said.append(told)
        values = [v for _labels, v in series]
        ok = [v for v in values if math.isfinite(v) and end - window_s - 1 <= v <= end + 1]
        got.append(ok[0] if ok else None)
    return got[0], got[1], asked, partial.merged(said)


def _key(labels: dict[str, str]) -> tuple[str, str]:
    return labels.get("instance", ""), labels.get("model_name", "")


def read_baseline(
    url: str,
    window_s: float,
    *,
    at_ts: float | None = None,
    fetch: prom.Fetch = prom.http_get,
    clock: Callable[[], float] = time.time,
) -> Baseline:
    """The three readings per ``(instance, model_name)`` over ``[at - window, at]``, and what
    the store said of each answer."""
    end = clock() if at_ts is None else at_ts
    q = queries(format_duration(window_s, "range"))
    said: dict[str, list[prom.Said]] = {}

    def by_group(name: str, expr: str) -> dict[tuple[str, str], float]:
        series, told = prom.vector_answer(url, expr, end, fetch)
        said.setdefault(name, []).append(told)
        return {_key(labels): v for labels, v in series}

    asked = [q["ttft"]]
    ttft = by_group("ttft_p99_seconds", q["ttft"])
    kv: dict[tuple[str, str], float] = {}
    kv_count: dict[tuple[str, str], float] = {}
    kv_metric = None
    for m in KV_CACHE_USAGE_METRICS:
        asked.append(q[f"kv:{m}"])
        kv = by_group("kv_cache_p99", q[f"kv:{m}"])
        if kv:
            kv_metric = m
            asked.append(q[f"kv_count:{m}"])
            kv_count = by_group("kv_samples", q[f"kv_count:{m}"])
            break
    asked.append(q["waiting"])
    waiting = by_group("waiting_p99", q["waiting"])
    keys = sorted(set(ttft) | set(kv) | set(waiting))
    groups = tuple(
        GroupBaseline(
            instance=k[0],
            model_name=k[1],
            ttft_p99_seconds=ttft.get(k),
            kv_cache_p99=kv.get(k),
            waiting_p99=waiting.get(k),
            kv_samples=round(kv_count.get(k, 0)),
        )
        for k in keys
    )
    first, last, history_asked, history_said = _history(url, window_s, end, fetch)
    said["history"] = [history_said]
    return Baseline(
        url,
        float(window_s),
        end,
        groups,
        kv_metric,
        (*asked, *history_asked),
        first,
        last,
        {name: partial.merged(s) for name, s in said.items()},
    )


__all__ = [
    "ANSWER_NAMES",
    "COVERED_FRACTION",
    "MIN_HISTORY_S",
    "Baseline",
    "GroupBaseline",
    "Threshold",
    "derive",
    "history_queries",
    "history_warning",
    "no_thresholds_reason",
    "observability_flags",
    "queries",
    "read_baseline",
    "told_lines",
    "window_words",
]
