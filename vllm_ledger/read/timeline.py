"""A window cut into steps (hours by default), and the uncovered spans in it with their causes.

Every step is a window of its own, answered by ``report.window_reports`` from one LedgerSet,
so a step has the same figures and coverage as a report window: input, output, cached, hit
rate, average speed and uncovered seconds. The steps tile the window exactly (the first and
last may be partial):
their sums equal the window's sums and their uncovered seconds add up to the window's.

Step edges fall where the local clock (the zone's UTC offset at the cutoff) reads a whole
multiple of the step, so 1 h steps start on the hour and 1 d steps at midnight. A calendar
step (``hour``, ``day``, ``month``: ``timeline --by day``) cuts the window where the zone's
clock starts one instead (``read.periods.steps``): the rows of ``report --by day`` and
``export --by day`` over the same window, a day across a DST change 23 or 25 hours long.

The uncovered spans say *why* a stretch is not vouched for, in this order of precedence:
a second with dropped, rejected or lost events; a writer that did not close cleanly; a writer
whose heartbeat stopped; a writer that never came up; otherwise nothing was recording (vLLM or
the plugin was off, or an instance had stopped).
"""

from __future__ import annotations

import bisect
import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from vllm_ledger.errors import BadArgument, TooManySteps
from vllm_ledger.read import coverage as cov
from vllm_ledger.read import intervals as iv
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.periods import GRAINS, PERIOD_NAMES, period, steps
from vllm_ledger.read.report import (
    Ledgers,
    WindowReport,
    _key_of,
    _windows_for,
    as_ledger_set,
    resolve_tz,
    window_reports,
)
from vllm_ledger.read.run_coverage import TAIL_S, WriterStatus
from vllm_ledger.read.snapshot import LedgerSnapshot
from vllm_ledger.read.windows import DEFAULT_TZ, Window, cutoff_for
from vllm_ledger.units import ago, whole_duration

MAX_STEPS = 5000
TIMELINE_BREAKDOWN_KEYS = ("instance", "model", "run")
MAX_ROW_STEPS = 50_000  # --by: keys x steps
DEFAULT_WINDOW = "7d"
DEFAULT_STEP = "1h"

# Causes of an uncovered span, in order of precedence (the first that applies wins).
CAUSES: tuple[str, ...] = (
    "write_failed",
    "queue_overflow",
    "rejected_input",
    "unclean_exit",
    "heartbeat_stale",
    "writer_missing",
    "not_recording",
)
CAUSE_TEXT = {
    "write_failed": "events lost in a failed write",
    "queue_overflow": "events dropped by a full queue",
    "rejected_input": "input the plugin could not read",
    "unclean_exit": "a writer exited without closing",
    "heartbeat_stale": "a writer's heartbeat stopped",
    "writer_missing": "an expected writer never came up",
    "not_recording": "nothing recording (vLLM or the plugin off)",
}


@dataclass(frozen=True)
class UncoveredSpan:
    start_ts: int
    end_ts: int
    cause: str

    @property
    def seconds(self) -> int:
        return self.end_ts - self.start_ts


@dataclass(frozen=True)
class TimelineRow:
    """One key's share of a timeline (``--by``): the same steps, its own figures and coverage
    (as a ``report --by`` row: an instance vouches for itself)."""

    key: str
    window: WindowReport
    steps: tuple[WindowReport, ...]
    uncovered: tuple[UncoveredSpan, ...]


@dataclass(frozen=True)
class Timeline:
    at_ts: float
    cutoff_ts: int
    tz: str
    step_seconds: int | None  # None with a calendar step: its steps differ in length
    window: WindowReport
    steps: tuple[WindowReport, ...]
    uncovered: tuple[UncoveredSpan, ...]
    writers: tuple[WriterStatus, ...] = ()
    breakdown_by: str | None = None
    breakdown: tuple[TimelineRow, ...] = ()
    instance_filter: int | str | None = None
    model_filter: str | None = None
    calendar: str | None = None  # hour, day or month: steps where the zone's clock starts one


