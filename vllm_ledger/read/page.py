"""What the HTML page shows, built from one LedgerSet: the report, a 7-day hourly timeline and
the per-instance breakdown. The renderer (``formats/html.py``) takes this model and reads
nothing."""

from __future__ import annotations

from dataclasses import dataclass

from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.report import BreakdownRow, Report, build_report
from vllm_ledger.read.timeline import Timeline, build_timeline

PAGE_WINDOW = "7d"
PAGE_STEP = "1h"


@dataclass(frozen=True)
class Page:
    report: Report
    timeline: Timeline
    instances: tuple[BreakdownRow, ...]


def build_page(ledgers: LedgerSet, report: Report) -> Page:
    """The page for ``report``, which was built from ``ledgers`` (same instant and filters)."""
    timeline = build_timeline(
        ledgers,
        window=PAGE_WINDOW,
        step=PAGE_STEP,
        at_ts=report.at_ts,
        tz=report.tz,
        instance=report.instance_filter,
        model=report.model_filter,
    )
    if report.breakdown_by == "instance":
        instances = report.breakdown
    else:
        instances = build_report(
            ledgers,
            at_ts=report.at_ts,
            tz=report.tz,
            by="instance",
            instance=report.instance_filter,
            model=report.model_filter,
        ).breakdown
    return Page(report, timeline, instances)
