"""What preflight reads off this machine, gathered once: the facts its rules judge.

Read at the edges: NVML through ``observe/gpu.py``'s reader, ``/proc``, ``statvfs``, a bind
test, ``docker version``, ``timedatectl``/``chronyc``/``adjtimex``, ``/etc/os-release`` and
``uname``; the model's folder and size (``preflight/model.py``) and the software behind vLLM
(``preflight/software.py``: its Python, cuDNN, the NVIDIA container toolkit). ``gather`` returns
one ``Facts``; tests give their own (NVML is faked only at its module boundary).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllm_ledger.deploy.host import Host
from vllm_ledger.deploy.preflight.model import ModelSize, hub_cache, model_size
from vllm_ledger.deploy.preflight.software import (
    PythonFacts,
    container_toolkit,
    cudnn_text,
    ldconfig_cudnn,
    python_facts,
)
from vllm_ledger.infile import read_regular_text
from vllm_ledger.observe.gpu import GpuReading, read_gpus

MAX_OS_RELEASE_BYTES = 64 * 1024


@dataclass(frozen=True)
class GpuFacts:
    gpus: tuple[GpuReading, ...] = ()
    driver: str | None = None
    cuda: tuple[int, int] | None = None
    unavailable: str | None = None


def _load_pynvml() -> Any:
    import pynvml  # the nvidia-ml-py distribution ([gpu] extra)

    return pynvml


def gpu_facts(load: Callable[[], Any] = _load_pynvml) -> GpuFacts:
    """Every GPU's reading (``observe.gpu.read_gpus``), the driver and the CUDA it supports."""
    try:
        nvml = load()
    except ImportError:
        return GpuFacts(unavailable="nvidia-ml-py is not installed: pip install 'vllm-ledger[gpu]'")
    try:
        nvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, _DriverNotLoaded, ...
        return GpuFacts(unavailable=f"{type(exc).__name__}: {exc}")
    try:
        gpus = tuple(read_gpus(nvml))
        driver = nvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else str(driver)
        cuda_int = int(nvml.nvmlSystemGetCudaDriverVersion())
        return GpuFacts(gpus, driver, (cuda_int // 1000, cuda_int % 1000 // 10))
    except Exception as exc:
        return GpuFacts(unavailable=f"NVML read failed: {type(exc).__name__}: {exc}")
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass


def cpu_facts(proc: Path = Path("/proc")) -> tuple[int, set[str]]:
    """CPU cores this process may use and the first CPU's flags from /proc/cpuinfo."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    flags: set[str] = set()
    try:
        for line in (proc / "cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    return int(cores or 0), flags


def meminfo(proc: Path = Path("/proc")) -> dict[str, int]:
    """/proc/meminfo in bytes (MemTotal, MemAvailable, ...)."""
    out: dict[str, int] = {}
    try:
        for line in (proc / "meminfo").read_text().splitlines():
            name, _, rest = line.partition(":")
            parts = rest.split()
            if parts and parts[0].isdigit():
                out[name] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    except OSError:
        pass
    return out


def mount_of(path: Path, mountinfo: str) -> tuple[str, str]:
    """(mount point, file system type) holding ``path``, from /proc/self/mountinfo's text."""
    best = ("/", "?")
    target = str(path)
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5:
            continue
        point = fields[4].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best[0]):
            best = (point, right.split()[0])
    return best


def existing(path: Path) -> Path:
    """``path``, or its nearest ancestor that exists."""
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def can_access(path: Path, uid: int, gids: set[int], want: int) -> bool:
    """``os.access`` for another user: the mode bits of ``path`` (``want``: R_OK|W_OK|X_OK)
    and search permission on every folder above it. Root passes; ACLs are not read."""
    if uid == 0:
        return True
    chain = [*reversed(path.parents), path]
    for i, p in enumerate(chain):
        try:
            st = os.stat(p)
        except OSError:
            return False
        need = want if i == len(chain) - 1 else os.X_OK
        if st.st_uid == uid:
            bits = (st.st_mode >> 6) & 7
        elif st.st_gid in gids:
            bits = (st.st_mode >> 3) & 7
        else:
            bits = st.st_mode & 7
        if bits & need != need:
            return False
    return True


def port_problem(address: str, port: int) -> str | None:
    """Why ``address:port`` cannot be listened on (in use, not an address here), or None."""
    for addr in dict.fromkeys([address, "127.0.0.1"]):
        family = socket.AF_INET6 if ":" in addr else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as vLLM's server does
            try:
                s.bind((addr, port))
            except OSError as exc:
                return f"{addr}:{port}: {exc.strerror}"
    return None


def docker_problem(run: Callable[..., Any] = subprocess.run) -> tuple[str | None, str]:
    """(problem, found) for Docker: the client on PATH and its daemon answering."""
    exe = shutil.which("docker")
    if exe is None:
        return "no docker command on PATH", "no docker"
    try:
        p = run(
            [exe, "version", "--format", "{{.Server.Version}}"],
            capture_output=True,
            text=True,
            timeout=15,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"docker version failed: {exc}", exe
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["no answer"])[-1][:200]
        return f"the Docker daemon does not answer: {last}", exe
    return None, f"Docker {p.stdout.strip()}"


class _Timex(ctypes.Structure):
    # struct timex starts with unsigned int modes; the rest only needs room (adjtimex(2)).
    _fields_ = [("modes", ctypes.c_uint), ("rest", ctypes.c_long * 64)]


TIME_ERROR = 5  # adjtimex's answer when the kernel's clock is not synchronised


def clock_sync(run: Callable[..., Any] = subprocess.run) -> tuple[bool | None, str]:
    """(synchronised, how it was told): timedatectl, else chronyc, else adjtimex(2)."""
    if shutil.which("timedatectl"):
        try:
            p = run(
                ["timedatectl", "show", "-p", "NTPSynchronized", "--value"],
                capture_output=True,
                text=True,
                timeout=10,
            )
            if p.returncode == 0 and p.stdout.strip() in ("yes", "no"):
                return p.stdout.strip() == "yes", "timedatectl"
        except (OSError, subprocess.TimeoutExpired):
            pass
    if shutil.which("chronyc"):
        try:
            p = run(["chronyc", "-n", "tracking"], capture_output=True, text=True, timeout=10)
            for line in p.stdout.splitlines() if p.returncode == 0 else []:
                if line.startswith("Leap status"):
                    return "Not synchronised" not in line, "chronyc"
        except (OSError, subprocess.TimeoutExpired):
            pass
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        state = libc.adjtimex(ctypes.byref(_Timex()))
    except (OSError, AttributeError):
        return None, "unknown"
    if state < 0:
        return None, "unknown"
    return state != TIME_ERROR, "adjtimex"


@dataclass(frozen=True)
class SystemFacts:
    """The OS (``/etc/os-release``'s PRETTY_NAME) and the kernel (``uname``)."""

    os_name: str | None  # None: no /etc/os-release
    kernel_name: str  # uname -s: Linux
    kernel_release: str  # uname -r
    machine: str  # uname -m


def os_release(path: Path = Path("/etc/os-release")) -> dict[str, str]:
    """``/etc/os-release`` as KEY -> value, quotes removed (empty if unreadable)."""
    out: dict[str, str] = {}
    try:
        text = read_regular_text(path, MAX_OS_RELEASE_BYTES)
    except (OSError, ValueError):
        return out
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and not key.startswith("#"):
            v = value.strip()
            if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
                v = v[1:-1]
            out[key.strip()] = v
    return out


def system_facts(os_release_path: Path = Path("/etc/os-release")) -> SystemFacts:
    rel = os_release(os_release_path)
    u = os.uname()
    name = rel.get("PRETTY_NAME") or " ".join(x for x in (rel.get("NAME"), rel.get("VERSION")) if x)
    return SystemFacts(name or None, u.sysname, u.release, u.machine)


@dataclass
class Facts:
    """Everything preflight judges, gathered once (tests give their own)."""

    gpu: GpuFacts
    model: ModelSize
    cores: int
    cpu_flags: set[str]
    mem: dict[str, int]
    mountinfo: str
    port: str | None
    docker: tuple[str | None, str] | None
    clock: tuple[bool | None, str]
    free_bytes: dict[str, int | None] = field(default_factory=dict)
    system: SystemFacts | None = None
    python: PythonFacts | None = None  # None: docker mode (the image brings its own)
    cudnn: tuple[str | None, str] = (None, "not looked for")  # (version, where it was found)
    toolkit: tuple[bool, str] | None = None  # docker mode only


def gather(
    host: Host,
    *,
    nvml_load: Callable[[], Any] = _load_pynvml,
    proc: Path = Path("/proc"),
    run: Callable[..., Any] = subprocess.run,
) -> Facts:
    cores, flags = cpu_facts(proc)
    try:
        mountinfo = (proc / "self" / "mountinfo").read_text()
    except OSError:
        mountinfo = ""
    model = model_size(host)
    free: dict[str, int | None] = {}
    places = [model.path or hub_cache()]
    if host.artifacts_dir:
        places.append(Path(host.artifacts_dir))
    for p in places:
        try:
            st = os.statvfs(existing(p))
            free[str(p)] = st.f_bavail * st.f_frsize
        except OSError:
            free[str(p)] = None
    py = None if host.mode == "docker" else python_facts(host, run=run)
    lib = ldconfig_cudnn(run)
    cudnn: tuple[str | None, str] = (lib, "ldconfig -p") if lib else (None, "ldconfig -p")
    if lib is None and py is not None and py.problem is None:
        torch_py = python_facts(host, torch=True, run=run)
        if torch_py.cudnn_torch:
            cudnn = (cudnn_text(torch_py.cudnn_torch), f"torch in {torch_py.python}")
        else:
            cudnn = (None, f"ldconfig -p, torch in {py.python}")
    return Facts(
        gpu=gpu_facts(nvml_load),
        model=model,
        cores=cores,
        cpu_flags=flags,
        mem=meminfo(proc),
        mountinfo=mountinfo,
        port=port_problem(host.host, host.port),
        docker=docker_problem(run) if host.mode == "docker" else None,
        clock=clock_sync(run),
        free_bytes=free,
        system=system_facts(),
        python=py,
        cudnn=cudnn,
        toolkit=container_toolkit(run) if host.mode == "docker" else None,
    )
