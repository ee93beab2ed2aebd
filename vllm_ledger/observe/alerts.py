"""The alert rules: the write-up's three, the queue's leading indicator, and two for the ledger.

Pure: ``alert_rules(thresholds)`` returns the rules as data; ``rules_document`` wraps them in
the group Prometheus loads from ``alerts.yml``. Every rule is a *signal* (a PromQL expression
that has data whenever its metrics exist) compared with a threshold, so a test can evaluate the
signal alone against a live Prometheus and see that no metric name is wrong, firing or not.

Metric names are those vLLM 0.32 really exports (``vllm:kv_cache_usage_perc``, not the older
``vllm:gpu_cache_usage_perc``), DCGM's, and the ledger exporter's (``vllm_ledger_*``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

GROUP_NAME = "vllm-alerts"

# GPU memory in use as a fraction, from DCGM (MiB figures) or, on a host without DCGM, from the
# ledger exporter's NVML gauges. `or on (UUID)` keeps DCGM's series and adds NVML's only for GPUs
# DCGM does not report, so a GPU never appears twice.
GPU_MEMORY_FRACTION = (
    "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)"
    " or on (UUID) vllm_ledger_gpu_memory_used_bytes / vllm_ledger_gpu_memory_total_bytes"
)

_DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")


def check_duration(value: str) -> str:
    """A Prometheus duration such as 30s, 5m, 1h30m; raises ValueError otherwise."""
    if not _DURATION.match(value):
        raise ValueError(f"{value!r} is not a Prometheus duration like 30s, 5m or 1h")
    return value


@dataclass(frozen=True)
class Thresholds:
    """Where each alert trips and for how long it must hold. Defaults are the write-up's."""

    kv_cache_fraction: float = 0.90
    kv_cache_for: str = "10m"
    ttft_p99_seconds: float = 3.0
    ttft_for: str = "5m"
    gpu_memory_fraction: float = 0.95
    gpu_memory_for: str = "5m"
    queue_waiting: float = 0.0
    queue_for: str = "5m"
    ledger_uncovered_seconds: float = 60.0
    ledger_uncovered_range: str = "15m"
    ledger_writer_for: str = "2m"


@dataclass(frozen=True)
class AlertRule:
    name: str
    signal: str  # PromQL with data whenever its metrics exist
    op: str
    threshold: float
    for_: str
    severity: str
    summary: str
    action: str
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def expr(self) -> str:
        return f"({self.signal}) {self.op} {_number(self.threshold)}"

    def to_rule(self) -> dict[str, Any]:
        rule: dict[str, Any] = {"alert": self.name, "expr": self.expr}
        if self.for_ not in ("0s", "0m"):
            rule["for"] = self.for_
        rule["labels"] = {"severity": self.severity, **self.labels}
        rule["annotations"] = {"summary": self.summary, "action": self.action}
        return rule


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _percent(fraction: float) -> str:
    return f"{fraction * 100:g}%"


def alert_rules(t: Thresholds | None = None) -> list[AlertRule]:
    t = t or Thresholds()
    return [
        AlertRule(
            "KVCacheNearFull",
            f"avg_over_time(vllm:kv_cache_usage_perc[{t.kv_cache_for}])",
            ">",
            t.kv_cache_fraction,
            t.kv_cache_for,
            "warning",
            summary=(
                f"KV cache of {{{{ $labels.instance }}}} (engine {{{{ $labels.engine }}}}) "
                f"above {_percent(t.kv_cache_fraction)} for {t.kv_cache_for}: "
                "capacity overdrawn, preemption is next"
            ),
            action="Lower --max-model-len or serve a quantized model.",
        ),
        AlertRule(
            "TTFTP99High",
            "histogram_quantile(0.99, sum by (le) "
            "(rate(vllm:time_to_first_token_seconds_bucket[5m])))",
            ">",
            t.ttft_p99_seconds,
            t.ttft_for,
            "warning",
            summary=(
                f"Time to first token P99 above {_number(t.ttft_p99_seconds)} s "
                f"for {t.ttft_for}: users already feel it"
            ),
            action="Check the queue (vllm:num_requests_waiting) and rate-limit upstream.",
        ),
        AlertRule(
            "GPUMemNearFull",
            GPU_MEMORY_FRACTION,
            ">",
            t.gpu_memory_fraction,
            t.gpu_memory_for,
            "critical",
            summary=(
                f"GPU {{{{ $labels.gpu }}}} ({{{{ $labels.UUID }}}}) on "
                f"{{{{ $labels.instance }}}} has less than "
                f"{_percent(1 - t.gpu_memory_fraction)} memory free for "
                f"{t.gpu_memory_for}: out-of-memory is near"
            ),
            action="Check whether another process has squeezed onto the card (nvidia-smi).",
        ),
        AlertRule(
            "QueueBuildUp",
            "sum(vllm:num_requests_waiting)",
            ">",
            t.queue_waiting,
            t.queue_for,
            "warning",
            summary=(
                f"Requests have been waiting for {t.queue_for}: "
                "TTFT will climb within minutes (the leading indicator)"
            ),
            action=(
                "Find the cause before users do: KV cache full (see KVCacheNearFull), "
                "a traffic spike (rate-limit upstream) or too small "
                "--max-num-seqs / --max-num-batched-tokens; add capacity if it persists."
            ),
        ),
        AlertRule(
            "LedgerWindowIncomplete",
            'delta(vllm_ledger_window_uncovered_seconds{window="total"}'
            f"[{t.ledger_uncovered_range}])",
            ">",
            t.ledger_uncovered_seconds,
            "0s",
            "warning",
            summary=(
                f"The ledger read by {{{{ $labels.instance }}}} could not vouch for more "
                f"than {_number(t.ledger_uncovered_seconds)} s of the last "
                f"{t.ledger_uncovered_range}: its windows are incomplete"
            ),
            action=(
                "Run `vllm-ledger report` for the uncovered seconds and their problem codes; "
                "if vLLM was stopped on purpose, silence this; otherwise restart the instance "
                "whose writer stopped and check VLLM_LEDGER_DIR and the disk."
            ),
        ),
        AlertRule(
            "LedgerWriterMissing",
            "vllm_ledger_writers_expected - vllm_ledger_writers_alive",
            ">",
            0,
            t.ledger_writer_for,
            "warning",
            summary=(
                f"vLLM instance {{{{ $labels.ledger_instance }}}} has an expected ledger "
                f"writer missing or stale for {t.ledger_writer_for}: its tokens are not "
                "all being recorded"
            ),
            action=(
                "Check that every API process of that vLLM loads the plugin "
                "(VLLM_LEDGER_DIR, PYTHONPATH or the installed package) and that the ledger "
                "disk is writable; `vllm-ledger report` names the writer and its state."
            ),
        ),
    ]


def rules_document(t: Thresholds | None = None) -> dict[str, Any]:
    """The content of alerts.yml."""
    return {"groups": [{"name": GROUP_NAME, "rules": [r.to_rule() for r in alert_rules(t)]}]}


__all__ = [
    "GPU_MEMORY_FRACTION",
    "AlertRule",
    "Thresholds",
    "alert_rules",
    "check_duration",
    "rules_document",
]
