"""The alert rules, one alert per instance: the three to start with (docs/observability.md),
the targets' health, GPU heat, the error rate, the queue's leading indicator, two for the
ledger and two for the host. Each rule has a ``severity`` of ``SEVERITIES``: ``info`` for an
early sign (the queue building), ``warning``, ``critical``; Alertmanager routes each level at
its own pace.

Pure: ``alert_rules(thresholds)`` returns the rules of a set as data (their definitions are in
``alert_table``); ``rules_document`` wraps them in the group Prometheus loads from
``alerts.yml``. Every rule is a *signal* (a PromQL expression that has data whenever its
metrics exist) compared with a threshold, so a test can evaluate the signal alone against a
live Prometheus and see that no metric name is wrong, firing or not.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from vllm_ledger.observe.alert_rule import AlertRule, Thresholds, runbook_link
from vllm_ledger.observe.alert_table import RULES

GROUP_NAME = "vllm-alerts"

# Where each alert's runbook_url points unless --runbook-url says otherwise: the runbook in
# this project's docs, one section per alert (anchor: the alert's name in lower case).
DEFAULT_RUNBOOK = "docs/runbook.md"

AlertSet = Literal["minimal", "full"]
ALERT_SETS: tuple[AlertSet, ...] = ("minimal", "full")
# The three to start with (``--alerts minimal``, observability's default; ``--alerts full``: all).
MINIMAL = ("KVCacheNearFull", "TTFTP99High", "GPUMemNearFull")
# The levels, lowest first: info an early sign (nobody is hurt yet: look during the day),
# warning users feel it or soon will, critical serving fails or is about to.
SEVERITIES = ("info", "warning", "critical")


def alert_rules(
    t: Thresholds | None = None, which: AlertSet = "full", runbook: str = DEFAULT_RUNBOOK
) -> list[AlertRule]:
    """The rules of ``which`` set, each linking to its section of ``runbook``."""
    t = t or Thresholds()
    rules = [rule(t) for rule in RULES]
    chosen = [r for r in rules if which == "full" or r.name in MINIMAL]
    return [replace(r, runbook_url=runbook_link(runbook, r.name)) for r in chosen]


def rules_document(
    t: Thresholds | None = None, which: AlertSet = "full", runbook: str = DEFAULT_RUNBOOK
) -> dict[str, Any]:
    """The content of alerts.yml."""
    rules = [r.to_rule() for r in alert_rules(t, which, runbook)]
    return {"groups": [{"name": GROUP_NAME, "rules": rules}]}


__all__ = [
    "ALERT_SETS",
    "DEFAULT_RUNBOOK",
    "GROUP_NAME",
    "MINIMAL",
    "SEVERITIES",
    "AlertSet",
    "alert_rules",
    "rules_document",
]