def parse_by(text: str | None) -> tuple[str | None, str | None]:
    """``--by``'s value as (the calendar step or None, the key or None): ``day`` -> ("day",
    None), ``model`` -> (None, "model"), ``day,model`` -> both; the words of ``report --by``."""
    if text is None:
        return None, None
    parts = [p.strip() for p in text.split(",")]
    grains = [p for p in parts if p in GRAINS]
    keys = [p for p in parts if p in TIMELINE_BREAKDOWN_KEYS]
    if len(grains) + len(keys) != len(parts) or len(grains) > 1 or len(keys) > 1:
        raise BadArgument(
            f"by {text!r}",
            hint=f"give a step ({', '.join(GRAINS)}), a key "
            f"({', '.join(TIMELINE_BREAKDOWN_KEYS)}) or one of each, comma-separated",
            argument="by",
            value=text,
            example="day,model",
        )
    return (grains[0] if grains else None), (keys[0] if keys else None)


def step_edges(
    start_ts: int, cutoff_ts: int, step_seconds: int, utc_offset_seconds: int
) -> list[int]:
    """``start, e1, ..., cutoff``: interior edges where local time is a multiple of the step."""
    if cutoff_ts <= start_ts:
        return [start_ts]
    first = (start_ts + utc_offset_seconds) // step_seconds * step_seconds - utc_offset_seconds
    if first <= start_ts:
        first += step_seconds
    edges = [start_ts, *range(first, cutoff_ts, step_seconds), cutoff_ts]
    return edges


def step_windows(edges: Sequence[int]) -> list[Window]:
    return [Window(f"step@{a}", a, b) for a, b in itertools.pairwise(edges)]


def window_bounds(spec: str, at_ts: float, tz: str, first_record_ts: int | None) -> tuple[int, int]:
    """``[start, end)`` of a window as every command names it (``read.periods.PERIOD_NAMES``:
    today, yesterday, this-month, ... total) or of a duration ending at the cutoff (refused
    when it reaches back before 2000, ``units.ago``)."""
    cutoff = cutoff_for(at_ts)
    if spec in PERIOD_NAMES:
        w = period(spec, cutoff, resolve_tz(tz), first_record_ts)
        return w.start_ts, w.cutoff_ts
    start = ago(cutoff, whole_duration(spec, argument="window"), text=spec, argument="window")
    return int(start), cutoff


def build_timeline(
    ledgers: Ledgers,
    *,
    window: str = DEFAULT_WINDOW,
    step: str = DEFAULT_STEP,
    at_ts: float | None = None,
    tz: str = DEFAULT_TZ,
    clock: Callable[[], float] = time.time,
    instance: int | str | None = None,
    model: str | None = None,
    by: str | None = None,
) -> Timeline:
    """The window ``window`` ending at the report cutoff, cut into ``step`` steps (a duration,
    or ``hour``, ``day``, ``month``: the zone's calendar steps).

        A view over a LedgerSet (or the ledgers under some roots): ``total`` takes its start from
        the same read's coverage, so no file is read twice. ``instance`` and ``model`` select as
        ``LedgerSet.select`` does; ``by`` (instance, model or run) adds one row per key, over the
        same steps, each with its own coverage as a ``report --by`` row has.
    """
    zone = resolve_tz(tz)
    if by is not None and by not in TIMELINE_BREAKDOWN_KEYS:
        raise BadArgument(
            f"unknown breakdown {by!r}: use one of {', '.join(TIMELINE_BREAKDOWN_KEYS)}"
        )
    grain = step if step in GRAINS else None
    step_seconds = None if grain is not None else whole_duration(step, argument="step")
    with as_ledger_set(ledgers, clock, 2.0) as ls:
        at = ls.now_ts if at_ts is None else at_ts
        model_at = ls.coverage(ls.select(instance, model), at)
        # Ends where the report does: at the live writers' watermark (the query's second when
        # no writer is alive).
        start, cutoff = window_bounds(window, model_at.cutoff_at(at), tz, model_at.first_record_ts)
        if step_seconds is None:
            cuts = _calendar_steps(start, cutoff, step, window, zone)
        else:
            cuts = _fixed_steps(start, cutoff, step_seconds, window, step, zone)
        whole = Window(window, start, cutoff)
        reports, cover_model = window_reports(
            ls, [whole, *cuts], at_ts=at, instance=instance, model=model
        )
        rows = () if by is None else _rows(ls, by, [whole, *cuts], at, instance, model)
    return Timeline(
        at_ts=at,
        cutoff_ts=cutoff,
        tz=tz,
        step_seconds=step_seconds,
        window=reports[0],
        steps=tuple(reports[1:]),
        uncovered=tuple(uncovered_spans(cover_model, start, cutoff)),
        writers=tuple(cover_model.writers),
        breakdown_by=by,
        breakdown=rows,
        instance_filter=instance,
        model_filter=model,
        calendar=grain,
    )


