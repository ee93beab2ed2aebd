"""Budgets on /metrics: each budget of the exporter's budgets file judged as the enforcer judges
it, and whether hard budgets hold (docs/budgets.md, docs/observability.md#budgets).

Why a gauge per budget, not a rule over the whose-tokens series: a budget's period starts at
midnight (or the first of the month) in the budgets' zone, and PromQL has no time zones, no
calendar month and no "since local midnight"; the exporter's ``today`` window is in its own
zone, its window rows are cut to ``--attribution-series`` values, and user and tenant series are
off by default. So the exporter evaluates each budget with the enforcer's own function
(``plan.budgets.evaluate`` over ``LedgerSet.credits``: what the ledger credited to the label in
the period so far) on every read, and serves, per (``budget``, ``by``, the label ``by`` names,
``period``, ``figure``):

- ``vllm_ledger_budget_used``, ``_limit`` (tokens, or money for a cost budget) and
  ``_fraction`` (used / limit): it falls back to 0 when the period turns, so a rule on it
  resets with the period;
- ``vllm_ledger_budget_soft_fraction`` and ``_hard_fraction``: the thresholds, as fractions;
- ``vllm_ledger_budget_projected`` (to the period's end at the rate so far; absent in the
  period's first minute), ``vllm_ledger_budget_period_end_timestamp_seconds`` and
  ``vllm_ledger_budget_enforced`` (1 where the hard level answers 429).

And per ledger root (``root``), from the enforcer's over-budget file (``plan/enforcement.py``):
its age, its state (one-hot: fresh, stale, missing, unusable), ``vllm_ledger_enforcer_fails_open``
(1 when it is not fresh: the middleware refuses nothing) and the labels it lists. These are served
for every root with ``--budgets``, and without it only where a root holds such a file (a root
without budgets is not failing open).

``budget_families`` is pure; ``judge_budgets`` and ``enforcer_looks`` read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from vllm_ledger.formats.safe import printable
from vllm_ledger.names import (
    BUDGET_LABEL,
    BY_LABEL,
    FIGURE_LABEL,
    LEDGER_BUDGET_ENFORCED,
    LEDGER_BUDGET_FRACTION,
    LEDGER_BUDGET_HARD_FRACTION,
    LEDGER_BUDGET_LIMIT,
    LEDGER_BUDGET_PERIOD_END,
    LEDGER_BUDGET_PROJECTED,
    LEDGER_BUDGET_SOFT_FRACTION,
    LEDGER_BUDGET_USED,
    LEDGER_ENFORCER_FAILS_OPEN,
    LEDGER_ENFORCER_FILE_AGE,
    LEDGER_ENFORCER_FILE_STATE,
    LEDGER_ENFORCER_OVER,
    PERIOD_LABEL,
    ROOT_LABEL,
    STATE_LABEL,
)
from vllm_ledger.plan.budgets import BudgetConfig, BudgetState, Kind, evaluate
from vllm_ledger.plan.enforcement import FILE_STATES, EnforcerLook, look_at
from vllm_ledger.read.attribution import FileCredits
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.windows import Window


@dataclass(frozen=True)
class BudgetWatch:
    """The exporter's budgets: the file's, and the zone of their days and months (the file's
    ``zone``, else the exporter's)."""

    config: BudgetConfig
    zone: str

    @classmethod
    def of(cls, config: BudgetConfig, exporter_zone: str) -> BudgetWatch:
        return cls(config, config.zone or exporter_zone)


def judge_budgets(ledgers: LedgerSet, watch: BudgetWatch, at_ts: float) -> list[BudgetState]:
    """Every budget's state at ``at_ts`` from this read (``LedgerSet.credits``, memoised per
    window and label: the day budgets of keys cost one query per file)."""
    sources = ledgers.sources()

    def credits_for(w: Window, kind: Kind) -> FileCredits:
        return ledgers.credits(sources, w, kind)

    return evaluate(watch.config, credits_for, int(at_ts), ZoneInfo(watch.zone))


def enforcer_looks(roots: Sequence[Path], at_ts: float, budgets: bool) -> list[EnforcerLook]:
    """Each root's over-budget file; without budgets, only the roots that hold one."""
    looks = [look_at(root, at_ts) for root in roots]
    return [lk for lk in looks if budgets or lk.state != "missing"]


_PER_BUDGET = (
    (LEDGER_BUDGET_USED, "Used in the budget's period so far (tokens, or money for cost)"),
    (LEDGER_BUDGET_LIMIT, "The budget's limit (tokens, or money for cost)"),
    (LEDGER_BUDGET_FRACTION, "Used / limit: 0 again when the period turns"),
    (LEDGER_BUDGET_SOFT_FRACTION, "The soft threshold, a fraction of the limit (a warning)"),
    (LEDGER_BUDGET_HARD_FRACTION, "The hard threshold, a fraction of the limit"),
    (LEDGER_BUDGET_PROJECTED, "Projected to the period's end at the rate so far"),
    (LEDGER_BUDGET_PERIOD_END, "When the budget's period ends (Unix seconds)"),
    (LEDGER_BUDGET_ENFORCED, "1 where the hard level answers 429 (enforce = true)"),
)


def _values(s: BudgetState) -> tuple[float | None, ...]:
    b = s.budget
    return (
        s.used,
        b.limit,
        s.fraction,
        b.soft,
        b.hard,
        s.projected,
        float(s.period_end_ts),
        1.0 if b.enforce else 0.0,
    )


def budget_families(
    core: Any, states: Sequence[BudgetState] | None, looks: Sequence[EnforcerLook]
) -> list[Any]:
    """The per-budget gauges of ``states`` (None: this read failed, none served) and the
    enforcer's gauges of ``looks``."""
    gauge = core.GaugeMetricFamily
    fams = [gauge(name, doc) for name, doc in _PER_BUDGET]
    for s in states or ():
        b = s.budget
        labels = {
            BUDGET_LABEL: b.name,
            BY_LABEL: b.kind,
            b.kind: b.value,
            PERIOD_LABEL: b.period,
            FIGURE_LABEL: b.figure,
        }
        for fam, value in zip(fams, _values(s), strict=True):
            if value is not None:
                fam.add_sample(fam.name, labels, float(value))
    age = gauge(
        LEDGER_ENFORCER_FILE_AGE,
        "Seconds since the enforcer wrote its over-budget file (absent: no usable file)",
        labels=[ROOT_LABEL],
    )
    state = gauge(
        LEDGER_ENFORCER_FILE_STATE,
        "The over-budget file: fresh, stale, missing or unusable (1 for its state)",
        labels=[ROOT_LABEL, STATE_LABEL],
    )
    fails = gauge(
        LEDGER_ENFORCER_FAILS_OPEN,
        "1 when the over-budget file is not fresh: hard budgets refuse nothing (fail open)",
        labels=[ROOT_LABEL],
    )
    over = gauge(
        LEDGER_ENFORCER_OVER,
        "Labels the over-budget file lists (refused while it is fresh)",
        labels=[ROOT_LABEL],
    )
    for lk in looks:
        root = printable(str(lk.root))
        if lk.age_s is not None:
            age.add_metric([root], lk.age_s)
            over.add_metric([root], float(lk.over))
        for name in FILE_STATES:
            state.add_metric([root, name], 1.0 if lk.state == name else 0.0)
        fails.add_metric([root], 0.0 if lk.enforcing else 1.0)
    return [*fams, age, state, fails, over]


__all__ = [
    "BudgetWatch",
    "budget_families",
    "enforcer_looks",
    "judge_budgets",
]
