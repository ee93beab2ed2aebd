"""What the rules and the dashboard read (observe/signals.py): the shared PromQL signals."""

from __future__ import annotations

from vllm_ledger.observe.signals import (
    GPU_MEMORY_FRACTION,
    GPU_TEMPERATURE,
    NODE_JOB,
    VLLM_JOB,
    disk_free_fraction,
    http_error_fraction,
    memory_available_fraction,
)


def test_the_error_share_is_zero_rather_than_empty_before_the_first_5xx() -> None:
    expr = http_error_fraction()
    assert f'job="{VLLM_JOB}"' in expr
    assert " or 0 * " in expr
    assert 'job="vllm",instance=~"x"' in http_error_fraction('instance=~"x"')


def test_the_disk_signal_escapes_the_mount_point_as_a_label_value() -> None:
    expr = disk_free_fraction('/a"b\\c')
    assert 'mountpoint="/a\\"b\\\\c"' in expr
    assert expr.count(f'job="{NODE_JOB}"') == 2  # available / size, the same series
    assert disk_free_fraction("/", "x").count(",x}") == 2


def test_memory_available_is_a_share_of_the_total() -> None:
    assert memory_available_fraction() == (
        'node_memory_MemAvailable_bytes{job="node"} / node_memory_MemTotal_bytes{job="node"}'
    )


def test_a_gpu_is_read_from_dcgm_or_else_from_nvml_never_twice() -> None:
    assert " or on (UUID) " in GPU_MEMORY_FRACTION
    assert " or on (UUID) " in GPU_TEMPERATURE