def _fixed_steps(
    start: int, cutoff: int, step_seconds: int, window: str, step: str, zone: ZoneInfo
) -> list[Window]:
    """``[start, cutoff)`` in steps of ``step_seconds`` on the local clock (``step_edges``),
    refused past ``MAX_STEPS``."""
    offset = datetime.fromtimestamp(cutoff, zone).utcoffset()
    offset_s = int(offset.total_seconds()) if offset is not None else 0
    # Counted before the edges are made: `total` at --step 1s on a ledger years old would
    # otherwise build 10^8 edges first.
    least = (cutoff - start) // step_seconds  # a window holds at least this many steps
    if least > MAX_STEPS:
        raise TooManySteps(least, MAX_STEPS, window=window, step=step, at_least=True)
    edges = step_edges(start, cutoff, step_seconds, offset_s)
    if len(edges) - 1 > MAX_STEPS:
        raise TooManySteps(len(edges) - 1, MAX_STEPS, window=window, step=step)
    return step_windows(edges)


def _calendar_steps(
    start: int, cutoff: int, grain: str, window: str, zone: ZoneInfo
) -> list[Window]:
    """``[start, cutoff)`` cut where the zone's clock starts an hour, a day or a month, as
    ``report --by day`` cuts a period; refused past ``MAX_STEPS``."""
    cuts: list[Window] = []
    for w in steps(start, cutoff, grain, zone):
        cuts.append(Window(f"step@{w.start_ts}", w.start_ts, w.cutoff_ts))
        if len(cuts) > MAX_STEPS:
            raise TooManySteps(len(cuts), MAX_STEPS, window=window, step=grain, at_least=True)
    return cuts


def _rows(
    ls: LedgerSet,
    by: str,
    windows: Sequence[Window],
    at: float,
    instance: int | str | None,
    model: str | None,
) -> tuple[TimelineRow, ...]:
    """One row per key of the selection, grouped as ``report --by`` groups (readable files)."""
    groups: dict[str, list[LedgerSnapshot]] = {}
    for s in ls.select(instance, model):
        if s.ok:
            groups.setdefault(_key_of(by, s), []).append(s)
    whole = windows[0]
    if len(groups) * (len(windows) - 1) > MAX_ROW_STEPS:
        raise TooManySteps(
            len(windows) - 1, MAX_ROW_STEPS, window=whole.name, by=by, rows=len(groups)
        )
    out = []
    for key in sorted(groups):
        for _attempt in range(2):  # once more if a file failed while its sums were read
            failures = ls.late_failures
            group_model = ls.coverage(groups[key], at)
            reports = _windows_for(ls, groups[key], windows, group_model)
            if ls.late_failures == failures:
                break
        spans = uncovered_spans(group_model, whole.start_ts, whole.cutoff_ts)
        out.append(TimelineRow(key, reports[0], reports[1:], tuple(spans)))
    return tuple(out)


