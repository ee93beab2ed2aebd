"""The budgets' alert rules (`observe/budget_alerts.py`, `observability --budgets FILE`) through
the real promtool: per budget, the soft rule fires between its soft and hard thresholds, the
hard one from its hard threshold, both go quiet when the exporter's fraction falls back as the
period turns, and another budget's thresholds are its own; enforcement failing open fires
after a minute; no exporter serving budgets fires too. The fired alerts keep the exporter's
instance and the labels naming the budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO
from tests.e2e.prom import metric_names, observability_stack, promtool, rule_test_series
from tests.inproc import run_cli
from vllm_ledger import names
from vllm_ledger.observe.budget_alerts import budget_rules
from vllm_ledger.plan.budgets import load_budgets

BUDGETS = """zone = "Asia/Shanghai"
enforce = true
[[budget]]
key = "team-a"
tokens = 2_000_000
[[budget]]
user = "alice"
period = "month"
figure = "output"
tokens = 500_000
soft = 0.9
hard = 1.2
enforce = false
"""
EXPORTER = {"job": "vllm-ledger", "instance": "gpu1:9464"}
TEAM_A = {
    **EXPORTER, "budget": "key-team-a-day", "by": "key", "key": "team-a", "period": "day",
    "figure": "total",
}  # fmt: skip
ALICE = {
    **EXPORTER, "budget": "user-alice-month", "by": "user", "user": "alice", "period": "month",
    "figure": "output",
}  # fmt: skip
ROOT = {**EXPORTER, "root": "/srv/artifacts/usage"}


def _budgets(tmp_path: Path, text: str = BUDGETS) -> Path:
    path = tmp_path / "budgets.toml"
    path.write_text(text)
    return path


def _alert(
    name: str, labels: dict[str, str], summary: str, path: Path, runbook: str = "docs/budgets.md"
) -> dict[str, Any]:
    rule = next(
        r for r in budget_rules(load_budgets(path), runbook)
        if r.name == name and r.labels.get("budget", "") == labels.get("budget", "")
    )  # fmt: skip
    return {
        "exp_labels": {**labels, "severity": rule.severity},
        "exp_annotations": {
            "summary": summary,
            "description": rule.description,
            "runbook_url": rule.runbook_url,
        },
    }


def _promtool_test(out: Path, tests: list[dict[str, Any]]) -> tuple[int, str]:
    doc = {"rule_files": ["budgets.yml"], "evaluation_interval": "1m", "tests": tests}
    (out / "budgets_test.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    r = promtool("test", "rules", "budgets_test.yml", cwd=out)
    return r.returncode, r.stdout + r.stderr


def _case(series: list[dict[str, str]], evals: list[tuple[str, str, list[Any]]]) -> dict[str, Any]:
    return {
        "interval": "1m",
        "input_series": series,
        "alert_rule_test": [
            {"eval_time": at, "alertname": name, "exp_alerts": exp} for at, name, exp in evals
        ],
    }


def _soft_and_hard(path: Path) -> dict[str, Any]:
    """team-a's day: 50 % (quiet), 85 % (soft), 102 % (hard), then 0 at local midnight (the
    exporter's fraction of the new day: both quiet). alice at 95 % of her month is past her
    own soft 90 % and under her hard 120 %."""
    fraction = names.LEDGER_BUDGET_FRACTION
    soft_a = "Budget key-team-a-day: key team-a used {} of its 2,000,000 total tokens today"
    alice = (
        "Budget user-alice-month: user alice used 95% of its 500,000 output tokens this month "
        "(on gpu1:9464)"
    )
    return _case(
        [
            rule_test_series(fraction, TEAM_A, "0.5x2 0.85x2 1.02x2 0x3"),
            rule_test_series(fraction, ALICE, "0.95x11"),
        ],
        [
            ("1m", "BudgetSoft", [_alert("BudgetSoft", ALICE, alice, path)]),
            ("1m", "BudgetHard", []),
            (
                "4m",
                "BudgetSoft",
                [
                    _alert("BudgetSoft", TEAM_A, soft_a.format("85%") + " (on gpu1:9464)", path),
                    _alert("BudgetSoft", ALICE, alice, path),
                ],
            ),
            ("4m", "BudgetHard", []),
            ("7m", "BudgetSoft", [_alert("BudgetSoft", ALICE, alice, path)]),
            (
                "7m",
                "BudgetHard",
                [
                    _alert(
                        "BudgetHard",
                        TEAM_A,
                        soft_a.format("102%") + ": over (on gpu1:9464)",
                        path,
                    )
                ],
            ),
            ("10m", "BudgetSoft", [_alert("BudgetSoft", ALICE, alice, path)]),
            ("10m", "BudgetHard", []),
        ],
    )


def _failing_open(path: Path) -> dict[str, Any]:
    """The enforcer's file fresh for 3 minutes, then not: pending for a minute, then firing;
    another root whose file stays fresh is quiet."""
    other = {**EXPORTER, "root": "/srv/other"}
    summary = (
        "Hard budgets are not enforced under /srv/artifacts/usage (exporter gpu1:9464) for 1m: "
        "the enforcer's file is missing or stale"
    )
    return _case(
        [
            rule_test_series(names.LEDGER_ENFORCER_FAILS_OPEN, ROOT, "0x3 1x6"),
            rule_test_series(names.LEDGER_ENFORCER_FAILS_OPEN, other, "0x9"),
            rule_test_series(names.LEDGER_BUDGET_LIMIT, TEAM_A, "2000000x9"),
        ],
        [
            ("3m", "BudgetEnforcerFailingOpen", []),
            ("4m", "BudgetEnforcerFailingOpen", []),  # pending
            (
                "6m",
                "BudgetEnforcerFailingOpen",
                [_alert("BudgetEnforcerFailingOpen", ROOT, summary, path)],
            ),
            ("9m", "BudgetsNotServed", []),
        ],
    )


def _not_served(path: Path) -> dict[str, Any]:
    summary = "No exporter has served a budget for 10m: the budget alerts are blind"
    return _case(
        [rule_test_series("vllm_ledger_report_ok", EXPORTER, "1x15")],
        [
            ("5m", "BudgetsNotServed", []),
            (
                "12m",
                "BudgetsNotServed",
                [_alert("BudgetsNotServed", {"job": "vllm-ledger"}, summary, path)],
            ),
        ],
    )


def test_each_budgets_rules_fire_stay_quiet_and_reset_with_the_period(tmp_path: Path) -> None:
    path = _budgets(tmp_path)
    out = observability_stack(tmp_path, "--budgets", str(path))
    code, said = _promtool_test(out, [_soft_and_hard(path), _failing_open(path), _not_served(path)])
    assert code == 0, said
    assert "SUCCESS" in said


def test_promtool_unit_tests_can_fail(tmp_path: Path) -> None:
    """Not vacuous: the soft alert expected past the hard threshold fails, and so does a hard
    alert expected without the budget's labels."""
    path = _budgets(tmp_path)
    out = observability_stack(tmp_path, "--budgets", str(path))
    fraction = names.LEDGER_BUDGET_FRACTION
    wrong = [
        _case(
            [rule_test_series(fraction, TEAM_A, "1.5x5")],
            [("3m", "BudgetSoft", [_alert("BudgetSoft", TEAM_A, "x", path)])],
        ),
        _case(
            [rule_test_series(fraction, TEAM_A, "1.5x5")],
            [
                (
                    "3m",
                    "BudgetHard",
                    [
                        {
                            **_alert("BudgetHard", TEAM_A, "x", path),
                            "exp_labels": {**EXPORTER, "severity": "critical"},
                        }
                    ],
                )
            ],
        ),
    ]
    for case in wrong:
        code, said = _promtool_test(out, [case])
        assert code == 1, said
        assert "alertname: Budget" in said


