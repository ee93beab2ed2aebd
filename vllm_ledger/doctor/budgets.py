"""The ``budgets`` check: are budgets set, is the file valid, and do hard budgets hold.

The budgets file is ``--budgets FILE``, else the one ``VLLM_LEDGER_BUDGETS`` names (what vLLM's
rank 0 hands its enforcer). The row says one of:

* **off** (pass): no budgets file; nothing is refused. Where an enforcer still publishes in a
  root, it warns: the file it judges was not given here;
* the file **cannot be used** (FAIL): its one-line error (``plan/budgets.py``); the enforcer
  does not start with it, so nothing is refused;
* **on, soft only** (pass): budgets, none enforced (``enforce = true`` makes a hard budget
  refuse);
* **on and enforcing** (pass): the enforcer's over-budget file is fresh in every root;
* **failing open** (FAIL): budgets are enforced but a root's file is missing, stale or unusable
  (``plan/enforcement.py``): the enforcer is down, and the middleware serves everyone. The row
  names why, and the fix.

``budgets_row`` is pure over ``BudgetFacts``; ``budget_facts`` and ``check_budgets`` are the
edges that read the budgets file and the roots' over-budget files.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vllm_ledger.doctor.base import Row
from vllm_ledger.errors import LedgerError
from vllm_ledger.plan.budgets import load_budgets
from vllm_ledger.plan.enforcement import EnforcerLook, look_at
from vllm_ledger.units import BUDGETS_ENV, ENFORCER_ENV

FIX_FILE = (
    "correct the budgets file (docs/budgets.md), then restart vLLM (rank 0 starts the enforcer "
    "with it) or `vllm-ledger enforce`"
)
FIX_MISSING = (
    f"the enforcer never published: set {BUDGETS_ENV}=FILE in vLLM's environment (rank 0 starts "
    f"it; {ENFORCER_ENV}=0 stops that) or run `vllm-ledger enforce --root ROOT --config FILE` "
    "beside vLLM; its errors are in vLLM's log, after 'enforcer' (docs/budgets.md#fail-open)"
)
FIX_STALE = (
    "the enforcer stopped: look for 'enforcer' in vLLM's log (rank 0 starts it again, backing "
    "off up to 5 min) or restart `vllm-ledger enforce` (docs/budgets.md#fail-open)"
)
FIX_UNUSABLE = (
    "something other than the enforcer wrote it, or the disk failed: remove it; a running "
    "enforcer writes it again within 5 s (docs/budgets.md#fail-open)"
)
FIX_GIVE = f"pass --budgets FILE (the file {BUDGETS_ENV} names for vLLM) to check it"


@dataclass(frozen=True)
class BudgetFacts:
    """The budgets file (None: none set), where it was named, what it holds or why it cannot
    be used, and each root's over-budget file."""

    path: str | None
    origin: str = ""  # "--budgets" or "$VLLM_LEDGER_BUDGETS"
    error: str | None = None
    budgets: int = 0
    enforced: int = 0
    looks: tuple[EnforcerLook, ...] = ()


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _fresh_text(look: EnforcerLook) -> str:
    age = look.age_s or 0.0
    return (
        f"the enforcer's file in {look.root} written {max(age, 0.0):.0f} s ago, "
        f"{_plural(look.over, 'label')} refused now"
    )


def budgets_row(facts: BudgetFacts) -> Row:
    """The row for ``facts``. Pure."""
    f = facts
    if f.path is None:
        fresh = [lk for lk in f.looks if lk.enforcing]
        if fresh:
            return Row(
                "budgets",
                True,
                "off here: no budgets file given, but an enforcer publishes: "
                + _fresh_text(fresh[0]),
                FIX_GIVE,
                warn=True,
            )
        return Row(
            "budgets",
            True,
            f"off: no budgets file (--budgets or ${BUDGETS_ENV}); nothing is refused",
        )
    where = f"{f.path} ({f.origin})" if f.origin else f.path
    if f.error is not None:
        return Row(
            "budgets",
            False,
            f"the budgets file cannot be used: {f.error}; no enforcer runs with it, nothing is "
            "refused",
            FIX_FILE,
        )
    counted = f"{_plural(f.budgets, 'budget')} in {where}"
    if f.enforced == 0:
        return Row(
            "budgets",
            True,
            f"on, soft only: {counted}, none enforced (enforce = true refuses past the hard "
            "level; docs/budgets.md)",
        )
    failing = [lk for lk in f.looks if not lk.enforcing]
    if failing:
        bad = failing[0]
        fix = {"missing": FIX_MISSING, "stale": FIX_STALE}.get(bad.state, FIX_UNUSABLE)
        return Row(
            "budgets",
            False,
            f"failing open: {counted} ({f.enforced:,} enforced), but in {bad.root}: "
            f"{bad.problem}; every request is served",
            fix,
        )
    shown = "; ".join(_fresh_text(lk) for lk in f.looks)
    return Row(
        "budgets",
        True,
        f"on and enforcing: {counted} ({f.enforced:,} enforced); {shown}",
    )


def budget_facts(
    roots: Sequence[Path], path: Path | None, origin: str, at_ts: float
) -> BudgetFacts:
    """Read the budgets file and each root's over-budget file at ``at_ts``."""
    looks = tuple(look_at(root, at_ts) for root in roots)
    if path is None:
        return BudgetFacts(None, looks=looks)
    try:
        config = load_budgets(path)
    except LedgerError as exc:
        return BudgetFacts(str(path), origin, str(exc), looks=looks)
    enforced = sum(1 for b in config.budgets if b.enforce)
    return BudgetFacts(str(path), origin, None, len(config.budgets), enforced, looks)


def check_budgets(
    roots: Sequence[Path],
    path: Path | None,
    origin: str = "",
    *,
    clock: Callable[[], float] = time.time,
) -> Row:
    return budgets_row(budget_facts(roots, path, origin, clock()))


__all__ = ["BudgetFacts", "budget_facts", "budgets_row", "check_budgets"]
