"""What the alert rules and the dashboard read from Prometheus: the job names of the generated
prometheus.yml, the node exporter's and cAdvisor's series, and the PromQL signals both build on
(GPU memory and temperature, the HTTP error share, the ledger's disk and the host's memory).

Metric names are those vLLM 0.32 really exports (``vllm:kv_cache_usage_perc``, not the older
``vllm:gpu_cache_usage_perc``), its API server's (``http_requests_total`` from
prometheus-fastapi-instrumentator, status grouped as ``2xx``/``5xx``), DCGM's, the ledger
exporter's (``vllm_ledger_*``), the node exporter's and cAdvisor's.
"""

from __future__ import annotations

from vllm_ledger.names import (
    DCGM_FB_FREE,
    DCGM_FB_USED,
    DCGM_GPU_TEMP,
    HTTP_REQUESTS_TOTAL,
    LEDGER_GPU_MEMORY_TOTAL_BYTES,
    LEDGER_GPU_MEMORY_USED_BYTES,
    LEDGER_GPU_TEMPERATURE_CELSIUS,
)

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


__all__ = [
    "CADVISOR_JOB",
    "CONTAINER_CPU_USAGE_SECONDS_TOTAL",
    "CONTAINER_MEMORY_WORKING_SET_BYTES",
    "DCGM_JOB",
    "DEFAULT_LEDGER_MOUNTPOINT",
    "EXPORTER_JOB",
    "GPU_MEMORY_FRACTION",
    "GPU_TEMPERATURE",
    "NODE_CPU_SECONDS_TOTAL",
    "NODE_JOB",
    "NODE_NETWORK_RECEIVE_BYTES_TOTAL",
    "NODE_NETWORK_TRANSMIT_BYTES_TOTAL",
    "VLLM_JOB",
    "disk_free_fraction",
    "http_error_fraction",
    "memory_available_fraction",
]
