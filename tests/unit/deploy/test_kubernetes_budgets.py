"""The budgets file in Kubernetes (deploy/kubernetes_budgets.py): its ConfigMap key keeps the
suffix that says how it is read, and the pod's volume names that key. Every manifest with
budgets is tests/unit/deploy/test_budgets.py's."""

from __future__ import annotations

from vllm_ledger.deploy.kubernetes_budgets import (
    BUDGETS_DIGEST,
    BUDGETS_VOLUME,
    budgets_key,
    budgets_volume,
)


def test_the_key_keeps_the_suffix() -> None:
    assert budgets_key("/etc/vllm-ledger/budgets.toml") == "budgets.toml"
    assert budgets_key("/srv/team-Budgets.JSON") == "budgets.json"
    assert budgets_key("/srv/budgets") == "budgets"


def test_the_volume_names_the_configmaps_key() -> None:
    assert budgets_volume("tiny-budgets", "/etc/b.toml") == {
        "name": BUDGETS_VOLUME,
        "configMap": {
            "name": "tiny-budgets",
            "items": [{"key": "budgets.toml", "path": "budgets.toml"}],
        },
    }
    assert (BUDGETS_VOLUME, BUDGETS_DIGEST) == ("budgets", "vllm-ledger/budgets-sha256")
