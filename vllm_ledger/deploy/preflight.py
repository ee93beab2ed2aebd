"""Check a host before launch, from its host file: can this machine serve that model, there?

One finding per check, each with what was found, what is needed and where that requirement
comes from (seed 001's single-host requirements, seed 000's ledger rules, vLLM's own rules).
A ``BLOCKER`` means the launch would fail or the ledger would not survive; ``warn`` means it
runs, below what the write-up recommends; ``n/a`` means the check does not apply to this host
file. Facts are read at the edges (NVML through ``observe/gpu.py``'s reader, ``/proc``,
``statvfs``, a bind test, ``docker version``, ``timedatectl``/``chronyc``/``adjtimex``) and
passed to the judging functions, so tests can give other facts (NVML is faked only at its
module boundary).
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import pwd
import shutil
import socket
import struct
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from vllm_ledger.deploy.host import Host
from vllm_ledger.deploy.launch import LEDGER_SUBDIR
from vllm_ledger.observe.gpu import GpuReading, read_gpus

Result = Literal["pass", "warn", "BLOCKER", "n/a"]
GIB = 1024**3
MIB = 1024**2

SEED_HW = "seed 001, 2.1 hardware"
MIN_CORES = 4
MIN_RAM_BYTES = 16 * GIB
MIN_MODEL_CACHE_FREE = 50 * GIB
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9  # vLLM's default for --gpu-memory-utilization
KV_ROOM = 0.8  # weights above this share of the budget leave little room for the KV cache
MIN_CUDA = (12, 0)  # vLLM's CUDA builds are CUDA 12: the driver must support at least that
MIN_ARTIFACTS_FREE = 100 * MIB
WARN_ARTIFACTS_FREE = 1 * GIB
VOLATILE_FS = {"overlay", "aufs", "tmpfs", "ramfs", "devtmpfs"}
MAX_SAFETENSORS_HEADER = 100 * MIB
SERVE_DTYPE_BYTES = {"half": 2, "float16": 2, "bfloat16": 2, "float": 4, "float32": 4}


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


# ---- facts -----------------------------------------------------------------------------------


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
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        if n > MAX_SAFETENSORS_HEADER:
            raise ValueError(f"{path.name}: header of {n} bytes")
        header = json.loads(f.read(n))
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
        return ModelSize(folder, size, f"{_gib(size)} of weight files")
    quantized = host.quantization is not None or _config_quantized(folder)
    serve = SERVE_DTYPE_BYTES.get(host.dtype or "auto")
    if quantized or serve is None:
        return ModelSize(folder, size, f"{params:,} parameters, {_gib(size)} as stored")
    return ModelSize(
        folder,
        params * serve,
        f"{params:,} parameters, {_gib(params * serve)} as {host.dtype}",
    )


def _config_quantized(folder: Path) -> bool:
    try:
        cfg = json.loads((folder / "config.json").read_text())
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
    places = [model.path or _hub_cache()]
    if host.artifacts_dir:
        places.append(Path(host.artifacts_dir))
    for p in places:
        try:
            st = os.statvfs(existing(p))
            free[str(p)] = st.f_bavail * st.f_frsize
        except OSError:
            free[str(p)] = None
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
    )


def _hub_cache() -> Path:
    home = os.environ.get("HF_HOME") or str(Path.home() / ".cache" / "huggingface")
    return Path(home)


# ---- judging ---------------------------------------------------------------------------------


def _gib(n: int | float) -> str:
    return f"{n / GIB:.1f} GiB" if n >= GIB / 10 else f"{n / MIB:.1f} MiB"


def judge(host: Host, facts: Facts, bot_user: str | None = None) -> Preflight:
    out: list[Finding] = []
    cpu_serving = host.gpus == ()
    g = facts.gpu
    tp = host.tensor_parallel_size or 1
    dp = host.data_parallel_size or 1
    util = host.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION
    chosen: list[GpuReading] = []

    # GPUs
    src_gpu = f"{SEED_HW} (VRAM per model size); the host file's gpus, tp x dp"
    if cpu_serving:
        seen = f"; NVML sees {len(g.gpus)}" if g.gpus else ""
        out.append(Finding("gpu", "n/a", f"CPU serving (gpus: []){seen}", "none", src_gpu))
    elif g.unavailable is not None:
        out.append(
            Finding(
                "gpu",
                "BLOCKER",
                f"no NVIDIA GPU readings ({g.unavailable})",
                f"{tp * dp} GPU(s) (gpus: {host.gpus!r})",
                src_gpu,
            )
        )
    else:
        if host.gpus == "all":
            chosen = list(g.gpus)
            absent: list[int] = []
        else:
            wanted = [int(i) for i in host.gpus]
            chosen = [r for r in g.gpus if r.index in wanted]
            absent = [i for i in wanted if i not in {r.index for r in g.gpus}]
        names = ", ".join(f"{r.index}: {r.name} {_gib(r.memory_total_bytes or 0)}" for r in chosen)
        found = f"{len(chosen)} GPU(s) [{names}]" if chosen else "no GPU"
        if absent:
            out.append(Finding("gpu", "BLOCKER", f"{found}; no GPU {absent}", "", src_gpu))
        elif len(chosen) < tp * dp:
            need = f"{tp * dp} GPUs (tensor_parallel_size {tp} x data_parallel_size {dp})"
            out.append(Finding("gpu", "BLOCKER", found, need, src_gpu))
        else:
            out.append(Finding("gpu", "pass", found, f"{tp * dp} GPU(s)", src_gpu))

    # GPU memory against the model
    src_mem = f"{SEED_HW} (VRAM per model size); vLLM --gpu-memory-utilization (default 0.9)"
    weights = facts.model.weight_bytes
    if cpu_serving or not chosen:
        why = "CPU serving" if cpu_serving else "no GPU readings"
        out.append(Finding("gpu memory", "n/a", why, "", src_mem))
    else:
        per_gpu = None if weights is None else weights / tp
        need = f"weights/tp below {util:g} x each GPU's memory, room left for the KV cache"
        worst: Result = "pass"
        notes = []
        for r in chosen:
            total = r.memory_total_bytes or 0
            budget = util * total
            free = total - (r.memory_used_bytes or 0)
            if free < budget:
                worst = "BLOCKER"
                notes.append(f"GPU {r.index} has {_gib(free)} free, vLLM wants {_gib(budget)}")
            if per_gpu is not None and per_gpu >= budget:
                worst = "BLOCKER"
                notes.append(f"GPU {r.index}: {_gib(per_gpu)} of weights > {_gib(budget)}")
            elif per_gpu is not None and per_gpu > KV_ROOM * budget and worst == "pass":
                worst = "warn"
                notes.append(f"GPU {r.index}: weights fill over {KV_ROOM:.0%} of its budget")
        if per_gpu is None:
            worst = "warn" if worst == "pass" else worst
            notes.append(f"model size unknown ({facts.model.note})")
        else:
            notes.insert(0, f"model {facts.model.note}, {_gib(per_gpu)} per GPU (tp {tp})")
        out.append(Finding("gpu memory", worst, "; ".join(notes), need, src_mem))

    # driver and CUDA
    src_drv = "vLLM's CUDA 12 builds; seed 001, 2.1 software (CUDA toolkit by driver)"
    need_drv = f"a driver supporting CUDA {MIN_CUDA[0]}.{MIN_CUDA[1]}+"
    if cpu_serving or g.unavailable is not None or g.cuda is None:
        why = "CPU serving" if cpu_serving else "no NVML"
        out.append(Finding("driver/cuda", "n/a", why, need_drv, src_drv))
    else:
        found = f"driver {g.driver}, CUDA {g.cuda[0]}.{g.cuda[1]}"
        ok: Result = "pass" if g.cuda >= MIN_CUDA else "BLOCKER"
        out.append(Finding("driver/cuda", ok, found, need_drv, src_drv))

    # CPU
    avx2, avx512 = "avx2" in facts.cpu_flags, "avx512f" in facts.cpu_flags
    found = f"{facts.cores} cores, AVX2 {'yes' if avx2 else 'no'}, "
    found += f"AVX-512 {'yes' if avx512 else 'no'}"
    cpu: Result = "pass"
    if not avx2:
        cpu = "BLOCKER" if cpu_serving else "warn"
    elif facts.cores < MIN_CORES:
        cpu = "warn"
    out.append(Finding("cpu", cpu, found, f">= {MIN_CORES} cores with AVX2", f"{SEED_HW}: CPU"))

    # RAM
    mem_total, avail = facts.mem.get("MemTotal"), facts.mem.get("MemAvailable")
    src_ram = f"{SEED_HW}: >= 16 GB RAM, 32 GB recommended, in proportion to the model"
    if mem_total is None:
        out.append(Finding("ram", "warn", "/proc/meminfo unreadable", ">= 16 GiB", src_ram))
    else:
        found = f"{_gib(mem_total)} total, {_gib(avail or 0)} available"
        ram: Result = "pass" if mem_total >= MIN_RAM_BYTES else "warn"
        need = ">= 16 GiB"
        if weights is not None:
            kv = 0
            if cpu_serving:
                kv_text = dict(host.extra_env).get("VLLM_CPU_KVCACHE_SPACE", "4")
                kv = int(kv_text) * GIB if kv_text.isdigit() else 4 * GIB
            need += f", more than the weights{' and KV cache' if cpu_serving else ''}"
            if (avail or 0) < weights + kv:
                ram = "BLOCKER"
                found += f"; needs {_gib(weights + kv)} to load"
        out.append(Finding("ram", ram, found, need, src_ram))

    # disk for the model
    src_disk = f"{SEED_HW}: >= 50 GB free for the model cache"
    m = facts.model
    if m.path is None:
        cache = _hub_cache()
        free_b = facts.free_bytes.get(str(cache))
        res: Result = "pass" if free_b is not None and free_b >= MIN_MODEL_CACHE_FREE else "warn"
        found = f"{m.note}; {_gib(free_b or 0)} free in {cache}"
        out.append(Finding("disk (model)", res, found, ">= 50 GiB free to download", src_disk))
    elif m.weight_bytes is None and not m.path.is_dir():
        out.append(Finding("disk (model)", "BLOCKER", m.note, "the model folder", src_disk))
    else:
        found = f"model folder {m.path} ({m.note})"
        out.append(Finding("disk (model)", "pass", found, "the model on disk", src_disk))

    # artifacts and the ledger folder
    src_led = "seed 000: the data folder is a host mount kept for good, not the container's"
    if not host.artifacts_dir:
        for check in ("disk (artifacts)", "ledger dir"):
            out.append(
                Finding(check, "n/a", "no artifacts_dir", "artifacts_dir with --usage", src_led)
            )
        out.append(Finding("bot user", "n/a", "no artifacts_dir", "", src_led))
    else:
        art = Path(host.artifacts_dir)
        free_b = facts.free_bytes.get(str(art))
        res = "pass"
        if free_b is None or free_b < MIN_ARTIFACTS_FREE:
            res = "BLOCKER"
        elif free_b < WARN_ARTIFACTS_FREE:
            res = "warn"
        found = f"{_gib(free_b or 0)} free at {existing(art)}"
        out.append(Finding("disk (artifacts)", res, found, ">= 1 GiB free", src_led))
        usage = art / LEDGER_SUBDIR
        here = existing(usage)
        point, fstype = mount_of(here.resolve(), facts.mountinfo)
        writable = os.access(here, os.W_OK | os.X_OK)
        problems = []
        if fstype in VOLATILE_FS:
            problems.append(f"on {fstype} ({point}): gone with the container or at reboot")
        if not writable:
            problems.append(f"{here} is not writable by this user")
        state = "exists" if here == usage else f"to be made in {here}"
        found = f"{usage} ({state}) on {fstype} at {point}"
        if problems:
            found += ": " + "; ".join(problems)
        out.append(
            Finding(
                "ledger dir",
                "BLOCKER" if problems else "pass",
                found,
                "writable, on a persistent host mount",
                src_led,
            )
        )
        if bot_user:
            out.append(_bot_user(bot_user, usage, here))
        else:
            out.append(
                Finding(
                    "bot user",
                    "n/a",
                    "not checked",
                    "pass --bot-user NAME",
                    "seed 000: the bot reads the ledger over SSH",
                )
            )

    # port
    src_port = "the host file's host and port: vLLM must be able to listen there"
    need = f"{host.host}:{host.port} free"
    if facts.port is None:
        out.append(Finding("port", "pass", f"{host.host}:{host.port} free", need, src_port))
    else:
        out.append(Finding("port", "BLOCKER", facts.port, need, src_port))

    # Docker
    src_dock = "docker mode runs `docker run`"
    if facts.docker is None:
        out.append(Finding("docker", "n/a", f"{host.mode} mode", "", src_dock))
    else:
        problem, found = facts.docker
        res = "pass" if problem is None else "BLOCKER"
        out.append(Finding("docker", res, problem or found, "docker and its daemon", src_dock))

    # clock
    synced, how = facts.clock
    src_clk = "seed 000: windows by event time; the bot flags more than 5 s of skew"
    if synced is None:
        out.append(Finding("clock", "warn", "synchronisation unknown", "NTP synced", src_clk))
    else:
        found = f"{'synchronised' if synced else 'not synchronised'} ({how})"
        out.append(Finding("clock", "pass" if synced else "warn", found, "NTP synced", src_clk))
    return Preflight(tuple(out))


def _bot_user(name: str, usage: Path, here: Path) -> Finding:
    src = "seed 000: the bot reads the ledger over SSH as its own user"
    need = f"{name} can read {usage}"
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        return Finding("bot user", "BLOCKER", f"no user {name!r} here", need, src)
    gids = set(os.getgrouplist(name, pw.pw_gid))
    if here == usage:
        ok = can_access(usage, pw.pw_uid, gids, os.R_OK | os.X_OK)
        found = f"{name} (uid {pw.pw_uid}) {'can' if ok else 'cannot'} read {usage}"
        return Finding("bot user", "pass" if ok else "BLOCKER", found, need, src)
    ok = can_access(here, pw.pw_uid, gids, os.X_OK)
    found = f"{usage} is not made yet; {name} {'can' if ok else 'cannot'} pass through {here}" + (
        "; vLLM's user makes it: keep its umask 022" if ok else ""
    )
    return Finding("bot user", "warn" if ok else "BLOCKER", found, need, src)


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
    """One line per check: check, result, what was found, what is needed (and from where)."""
    w = max(len("check"), *(len(f.check) for f in p.findings))
    lines = [f"{'check':<{w}}  {'result':<7}  found | needs (from)"]
    for f in p.findings:
        needs = f" | needs {f.needs} ({f.source})" if f.needs else f" | ({f.source})"
        lines.append(f"{f.check:<{w}}  {f.result:<7}  {f.found}{needs}")
    return lines
