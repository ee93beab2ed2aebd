"""The alert rules as data: one definition per alert, in the runbook's order, each reading
its trip point and its hold from the ``Thresholds``.

No rule sums over the fleet: each aggregation keeps ``instance`` (Prometheus's target label),
``model_name`` where the metric has one, and ``ledger_instance`` (the ledger's HOST:PORT, as
``report --by instance`` prints it) for the ledger's own rules, so an alert names the instance
to look at and Alertmanager can route and group by it.

The host's own rules read the node exporter (``node_*``, job ``node``): the disk that holds the
ledger nearly full (on ``Thresholds.ledger_mountpoint``) and host memory pressure.
"""

from __future__ import annotations

from collections.abc import Callable

from vllm_ledger.names import (
    LEDGER_WINDOW_UNCOVERED_SECONDS,
    LEDGER_WRITERS_ALIVE,
    LEDGER_WRITERS_EXPECTED,
    VLLM_KV_CACHE_USAGE_PERC,
    VLLM_NUM_REQUESTS_WAITING,
    VLLM_REQUEST_SUCCESS_TOTAL,
    VLLM_TIME_TO_FIRST_TOKEN_SECONDS,
)
from vllm_ledger.observe.alert_rule import AlertRule, Thresholds, percent, plain_number
from vllm_ledger.observe.signals import (
    EXPORTER_JOB,
    GPU_MEMORY_FRACTION,
    GPU_TEMPERATURE,
    VLLM_JOB,
    disk_free_fraction,
    http_error_fraction,
    memory_available_fraction,
)


def kv_cache_near_full(t: Thresholds) -> AlertRule:
    return AlertRule(
        "KVCacheNearFull",
        f"avg_over_time({VLLM_KV_CACHE_USAGE_PERC}[{t.kv_cache_for}])",
        ">",
        t.kv_cache_fraction,
        t.kv_cache_for,
        "warning",
        summary=(
            "KV cache of {{ $labels.model_name }} on {{ $labels.instance }} "
            f"(engine {{{{ $labels.engine }}}}) above {percent(t.kv_cache_fraction)} "
            f"for {t.kv_cache_for}"
        ),
        description=(
            "Capacity is overdrawn and preemption is next: requests will be recomputed and "
            "throughput falls off a cliff. Lower --max-model-len or serve a quantized model."
        ),
    )


def ttft_p99_high(t: Thresholds) -> AlertRule:
    return AlertRule(
        "TTFTP99High",
        "histogram_quantile(0.99, sum by (instance, model_name, le) "
        f"(rate({VLLM_TIME_TO_FIRST_TOKEN_SECONDS}_bucket[5m])))",
        ">",
        t.ttft_p99_seconds,
        t.ttft_for,
        "warning",
        summary=(
            "Time to first token P99 of {{ $labels.model_name }} on {{ $labels.instance }} "
            f"above {plain_number(t.ttft_p99_seconds)} s for {t.ttft_for}"
        ),
        description=(
            f"Users already feel it. Check the queue ({VLLM_NUM_REQUESTS_WAITING}) and "
            "rate-limit upstream."
        ),
    )


def gpu_mem_near_full(t: Thresholds) -> AlertRule:
    return AlertRule(
        "GPUMemNearFull",
        GPU_MEMORY_FRACTION,
        ">",
        t.gpu_memory_fraction,
        t.gpu_memory_for,
        "critical",
        summary=(
            "GPU {{ $labels.gpu }} ({{ $labels.UUID }}) on {{ $labels.instance }} has less "
            f"than {percent(1 - t.gpu_memory_fraction)} memory free for {t.gpu_memory_for}"
        ),
        description=(
            "Out-of-memory is near. Check whether another process has squeezed onto the "
            "card (nvidia-smi)."
        ),
    )


def vllm_target_down(t: Thresholds) -> AlertRule:
    return AlertRule(
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
    )


def ledger_exporter_down(t: Thresholds) -> AlertRule:
    return AlertRule(
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
    )


