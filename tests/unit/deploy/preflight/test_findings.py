"""deploy/preflight/findings.py: what every rule sees (the Context) and what a preflight says."""

from __future__ import annotations

from typing import Any

from vllm_ledger.deploy.host import parse_host
from vllm_ledger.deploy.preflight.facts import Facts, GpuFacts
from vllm_ledger.deploy.preflight.findings import Context, Finding, Preflight
from vllm_ledger.deploy.preflight.model import ModelSize
from vllm_ledger.observe.gpu import GpuReading


def _gpu(index: int) -> GpuReading:
    return GpuReading(index, f"GPU-{index}", "NVIDIA L4", None, None, None, 24 * 10**9, None)


FACTS = Facts(
    gpu=GpuFacts(gpus=(_gpu(0), _gpu(1), _gpu(2))),
    model=ModelSize(None, None, "hub name"),
    cores=8,
    cpu_flags={"avx2"},
    mem={},
    mountinfo="",
    port=None,
    docker=None,
    clock=(True, "timedatectl"),
)


def _context(**host: Any) -> Context:
    return Context(parse_host({"model": "m", "mode": "bare", **host}), FACTS)


def test_the_gpus_the_host_file_asks_for_among_those_seen() -> None:
    assert [r.index for r in _context().chosen] == [0, 1, 2]
    assert [r.index for r in _context(gpus=[2, 5]).chosen] == [2]
    cpu = _context(gpus=[])
    assert (cpu.cpu_serving, cpu.chosen) == (True, [])
    parallel = _context(tensor_parallel_size=2, data_parallel_size=3)
    assert (parallel.tp, parallel.dp, _context().tp) == (2, 3, 1)


def test_a_preflight_is_blocked_by_any_blocker() -> None:
    ok = Finding("cpu", "pass", "8 cores", "4", "docs")
    blocker = Finding("port", "BLOCKER", "in use", "free", "docs")
    assert not Preflight((ok, Finding("clock", "warn", "?", "NTP", "docs"))).blocked
    assert Preflight((ok, blocker)).blocked
