"""deploy/preflight/softwarerules.py: the rows on the software vLLM runs on (the rows fed with
whole facts are in tests/unit/deploy/test_preflight_system.py)."""

from __future__ import annotations

import pytest

from vllm_ledger.deploy.host import parse_host
from vllm_ledger.deploy.preflight.facts import Facts, GpuFacts
from vllm_ledger.deploy.preflight.findings import Context
from vllm_ledger.deploy.preflight.model import ModelSize
from vllm_ledger.deploy.preflight.softwarerules import (
    LAUNCH_REQUIREMENTS,
    cudnn,
    python,
    python_satisfies,
    toolkit,
)

FACTS = Facts(
    gpu=GpuFacts(unavailable="no NVML"),
    model=ModelSize(None, None, "hub name"),
    cores=8,
    cpu_flags={"avx2"},
    mem={},
    mountinfo="",
    port=None,
    docker=None,
    clock=(True, "timedatectl"),
)


@pytest.mark.parametrize(
    ("spec", "ok"),
    [(">=3.10,<3.14", True), ("<3.12", False), ("==3.12.*", True), ("~=3.11", True), ("^3", None)],
)
def test_requires_python_clauses(spec: str, ok: bool | None) -> None:
    assert python_satisfies(spec, (3, 12, 3)) is ok


def test_rows_that_do_not_apply_say_why() -> None:
    docker = Context(parse_host({"model": "m", "image": "vllm/vllm-openai:v1"}), FACTS)
    (row,) = python(docker)
    assert (row.result, row.found) == ("n/a", "docker mode: the image brings its own")
    (row,) = toolkit(docker)
    assert (row.result, row.found) == ("n/a", "docker mode")
    (row,) = cudnn(docker)
    assert (row.result, row.source) == ("n/a", f"{LAUNCH_REQUIREMENTS} (cuDNN: informational)")