# ---- uncovered spans and their causes (pure) ------------------------------------------------


def _cause_intervals(model: cov.CoverageModel, cutoff_ts: int) -> dict[str, list[iv.Interval]]:
    out: dict[str, list[iv.Interval]] = {c: [] for c in CAUSES}
    for ts, dropped, rejected, lost in model.problem_seconds:
        cause = "write_failed" if lost else "queue_overflow" if dropped else "rejected_input"
        if lost or dropped or rejected:
            out[cause].append((float(ts), float(ts + 1)))
    runs: dict[str, list[WriterStatus]] = {}
    for wr in model.writers:
        runs.setdefault(wr.run_id, []).append(wr)
    for wr in model.writers:
        if wr.state == "crashed" and wr.last_ts is not None:
            lost_from = wr.last_ts - TAIL_S  # its last second is not vouched for
            nxt = next((s for s, _ in model.covered if s >= wr.last_ts), float(cutoff_ts))
            out["unclean_exit"].append((lost_from, nxt))
        elif wr.state == "stale" and wr.last_ts is not None:
            out["heartbeat_stale"].append((wr.last_ts - TAIL_S, float(cutoff_ts)))
        elif wr.state == "missing" and wr.first_ts is not None:
            siblings = [w for w in runs[wr.run_id] if w.state != "missing"]
            running = any(w.state in ("alive", "stale") for w in siblings)
            lasts = [w.last_ts for w in siblings if w.last_ts is not None]
            end = float(cutoff_ts) if running or not lasts else max(lasts)
            out["writer_missing"].append((wr.first_ts, end))
    return {c: iv.normalize(v) for c, v in out.items()}


def _contains(intervals: Sequence[iv.Interval], starts: Sequence[float], x: float) -> bool:
    i = bisect.bisect_right(starts, x) - 1
    return i >= 0 and intervals[i][0] <= x < intervals[i][1]


def uncovered_spans(model: cov.CoverageModel, start_ts: int, cutoff_ts: int) -> list[UncoveredSpan]:
    """The stretches of ``[start_ts, cutoff_ts)`` no writer vouches for, each with its cause.

    The spans' seconds add up to the window's uncovered seconds (whole seconds throughout).
    """
    if cutoff_ts <= start_ts:
        return []
    gaps = iv.subtract([(float(start_ts), float(cutoff_ts))], iv.normalize(model.covered))
    causes = _cause_intervals(model, cutoff_ts)
    starts = {c: [s for s, _ in v] for c, v in causes.items()}
    out: list[UncoveredSpan] = []
    for g0, g1 in gaps:
        cuts = {g0, g1}
        for v in causes.values():
            for s, e in iv.clip(v, g0, g1):
                cuts.update((s, e))
        points = sorted(cuts)
        for a, b in itertools.pairwise(points):
            mid = (a + b) / 2
            cause = next(
                (c for c in CAUSES[:-1] if _contains(causes[c], starts[c], mid)), "not_recording"
            )
            lo, hi = math.floor(a), math.ceil(b)
            if out and out[-1].cause == cause and out[-1].end_ts >= lo:
                out[-1] = UncoveredSpan(out[-1].start_ts, max(out[-1].end_ts, hi), cause)
            elif out and out[-1].end_ts > lo:
                # A cause edge inside a second: the second goes to the earlier span.
                if hi > out[-1].end_ts:
                    out.append(UncoveredSpan(out[-1].end_ts, hi, cause))
            else:
                out.append(UncoveredSpan(lo, hi, cause))
    return out


__all__ = [
    "CAUSES",
    "CAUSE_TEXT",
    "TIMELINE_BREAKDOWN_KEYS",
    "Timeline",
    "TimelineRow",
    "UncoveredSpan",
    "build_timeline",
    "parse_by",
    "step_edges",
    "uncovered_spans",
]
