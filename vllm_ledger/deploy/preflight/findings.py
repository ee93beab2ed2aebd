"""What a preflight rule sees and what it says: the ``Context`` every rule is given (the host
file, the gathered facts, and what follows from both), a ``Finding`` (one row: what was found,
what is needed, where that is written down, and the ``Result``), and the ``Preflight`` of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from vllm_ledger.deploy.host import Host
from vllm_ledger.deploy.preflight.facts import Facts
from vllm_ledger.observe.gpu import GpuReading

Result = Literal["pass", "warn", "BLOCKER", "n/a"]


@dataclass(frozen=True)
class Finding:
    check: str
    result: Result
    found: str
    needs: str
    source: str


@dataclass(frozen=True)
class Preflight:
    findings: tuple[Finding, ...]

    @property
    def blocked(self) -> bool:
        return any(f.result == "BLOCKER" for f in self.findings)


@dataclass(frozen=True)
class Context:
    """What every rule sees: the host file, the facts, and what follows from both."""

    host: Host
    facts: Facts
    bot_user: str | None = None

    @property
    def cpu_serving(self) -> bool:
        return self.host.gpus == ()

    @property
    def tp(self) -> int:
        return self.host.tensor_parallel_size or 1

    @property
    def dp(self) -> int:
        return self.host.data_parallel_size or 1

    @property
    def chosen(self) -> list[GpuReading]:
        """The GPUs the host file asks for, among those NVML sees."""
        g = self.facts.gpu
        if self.cpu_serving or g.unavailable is not None:
            return []
        if self.host.gpus == "all":
            return list(g.gpus)
        wanted = [int(i) for i in self.host.gpus]
        return [r for r in g.gpus if r.index in wanted]


Rule = Callable[[Context], list[Finding]]
