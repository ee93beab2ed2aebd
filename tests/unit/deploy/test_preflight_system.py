"""Preflight's OS and kernel, Python, cuDNN and NVIDIA container toolkit rows: the pure rules
fed with facts, the facts' parsers on real text, and the real preflight on this machine (no GPU
here: the GPU rows say so)."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from vllm_ledger.deploy.host import parse_host
from vllm_ledger.deploy.preflight import Facts, GpuFacts, ModelSize, judge, preflight
from vllm_ledger.deploy.preflight.facts import SystemFacts, os_release
from vllm_ledger.deploy.preflight.findings import Finding
from vllm_ledger.deploy.preflight.software import (
    PythonFacts,
    cudnn_in_ldconfig,
    cudnn_text,
    interpreter_of,
)
from vllm_ledger.deploy.preflight.softwarerules import (
    LAUNCH_REQUIREMENTS,
    cudnn,
    python,
    python_satisfies,
    system,
    toolkit,
)

REPO = Path(__file__).resolve().parents[3]
VENV_VLLM = REPO / ".venv" / "bin" / "vllm"


def _host(**kw: Any) -> Any:
    return parse_host({"model": "/nowhere/model", "mode": "bare", "gpus": [], **kw})


PY = PythonFacts(
    "/opt/vllm/bin/vllm",
    "/opt/vllm/bin/python",
    (3, 12, 3),
    "vllm",
    "0.32.0",
    ">=3.10,<3.14",
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
    system=SystemFacts("Ubuntu 22.04.4 LTS", "Linux", "5.15.0-105-generic", "x86_64"),
    python=PythonFacts(
        "/opt/vllm/bin/vllm",
        "/opt/vllm/bin/python",
        (3, 12, 3),
        "vllm",
        "0.32.0",
        ">=3.10,<3.14",
    ),
    cudnn=("9.1.0", "ldconfig -p"),
)


def _one(rule: Any, facts: Facts, **host: Any) -> Finding:
    from vllm_ledger.deploy.preflight.findings import Context

    (f,) = rule(Context(_host(**host), facts))
    return f


def test_os_and_kernel_row() -> None:
    f = _one(system, FACTS)
    assert f == Finding(
        "os/kernel",
        "pass",
        "Ubuntu 22.04.4 LTS, kernel Linux 5.15.0-105-generic x86_64",
        "Linux on x86_64 or aarch64",
        f"{LAUNCH_REQUIREMENTS} (OS and kernel)",
    )
    mac = replace(FACTS, system=SystemFacts(None, "Darwin", "23.4.0", "arm64"))
    f = _one(system, mac)
    assert (f.result, f.found) == ("BLOCKER", "no /etc/os-release, kernel Darwin 23.4.0 arm64")
    power = replace(FACTS, system=SystemFacts("RHEL 9", "Linux", "5.14.0", "ppc64le"))
    assert _one(system, power).result == "warn"


def test_python_row_within_and_outside_requires_python() -> None:
    f = _one(python, FACTS)
    assert f.result == "pass"
    assert f.found == "Python 3.12.3 (/opt/vllm/bin/python), vllm 0.32.0"
    assert f.needs == "Python >=3.10,<3.14 (vllm's Requires-Python)"
    assert f.source.startswith(LAUNCH_REQUIREMENTS)
    old = replace(FACTS, python=replace(PY, version=(3, 9, 18)))
    assert _one(python, old).result == "BLOCKER"
    new = replace(FACTS, python=replace(PY, version=(3, 14, 0)))
    assert _one(python, new).result == "BLOCKER"
    odd = replace(FACTS, python=replace(PY, requires_python=">=3.10; extra"))
    assert _one(python, odd).result == "warn"
    none = replace(FACTS, python=replace(PY, requires_python=""))
    assert _one(python, none).found.endswith("declares no Requires-Python")


def test_python_row_without_vllm() -> None:
    missing = replace(FACTS, python=PythonFacts(None, problem="no vllm on PATH"))
    f = _one(python, missing)
    assert (f.result, f.found) == ("BLOCKER", "no vllm on PATH")
    bare_python = replace(FACTS, python=replace(PY, dist=None))
    f = _one(python, bare_python)
    assert (f.result, f.found) == (
        "BLOCKER",
        "Python 3.12.3 (/opt/vllm/bin/python): no vllm installed there",
    )
    docker = replace(FACTS, python=None)
    f = _one(python, docker, mode="docker", image="vllm/vllm-openai:v0.32.0")
    assert (f.result, f.found) == ("n/a", "docker mode: the image brings its own")


@pytest.mark.parametrize(
    ("spec", "version", "ok"),
    [
        (">=3.10,<3.14", (3, 13, 1), True),
        (">=3.10,<3.14", (3, 14, 0), False),
        (">=3.10,<3.14", (3, 9, 18), False),
        ("<3.15,>=3.11", (3, 11, 7), True),
        (">=3.9", (3, 9, 0), True),
        ("~=3.10", (3, 12, 0), True),
        ("~=3.10", (4, 0, 0), False),
        ("==3.11.*", (3, 11, 4), True),
        ("!=3.12.*", (3, 12, 1), False),
        ("> 3.8", (3, 8, 0), False),
        (">=3.10; python_version", (3, 11, 0), None),
        ("~=3", (3, 11, 0), None),
    ],
)
def test_python_satisfies(spec: str, version: tuple[int, int, int], ok: bool | None) -> None:
    assert python_satisfies(spec, version) is ok


def test_cudnn_row_is_information_never_a_blocker() -> None:
    f = _one(cudnn, FACTS)
    assert (f.result, f.found) == ("pass", "cuDNN 9.1.0 (ldconfig -p); informational")
    gone = replace(FACTS, cudnn=(None, "ldconfig -p, torch in /opt/vllm/bin/python"))
    f = _one(cudnn, gone)
    assert f.result == "n/a"
    assert f.found == "not found (ldconfig -p, torch in /opt/vllm/bin/python); informational"


def test_container_toolkit_row() -> None:
    docker = {"mode": "docker", "image": "vllm/vllm-openai:v0.32.0"}
    have = replace(FACTS, toolkit=(True, "nvidia-ctk at /usr/bin/nvidia-ctk"))
    f = _one(toolkit, have, **{**docker, "gpus": "all"})
    assert (f.result, f.found) == ("pass", "nvidia-ctk at /usr/bin/nvidia-ctk")
    lack = replace(FACTS, toolkit=(False, "no nvidia-ctk on PATH; docker runtimes: runc"))
    f = _one(toolkit, lack, **{**docker, "gpus": [0, 1]})
    assert f.result == "BLOCKER"
    assert f.needs == "nvidia-ctk on PATH or the nvidia runtime in docker info"
    assert _one(toolkit, lack, **docker).result == "n/a"  # gpus: [] -- CPU serving
    assert _one(toolkit, FACTS).found == "bare mode"


def test_judge_orders_the_new_rows() -> None:
    checks = [f.check for f in judge(_host(), FACTS).findings]
    assert checks[:2] == ["os/kernel", "python"]
    assert checks.index("cudnn") == checks.index("driver/cuda") + 1
    assert checks[-2:] == ["nvidia toolkit", "clock"]


def test_parsers_on_real_text(tmp_path: Path) -> None:
    rel = tmp_path / "os-release"
    rel.write_text(
        "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME='Debian'\n# c\nID=debian\n"
    )
    assert os_release(rel) == {
        "PRETTY_NAME": "Debian GNU/Linux 12 (bookworm)",
        "NAME": "Debian",
        "ID": "debian",
    }
    assert os_release(tmp_path / "none") == {}
    ld = (
        "3 libs found in cache `/etc/ld.so.cache'\n"
        "\tlibcudnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.9\n"
        "\tlibcudnn.so.8.9.7 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7\n"
        "\tlibcudnn_ops.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn_ops.so.9\n"
    )
    assert cudnn_in_ldconfig(ld) == "9"
    assert cudnn_in_ldconfig("\tlibc.so.6 (libc6,x86-64) => /lib/libc.so.6\n") is None
    assert (cudnn_text(90100), cudnn_text(8902)) == ("9.1.0", "8.9.2")
    script = tmp_path / "vllm"
    script.write_text("#!/usr/bin/env python3\nimport sys\n")
    assert interpreter_of(str(script)) == __import__("shutil").which("python3")
    script.write_text("#!/opt/v/bin/python -I\n")
    assert interpreter_of(str(script)) == "/opt/v/bin/python"


def test_the_real_preflight_on_this_machine(tmp_path: Path) -> None:
    """The venv's vllm program, its Python and the vLLM distribution's own Requires-Python;
    no GPU here, so the GPU rows are n/a and no cuDNN is found."""
    import importlib.metadata as md

    dist = (md.packages_distributions().get("vllm") or ["vllm"])[0]
    meta = md.metadata(dist)
    host = _host(vllm_executable=str(VENV_VLLM), port=1, host="127.0.0.1")
    got = {f.check: f for f in preflight(host).findings}
    u = os.uname()
    assert got["os/kernel"].result == "pass"
    assert got["os/kernel"].found.endswith(f", kernel Linux {u.release} {u.machine}")
    v = ".".join(map(str, sys.version_info[:3]))
    # The Python that .venv/bin/vllm's first line names (a copied .venv's still names the
    # Python of the .venv it was made in, and that is the one vLLM runs).
    runs = VENV_VLLM.read_text().split("\n", 1)[0].removeprefix("#!").split()[0]
    assert got["python"] == Finding(
        "python",
        "pass",
        f"Python {v} ({runs}), {meta['Name']} {meta['Version']}",
        f"Python {meta['Requires-Python']} ({meta['Name']}'s Requires-Python)",
        f"{LAUNCH_REQUIREMENTS} (Python: the installed vLLM's Requires-Python)",
    )
    assert (got["gpu"].result, got["driver/cuda"].result) == ("n/a", "n/a")
    assert got["cudnn"].result in ("n/a", "pass")  # information either way
    assert got["cudnn"].found.endswith("; informational")
    assert got["nvidia toolkit"].found == "bare mode"
    missing = _host(vllm_executable="/nonexistent/bin/vllm")
    env_path = os.environ.get("PATH", "")
    try:
        os.environ["PATH"] = str(tmp_path)  # no vllm here
        f = {f.check: f for f in preflight(missing).findings}["python"]
    finally:
        os.environ["PATH"] = env_path
    assert (f.result, f.found) == ("BLOCKER", "no /nonexistent/bin/vllm and no vllm on PATH")
