"""Whose tokens in the report: ``report --by key|adapter|user|tenant`` (alone, or with a
calendar step: ``day,key``, ``month,user``).

A ``WhoseReport`` is the plain ``Report`` of the same windows (the five, ``--window``,
``--since/--until``, or a period's days or months and its total) and, for each of them, its
``WhoseWindow`` (``read/whose.py``): the rows by the key asked, most input first, and one row of
what is not attributed, with its reasons apart, adding up to the window's own figures exactly.
The figures and the credits come from the same read (one ``LedgerSet``) and the same sources
(``--instance``, ``--model``); a file that fails while its credits are read is dropped from
both, and the whole is made again, as ``build_report`` does for its sums.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from typing import TypeVar

from vllm_ledger.errors import BadArgument
from vllm_ledger.read.attribution import FileCredits
from vllm_ledger.read.ledgerset import LedgerSet, Source, gc_paused
from vllm_ledger.read.periods import CALENDAR_GRAINS
from vllm_ledger.read.report import (
    BREAKDOWN_KEYS,
    Ledgers,
    Report,
    as_ledger_set,
    build_report,
)
from vllm_ledger.read.snapshot import LedgerSnapshot
from vllm_ledger.read.whose import BY_KEYS, By, WhoseWindow, whose
from vllm_ledger.read.windows import DEFAULT_TZ, Window
from vllm_ledger.timespec import TimeSpec

WHOSE_KEYS: tuple[By, ...] = BY_KEYS
S = TypeVar("S", bound=Source)
REPORT_BY_KEYS: tuple[str, ...] = (*BREAKDOWN_KEYS, *WHOSE_KEYS)


@dataclass(frozen=True)
class WhoseReport(Report):
    """A report whose windows are also cut by key, adapter, user or tenant: ``whose`` holds one
    ``WhoseWindow`` per window of ``windows``, in the same order and with the same names."""

    whose_by: By = "key"
    whose: tuple[WhoseWindow, ...] = ()


@dataclass(frozen=True)
class ReportBy:
    """``--by``'s value, read: a calendar step, a breakdown key (``instance``, ``model``,
    ``run``, ``engine``) or a whose key (``key``, ``adapter``, ``user``, ``tenant``); at most
    one step and one key."""

    grain: str | None = None
    breakdown: str | None = None
    whose: By | None = None

    @property
    def plain(self) -> str | None:
        """What ``build_report`` takes: the step and the breakdown key, as ``--by`` spells them."""
        parts = [p for p in (self.grain, self.breakdown) if p is not None]
        return ",".join(parts) if parts else None


def parse_by(text: str | None) -> ReportBy:
    """``--by``'s value: ``day`` -> step day; ``model`` -> breakdown model; ``key`` -> whose
    key; ``day,key`` -> both."""
    if text is None:
        return ReportBy()
    parts = [p.strip() for p in text.split(",")]
    grains = [p for p in parts if p in CALENDAR_GRAINS]
    keys = [p for p in parts if p in REPORT_BY_KEYS]
    if len(grains) + len(keys) != len(parts) or len(grains) > 1 or len(keys) > 1:
        raise BadArgument(
            f"by {text!r}",
            hint=f"give a key ({', '.join(REPORT_BY_KEYS)}), a step"
            f" ({', '.join(CALENDAR_GRAINS)}) or one of each, comma-separated",
            argument="by",
            value=text,
            example="day,model",
        )
    grain = grains[0] if grains else None
    key = keys[0] if keys else None
    for k in WHOSE_KEYS:
        if key == k:
            return ReportBy(grain=grain, whose=k)
    return ReportBy(grain=grain, breakdown=key)


def report_by(
    ledgers: Ledgers,
    *,
    by: str | None = None,
    at_ts: float | None = None,
    tz: str = DEFAULT_TZ,
    instance: int | str | None = None,
    model: str | None = None,
    clock: Callable[[], float] = time.time,
    busy_timeout_s: float = 2.0,
    strict: bool = False,
    periods: Sequence[str] = (),
    since: TimeSpec | float | None = None,
    until: TimeSpec | float | None = None,
    top: int = 0,
) -> Report:
    """The report ``--by`` asks for: ``build_report``'s for no key or a breakdown key, else a
    ``WhoseReport`` (the same arguments as ``build_report``; ``top``: rows made per window,
    0 for all)."""
    chosen = parse_by(by)
    with as_ledger_set(ledgers, clock, busy_timeout_s) as ls, gc_paused():

        def plain() -> Report:
            return build_report(
                ls,
                at_ts=at_ts,
                tz=tz,
                by=chosen.plain,
                instance=instance,
                model=model,
                strict=strict,
                periods=periods,
                since=since,
                until=until,
            )

        if chosen.whose is None:
            return plain()
        for _attempt in range(2):  # once more if a file failed while its credits were read
            failures = ls.late_failures
            report = plain()
            rows = whose_windows(ls, report, chosen.whose, top)
            if ls.late_failures == failures:
                break
        return with_whose(report, chosen.whose, rows)


def whose_windows(ls: LedgerSet, report: Report, by: By, top: int = 0) -> tuple[WhoseWindow, ...]:
    """Each window of ``report`` by ``by``, over the sources it read (its filters).

    Windows that read the same of every file (they differ only where no file holds anything,
    as 24h, 3d, 7d and total often do) and have the same figures get the same rows: the rows of
    the first are taken again, under the other's name and span."""
    sources = ls.sources(report.instance_filter, report.model_filter)
    made: dict[tuple[object, ...], WhoseWindow] = {}
    views: dict[int, tuple[FileCredits, WhoseWindow]] = {}  # by the read each was made of
    out = []
    for w in report.windows:
        window = Window(w.name, w.start_ts, w.cutoff_ts)
        held = holding(sources, window)
        reads = _reads(held, window)
        key = (reads, w.input_tokens, w.output_tokens, w.cached_tokens, w.requests)
        got = made.get(key) if reads is not None else None
        if got is None:
            credits = ls.credits(held, window, by)
            got = whose(w, credits, by, top, _narrower(credits, views))
            views[id(credits)] = (credits, got)
            made[key] = got
        else:
            got = replace(got, name=w.name, start_ts=w.start_ts, cutoff_ts=w.cutoff_ts, total=w)
        out.append(got)
    return tuple(out)


