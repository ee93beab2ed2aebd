"""The Report model (plain dataclasses) and how it is built from ledgers, windows and coverage.

The Report is the contract between the ledger and everything else: renderers, the exporter,
the bot status, cost and timeline read it, never the SQLite files. It is a view over a
``LedgerSet`` (the one read); given roots instead, ``build_report`` reads them itself.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from vllm_ledger.errors import BadArgument
from vllm_ledger.figures import FIGURES, Figure, with_figure_fields
from vllm_ledger.format.identity import model_label
from vllm_ledger.read import coverage as cov
from vllm_ledger.read.known import FiguresKnown, counted, figures_known
from vllm_ledger.read.ledgerset import LedgerSet, Source, gc_paused
from vllm_ledger.read.matched import NothingMatched, period_matched
from vllm_ledger.read.open_ledger import describe_never_committed
from vllm_ledger.read.periods import (
    CALENDAR_GRAINS,
    PERIOD_NAMES,
)
from vllm_ledger.read.report_windows import ChosenWindows, time_spec
from vllm_ledger.read.run_coverage import WriterStatus
from vllm_ledger.read.snapshot import LedgerSnapshot, Sums
from vllm_ledger.read.windows import DEFAULT_TZ, WINDOW_NAMES, Window
from vllm_ledger.read.zone import zone_info
from vllm_ledger.timespec import TimeSpec

SCHEMA_VERSION = 1
BREAKDOWN_KEYS = ("instance", "model", "run", "engine")


def parse_by(text: str | None) -> tuple[str | None, str | None]:
    """``--by``'s value as (the calendar step or None, the breakdown key or None): ``day`` ->
    ("day", None), ``model`` -> (None, "model"), ``day,model`` -> ("day", "model")."""
    if text is None:
        return None, None
    parts = [p.strip() for p in text.split(",")]
    grains = [p for p in parts if p in CALENDAR_GRAINS]
    keys = [p for p in parts if p in BREAKDOWN_KEYS]
    if len(grains) + len(keys) != len(parts) or len(grains) > 1 or len(keys) > 1:
        raise BadArgument(
            f"by {text!r}",
            hint=f"give a key ({', '.join(BREAKDOWN_KEYS)}), a step ({', '.join(CALENDAR_GRAINS)})"
            " or one of each, comma-separated",
            argument="by",
            value=text,
            example="day,model",
        )
    return (grains[0] if grains else None), (keys[0] if keys else None)


def report_figures(sums: Sums, figs: Sequence[Figure] = FIGURES) -> dict[str, Any]:
    """The report's figures of some sums, by ``Figure.report_name``: the keyword arguments of a
    ``WindowReport``'s (and an ``ExportRow``'s) figures."""
    return {f.report_name: f.report_value(getattr(sums, f.name)) for f in figs}


@dataclass(frozen=True)
@with_figure_fields("report_name", "int | float")
class WindowReport:
    """One window's figures (a field per ``figures.FIGURES``, named as its ``report_name``; one
    not declared here comes after the others from ``with_figure_fields``). Ratios with a zero
    denominator are None, never 0."""

    name: str
    start_ts: int
    cutoff_ts: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    requests: int
    decode_tokens: int
    decode_seconds: float
    uncovered_seconds: int
    complete: bool
    problems: dict[str, int] = field(default_factory=dict)
    # Seconds declared idle (an instance stopped on purpose): neither covered nor uncovered.
    declared_seconds: int = 0
    # No writer recorded in the window and no unreadable file may hold it: its zeros are
    # "nothing recorded" (a day of ``--by day`` and ``--since/--until`` over it say the same).
    nothing_recorded: bool = False

    @property
    def wall_seconds(self) -> int:
        return max(0, self.cutoff_ts - self.start_ts)

    @property
    def known(self) -> FiguresKnown:
        """``exact``, ``lower_bound`` or ``unknown`` (``figures_known``)."""
        return figures_known(
            self.complete, self.uncovered_seconds, self.wall_seconds, counted(self)
        )

    @property
    def hit_rate(self) -> float | None:
        return self.cached_tokens / self.input_tokens if self.input_tokens else None

    @property
    def avg_speed(self) -> float | None:
        """Output tokens per wall second of the window, idle and uncovered time included."""
        return self.output_tokens / self.wall_seconds if self.wall_seconds else None

    @property
    def gen_speed(self) -> float | None:
        """Decode-time-weighted request speed: sum(max(out-1,0)) / sum(decode seconds)."""
        return self.decode_tokens / self.decode_seconds if self.decode_seconds > 0 else None


@dataclass(frozen=True)
class FileStatus:
    path: str
    status: str
    detail: str


@dataclass(frozen=True)
class BreakdownRow:
    key: str
    windows: tuple[WindowReport, ...]


@dataclass(frozen=True)
class Report:
    schema: int
    generated_ts: float
    at_ts: float
    cutoff_ts: int
    tz: str
    roots: tuple[str, ...]
    windows: tuple[WindowReport, ...]
    writers: tuple[WriterStatus, ...]
    files: tuple[FileStatus, ...]
    runs: int
    breakdown_by: str | None = None
    breakdown: tuple[BreakdownRow, ...] = ()
    # ``day`` or ``month`` (``--by day``): the windows are the period's calendar steps in the
    # zone, named ``2026-11-30`` or ``2026-11``, then a ``total`` row over the whole period.
    calendar: str | None = None
    instance_filter: int | str | None = None
    model_filter: str | None = None
    # Set when the roots hold nothing the report was asked for (``matched.nothing_matched``):
    # every figure is then zero for a reason no figure shows.
    nothing_matched: NothingMatched | None = None

    @property
    def behind_s(self) -> int:
        """How far the cutoff (the live writers' watermark) is behind the query's second."""
        return max(0, math.floor(self.at_ts) - self.cutoff_ts)

    def window(self, name: str) -> WindowReport:
        for w in self.windows:
            if w.name == name:
                return w
        raise KeyError(name)


def resolve_tz(name: str) -> ZoneInfo:
    """The zone of a name, checked as every zone is (``read.zone.zone_info``)."""
    return zone_info(name)


Ledgers = LedgerSet | Sequence[Path]


@contextlib.contextmanager
def as_ledger_set(
    ledgers: Ledgers, clock: Callable[[], float], busy_timeout_s: float
) -> Iterator[LedgerSet]:
    """The LedgerSet given, or one read from the roots given (and closed after)."""
    if isinstance(ledgers, LedgerSet):
        yield ledgers
        return
    with LedgerSet.read(ledgers, clock=clock, busy_timeout_s=busy_timeout_s) as read:
        yield read


def _window_report(
    w: Window, sums: Sums, model: cov.CoverageModel, imprecise: bool
) -> WindowReport:
    uncovered = model.uncovered_seconds(w)
    problems = model.problems(w, imprecise)
    return WindowReport(
        name=w.name,
        start_ts=w.start_ts,
        cutoff_ts=w.cutoff_ts,
        **report_figures(sums),
        uncovered_seconds=uncovered,
        complete=uncovered == 0 and not problems and w.seconds > 0,
        problems=problems,
        declared_seconds=model.declared_seconds(w),
        nothing_recorded=uncovered > 0 and model.nothing_recorded(w),
    )


def _windows_for(
    ledgers: LedgerSet,
    snaps: Sequence[Source],
    windows: Sequence[Window],
    model: cov.CoverageModel,
    engine: int | None = None,
) -> tuple[WindowReport, ...]:
    out = []
    for w in windows:
        total, imprecise = ledgers.total(snaps, w, engine)
        out.append(_window_report(w, total, model, imprecise))
    return tuple(out)


def window_reports(
    ledgers: Ledgers,
    windows: Sequence[Window],
    *,
    at_ts: float | None = None,
    clock: Callable[[], float] = time.time,
    busy_timeout_s: float = 2.0,
    instance: int | str | None = None,
    model: str | None = None,
    strict: bool = False,
) -> tuple[tuple[WindowReport, ...], cov.CoverageModel]:
    """Figures and coverage for arbitrary windows, e.g. a timeline's steps. ``strict``: ignore
    declared stops."""
    with as_ledger_set(ledgers, clock, busy_timeout_s) as ls, gc_paused():
        ls.set_strict(strict)
        at = ls.now_ts if at_ts is None else at_ts
        for _attempt in range(2):  # once more if a file failed while its sums were read
            failures = ls.late_failures
            snaps = ls.sources(instance, model)
            model_ = ls.coverage(snaps, at)
            reports = _windows_for(ls, snaps, windows, model_)
            if ls.late_failures == failures:
                break
        return reports, ls.coverage(ls.sources(instance, model), at)


def _key_of(by: str, s: Source) -> str:
    if by == "instance":
        return s.instance.key
    if by == "model":
        return model_label(s.instance.served_model_names)
    if by == "run":
        return s.run_id
    raise BadArgument(f"unknown breakdown {by!r}: use one of {', '.join(BREAKDOWN_KEYS)}")


def build_report(
    ledgers: Ledgers,
    *,
    at_ts: float | None = None,
    tz: str = DEFAULT_TZ,
    by: str | None = None,
    instance: int | str | None = None,
    model: str | None = None,
    clock: Callable[[], float] = time.time,
    busy_timeout_s: float = 2.0,
    strict: bool = False,
    periods: Sequence[str] = (),
    since: TimeSpec | float | None = None,
    until: TimeSpec | float | None = None,
) -> Report:
    """The five windows with coverage, over a LedgerSet (or the ledgers under some roots).

    ``by``: a breakdown key (``BREAKDOWN_KEYS``), a calendar step (``day``, ``month``: the
    windows become the steps of the one period asked, all recorded time by default, and a
    ``total`` row), or one of each (``day,model``); see ``parse_by``.
    ``strict``: ignore declared stops (the ledger's rule alone: every stop is uncovered).
    ``periods`` (names from ``read.periods.PERIOD_NAMES``) and ``since``/``until`` (a window
    named ``period``: Unix seconds, or a ``timespec.TimeSpec`` resolved in ``tz`` as of the cutoff
    by ``read.periods.period_between``) replace the five windows, in that order."""
    zone = resolve_tz(tz)
    for name in periods:
        if name not in PERIOD_NAMES:
            raise BadArgument(f"unknown window {name!r}: use one of {', '.join(PERIOD_NAMES)}")
    grain, key = parse_by(by)
    if grain is not None and len(periods) + (since is not None) > 1:
        raise BadArgument(
            f"by {by!r} cuts one period into {grain}s",
            hint="give one window, or since and until",
            argument="by",
            value=by,
        )
    chosen = ChosenWindows(tuple(periods), time_spec(since), time_spec(until), grain)
    with as_ledger_set(ledgers, clock, busy_timeout_s) as ls, gc_paused():
        ls.set_strict(strict)
        for _attempt in range(2):  # once more if a file failed while its sums were read
            failures = ls.late_failures
            report = _build(ls, zone, tz, key, instance, model, at_ts, chosen)
            if ls.late_failures == failures:
                break
        return report


def _build(
    ls: LedgerSet,
    zone: ZoneInfo,
    tz: str,
    by: str | None,
    instance: int | str | None,
    model: str | None,
    at_ts: float | None,
    chosen: ChosenWindows | None = None,
) -> Report:
    at = ls.now_ts if at_ts is None else at_ts
    snaps = ls.sources(instance, model)
    model_ = ls.coverage(snaps, at)
    # A live report ends at the watermark: the last instant every alive writer has proven.
    cutoff = model_.cutoff_at(at)
    chosen = chosen or ChosenWindows()
    five = chosen.windows(cutoff, zone, model_.first_record_ts)
    since_ts, until_ts = chosen.between(cutoff, zone)
    windows = _windows_for(ls, snaps, five, model_)
    breakdown: list[BreakdownRow] = []
    if by == "engine":
        engines = sorted({e for s in snaps if s.ok for w in five for e in ls.sums(s, w)})
        for e in engines:
            breakdown.append(BreakdownRow(str(e), _windows_for(ls, snaps, five, model_, engine=e)))
    elif by is not None:
        groups: dict[str, list[Source]] = {}
        for s in snaps:
            if s.ok:
                groups.setdefault(_key_of(by, s), []).append(s)
        for key in sorted(groups):
            # A group's coverage is its own (an instance vouches for itself); computed from the
            # same read, no file is opened again.
            group_model = ls.coverage(groups[key], at)
            group_five = chosen.windows(cutoff, zone, group_model.first_record_ts)
            breakdown.append(
                BreakdownRow(key, _windows_for(ls, groups[key], group_five, group_model))
            )
    return Report(
        schema=SCHEMA_VERSION,
        generated_ts=ls.now_ts,
        at_ts=at,
        cutoff_ts=cutoff,
        tz=tz,
        roots=tuple(str(r) for r in ls.roots),
        windows=windows,
        writers=tuple(model_.writers),
        files=(
            *(
                FileStatus(
                    str(s.path),
                    s.status,
                    describe_never_committed(s, zone)
                    if s.status == "never_committed"
                    else s.detail,
                )
                for s in snaps
                if isinstance(s, LedgerSnapshot) and not s.ok
            ),
            *(FileStatus(str(p), "bad_values", d) for p, d in ls.declaration_errors),
        ),
        runs=len({s.run_id for s in snaps if s.ok}),
        breakdown_by=by,
        breakdown=tuple(breakdown),
        calendar=chosen.grain,
        instance_filter=instance,
        model_filter=model,
        nothing_matched=period_matched(
            ls,
            cutoff,
            instance=instance,
            model=model,
            since_ts=since_ts,
            until_ts=until_ts,
            at_ts=at,
        ),
    )


__all__ = [
    "WINDOW_NAMES",
    "BreakdownRow",
    "FileStatus",
    "NothingMatched",
    "Report",
    "WindowReport",
    "WriterStatus",
    "build_report",
    "parse_by",
    "window_reports",
]
