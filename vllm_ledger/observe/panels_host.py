"""The dashboard's rows on the machine, per host: its GPUs (DCGM's readings, or the ledger
exporter's NVML gauges where DCGM reports none) and the host with its containers (the node
exporter's CPU, memory, the ledger's disk and the network; cAdvisor's vLLM containers).
"""

from __future__ import annotations

from vllm_ledger.names import (
    DCGM_FB_FREE,
    DCGM_FB_USED,
    DCGM_GPU_TEMP,
    DCGM_GPU_UTIL,
    DCGM_POWER_USAGE,
    LEDGER_GPU_MEMORY_TOTAL_BYTES,
    LEDGER_GPU_MEMORY_USED_BYTES,
    LEDGER_GPU_POWER_WATTS,
    LEDGER_GPU_TEMPERATURE_CELSIUS,
    LEDGER_GPU_UTILIZATION_PERCENT,
)
from vllm_ledger.observe.panels import G, Panel, Row
from vllm_ledger.observe.signals import (
    CADVISOR_JOB,
    CONTAINER_CPU_USAGE_SECONDS_TOTAL,
    CONTAINER_MEMORY_WORKING_SET_BYTES,
    DEFAULT_LEDGER_MOUNTPOINT,
    NODE_CPU_SECONDS_TOTAL,
    NODE_JOB,
    NODE_NETWORK_RECEIVE_BYTES_TOTAL,
    NODE_NETWORK_TRANSMIT_BYTES_TOTAL,
    disk_free_fraction,
    memory_available_fraction,
)

VLLM_CONTAINERS = 'name=~"vllm.*"'  # docker's container name: the host file's vllm-PORT or own


def _gpu(dcgm: str, nvml: str) -> str:
    return f"{dcgm}{{{G}}} or on (UUID) {nvml}{{{G}}}"


GPU_ROW: Row = (
    "GPUs: is the card healthy (per host)",
    [
        Panel(
            "GPU utilisation",
            "timeseries",
            "percent",
            [
                (
                    _gpu(DCGM_GPU_UTIL, LEDGER_GPU_UTILIZATION_PERCENT),
                    "{{instance}} GPU {{gpu}}",
                )
            ],
            6,
        ),
        Panel(
            "GPU memory used",
            "timeseries",
            "percentunit",
            [
                (
                    f"{DCGM_FB_USED}{{{G}}} / ({DCGM_FB_USED}{{{G}}} + "
                    f"{DCGM_FB_FREE}{{{G}}}) or on (UUID) "
                    f"{LEDGER_GPU_MEMORY_USED_BYTES}{{{G}}} / "
                    f"{LEDGER_GPU_MEMORY_TOTAL_BYTES}{{{G}}}",
                    "{{instance}} GPU {{gpu}}",
                )
            ],
            6,
        ),
        Panel(
            "GPU temperature",
            "timeseries",
            "celsius",
            [
                (
                    _gpu(DCGM_GPU_TEMP, LEDGER_GPU_TEMPERATURE_CELSIUS),
                    "{{instance}} GPU {{gpu}}",
                )
            ],
            6,
        ),
        Panel(
            "GPU power",
            "timeseries",
            "watt",
            [
                (
                    _gpu(DCGM_POWER_USAGE, LEDGER_GPU_POWER_WATTS),
                    "{{instance}} GPU {{gpu}}",
                )
            ],
            6,
        ),
    ],
)

HOST_ROW_TITLE = "Host: CPU, memory, the ledger's disk, network (per host)"
NIC = f'job="{NODE_JOB}",device!="lo",{G}'  # every interface but loopback

HOST_CPU = Panel(
    "Host CPU busy",
    "timeseries",
    "percentunit",
    [
        (
            "1 - avg by (instance) "
            f'(rate({NODE_CPU_SECONDS_TOTAL}{{job="{NODE_JOB}",mode="idle",{G}}}[5m]))',
            "{{instance}}",
        )
    ],
    6,
)
HOST_MEMORY = Panel(
    "Host memory available",
    "timeseries",
    "percentunit",
    [(memory_available_fraction(G), "{{instance}}")],
    6,
    "MemAvailable / MemTotal; HostMemoryPressure trips below its threshold.",
)
HOST_NETWORK = Panel(
    "Host network",
    "timeseries",
    "Bps",
    [
        (
            f"sum by (instance) (rate({NODE_NETWORK_RECEIVE_BYTES_TOTAL}{{{NIC}}}[5m]))",
            "{{instance}} in",
        ),
        (
            f"sum by (instance) (rate({NODE_NETWORK_TRANSMIT_BYTES_TOTAL}{{{NIC}}}[5m]))",
            "{{instance}} out",
        ),
    ],
    6,
)
CONTAINER_CPU = Panel(
    "vLLM container CPU",
    "timeseries",
    "none",
    [
        (
            "sum by (instance, name) "
            f'(rate({CONTAINER_CPU_USAGE_SECONDS_TOTAL}{{job="{CADVISOR_JOB}",{VLLM_CONTAINERS},{G}}}[5m]))',
            "{{name}}",
        )
    ],
    12,
    "Cores in use by each container named vllm* (cAdvisor).",
)
CONTAINER_MEMORY = Panel(
    "vLLM container memory",
    "timeseries",
    "bytes",
    [
        (
            "sum by (instance, name) "
            f'({CONTAINER_MEMORY_WORKING_SET_BYTES}{{job="{CADVISOR_JOB}",{VLLM_CONTAINERS},{G}}})',
            "{{name}}",
        )
    ],
    12,
    "Working set of each container named vllm* (cAdvisor): what the kernel counts "
    "against a memory limit.",
)


def ledger_disk(ledger_mountpoint: str) -> Panel:
    """The free share of the file system holding the ledger root, at ``ledger_mountpoint``."""
    return Panel(
        "Ledger disk free",
        "timeseries",
        "percentunit",
        [(disk_free_fraction(ledger_mountpoint, G), "{{instance}} {{mountpoint}}")],
        6,
        f"The file system at {ledger_mountpoint} (holding the ledger root); "
        "LedgerDiskNearFull trips below its threshold.",
    )


def host_row(ledger_mountpoint: str = DEFAULT_LEDGER_MOUNTPOINT) -> Row:
    """The host and its containers, per host: the node exporter's CPU, memory, the ledger's
    disk and the network; cAdvisor's CPU and memory of the vLLM containers."""
    return (
        HOST_ROW_TITLE,
        [
            HOST_CPU,
            HOST_MEMORY,
            ledger_disk(ledger_mountpoint),
            HOST_NETWORK,
            CONTAINER_CPU,
            CONTAINER_MEMORY,
        ],
    )


__all__ = ["GPU_ROW", "host_row"]
