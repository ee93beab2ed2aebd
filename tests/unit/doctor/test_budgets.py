"""The doctor's ``budgets`` row: each verdict from its facts (pure), and the facts read from a
real budgets file and the over-budget file the enforcer's own writer wrote."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from vllm_ledger.doctor import Row, check_budgets, doctor
from vllm_ledger.doctor.budgets import (
    FIX_FILE,
    FIX_GIVE,
    FIX_MISSING,
    FIX_STALE,
    FIX_UNUSABLE,
    BudgetFacts,
    budget_facts,
    budgets_row,
)
from vllm_ledger.format import overbudget
from vllm_ledger.plan.enforcement import EnforcerLook

T0 = 1_800_000_000.0
ROOT = Path("/srv/usage")
FRESH = EnforcerLook(ROOT, "fresh", T0, T0 - 3.2, 30.0, 2)
STALE = EnforcerLook(
    ROOT, "stale", T0, T0 - 95, 30.0, 1, "the file was written 95 s ago: the enforcer stopped"
)
MISSING = EnforcerLook(ROOT, "missing", T0, problem="no file: the enforcer has not published one")
BROKEN = EnforcerLook(ROOT, "unusable", T0, problem="the file cannot be used: not JSON")
ON = BudgetFacts("/etc/b.toml", "--budgets", None, 3, 2)


# ---- the verdicts ----------------------------------------------------------------------------


def test_no_budgets_file_is_off() -> None:
    row = budgets_row(BudgetFacts(None, looks=(MISSING,)))
    assert row == Row(
        "budgets",
        True,
        "off: no budgets file (--budgets or $VLLM_LEDGER_BUDGETS); nothing is refused",
    )
    assert row.result == "pass"


def test_off_here_while_an_enforcer_publishes_warns() -> None:
    row = budgets_row(BudgetFacts(None, looks=(FRESH,)))
    assert row == Row(
        "budgets",
        True,
        "off here: no budgets file given, but an enforcer publishes: the enforcer's file in "
        "/srv/usage written 3 s ago, 2 labels refused now",
        FIX_GIVE,
        warn=True,
    )
    assert row.result == "warn"


def test_a_file_that_cannot_be_used_fails_with_its_line() -> None:
    row = budgets_row(BudgetFacts("/etc/b.toml", "--budgets", "/etc/b.toml: zone 'Mars' is bad"))
    assert row == Row(
        "budgets",
        False,
        "the budgets file cannot be used: /etc/b.toml: zone 'Mars' is bad; no enforcer runs "
        "with it, nothing is refused",
        FIX_FILE,
    )


def test_budgets_none_enforced_are_soft_only() -> None:
    row = budgets_row(BudgetFacts("/etc/b.toml", "$VLLM_LEDGER_BUDGETS", None, 1, 0, (MISSING,)))
    assert row == Row(
        "budgets",
        True,
        "on, soft only: 1 budget in /etc/b.toml ($VLLM_LEDGER_BUDGETS), none enforced "
        "(enforce = true refuses past the hard level; docs/budgets.md)",
    )


def test_a_fresh_file_is_on_and_enforcing() -> None:
    row = budgets_row(replace(ON, looks=(FRESH,)))
    assert row == Row(
        "budgets",
        True,
        "on and enforcing: 3 budgets in /etc/b.toml (--budgets) (2 enforced); the enforcer's "
        "file in /srv/usage written 3 s ago, 2 labels refused now",
    )


def test_a_missing_stale_or_broken_file_is_failing_open_with_its_fix() -> None:
    for look, fix in ((MISSING, FIX_MISSING), (STALE, FIX_STALE), (BROKEN, FIX_UNUSABLE)):
        row = budgets_row(replace(ON, looks=(FRESH, look)))
        assert row == Row(
            "budgets",
            False,
            "failing open: 3 budgets in /etc/b.toml (--budgets) (2 enforced), but in "
            f"/srv/usage: {look.problem}; every request is served",
            fix,
        )
    assert "vllm-ledger enforce --root ROOT --config FILE" in FIX_MISSING


# ---- the facts, read ------------------------------------------------------------------------


def _budgets(tmp_path: Path, enforce: str = "true") -> Path:
    p = tmp_path / "budgets.toml"
    p.write_text(
        f'enforce = {enforce}\n[[budget]]\nkey = "team-a"\ntokens = 900\n'
        '[[budget]]\nuser = "u1"\ntokens = 10\nenforce = false\n'
    )
    return p


def test_the_facts_from_a_real_file_and_the_enforcers_file(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    path = _budgets(tmp_path)
    overbudget.write(root, [overbudget.Over("key", "team-a", T0 + 60, "b")], written_ts=T0 - 1)
    facts = budget_facts([root], path, "--budgets", T0)
    assert facts == BudgetFacts(
        str(path), "--budgets", None, 2, 1, (EnforcerLook(root, "fresh", T0, T0 - 1, 30.0, 1),)
    )
    row = check_budgets([root], path, "--budgets", clock=lambda: T0 + 31)
    assert (row.result, row.fix) == ("FAIL", FIX_STALE)
    assert row.checked.startswith("failing open: 2 budgets in ")
    assert row.checked.endswith(
        "written 32 s ago (stale after 30 s): the enforcer stopped; every request is served"
    )


def test_a_bad_file_and_a_missing_one_are_failed_rows(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[budget]]\nkey = "a"\n')
    row = check_budgets([tmp_path], bad, "--budgets", clock=lambda: T0)
    assert row.checked == (
        f"the budgets file cannot be used: {bad}: budget 1: give a limit as tokens = N or "
        "cost = N (one of them); no enforcer runs with it, nothing is refused"
    )
    gone = tmp_path / "gone.toml"
    row = check_budgets([tmp_path], gone, "--budgets", clock=lambda: T0)
    assert row.checked.startswith(f"the budgets file cannot be used: cannot read {gone}: ")
    assert row.result == "FAIL"


def test_the_doctor_runs_the_row_alone(tmp_path: Path) -> None:
    path = _budgets(tmp_path, "false")
    report = doctor([tmp_path], None, checks=("budgets",), budgets=path, clock=lambda: T0)
    assert [(r.check, r.result) for r in report.rows] == [("budgets", "pass")]
    assert report.rows[0].checked.startswith("on, soft only: 2 budgets in ")
