"""The budgets' alert rules (``observability --budgets FILE`` writes them to ``budgets.yml``):
one rule per budget and level, on the gauges the exporter serves for that budget
(``observe/budgets.py``, ``exporter --budgets FILE``), and two that say when the budgets are
not watched or not held. Pure: ``budget_rules(config)`` returns them as data,
``budget_rules_document`` wraps them in the group Prometheus loads.

Per budget (its name in the ``budget`` label; the thresholds are the budgets file's):

- ``BudgetSoft`` (warning): ``vllm_ledger_budget_fraction`` at or past the budget's ``soft``
  and below its ``hard``; left out where ``soft`` equals ``hard``;
- ``BudgetHard`` (critical): at or past ``hard``; the description says whether the middleware
  now answers 429 (``enforce``) or only this alert tells.

The fraction is of the period so far, judged by the exporter in the budgets' zone, so it falls
back to 0 when the day or month turns and the alert resolves by itself: no rule has to know
when local midnight is (PromQL has no time zones). Neither waits (``for``): within a period
the fraction only grows.

Once for the file:

- ``BudgetEnforcerFailingOpen`` (critical, where any budget is enforced): the enforcer's
  over-budget file is missing, stale or unusable for ``enforcer_for``: hard budgets refuse
  nothing (``vllm_ledger_enforcer_fails_open``);
- ``BudgetsNotServed`` (warning): no exporter serves any budget (``exporter --budgets`` was not
  given), so the rules above can never fire.

Every alert keeps ``instance`` (the exporter), and the per-budget ones the labels that name the
budget (``budget``, ``by``, the label ``by`` names, ``period``, ``figure``). Templates name only
labels and the value: a label value from the budgets file never reaches a template as text.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from vllm_ledger.names import (
    BUDGET_LABEL,
    LEDGER_BUDGET_FRACTION,
    LEDGER_BUDGET_LIMIT,
    LEDGER_ENFORCER_FAILS_OPEN,
)
from vllm_ledger.observe.alert_rule import AlertRule, runbook_link
from vllm_ledger.observe.signals import EXPORTER_JOB
from vllm_ledger.plan.budgets import Budget, BudgetConfig

BUDGET_GROUP_NAME = "vllm-ledger-budgets"
# Where each budget alert's runbook_url points unless --budgets-runbook-url says otherwise: the
# section of docs/budgets.md named after the alert.
DEFAULT_BUDGETS_RUNBOOK = "docs/budgets.md"
ENFORCER_FOR = "1m"
NOT_SERVED_FOR = "10m"
BUDGET_ALERTS = ("BudgetSoft", "BudgetHard", "BudgetEnforcerFailingOpen", "BudgetsNotServed")


def _figure_words(b: Budget) -> str:
    return "cost" if b.figure == "cost" else f"{b.figure} tokens"


def _limit_words(b: Budget) -> str:
    if b.figure == "cost":
        return f"{b.limit:g} (price file's currency)"
    return f"{b.limit:,.0f} {b.figure} tokens"


def _percent(fraction: float) -> str:
    return f"{fraction * 100:g}%"


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _fraction(b: Budget) -> str:
    return f'{LEDGER_BUDGET_FRACTION}{{job="{EXPORTER_JOB}",budget="{b.name}"}}'


def _who(b: Budget) -> str:
    return f"{b.kind} {{{{ $labels.{b.kind} }}}}"


def rules_of(b: Budget) -> list[AlertRule]:
    """The soft and hard rules of one budget (the soft one only where soft < hard)."""
    who, per = _who(b), "today" if b.period == "day" else "this month"
    labels = {BUDGET_LABEL: b.name}  # the series' own: one rule per budget, told apart
    used = "{{ $value | humanizePercentage }}"
    out = []
    if b.soft < b.hard:
        out.append(
            AlertRule(
                "BudgetSoft",
                f"{_fraction(b)} < {_number(b.hard)}",
                ">=",
                b.soft,
                "0s",
                "warning",
                summary=(
                    f"Budget {{{{ $labels.budget }}}}: {who} used {used} of its "
                    f"{_limit_words(b)} {per} (on {{{{ $labels.instance }}}})"
                ),
                description=(
                    f"Past the soft threshold ({_percent(b.soft)}) of its {b.period}'s "
                    f"{_figure_words(b)}; at {_percent(b.hard)} it is "
                    + ("refused with 429" if b.enforce else "reported, not refused")
                    + ". `vllm-ledger enforce --once` shows the projection to the period's end; "
                    "raise the limit in the budgets file or tell its owner."
                ),
                labels=labels,
            )
        )
    out.append(
        AlertRule(
            "BudgetHard",
            _fraction(b),
            ">=",
            b.hard,
            "0s",
            "critical",
            summary=(
                f"Budget {{{{ $labels.budget }}}}: {who} used {used} of its "
                f"{_limit_words(b)} {per}: over (on {{{{ $labels.instance }}}})"
            ),
            description=(
                (
                    "Its requests are answered 429 (budget_exceeded, Retry-After the period's "
                    "end) until the period turns, while the enforcer runs."
                )
                if b.enforce
                else "Not enforced (enforce = false): its requests are still served."
            )
            + " Raise its limit in the budgets file (the enforcer reads it at start: restart "
            "it) or wait for the period's end.",
            labels=labels,
        )
    )
    return out


def file_rules(config: BudgetConfig, enforcer_for: str = ENFORCER_FOR) -> list[AlertRule]:
    """The rules once per file: the enforcer failing open (with any enforced budget), and no
    exporter serving the budgets."""
    out = []
    if any(b.enforce for b in config.budgets):
        out.append(
            AlertRule(
                "BudgetEnforcerFailingOpen",
                f'{LEDGER_ENFORCER_FAILS_OPEN}{{job="{EXPORTER_JOB}"}}',
                "==",
                1,
                enforcer_for,
                "critical",
                summary=(
                    "Hard budgets are not enforced under {{ $labels.root }} (exporter "
                    f"{{{{ $labels.instance }}}}) for {enforcer_for}: the enforcer's file is "
                    "missing or stale"
                ),
                description=(
                    "Every request is served, over budget or not (fail open). vLLM's rank 0 "
                    "restarts its enforcer with back-off: look for 'enforcer' in vLLM's log, or "
                    "restart `vllm-ledger enforce`; `vllm-ledger doctor --only budgets` says why."
                ),
            )
        )
    out.append(
        AlertRule(
            "BudgetsNotServed",
            f'absent({LEDGER_BUDGET_LIMIT}{{job="{EXPORTER_JOB}"}})',
            "==",
            1,
            NOT_SERVED_FOR,
            "warning",
            summary=(
                f"No exporter has served a budget for {NOT_SERVED_FOR}: the budget alerts are blind"
            ),
            description=(
                "Start the exporter with --budgets FILE (the budgets file these rules came "
                "from), or check that Prometheus scrapes it."
            ),
        )
    )
    return out


def budget_rules(
    config: BudgetConfig,
    runbook: str = DEFAULT_BUDGETS_RUNBOOK,
    enforcer_for: str = ENFORCER_FOR,
) -> list[AlertRule]:
    """Every budget's rules, then the file's, each linking to its section of ``runbook``."""
    rules = [r for b in config.budgets for r in rules_of(b)]
    rules += file_rules(config, enforcer_for)
    return [replace(r, runbook_url=runbook_link(runbook, r.name)) for r in rules]


def budget_rules_document(
    config: BudgetConfig,
    runbook: str = DEFAULT_BUDGETS_RUNBOOK,
    enforcer_for: str = ENFORCER_FOR,
) -> dict[str, Any]:
    """The content of budgets.yml."""
    rules = [r.to_rule() for r in budget_rules(config, runbook, enforcer_for)]
    return {"groups": [{"name": BUDGET_GROUP_NAME, "rules": rules}]}


__all__ = [
    "BUDGET_ALERTS",
    "BUDGET_GROUP_NAME",
    "DEFAULT_BUDGETS_RUNBOOK",
    "budget_rules",
    "budget_rules_document",
    "file_rules",
    "rules_of",
]
