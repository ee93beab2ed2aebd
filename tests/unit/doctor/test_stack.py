"""``doctor --stack``'s two rows: the targets and the rules as Prometheus's API lists them,
judged (pure) and fetched (the answers given here as the API's bytes); an answer the store
called partial or gave a warning with passes no row, the store's words named."""

from __future__ import annotations

import json
from typing import Any

from vllm_ledger.doctor.stack import (
    FIX_PARTIAL,
    FIX_REACH,
    FIX_TARGETS,
    judge_rules,
    judge_targets,
    rules_row,
    stack_rows,
    targets_row,
)
from vllm_ledger.plan.prom import Said, Target

URL = "http://prom:9090"


def _api(
    targets: list[dict[str, Any]],
    groups: list[dict[str, Any]],
    beside: dict[str, dict[str, Any]] | None = None,
) -> Any:
    """The API's answers; ``beside["targets"]`` and ``beside["rules"]`` are put beside each
    answer's ``data``."""
    told = beside or {}

    def fetch(url: str) -> bytes:
        if "/api/v1/targets" in url:
            doc: Any = {"status": "success", "data": {"activeTargets": targets}}
            doc |= told.get("targets", {})
        else:
            assert url == f"{URL}/api/v1/rules?type=alert"
            doc = {"status": "success", "data": {"groups": groups}, **told.get("rules", {})}
        return json.dumps(doc).encode()

    return fetch


def test_rules_in_error_and_a_missing_group_are_named() -> None:
    group = {
        "name": "vllm-alerts",
        "rules": [
            {"name": "KVCacheNearFull", "health": "ok", "state": "inactive"},
            {"name": "TTFTP99High", "health": "err", "lastError": "many-to-many matching"},
        ],
    }
    row = judge_rules([group])
    assert not row.passed
    assert row.checked == "stack rules: TTFTP99High: many-to-many matching"
    row = judge_rules([{"name": "other", "rules": []}])
    assert row.checked == "stack rules: no group vllm-alerts (alerts.yml)"
    row = judge_rules([{**group, "rules": group["rules"][:1]}])
    assert row.passed and row.checked.endswith(
        "1 rules in 1 group(s) loaded, none in error (0 firing)"
    )


def test_a_stack_without_its_exporter_job_is_named() -> None:
    up = Target({"job": "vllm", "instance": "gpu1:8000"}, "up", "")
    row = judge_targets([up])
    assert not row.passed and row.checked == "stack targets: no vllm-ledger target"
    fresh = Target({"job": "vllm-ledger", "instance": "gpu1:9464"}, "unknown", "")
    row = judge_targets([up, fresh])
    assert row.passed and row.warn
    assert row.checked.endswith("not scraped yet: vllm-ledger/gpu1:9464")


def test_every_target_down_is_named_and_a_long_list_counted() -> None:
    down = [
        Target({"job": "vllm", "instance": f"gpu{i}:8000"}, "down", "connection refused")
        for i in range(10)
    ]
    row = judge_targets([*down, Target({"job": "vllm-ledger", "instance": "x"}, "up", "")])
    assert (row.passed, row.fix) == (False, FIX_TARGETS)
    assert row.checked.startswith("stack targets: vllm/gpu0:8000 down (connection refused); ")
    assert row.checked.endswith("; and 2 more")
    both = [
        Target({"job": "vllm", "instance": "a"}, "up", ""),
        Target({"job": "vllm-ledger", "instance": "b"}, "up", ""),
    ]
    row = judge_targets(both)
    assert (row.passed, row.warn, row.checked) == (
        True,
        False,
        "stack targets: 2 of 2 up (vllm, vllm-ledger)",
    )


def test_the_rows_from_prometheus_api() -> None:
    targets = [
        {"labels": {"job": "vllm", "instance": "a"}, "health": "up", "lastError": ""},
        {"labels": {"job": "vllm-ledger", "instance": "b"}, "health": "up", "lastError": ""},
    ]
    groups = [{"name": "vllm-alerts", "rules": [{"name": "X", "health": "ok", "state": "firing"}]}]
    rows = stack_rows(URL, _api(targets, groups))
    assert [(r.passed, r.checked) for r in rows] == [
        (True, "stack targets: 2 of 2 up (vllm, vllm-ledger)"),
        (True, "stack rules: 1 rules in 1 group(s) loaded, none in error (1 firing)"),
    ]


def test_a_prometheus_that_cannot_be_read_is_the_rows_failure() -> None:
    def not_json(url: str) -> bytes:
        return b"<html>"

    for row in (targets_row(URL, not_json), rules_row(URL, not_json)):
        assert (row.passed, row.fix) == (False, FIX_REACH)
    assert rules_row(URL, not_json).checked.startswith(
        f"stack rules: {URL} did not answer /api/v1/rules with JSON: "
    )

    def no_groups(url: str) -> bytes:
        return b'{"status": "error", "data": {}}'

    assert rules_row(URL, no_groups).checked == (
        f"stack rules: {URL} answered /api/v1/rules without its groups"
    )


TARGETS = [
    {"labels": {"job": "vllm", "instance": "a"}, "health": "up", "lastError": ""},
    {"labels": {"job": "vllm-ledger", "instance": "b"}, "health": "up", "lastError": ""},
]
GROUPS = [{"name": "vllm-alerts", "rules": [{"name": "X", "health": "ok", "state": "firing"}]}]


def test_a_partial_answer_passes_no_row() -> None:
    beside: dict[str, dict[str, Any]] = {
        "targets": {"isPartial": True},
        "rules": {"warnings": ["store 10.0.0.7:10901 did not answer\x1b[2J"]},
    }
    targets, rules = stack_rows(URL, _api(TARGETS, GROUPS, beside))
    assert (targets.result, targets.fix, rules.result, rules.fix) == (
        "warn",
        FIX_PARTIAL,
        "warn",
        FIX_PARTIAL,
    )
    assert targets.checked == (
        "stack targets: 2 of 2 up (vllm, vllm-ledger); the store's answer to /api/v1/targets is "
        "partial (isPartial): some of its storage nodes did not answer, so a target may be "
        "missing (docs/doctor.md#a-partial-answer)"
    )
    assert rules.checked == (
        "stack rules: 1 rules in 1 group(s) loaded, none in error (1 firing); the store's answer "
        "to /api/v1/rules came with a warning: store 10.0.0.7:10901 did not answer\\x1b[2J"
    )
    # A target down is down, whatever else is missing: the failure stays, the words follow.
    down = Target({"job": "vllm", "instance": "a"}, "down", "refused")
    row = judge_targets([down], Said(partial=True))
    assert (row.result, row.fix) == ("FAIL", FIX_TARGETS)
    assert row.checked.startswith("stack targets: no vllm-ledger target; vllm/a down (refused); ")
    assert row.checked.endswith("so a target may be missing (docs/doctor.md#a-partial-answer)")
    fresh = Target({"job": "vllm-ledger", "instance": "b"}, "unknown", "")
    up = Target({"job": "vllm", "instance": "a"}, "up", "")
    row = judge_targets([up, fresh], Said(warnings=("w",)))
    assert row.result == "warn"
    assert row.fix == f"run it again after a scrape interval; {FIX_PARTIAL}"
    # An info says nothing is missing: the rows are as for a whole answer.
    infos = {"targets": {"infos": ["i"]}, "rules": {"infos": ["i"]}}
    assert stack_rows(URL, _api(TARGETS, GROUPS, infos)) == stack_rows(URL, _api(TARGETS, GROUPS))