def _narrower(
    credits: FileCredits, views: dict[int, tuple[FileCredits, WhoseWindow]]
) -> WhoseWindow | None:
    """The view made of the read ``credits`` was widened from, if one was."""
    if credits.widened_from is None:
        return None
    got = views.get(id(credits.widened_from[0]))
    return got[1] if got is not None and got[0] is credits.widened_from[0] else None


def holding(sources: Sequence[S], w: Window) -> list[S]:
    """The sources that may hold something in ``w``: every summarised run (``LedgerSet.credits``
    judges those) and every file whose records or proofs reach into it. A file that ended
    before the window or began after it credits nothing there, and one written before
    attribution that did so leaves the window complete."""
    return [s for s in sources if not isinstance(s, LedgerSnapshot) or _reaches(s, w)]


def _reaches(s: LedgerSnapshot, w: Window) -> bool:
    if not s.ok:
        return True  # LedgerSet.credits skips it; kept so a window read again says the same
    lows = [t for t in (s.first_bucket_ts, *(a for a, _b in s.spans)) if t is not None]
    highs = [t for t in (s.last_end_ts, s.last_proof_ts) if t is not None]
    if not lows or not highs:
        return False  # nothing recorded, nothing proven
    return min(lows) < w.cutoff_ts and math.floor(max(highs)) >= w.start_ts


def _reads(sources: Sequence[Source], w: Window) -> tuple[object, ...] | None:
    """What ``LedgerSet.credits`` reads of each file for ``w``: from where it starts reading
    (0 for a window that starts at or before the file's first record, as ``file_credits``
    reads it) to the window's cutoff or, when earlier, the end of the file's last record or
    proof (a credit is written in the commit that proves its second). None when a source is
    not one file (a summarised run)."""
    out: list[object] = []
    for s in sources:
        if not isinstance(s, LedgerSnapshot):
            return None
        if not s.ok:
            continue
        first = s.first_bucket_ts
        start = 0 if first is not None and w.start_ts <= first else w.start_ts
        ends = [e for e in (s.last_end_ts, s.last_proof_ts) if e is not None]
        cutoff = min(w.cutoff_ts, math.floor(max(ends)) + 1) if ends else w.cutoff_ts
        out.append((id(s), start, max(start, cutoff)))
    return tuple(out)


def with_whose(report: Report, by: By, rows: tuple[WhoseWindow, ...]) -> WhoseReport:
    """``report`` with its windows' rows by ``by``."""
    same = {f.name: getattr(report, f.name) for f in fields(Report)}
    return WhoseReport(**same, whose_by=by, whose=rows)


__all__ = [
    "REPORT_BY_KEYS",
    "WHOSE_KEYS",
    "ReportBy",
    "WhoseReport",
    "holding",
    "parse_by",
    "report_by",
    "whose_windows",
    "with_whose",
]
