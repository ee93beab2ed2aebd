"""The budgets file in Kubernetes (``render --mode kubernetes``, docs/budgets.md): the ConfigMap
holding it (and a cost budget's price file), the volume and mounts that put it where
``VLLM_LEDGER_BUDGETS`` says, and the PrometheusRule of the budgets' alert rules. Pure; named
and labelled by ``deploy/kubernetes.py``.

The ConfigMap's keys are ``budgets.toml`` (or ``.json``: the suffix says how it is read) and
``prices.toml``; the folder ``CONTAINER_BUDGETS_DIR`` is mounted read-only (a ConfigMap volume,
so a new file reaches the pod without a restart, though the enforcer reads it only at start),
and the price file by ``subPath`` at the path the budgets file names for it.
"""

from __future__ import annotations

import posixpath
from typing import Any

from vllm_ledger.deploy.budgets import CONTAINER_BUDGETS_DIR, BudgetsFile, container_budgets
from vllm_ledger.observe.budget_alerts import budget_rules_document

BUDGETS_VOLUME = "budgets"
BUDGETS_DIGEST = "vllm-ledger/budgets-sha256"  # the pod template's annotation


def budgets_key(path: str) -> str:
    """The ConfigMap's key for the budgets file at ``path`` (on the host)."""
    return posixpath.basename(container_budgets(path))


def prices_key(budgets: BudgetsFile) -> str:
    assert budgets.prices is not None
    return "prices" + (posixpath.splitext(budgets.prices)[1].lower() or ".toml")


def budgets_volume(configmap: str, path: str) -> dict[str, Any]:
    items = [{"key": budgets_key(path), "path": budgets_key(path)}]
    return {"name": BUDGETS_VOLUME, "configMap": {"name": configmap, "items": items}}


def budgets_mounts(budgets: BudgetsFile | None) -> list[dict[str, Any]]:
    """The budgets file's folder, and a cost budget's price file at its own path."""
    if budgets is None:
        return []
    mounts: list[dict[str, Any]] = [
        {"name": BUDGETS_VOLUME, "mountPath": CONTAINER_BUDGETS_DIR, "readOnly": True}
    ]
    if budgets.prices is not None:
        mounts.append(
            {
                "name": BUDGETS_VOLUME,
                "mountPath": budgets.prices,
                "subPath": prices_key(budgets),
                "readOnly": True,
            }
        )
    return mounts


def budgets_configmap_doc(
    name: str, labels: dict[str, str], path: str, budgets: BudgetsFile
) -> dict[str, Any]:
    """The ConfigMap: the budgets file under its key, and the price file under its own."""
    data = {budgets_key(path): budgets.text}
    if budgets.prices is not None and budgets.prices_text is not None:
        data[prices_key(budgets)] = budgets.prices_text
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": data,
    }


def budgets_rule_doc(name: str, labels: dict[str, str], budgets: BudgetsFile) -> dict[str, Any]:
    """The budgets' alert rules (one per budget and level) as a PrometheusRule."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": name, "labels": labels},
        "spec": budget_rules_document(budgets.config),
    }


__all__ = [
    "BUDGETS_DIGEST",
    "BUDGETS_VOLUME",
    "budgets_configmap_doc",
    "budgets_key",
    "budgets_mounts",
    "budgets_rule_doc",
    "budgets_volume",
    "prices_key",
]
