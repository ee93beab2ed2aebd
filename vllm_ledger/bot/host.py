"""What the status command adds on the deployment host, from the same read as its figures:
where the host's budgets stand (``budgets``) and the answer to an ask (``asked``: the digest's
day or week, the usage by a label over a window). Pure apart from reading the budgets file.

Budgets are judged as the enforcer judges them (``plan.budgets.evaluate`` over
``LedgerSet.credits`` of every file under the root, in the budgets file's zone, else the
report's), at the document's instant: the same figures the enforcer publishes. A budgets file
that cannot be used gives a block with ``problem: config`` and the reason (for one line on
stderr): the document's figures never depend on it.

An ask's window is the report's own (``build_report`` with that period: the figures equal
``report --window NAME``; the digest's week is ``--since`` the local midnight 7 days before
today ``--until`` today's), and its rows are ``read/whose.py``'s over the files' credits.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from vllm_ledger.errors import LedgerError
from vllm_ledger.formats.status_asked import WEEK, Ask, Asked
from vllm_ledger.formats.status_budgets import budgets_dict
from vllm_ledger.plan.budgets import evaluate, load_budgets
from vllm_ledger.read.attribution import FileCredits
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.report import build_report
from vllm_ledger.read.whose import whose
from vllm_ledger.read.windows import Window, local_midnight_ts


def budgets_block(
    ledgers: LedgerSet, path: Path, at_ts: float, zone: str
) -> tuple[dict[str, Any], str | None]:
    """The ``budgets`` block of every file under the roots, and why the file could not be
    used (None when it could)."""
    try:
        config = load_budgets(path)
    except (LedgerError, OSError) as exc:
        return budgets_dict([], problem="config"), str(exc)
    sources = ledgers.sources()

    def credits_for(w: Window, kind: str | None = None) -> FileCredits:
        return ledgers.credits(sources, w)  # every label: one read serves each kind

    tz = ZoneInfo(config.zone or zone)
    states = evaluate(config, credits_for, int(at_ts), tz)
    currency = config.rates.currency if config.rates is not None else ""
    offset = datetime.fromtimestamp(at_ts, tz).utcoffset()
    offset_s = int(offset.total_seconds()) if offset is not None else 0
    return budgets_dict(states, currency=currency, tz_offset_s=offset_s), None


def week_edges(at_ts: float, tz: ZoneInfo) -> tuple[int, int]:
    """The local midnight 7 days before today's, and today's."""
    today = local_midnight_ts(int(at_ts), tz)
    noon = datetime.fromtimestamp(today, tz) + timedelta(hours=12) - timedelta(days=7)
    return local_midnight_ts(int(noon.timestamp()), tz), today


def asked(
    ledgers: LedgerSet,
    ask: Ask,
    *,
    at_ts: float | None,
    tz: str,
    instance: int | str | None = None,
    model: str | None = None,
) -> Asked:
    """The ask's window, as ``report`` makes it, and its rows by each of the ask's labels."""
    if ask.window == WEEK:
        at = ledgers.now_ts if at_ts is None else at_ts
        start, end = week_edges(at, ZoneInfo(tz))
        report = build_report(
            ledgers, at_ts=at_ts, tz=tz, instance=instance, model=model, since=start, until=end
        )
    else:
        report = build_report(
            ledgers, at_ts=at_ts, tz=tz, instance=instance, model=model, periods=(ask.window,)
        )
    window = dataclasses.replace(report.windows[0], name=ask.window)
    sources = ledgers.sources(instance, model)
    credits = ledgers.credits(sources, Window(window.name, window.start_ts, window.cutoff_ts))
    return Asked(ask, window, {by: whose(window, credits, by) for by in ask.bys})


__all__ = ["asked", "budgets_block", "week_edges"]
