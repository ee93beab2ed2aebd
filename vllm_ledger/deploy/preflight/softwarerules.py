"""The preflight rules on the software vLLM runs on (docs/launch.md#requirements): the OS and
kernel, the Python behind the ``vllm`` program within the installed vLLM's Requires-Python, cuDNN
(informational), and in docker mode with GPUs the NVIDIA container toolkit. Pure.
"""

from __future__ import annotations

import re

from vllm_ledger.deploy.preflight.findings import Context, Finding, Result

LAUNCH_REQUIREMENTS = "docs/launch.md#requirements"
VLLM_OS = "Linux"  # vLLM runs on Linux only
VLLM_MACHINES = ("x86_64", "aarch64")  # the machines vLLM's wheels and images are built for


def cudnn(c: Context) -> list[Finding]:
    """Informational: vLLM's wheels and images bring the cuDNN torch was built with."""
    src = f"{LAUNCH_REQUIREMENTS} (cuDNN: informational)"
    version, where = c.facts.cudnn
    if version is None:
        return [Finding("cudnn", "n/a", f"not found ({where}); informational", "", src)]
    return [Finding("cudnn", "pass", f"cuDNN {version} ({where}); informational", "", src)]


def system(c: Context) -> list[Finding]:
    src = f"{LAUNCH_REQUIREMENTS} (OS and kernel)"
    s = c.facts.system
    need = f"{VLLM_OS} on {' or '.join(VLLM_MACHINES)}"
    if s is None:
        return [Finding("os/kernel", "warn", "not read", need, src)]
    found = f"{s.os_name or 'no /etc/os-release'}, kernel {s.kernel_name} {s.kernel_release} "
    found += f"{s.machine}"
    res: Result = "pass"
    if s.kernel_name != VLLM_OS:
        res = "BLOCKER"
    elif s.machine not in VLLM_MACHINES:
        res = "warn"
    return [Finding("os/kernel", res, found, need, src)]


def python(c: Context) -> list[Finding]:
    """The Python behind the ``vllm`` program, within the installed vLLM's Requires-Python."""
    src = f"{LAUNCH_REQUIREMENTS} (Python: the installed vLLM's Requires-Python)"
    py = c.facts.python
    if py is None:
        return [Finding("python", "n/a", f"{c.host.mode} mode: the image brings its own", "", src)]
    need = "the Python the installed vLLM declares"
    if py.problem is not None or py.version is None:
        return [Finding("python", "BLOCKER", py.problem or "no answer", need, src)]
    version = ".".join(map(str, py.version))
    found = f"Python {version} ({py.python})"
    if py.dist is None:
        return [Finding("python", "BLOCKER", f"{found}: no vllm installed there", need, src)]
    found += f", {py.dist} {py.dist_version}"
    spec = py.requires_python or ""
    if not spec:
        return [Finding("python", "pass", found + " declares no Requires-Python", need, src)]
    ok = python_satisfies(spec, py.version)
    need = f"Python {spec} ({py.dist}'s Requires-Python)"
    if ok is None:
        return [Finding("python", "warn", f"{found}; {spec!r} not understood", need, src)]
    return [Finding("python", "pass" if ok else "BLOCKER", found, need, src)]


_CLAUSE = re.compile(r"\s*(===|~=|==|!=|<=|>=|<|>)\s*([0-9]+(?:\.[0-9]+)*)(\.\*)?\s*")


def python_satisfies(spec: str, version: tuple[int, ...]) -> bool | None:
    """Whether ``version`` meets a Requires-Python specifier such as ``>=3.10,<3.14`` (release
    numbers only, the forms Requires-Python uses); None where a clause is not understood."""
    for clause in spec.split(","):
        m = _CLAUSE.fullmatch(clause)
        if m is None:
            return None
        op, text, star = m.groups()
        want = tuple(int(x) for x in text.split("."))
        if star:
            if op not in ("==", "!="):
                return None
            same = version[: len(want)] == want
            if same != (op == "=="):
                return False
            continue
        n = max(len(want), len(version))
        have, w = version + (0,) * (n - len(version)), want + (0,) * (n - len(want))
        if op == "~=":
            if len(want) < 2:
                return None
            if not (have >= w and version[: len(want) - 1] == want[:-1]):
                return False
            continue
        ok = {
            "==": have == w,
            "===": have == w,
            "!=": have != w,
            "<=": have <= w,
            ">=": have >= w,
            "<": have < w,
            ">": have > w,
        }[op]
        if not ok:
            return False
    return True


def toolkit(c: Context) -> list[Finding]:
    """Docker mode with GPUs: ``docker run --gpus`` needs the NVIDIA container toolkit."""
    src = f"{LAUNCH_REQUIREMENTS} (docker mode with GPUs: the NVIDIA container toolkit)"
    need = "nvidia-ctk on PATH or the nvidia runtime in docker info"
    if c.facts.toolkit is None or c.cpu_serving:
        why = f"{c.host.mode} mode" if c.facts.toolkit is None else "CPU serving (gpus: [])"
        return [Finding("nvidia toolkit", "n/a", why, "", src)]
    present, how = c.facts.toolkit
    return [Finding("nvidia toolkit", "pass" if present else "BLOCKER", how, need, src)]
