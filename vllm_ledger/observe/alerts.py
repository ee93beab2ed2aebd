"""The alert rules, one alert per instance: the three to start with (docs/observability.md),
the targets' health, GPU heat, the error rate, the queue's leading indicator, and two for the
ledger. Each rule has a ``severity`` of ``SEVERITIES``: ``info`` for an early sign (the queue
building), ``warning``, ``critical``; Alertmanager routes each level at its own pace.

Pure: ``alert_rules(thresholds)`` returns the rules as data; ``rules_document`` wraps them in
the group Prometheus loads from ``alerts.yml``. Every rule is a *signal* (a PromQL expression
that has data whenever its metrics exist) compared with a threshold, so a test can evaluate the
signal alone against a live Prometheus and see that no metric name is wrong, firing or not.

No rule sums over the fleet: each aggregation keeps ``instance`` (Prometheus's target label),
``model_name`` where the metric has one, and ``ledger_instance`` (the ledger's HOST:PORT, as
``report --by instance`` prints it) for the ledger's own rules, so an alert names the instance
to look at and Alertmanager can route and group by it.

The host's own rules read the node exporter (``node_*``, job ``node``): the disk that holds the
ledger nearly full (on ``Thresholds.ledger_mountpoint``) and host memory pressure.

Metric names are those vLLM 0.32 really exports (``vllm:kv_cache_usage_perc``, not the older
``vllm:gpu_cache_usage_perc``), its API server's (``http_requests_total`` from
prometheus-fastapi-instrumentator, status grouped as ``2xx``/``5xx``), DCGM's, and the ledger
exporter's (``vllm_ledger_*``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from vllm_ledger.names import (
    DCGM_FB_FREE,
    DCGM_FB_USED,
    DCGM_GPU_TEMP,
    HTTP_REQUESTS_TOTAL,
    KV_CACHE_FULL_FRACTION,
    LEDGER_GPU_MEMORY_TOTAL_BYTES,
    LEDGER_GPU_MEMORY_USED_BYTES,
    LEDGER_GPU_TEMPERATURE_CELSIUS,
    LEDGER_WINDOW_UNCOVERED_SECONDS,
    LEDGER_WRITERS_ALIVE,
    LEDGER_WRITERS_EXPECTED,
    TTFT_P99_SLOW_SECONDS,
    VLLM_KV_CACHE_USAGE_PERC,
    VLLM_NUM_REQUESTS_WAITING,
    VLLM_REQUEST_SUCCESS_TOTAL,
    VLLM_TIME_TO_FIRST_TOKEN_SECONDS,
)

GROUP_NAME = "vllm-alerts"

# Prometheus job names of the generated prometheus.yml; the rules select targets by them.
VLLM_JOB = "vllm"
DCGM_JOB = "dcgm"
EXPORTER_JOB = "vllm-ledger"
NODE_JOB = "node"  # the node exporter: the host's CPU, memory, disks and network
CADVISOR_JOB = "cadvisor"  # cAdvisor: each container's CPU and memory

# The node exporter's and cAdvisor's series the rules and the dashboard read.
NODE_FILESYSTEM_AVAIL_BYTES = "node_filesystem_avail_bytes"
NODE_FILESYSTEM_SIZE_BYTES = "node_filesystem_size_bytes"
NODE_MEMORY_AVAILABLE_BYTES = "node_memory_MemAvailable_bytes"
NODE_MEMORY_TOTAL_BYTES = "node_memory_MemTotal_bytes"
NODE_CPU_SECONDS_TOTAL = "node_cpu_seconds_total"
NODE_NETWORK_RECEIVE_BYTES_TOTAL = "node_network_receive_bytes_total"
NODE_NETWORK_TRANSMIT_BYTES_TOTAL = "node_network_transmit_bytes_total"
CONTAINER_CPU_USAGE_SECONDS_TOTAL = "container_cpu_usage_seconds_total"
CONTAINER_MEMORY_WORKING_SET_BYTES = "container_memory_working_set_bytes"
# The mount point of the file system holding the ledger root, as the node exporter reports it
# (a node exporter in a container run with --path.rootfs=/host reports the host's own paths).
DEFAULT_LEDGER_MOUNTPOINT = "/"

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

# GPU memory in use as a fraction, from DCGM (MiB figures) or, on a host without DCGM, from the
# ledger exporter's NVML gauges. `or on (UUID)` keeps DCGM's series and adds NVML's only for GPUs
# DCGM does not report, so a GPU never appears twice.
GPU_MEMORY_FRACTION = (
    f"{DCGM_FB_USED} / ({DCGM_FB_USED} + {DCGM_FB_FREE})"
    f" or on (UUID) {LEDGER_GPU_MEMORY_USED_BYTES} / {LEDGER_GPU_MEMORY_TOTAL_BYTES}"
)
GPU_TEMPERATURE = f"{DCGM_GPU_TEMP} or on (UUID) {LEDGER_GPU_TEMPERATURE_CELSIUS}"


def http_error_fraction(matchers: str = "") -> str:
    """The share of HTTP requests answered 5xx per instance (``matchers`` narrows the targets).

    The ``or 0 * ...`` makes it 0 rather than empty while an instance has served no 5xx at all:
    the instrumentator creates the 5xx series on the first one.
    """
    sel = f'job="{VLLM_JOB}"' + (f",{matchers}" if matchers else "")
    every = f"sum by (instance) (rate({HTTP_REQUESTS_TOTAL}{{{sel}}}[5m]))"
    errors = f'sum by (instance) (rate({HTTP_REQUESTS_TOTAL}{{{sel},status=~"5.."}}[5m]))'
    return f"({errors} or 0 * {every}) / {every}"


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


def disk_free_fraction(mountpoint: str, matchers: str = "") -> str:
    """The share of the file system at ``mountpoint`` still available to unprivileged users."""
    sel = f'job="{NODE_JOB}",mountpoint="{_label_value(mountpoint)}"' + (
        f",{matchers}" if matchers else ""
    )
    return f"{NODE_FILESYSTEM_AVAIL_BYTES}{{{sel}}} / {NODE_FILESYSTEM_SIZE_BYTES}{{{sel}}}"


def memory_available_fraction(matchers: str = "") -> str:
    """The share of the host's memory available without swapping (MemAvailable / MemTotal)."""
    sel = f'job="{NODE_JOB}"' + (f",{matchers}" if matchers else "")
    return f"{NODE_MEMORY_AVAILABLE_BYTES}{{{sel}}} / {NODE_MEMORY_TOTAL_BYTES}{{{sel}}}"


