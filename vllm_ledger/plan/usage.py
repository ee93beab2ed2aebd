"""What the cost model needs, measured: tokens, busy seconds and average power over a window.

Tokens come from the Report (``build_report``), never from the ledger files. Busy seconds
are the wall seconds of the window in which the ledger recorded at least one output token
(any instance, any engine, under the roots: the roots are taken to be one machine). They are
found by narrowing: whole hours first, then the minutes of busy hours, then the seconds of
busy minutes; when a window has more busy minutes than ``max_second_windows / 60`` the last
step is skipped and busy minutes count whole (an upper bound, said in ``busy_resolution_s``).

Where per-second rows were compacted into hours (older than the compaction horizon, so only
a ``total`` window or a past ``--at`` reaches them), a busy hour counts whole: an upper bound,
said in ``busy_resolution_s``.

Average power is a given wattage or ``avg_over_time`` of DCGM's ``DCGM_FI_DEV_POWER_USAGE``
(falling back to the ledger exporter's ``vllm_ledger_gpu_power_watts``) over the window,
summed over GPUs. An answer the store called partial or gave a warning with
(``plan/partial.py``) may lack a GPU's series: the power read from it is not complete
(``Measured.power_told`` names those answers), nor is any cost that rests on it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vllm_ledger.errors import BadArgument, RemoteError
from vllm_ledger.names import GPU_POWER_METRICS
from vllm_ledger.plan import partial, prom
from vllm_ledger.plan.cost import Usage
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.report import (
    Ledgers,
    Report,
    WindowReport,
    as_ledger_set,
    build_report,
    window_reports,
)
from vllm_ledger.read.windows import DEFAULT_TZ, Window
from vllm_ledger.units import format_duration

MAX_SECOND_WINDOWS = 20_000
PARTIAL_DOC = "docs/cost-and-capacity.md#a-partial-answer"
POWER_MISSING = "a GPU's power series"  # what a partial answer of the power may lack


@dataclass(frozen=True)
class Measured:
    usage: Usage
    window: WindowReport
    power_source: str  # "given" or the PromQL expression that answered
    busy_resolution_s: int  # 1 when busy seconds are exact to the second
    # what the store said of each power query asked, by its expression ({} when given)
    said: Mapping[str, prom.Said] = field(default_factory=dict)

    @property
    def power_told(self) -> dict[str, prom.Said]:
        """The power's answers the store called partial or gave a warning with: when any, the
        power is not a complete figure."""
        return partial.told(self.said)


def _pieces(spans: Sequence[tuple[int, int]], size: int) -> list[Window]:
    """Split spans into pieces aligned to ``size`` seconds (edges clipped)."""
    out: list[Window] = []
    for start, end in spans:
        a = start
        while a < end:
            b = min(end, (a // size + 1) * size)
            out.append(Window(f"b{a}-{b}", a, b))
            a = b
    return out


def busy_seconds(
    ledgers: Ledgers,
    start_ts: int,
    cutoff_ts: int,
    *,
    at_ts: float,
    max_second_windows: int = MAX_SECOND_WINDOWS,
) -> tuple[int, int]:
    """(seconds in [start, cutoff) with output > 0, resolution in seconds).

    A piece the ledger can no longer split (its seconds were compacted into hours) counts
    whole, as does every busy minute when there are too many to read second by second; the
    resolution then says how coarse the count is (an upper bound).
    """
    with as_ledger_set(ledgers, lambda: at_ts, 2.0) as ls:  # read once, for every piece
        spans = [(start_ts, cutoff_ts)] if cutoff_ts > start_ts else []
        whole = 0
        resolution = 1
        parent = 3600
        for size in (3600, 60, 1):
            pieces = _pieces(spans, size)
            if size == 1 and len(pieces) > max_second_windows:
                return whole + sum(b - a for a, b in spans), max(resolution, 60)
            if not pieces:
                break
            reports, _model = window_reports(ls, pieces, at_ts=at_ts)
            spans = []
            for w in reports:
                if "imprecise_edge" in w.problems:
                    whole += w.cutoff_ts - w.start_ts
                    resolution = max(resolution, parent)
                elif w.output_tokens > 0:
                    spans.append((w.start_ts, w.cutoff_ts))
            parent = size
        return whole + sum(b - a for a, b in spans), resolution


def prometheus_power(
    url: str, start_ts: int, cutoff_ts: int, fetch: prom.Fetch = prom.http_get
) -> tuple[float, str, dict[str, prom.Said]]:
    """Average power in watts over [start, cutoff), summed over GPUs, the query used, and what
    the store said of each query asked (by its expression)."""
    rng = format_duration(cutoff_ts - start_ts, "range")
    exprs = [f"sum(avg_over_time({m}[{rng}]))" for m in GPU_POWER_METRICS]
    got, said = prom.first_answer(url, exprs, at_ts=cutoff_ts, fetch=fetch)
    if got is None:
        told = partial.told_lines(partial.told(said), POWER_MISSING, PARTIAL_DOC)
        raise RemoteError(
            f"Prometheus at {url} has no {' or '.join(GPU_POWER_METRICS)} samples in the window: "
            "scrape the DCGM exporter or `vllm-ledger exporter`, or give power_watts"
            + "".join(f"; {line}" for line in told),
            url,
        )
    return got[0], got[1], said


def _window(report: Report, name: str) -> WindowReport:
    try:
        return report.window(name)
    except KeyError as exc:
        names = ", ".join(x.name for x in report.windows)
        raise BadArgument(f"unknown window {name!r}: use one of {names}") from exc


def measure(
    roots: Sequence[Path],
    window: str,
    *,
    power_watts: float | None = None,
    prometheus_url: str | None = None,
    at_ts: float | None = None,
    tz: str = DEFAULT_TZ,
    clock: Callable[[], float] = time.time,
    fetch: prom.Fetch = prom.http_get,
) -> Measured:
    """Tokens, busy seconds and average power for one window (a name of ``PERIOD_NAMES``)."""
    now = clock()
    at = now if at_ts is None else at_ts
    with LedgerSet.read(roots, clock=lambda: now) as ledgers:  # one read for both figures
        report = build_report(ledgers, at_ts=at, tz=tz, periods=(window,))
        w = _window(report, window)
        busy, resolution = busy_seconds(ledgers, w.start_ts, w.cutoff_ts, at_ts=at)
    said: dict[str, prom.Said] = {}
    if power_watts is not None:
        watts, source = power_watts, "given"
    elif prometheus_url is not None:
        watts, source, said = prometheus_power(prometheus_url, w.start_ts, w.cutoff_ts, fetch)
    else:
        raise BadArgument(
            "give the machine's power: power_watts or prometheus_url", argument="power_watts"
        )
    usage = Usage(
        wall_seconds=w.wall_seconds,
        busy_seconds=busy,
        input_tokens=w.input_tokens,
        output_tokens=w.output_tokens,
        cached_tokens=w.cached_tokens,
        power_watts=watts,
        uncovered_seconds=w.uncovered_seconds,
    )
    return Measured(usage, w, source, resolution, said)


__all__ = [
    "PARTIAL_DOC",
    "POWER_MISSING",
    "Measured",
    "busy_seconds",
    "measure",
    "prometheus_power",
]
