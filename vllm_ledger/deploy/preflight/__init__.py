"""Check a host before launch, from its host file: can this machine serve that model, there?

Two halves: ``facts.py`` reads this machine once (NVML, ``/proc``, ``statvfs``, a bind test,
Docker, the clock; the model through ``model.py``, vLLM's Python, cuDNN and the container
toolkit through ``software.py``), ``rules.py`` judges those facts against the host file, one
function per row, each naming where its requirement is written down
(docs/doctor.md#host-requirements).
``preflight`` is both; ``table`` renders the result through the one check table.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vllm_ledger.deploy.host import Host
from vllm_ledger.deploy.preflight.facts import (
    Facts,
    GpuFacts,
    _load_pynvml,
    can_access,
    cpu_facts,
    existing,
    gather,
    gpu_facts,
    meminfo,
    mount_of,
)
from vllm_ledger.deploy.preflight.findings import Finding, Preflight, Result
from vllm_ledger.deploy.preflight.model import ModelSize, model_size, safetensors_params
from vllm_ledger.deploy.preflight.rules import RULES, judge
from vllm_ledger.deploy.preflight.sizes import GIB, MIB


def preflight(
    host: Host,
    *,
    bot_user: str | None = None,
    nvml_load: Callable[[], Any] = _load_pynvml,
    proc: Path = Path("/proc"),
    run: Callable[..., Any] = subprocess.run,
) -> Preflight:
    """Gather this machine's facts and judge them against ``host``."""
    return judge(host, gather(host, nvml_load=nvml_load, proc=proc, run=run), bot_user)


def table(p: Preflight) -> list[str]:
    """One line per check: check, result, what was found, what is needed (and from where).
    Terminal-safe: a model path or host name with a control character is shown escaped."""
    from vllm_ledger.formats.checks import CheckRow, render

    rows = []
    for f in p.findings:
        needs = f" | needs {f.needs} ({f.source})" if f.needs else f" | ({f.source})"
        rows.append(CheckRow(f.check, f.result, f.found + needs))
    return render(rows, heading="found | needs (from)")


__all__ = [
    "GIB",
    "MIB",
    "RULES",
    "Facts",
    "Finding",
    "GpuFacts",
    "ModelSize",
    "Preflight",
    "Result",
    "can_access",
    "cpu_facts",
    "existing",
    "gather",
    "gpu_facts",
    "judge",
    "meminfo",
    "model_size",
    "mount_of",
    "preflight",
    "safetensors_params",
    "table",
]
