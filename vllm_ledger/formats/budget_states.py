"""Where each budget stands, as ``vllm-ledger enforce --once`` prints it: a text table and a
JSON document (docs/budgets.md#the-enforcer). Pure: it renders built states and reads nothing.

Text: one line naming the budgets file, the instant and the zone, then one row per budget (its
name, who, the period, the figure, used, limit, the share used, the level, the projection to the
period's end, whether it refuses now, and the period's end), then what the enforcer's file says
(enforcing, or failing open and why). Labels come from the budgets file, a root path from the
command line: every cell goes through the aligner's ``safe``.

JSON (``"schema": 1``)::

    {"schema": 1, "at": 1796190000, "tz": "Asia/Shanghai", "root": "/srv/usage",
     "config": "/etc/vllm-ledger/budgets.toml",
     "budgets": [{"name": "key-team-a-day", "kind": "key", "value": "team-a", "period": "day",
                  "figure": "total", "limit": 2000000, "used": 1700000, "fraction": 0.85,
                  "soft": 0.8, "hard": 1.0, "level": "soft", "enforce": true, "refused": false,
                  "period_start": 1796140800, "period_end": 1796227200, "projected": 2430000}],
     "enforcer": {"state": "fresh", "written_at": 1796189998.0, "age_s": 2.0, "fresh_s": 30.0,
                  "over": 0, "problem": null}}

``refused``: enforced and at its hard level, so the enforcer lists it and the middleware answers
429 while the file is fresh. ``projected`` is null in a period's first minute; ``used``,
``limit`` and ``projected`` are tokens, or money in the price file's currency for ``cost``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import tzinfo
from typing import Any

from vllm_ledger.formats.table import aligned
from vllm_ledger.plan.budgets import BudgetState
from vllm_ledger.plan.enforcement import EnforcerLook
from vllm_ledger.units import format_instant

SCHEMA = 1
HEADER = ("budget", "who", "period", "figure", "used", "limit", "used %", "level", "projected")
HEADER_END = ("refuses", "period ends")


def refused(s: BudgetState) -> bool:
    """Whether the enforcer lists this budget's label now (``plan.budgets.over_entries``)."""
    return s.level == "hard" and s.budget.enforce


def _amount(x: float, figure: str) -> int | float:
    return round(x) if figure != "cost" else round(x, 4)


def amount_text(x: float, figure: str, currency: str = "") -> str:
    """Tokens with thousands separators; money with two decimals and its currency."""
    if figure == "cost":
        return f"{x:,.2f}" + (f" {currency}" if currency else "")
    return f"{round(x):,}"


def _figure_text(figure: str) -> str:
    return "cost" if figure == "cost" else f"{figure} tokens"


def budget_dict(s: BudgetState) -> dict[str, Any]:
    b = s.budget
    return {
        "name": b.name,
        "kind": b.kind,
        "value": b.value,
        "period": b.period,
        "figure": b.figure,
        "limit": _amount(b.limit, b.figure),
        "used": _amount(s.used, b.figure),
        "fraction": round(s.fraction, 6),
        "soft": b.soft,
        "hard": b.hard,
        "level": s.level,
        "enforce": b.enforce,
        "refused": refused(s),
        "period_start": s.period_start_ts,
        "period_end": s.period_end_ts,
        "projected": None if s.projected is None else _amount(s.projected, b.figure),
    }


def look_dict(look: EnforcerLook) -> dict[str, Any]:
    age = look.age_s
    return {
        "state": look.state,
        "written_at": look.written_ts,
        "age_s": None if age is None else round(age, 3),
        "fresh_s": look.fresh_s,
        "over": look.over,
        "problem": look.problem,
    }


def states_json(
    states: Sequence[BudgetState],
    look: EnforcerLook,
    *,
    at_ts: int,
    tz: str,
    root: str,
    config: str,
) -> str:
    doc = {
        "schema": SCHEMA,
        "at": at_ts,
        "tz": tz,
        "root": root,
        "config": config,
        "budgets": [budget_dict(s) for s in states],
        "enforcer": look_dict(look),
    }
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


def look_text(look: EnforcerLook, enforced: int) -> str:
    """What the enforcer's file says, in one line."""
    if enforced == 0:
        return "enforcer: no budget is enforced (enforce = true refuses past the hard level)"
    if look.enforcing:
        age = max(look.age_s or 0.0, 0.0)
        return (
            f"enforcer: enforcing: its file in {look.root} written {age:.0f} s ago lists "
            f"{look.over:,} label{'' if look.over == 1 else 's'}"
        )
    return f"enforcer: failing open (every request is served): {look.problem}"


def states_text(
    states: Sequence[BudgetState],
    look: EnforcerLook,
    *,
    at_ts: int,
    tz: tzinfo,
    tz_name: str,
    config: str,
    currency: str = "",
) -> list[str]:
    rows: list[tuple[str, ...]] = [(*HEADER, *HEADER_END)]
    for s in states:
        b = s.budget
        projected = "-" if s.projected is None else amount_text(s.projected, b.figure, currency)
        rows.append(
            (
                b.name,
                f"{b.kind} {b.value}",
                b.period,
                _figure_text(b.figure),
                amount_text(s.used, b.figure, currency),
                amount_text(b.limit, b.figure, currency),
                f"{s.fraction * 100:.1f}%",
                s.level,
                projected,
                "yes" if refused(s) else "no" if b.enforce else "not enforced",
                format_instant(s.period_end_ts, tz),
            )
        )
    head = f"budgets of {config} at {format_instant(at_ts, tz)} (zone {tz_name})"
    enforced = sum(1 for s in states if s.budget.enforce)
    body = aligned(rows, right=(4, 5, 6, 8), safe=True)
    tail = aligned([[look_text(look, enforced)]], safe=True)
    return [*aligned([[head]], safe=True), *body, *tail]


__all__ = [
    "SCHEMA",
    "amount_text",
    "budget_dict",
    "look_dict",
    "look_text",
    "refused",
    "states_json",
    "states_text",
]