def _label_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


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
        return f"({self.signal}) {self.op} {_number(self.threshold)}"

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


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _percent(fraction: float) -> str:
    return f"{fraction * 100:g}%"


def runbook_link(runbook: str, name: str) -> str:
    return f"{runbook}#{name.lower()}"


def alert_rules(
    t: Thresholds | None = None, which: AlertSet = "full", runbook: str = DEFAULT_RUNBOOK
) -> list[AlertRule]:
    """The rules of ``which`` set, each linking to its section of ``runbook``."""
    t = t or Thresholds()
    rules = [
        AlertRule(
            "KVCacheNearFull",
            f"avg_over_time({VLLM_KV_CACHE_USAGE_PERC}[{t.kv_cache_for}])",
            ">",
            t.kv_cache_fraction,
            t.kv_cache_for,
            "warning",
            summary=(
                "KV cache of {{ $labels.model_name }} on {{ $labels.instance }} "
                f"(engine {{{{ $labels.engine }}}}) above {_percent(t.kv_cache_fraction)} "
                f"for {t.kv_cache_for}"
            ),
            description=(
                "Capacity is overdrawn and preemption is next: requests will be recomputed and "
                "throughput falls off a cliff. Lower --max-model-len or serve a quantized model."
            ),
        ),
        AlertRule(
            "TTFTP99High",
            "histogram_quantile(0.99, sum by (instance, model_name, le) "
            f"(rate({VLLM_TIME_TO_FIRST_TOKEN_SECONDS}_bucket[5m])))",
            ">",
            t.ttft_p99_seconds,
            t.ttft_for,
            "warning",
            summary=(
                "Time to first token P99 of {{ $labels.model_name }} on {{ $labels.instance }} "
                f"above {_number(t.ttft_p99_seconds)} s for {t.ttft_for}"
            ),
            description=(
                f"Users already feel it. Check the queue ({VLLM_NUM_REQUESTS_WAITING}) and "
                "rate-limit upstream."
            ),
        ),
        AlertRule(
            "GPUMemNearFull",
            GPU_MEMORY_FRACTION,
            ">",
            t.gpu_memory_fraction,
            t.gpu_memory_for,
            "critical",
            summary=(
                "GPU {{ $labels.gpu }} ({{ $labels.UUID }}) on {{ $labels.instance }} has less "
                f"than {_percent(1 - t.gpu_memory_fraction)} memory free for {t.gpu_memory_for}"
            ),
            description=(
                "Out-of-memory is near. Check whether another process has squeezed onto the "
                "card (nvidia-smi)."
            ),
        ),
        AlertRule(
            "VLLMTargetDown",
            f'up{{job="{VLLM_JOB}"}}',
            "==",
            0,
            t.down_for,
            "critical",
            summary=f"vLLM {{{{ $labels.instance }}}} has not answered a scrape for {t.down_for}",
            description=(
                "The server is down, restarting, or unreachable from Prometheus: no request "
                "is served there. Check the process and its log, then /health and /metrics "
                "from the Prometheus host."
            ),
        ),
        AlertRule(
            "LedgerExporterDown",
            f'up{{job="{EXPORTER_JOB}"}}',
            "==",
            0,
            t.down_for,
            "warning",
            summary=(
                f"The ledger exporter {{{{ $labels.instance }}}} has been absent for {t.down_for}"
            ),
            description=(
                "Prometheus cannot scrape `vllm-ledger exporter`: the ledger's figures and its "
                "own alerts are blind there (the ledger itself keeps recording inside vLLM). "
                "Restart the exporter; check its --listen address from the Prometheus host."
            ),
        ),
        AlertRule(
            "GPUTemperatureHigh",
            GPU_TEMPERATURE,
            ">",
            t.gpu_temperature_celsius,
            t.gpu_temperature_for,
            "critical",
            summary=(
                "GPU {{ $labels.gpu }} ({{ $labels.UUID }}) on {{ $labels.instance }} above "
                f"{_number(t.gpu_temperature_celsius)} C for {t.gpu_temperature_for}"
            ),
            description=(
                "The card will throttle its clocks (throughput drops) and may shut down. Check "
                "the fans, the airflow and the room; nvidia-smi -q -d TEMPERATURE,PERFORMANCE "
                "shows whether it is already slowing down."
            ),
        ),
        AlertRule(
            "RequestErrorRateHigh",
            http_error_fraction(),
            ">",
            t.error_fraction,
            t.error_for,
            "critical",
            summary=(
                f"More than {_percent(t.error_fraction)} of HTTP requests to "
                f"{{{{ $labels.instance }}}} answered 5xx for {t.error_for}"
            ),
            description=(
                "Clients are getting server errors. The vLLM log says why (engine error, "
                f"KV transfer failure, out of memory); {VLLM_REQUEST_SUCCESS_TOTAL}"
                '{finished_reason="error"} shows which model.'
            ),
        ),
        AlertRule(
            "QueueBuildUp",
            f"sum by (instance, model_name) ({VLLM_NUM_REQUESTS_WAITING})",
            ">",
            t.queue_waiting,
            t.queue_for,
            "info",
            summary=(
                "Requests for {{ $labels.model_name }} have been waiting on "
                f"{{{{ $labels.instance }}}} for {t.queue_for}"
            ),
            description=(
                "The leading indicator: TTFT will climb within minutes. Find the cause before "
                "users do: KV cache full (see KVCacheNearFull), a traffic spike (rate-limit "
                "upstream) or too small --max-num-seqs / --max-num-batched-tokens; add "
                "capacity if it persists."
            ),
        ),
        AlertRule(
            "LedgerWindowIncomplete",
            f'delta({LEDGER_WINDOW_UNCOVERED_SECONDS}{{window="total",ledger_instance!=""}}'
            f"[{t.ledger_uncovered_range}])",
            ">",
            t.ledger_uncovered_seconds,
            "0s",
            "warning",
            summary=(
                "The ledger of {{ $labels.ledger_instance }} (exporter {{ $labels.instance }}) "
                f"could not vouch for more than {_number(t.ledger_uncovered_seconds)} s of "
                f"the last {t.ledger_uncovered_range}"
            ),
            description=(
                "Its windows are incomplete. Run `vllm-ledger report --by instance` for the "
                "uncovered seconds and their problem codes; if vLLM was stopped on purpose, "
                "silence this; otherwise restart the instance whose writer stopped and check "
                "VLLM_LEDGER_DIR and the disk."
            ),
        ),
        AlertRule(
            "LedgerWriterMissing",
            f"{LEDGER_WRITERS_EXPECTED} - {LEDGER_WRITERS_ALIVE}",
            ">",
            0,
            t.ledger_writer_for,
            "warning",
            summary=(
                "vLLM instance {{ $labels.ledger_instance }} has an expected ledger writer "
                f"missing or stale for {t.ledger_writer_for}"
            ),
            description=(
                "Its tokens are not all being recorded. Check that every API process of that "
                "vLLM loads the plugin (VLLM_LEDGER_DIR, PYTHONPATH or the installed package) "
                "and that the ledger disk is writable; `vllm-ledger report` names the writer "
                "and its state."
            ),
        ),
        AlertRule(
            "LedgerDiskNearFull",
            disk_free_fraction(t.ledger_mountpoint),
            "<",
            t.disk_free_fraction,
            t.disk_for,
            "critical",
            summary=(
                "The ledger's file system {{ $labels.mountpoint }} ({{ $labels.device }}) on "
                f"{{{{ $labels.instance }}}} has less than {_percent(t.disk_free_fraction)} "
                f"free for {t.disk_for}"
            ),
            description=(
                "When it fills, the ledger's writes fail and its windows go incomplete, and "
                "vLLM's logs and the model cache stop growing too. Find what grew (du -xsh on "
                "that mount point), compact the ledger (`vllm-ledger compact`), then free or "
                "add space."
            ),
        ),
        AlertRule(
            "HostMemoryPressure",
            memory_available_fraction(),
            "<",
            t.memory_available_fraction,
            t.memory_for,
            "critical",
            summary=(
                "Host {{ $labels.instance }} has less than "
                f"{_percent(t.memory_available_fraction)} of its memory available for "
                f"{t.memory_for}"
            ),
            description=(
                "The kernel is about to swap or kill a process (vLLM's engine is the largest). "
                "Find what holds the memory (ps aux --sort=-rss | head); on a CPU host lower "
                "VLLM_CPU_KVCACHE_SPACE or --max-num-seqs."
            ),
        ),
    ]
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
    "CADVISOR_JOB",
    "DEFAULT_LEDGER_MOUNTPOINT",
    "DEFAULT_RUNBOOK",
    "EXPORTER_JOB",
    "GPU_MEMORY_FRACTION",
    "GPU_TEMPERATURE",
    "MINIMAL",
    "NODE_JOB",
    "SEVERITIES",
    "VLLM_JOB",
    "AlertRule",
    "AlertSet",
    "Thresholds",
    "alert_rules",
    "disk_free_fraction",
    "http_error_fraction",
    "memory_available_fraction",
    "rules_document",
]