def gpu_temperature_high(t: Thresholds) -> AlertRule:
    return AlertRule(
        "GPUTemperatureHigh",
        GPU_TEMPERATURE,
        ">",
        t.gpu_temperature_celsius,
        t.gpu_temperature_for,
        "critical",
        summary=(
            "GPU {{ $labels.gpu }} ({{ $labels.UUID }}) on {{ $labels.instance }} above "
            f"{plain_number(t.gpu_temperature_celsius)} C for {t.gpu_temperature_for}"
        ),
        description=(
            "The card will throttle its clocks (throughput drops) and may shut down. Check "
            "the fans, the airflow and the room; nvidia-smi -q -d TEMPERATURE,PERFORMANCE "
            "shows whether it is already slowing down."
        ),
    )


def request_error_rate_high(t: Thresholds) -> AlertRule:
    return AlertRule(
        "RequestErrorRateHigh",
        http_error_fraction(),
        ">",
        t.error_fraction,
        t.error_for,
        "critical",
        summary=(
            f"More than {percent(t.error_fraction)} of HTTP requests to "
            f"{{{{ $labels.instance }}}} answered 5xx for {t.error_for}"
        ),
        description=(
            "Clients are getting server errors. The vLLM log says why (engine error, "
            f"KV transfer failure, out of memory); {VLLM_REQUEST_SUCCESS_TOTAL}"
            '{finished_reason="error"} shows which model.'
        ),
    )


def queue_build_up(t: Thresholds) -> AlertRule:
    return AlertRule(
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
    )


def ledger_window_incomplete(t: Thresholds) -> AlertRule:
    return AlertRule(
        "LedgerWindowIncomplete",
        f'delta({LEDGER_WINDOW_UNCOVERED_SECONDS}{{window="total",ledger_instance!=""}}'
        f"[{t.ledger_uncovered_range}])",
        ">",
        t.ledger_uncovered_seconds,
        "0s",
        "warning",
        summary=(
            "The ledger of {{ $labels.ledger_instance }} (exporter {{ $labels.instance }}) "
            f"could not vouch for more than {plain_number(t.ledger_uncovered_seconds)} s of "
            f"the last {t.ledger_uncovered_range}"
        ),
        description=(
            "Its windows are incomplete. Run `vllm-ledger report --by instance` for the "
            "uncovered seconds and their problem codes; if vLLM was stopped on purpose, "
            "silence this; otherwise restart the instance whose writer stopped and check "
            "VLLM_LEDGER_DIR and the disk."
        ),
    )


def ledger_writer_missing(t: Thresholds) -> AlertRule:
    return AlertRule(
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
    )


def ledger_disk_near_full(t: Thresholds) -> AlertRule:
    return AlertRule(
        "LedgerDiskNearFull",
        disk_free_fraction(t.ledger_mountpoint),
        "<",
        t.disk_free_fraction,
        t.disk_for,
        "critical",
        summary=(
            "The ledger's file system {{ $labels.mountpoint }} ({{ $labels.device }}) on "
            f"{{{{ $labels.instance }}}} has less than {percent(t.disk_free_fraction)} "
            f"free for {t.disk_for}"
        ),
        description=(
            "When it fills, the ledger's writes fail and its windows go incomplete, and "
            "vLLM's logs and the model cache stop growing too. Find what grew (du -xsh on "
            "that mount point), compact the ledger (`vllm-ledger compact`), then free or "
            "add space."
        ),
    )


def host_memory_pressure(t: Thresholds) -> AlertRule:
    return AlertRule(
        "HostMemoryPressure",
        memory_available_fraction(),
        "<",
        t.memory_available_fraction,
        t.memory_for,
        "critical",
        summary=(
            "Host {{ $labels.instance }} has less than "
            f"{percent(t.memory_available_fraction)} of its memory available for "
            f"{t.memory_for}"
        ),
        description=(
            "The kernel is about to swap or kill a process (vLLM's engine is the largest). "
            "Find what holds the memory (ps aux --sort=-rss | head); on a CPU host lower "
            "VLLM_CPU_KVCACHE_SPACE or --max-num-seqs."
        ),
    )


# Every rule, in the order alerts.yml and the runbook list them.
RULES: tuple[Callable[[Thresholds], AlertRule], ...] = (
    kv_cache_near_full,
    ttft_p99_high,
    gpu_mem_near_full,
    vllm_target_down,
    ledger_exporter_down,
    gpu_temperature_high,
    request_error_rate_high,
    queue_build_up,
    ledger_window_incomplete,
    ledger_writer_missing,
    ledger_disk_near_full,
    host_memory_pressure,
)

__all__ = ["RULES"]
