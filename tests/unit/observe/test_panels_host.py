"""The dashboard's rows on the machine (observe/panels_host.py): the GPUs and the host."""

from __future__ import annotations

from vllm_ledger.observe.panels import G
from vllm_ledger.observe.panels_host import GPU_ROW, host_row


def test_every_gpu_panel_reads_dcgm_or_else_nvml_on_the_chosen_hosts() -> None:
    title, panels = GPU_ROW
    assert title == "GPUs: is the card healthy (per host)"
    for p in panels:
        [(expr, _legend)] = p.targets
        assert " or on (UUID) " in expr, p.title
        assert G in expr, p.title


def test_the_disk_panel_watches_the_ledgers_mount_point() -> None:
    title, panels = host_row("/srv/ledger")
    assert title == "Host: CPU, memory, the ledger's disk, network (per host)"
    disk = {p.title: p for p in panels}["Ledger disk free"]
    [(expr, _legend)] = disk.targets
    assert 'mountpoint="/srv/ledger"' in expr
    assert "/srv/ledger" in disk.description


def test_the_host_row_is_the_same_panels_whatever_the_mount_point() -> None:
    a = [p.title for p in host_row("/")[1]]
    b = [p.title for p in host_row("/data")[1]]
    assert a == b
    assert len(a) == 6
    assert sum(p.width for p in host_row()[1]) == 48  # two lines of the 24-wide grid
