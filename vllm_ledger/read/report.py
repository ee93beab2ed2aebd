"""The Report model (plain dataclasses) and how it is built from ledgers, windows and coverage.

The Report is the contract between the ledger and everything else: renderers, the exporter,
the bot status, cost and timeline read it, never the SQLite files.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from vllm_ledger.errors import BadArgument
from vllm_ledger.read import coverage as cov
from vllm_ledger.read.snapshot import LedgerSnapshot, Sums, read_all
from vllm_ledger.read.windows import DEFAULT_TZ, WINDOW_NAMES, Window, windows_at

SCHEMA_VERSION = 1
BREAKDOWN_KEYS = ("instance", "model", "run", "engine")


@dataclass(frozen=True)
class WindowReport:
    """One window's figures. Ratios with a zero denominator are None, never 0."""

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

    @property
    def wall_seconds(self) -> int:
        return max(0, self.cutoff_ts - self.start_ts)

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
class WriterStatus:
    run_id: str
    writer_rank: int
    expected_writers: int
    instance: str
    state: str  # alive | closed | stale | crashed | missing
    first_ts: float | None
    last_ts: float | None


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
    instance_filter: int | None = None
    model_filter: str | None = None

    def window(self, name: str) -> WindowReport:
        for w in self.windows:
            if w.name == name:
                return w
        raise KeyError(name)


def resolve_tz(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise BadArgument(
            f"unknown time zone {name!r}: use an IANA name such as Asia/Shanghai"
        ) from exc


def _window_report(
    w: Window, sums: Sums, model: cov.CoverageModel, imprecise: bool
) -> WindowReport:
    uncovered = model.uncovered_seconds(w)
    problems = model.problems(w, imprecise)
    return WindowReport(
        name=w.name,
        start_ts=w.start_ts,
        cutoff_ts=w.cutoff_ts,
        input_tokens=sums.prompt_tokens,
        output_tokens=sums.generation_tokens,
        cached_tokens=sums.cached_tokens,
        requests=sums.requests,
        decode_tokens=sums.decode_tokens,
        decode_seconds=sums.decode_seconds_micro / 1e6,
        uncovered_seconds=uncovered,
        complete=uncovered == 0 and not problems and w.seconds > 0,
        problems=problems,
    )


def _windows_for(
    snaps: Sequence[LedgerSnapshot],
    windows: Sequence[Window],
    model: cov.CoverageModel,
    engine: int | None = None,
) -> tuple[WindowReport, ...]:
    out = []
    for w in windows:
        total = Sums()
        imprecise = False
        for s in snaps:
            if not s.ok:
                continue
            for eng, sums in s.sums.get(w.name, {}).items():
                if engine is None or eng == engine:
                    total.add(sums)
            imprecise = imprecise or w.name in s.imprecise_windows
        out.append(_window_report(w, total, model, imprecise))
    return tuple(out)


def _five(at: float, zone: ZoneInfo, model: cov.CoverageModel) -> list[Window]:
    return windows_at(at, zone, model.first_record_ts)


def _filtered(
    snaps: list[LedgerSnapshot], instance: int | None, model: str | None
) -> list[LedgerSnapshot]:
    """Keep one instance (port) or model; files that cannot be read stay (unknown owner)."""
    if instance is not None:
        snaps = [s for s in snaps if not s.ok or s.instance.port == instance]
    if model is not None:
        snaps = [s for s in snaps if not s.ok or model in s.instance.served_model_names]
    return snaps


def window_reports(
    roots: Sequence[Path],
    windows: Sequence[Window],
    *,
    at_ts: float | None = None,
    clock: Callable[[], float] = time.time,
    busy_timeout_s: float = 2.0,
    instance: int | None = None,
    model: str | None = None,
) -> tuple[tuple[WindowReport, ...], cov.CoverageModel]:
    """Figures and coverage for arbitrary windows (distinct names), e.g. a timeline's steps."""
    now = clock()
    at = now if at_ts is None else at_ts
    snaps = _filtered(read_all(roots, windows, busy_timeout_s, now_ts=now), instance, model)
    model_ = cov.build(snaps, at)
    return _windows_for(snaps, windows, model_), model_


def _key_of(by: str, s: LedgerSnapshot) -> str:
    if by == "instance":
        return s.instance.key
    if by == "model":
        return ",".join(s.instance.served_model_names) or "?"
    if by == "run":
        return s.run_id
    raise BadArgument(f"unknown breakdown {by!r}: use one of {', '.join(BREAKDOWN_KEYS)}")


def build_report(
    roots: Sequence[Path],
    *,
    at_ts: float | None = None,
    tz: str = DEFAULT_TZ,
    by: str | None = None,
    instance: int | None = None,
    model: str | None = None,
    clock: Callable[[], float] = time.time,
    busy_timeout_s: float = 2.0,
) -> Report:
    """Sum every ledger under ``roots`` into the five windows, with coverage."""
    zone = resolve_tz(tz)
    now = clock()
    at = now if at_ts is None else at_ts
    if by is not None and by not in BREAKDOWN_KEYS:
        raise BadArgument(f"unknown breakdown {by!r}: use one of {', '.join(BREAKDOWN_KEYS)}")
    # The edges of every window but `total` are known now; `total` reads everything
    # before the cutoff, and its start is set from the first record once read.
    edges = [
        w if w.name != "total" else Window("total", 0, w.cutoff_ts)
        for w in windows_at(at, zone, None)
    ]
    snaps = _filtered(read_all(roots, edges, busy_timeout_s, now_ts=now), instance, model)
    model_ = cov.build(snaps, at)
    five = _five(at, zone, model_)
    windows = _windows_for(snaps, five, model_)
    breakdown: list[BreakdownRow] = []
    if by == "engine":
        engines = sorted({e for s in snaps if s.ok for per in s.sums.values() for e in per})
        for e in engines:
            breakdown.append(BreakdownRow(str(e), _windows_for(snaps, five, model_, engine=e)))
    elif by is not None:
        groups: dict[str, list[LedgerSnapshot]] = {}
        for s in snaps:
            if s.ok:
                groups.setdefault(_key_of(by, s), []).append(s)
        for key in sorted(groups):
            group_model = cov.build(groups[key], at)
            breakdown.append(
                BreakdownRow(
                    key, _windows_for(groups[key], _five(at, zone, group_model), group_model)
                )
            )
    return Report(
        schema=SCHEMA_VERSION,
        generated_ts=now,
        at_ts=at,
        cutoff_ts=int(at // 1),
        tz=tz,
        roots=tuple(str(r) for r in roots),
        windows=windows,
        writers=tuple(
            WriterStatus(
                w.run_id,
                w.writer_rank,
                w.expected_writers,
                w.instance_key,
                w.state,
                w.first_ts,
                w.last_ts,
            )
            for w in model_.writers
        ),
        files=tuple(FileStatus(str(s.path), s.status, s.detail) for s in snaps if not s.ok),
        runs=len({s.run_id for s in snaps if s.ok}),
        breakdown_by=by,
        breakdown=tuple(breakdown),
        instance_filter=instance,
        model_filter=model,
    )


__all__ = [
    "WINDOW_NAMES",
    "BreakdownRow",
    "FileStatus",
    "Report",
    "WindowReport",
    "WriterStatus",
    "build_report",
    "window_reports",
]