def test_the_rules_follow_the_file(tmp_path: Path) -> None:
    """One rule per budget and level, named by the budget; no soft rule where soft is hard; no
    failing-open rule where nothing is enforced; the group passes promtool's own check."""
    text = 'enforce = false\n[[budget]]\ntenant = "acme"\ntokens = 9\nsoft = 1.0\n'
    path = _budgets(tmp_path, text)
    out = observability_stack(tmp_path, "--budgets", str(path))
    doc = yaml.safe_load((out / "budgets.yml").read_text())
    rules = doc["groups"][0]["rules"]
    assert doc["groups"][0]["name"] == "vllm-ledger-budgets"
    assert [(r["alert"], r["labels"]) for r in rules] == [
        ("BudgetHard", {"severity": "critical", "budget": "tenant-acme-day"}),
        ("BudgetsNotServed", {"severity": "warning"}),
    ]
    assert rules[0]["expr"] == (
        '(vllm_ledger_budget_fraction{job="vllm-ledger",budget="tenant-acme-day"}) >= 1'
    )
    assert "for" not in rules[0]
    served = {names.LEDGER_BUDGET_FRACTION, names.LEDGER_BUDGET_LIMIT}
    assert set().union(*(metric_names(r["expr"]) for r in rules)) == served
    checked = promtool("check", "config", str(out / "prometheus.yml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 2 rules found" in checked.stdout


def test_the_stack_loads_mounts_and_groups_the_budget_rules(tmp_path: Path) -> None:
    path = _budgets(tmp_path)
    url = "https://git.example.com/ops/vllm-ledger/blob/main/docs/budgets.md"
    out = observability_stack(tmp_path, "--budgets", str(path), "--budgets-runbook-url", url)
    cfg = yaml.safe_load((out / "prometheus.yml").read_text())
    assert cfg["rule_files"] == ["alerts.yml", "budgets.yml"]
    volumes = yaml.safe_load((out / "compose.yaml").read_text())["services"]["prometheus"][
        "volumes"
    ]
    assert "./budgets.yml:/etc/prometheus/budgets.yml:ro" in volumes
    am = yaml.safe_load((out / "alertmanager.yml").read_text())
    assert am["route"]["group_by"] == [
        "alertname", "instance", "ledger_instance", "model_name", "budget"
    ]  # fmt: skip
    rules = yaml.safe_load((out / "budgets.yml").read_text())["groups"][0]["rules"]
    assert {r["annotations"]["runbook_url"] for r in rules} == {
        f"{url}#budgetsoft", f"{url}#budgethard", f"{url}#budgetenforcerfailingopen",
        f"{url}#budgetsnotserved",
    }  # fmt: skip
    alerts = {r["alert"] for r in rules}
    docs = (REPO / "docs" / "budgets.md").read_text()
    for name in alerts:
        assert f"\n### {name}\n" in docs, name


def test_bad_budgets_flags_are_one_line_errors(tmp_path: Path) -> None:
    bad = _budgets(tmp_path, '[[budget]]\nkey = "a"\ntokens = 0\n')
    cases = [
        (
            ["--budgets", str(bad)],
            f"{bad}: budget 1: tokens must be a number above 0 and at most 1e+15",
        ),
        (
            ["--budgets-runbook-url", "https://example.com/budgets.md"],
            "--budgets-runbook-url links the budget alerts: give --budgets FILE",
        ),
    ]
    for args, line in cases:
        code, out, err = run_cli("observability", str(tmp_path / "s"), *args)
        assert (code, out, err) == (2, "", f"vllm-ledger: error: {line}\n"), args
