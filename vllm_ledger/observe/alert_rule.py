"""One alert rule as data (``AlertRule``: a signal compared with a threshold, held for a
while, with its severity, its words and its runbook link) and the ``Thresholds`` the rules are
built from, with how a threshold is written in a rule and its summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vllm_ledger.names import KV_CACHE_FULL_FRACTION, TTFT_P99_SLOW_SECONDS
from vllm_ledger.observe.signals import DEFAULT_LEDGER_MOUNTPOINT


@dataclass(frozen=True)
class Thresholds:
    """Where each alert trips and for how long it must hold. Defaults are starting points
    (docs/runbook.md): down 1m, 85 C for 3m, 5 % errors for the rules beyond the first three."""

    kv_cache_fraction: float = KV_CACHE_FULL_FRACTION
    kv_cache_for: str = "10m"
    ttft_p99_seconds: float = TTFT_P99_SLOW_SECONDS
    ttft_for: str = "5m"
    gpu_memory_fraction: float = 0.95
    gpu_memory_for: str = "5m"
    queue_waiting: float = 0.0
    queue_for: str = "5m"
    down_for: str = "1m"
    gpu_temperature_celsius: float = 85.0
    gpu_temperature_for: str = "3m"
    error_fraction: float = 0.05
    error_for: str = "5m"
    ledger_uncovered_seconds: float = 60.0
    ledger_uncovered_range: str = "15m"
    ledger_writer_for: str = "2m"
    disk_free_fraction: float = 0.10
    disk_for: str = "10m"
    ledger_mountpoint: str = DEFAULT_LEDGER_MOUNTPOINT  # where LedgerDiskNearFull looks
    memory_available_fraction: float = 0.05
    memory_for: str = "5m"


@dataclass(frozen=True)
class AlertRule:
    name: str
    signal: str  # PromQL with data whenever its metrics exist
    op: str
    threshold: float
    for_: str
    severity: str
    summary: str  # one line, with the labels that name the instance
    description: str  # what it means and what to do
    runbook_url: str = ""
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def expr(self) -> str:
        return f"({self.signal}) {self.op} {plain_number(self.threshold)}"

    @property
    def anchor(self) -> str:
        """The runbook section's anchor: the heading ``## Name`` as GitHub and MkDocs make it."""
        return self.name.lower()

    def to_rule(self) -> dict[str, Any]:
        rule: dict[str, Any] = {"alert": self.name, "expr": self.expr}
        if self.for_ not in ("0s", "0m"):
            rule["for"] = self.for_
        rule["labels"] = {"severity": self.severity, **self.labels}
        rule["annotations"] = {
            "summary": self.summary,
            "description": self.description,
            "runbook_url": self.runbook_url,
        }
        return rule


def plain_number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def percent(fraction: float) -> str:
    return f"{fraction * 100:g}%"


def runbook_link(runbook: str, name: str) -> str:
    return f"{runbook}#{name.lower()}"


__all__ = ["AlertRule", "Thresholds", "percent", "plain_number", "runbook_link"]
