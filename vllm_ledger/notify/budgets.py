"""The soft and hard budget messages: what a host's status document says of its budgets, as
notifications made once per budget, period and level. Pure.

Each poll of a host whose document carries ``budgets`` (the host names a budgets file:
docs/budgets.md) gives, for every budget at ``soft`` or ``hard``, a notification keyed by the
host, the budget's name, its period's start and the level (``budget:HOST:NAME:START:LEVEL``),
kept in the notifier's state until two days past the period's end: the same level of the same
budget in the same period is announced once, whatever the number of polls or restarts. A
budget that went straight past its hard level is announced hard only (its soft key is
recorded with it, so a figure read lower later announces nothing). Budgets past the
document's 16 rows are not announced (the document counts them: ``truncated_over``, shown
in ``notifier status``).
"""

from __future__ import annotations

from vllm_ledger.bot.budget_text import budget_text, who_text
from vllm_ledger.formats.status import StatusDoc
from vllm_ledger.notify.dedupe import Once
from vllm_ledger.notify.state_read import BudgetLevel

KEEP_AFTER_END_S = 2 * 86_400


def budget_key(host_id: str, name: str, start_ts: int, level: str) -> str:
    return f"budget:{host_id}:{name}:{start_ts}:{level}"


def notices(host_id: str, where: str, doc: StatusDoc, lang: str) -> list[Once]:
    """The notifications of the document's budgets at soft or hard (made once each)."""
    budgets = doc.budgets
    if budgets is None:
        return []
    out: list[Once] = []
    for b in budgets.over:
        keep = float(b.end_ts + KEEP_AFTER_END_S)
        offset = budgets.tz_offset_seconds
        text = budget_text(
            b, where, doc.tz_offset_seconds if offset is None else offset, lang, budgets.currency
        )
        if b.level == "hard":  # the soft level is behind it: never announced after the hard
            out.append(Once(budget_key(host_id, b.name, b.start_ts, "soft"), None, keep))
        out.append(Once(budget_key(host_id, b.name, b.start_ts, b.level), text, keep))
    return out


def levels(where: str, doc: StatusDoc, lang: str) -> list[BudgetLevel]:
    """The document's budgets at soft or hard, as ``notifier status`` lists them; a row of
    level ``problem`` where the host cannot use its budgets file, and one of level ``more``
    (``used``: how many) for those at soft or hard past the document's rows."""
    if doc.budgets is None:
        return []
    cur = doc.budgets.currency
    notes = []
    if doc.budgets.problem is not None:
        notes.append(BudgetLevel("", where, "", "", "problem", 0.0, 0.0, 0.0, 0, None))
    if doc.budgets.truncated_over:
        more = float(doc.budgets.truncated_over)
        notes.append(BudgetLevel("", where, "", "", "more", more, 0.0, 0.0, 0, None))
    return notes + [
        BudgetLevel(
            name=b.name,
            place=where,
            who=who_text(b, lang),
            figure=b.figure + (f" {cur}" if b.figure == "cost" and cur else ""),
            level=b.level,
            used=b.used,
            limit_value=b.limit,
            fraction=b.fraction,
            end_ts=b.end_ts,
            projected=b.projected,
        )
        for b in doc.budgets.over
    ]


__all__ = ["KEEP_AFTER_END_S", "budget_key", "levels", "notices"]
