"""The rules preflight judges a host file by: one function per row, over gathered facts. Pure.

Each rule returns its findings: what was found, what is needed and where that requirement is
written down in this project's docs (docs/doctor.md's host requirements, the ledger's and the
bot's pages) or in vLLM's own rules. ``BLOCKER`` means the launch would fail or the ledger would
not survive; ``warn`` that it runs below what is recommended; ``n/a`` that the check does not
apply to this host file. Only ``bot_user`` reads the machine (the user database and modes).
"""

from __future__ import annotations

import os
import pwd
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from vllm_ledger.deploy.host import Host
from vllm_ledger.deploy.preflight.facts import Facts, can_access, existing, mount_of
from vllm_ledger.deploy.preflight.model import hub_cache
from vllm_ledger.deploy.preflight.sizes import GIB, MIB, gib_text
from vllm_ledger.deploy.serve import LEDGER_SUBDIR
from vllm_ledger.observe.gpu import GpuReading

Result = Literal["pass", "warn", "BLOCKER", "n/a"]

HOST_REQUIREMENTS = "docs/doctor.md#host-requirements"
MIN_CORES = 4
MIN_RAM_BYTES = 16 * GIB
MIN_MODEL_CACHE_FREE = 50 * GIB
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9  # vLLM's default for --gpu-memory-utilization
KV_ROOM = 0.8  # weights above this share of the budget leave little room for the KV cache
MIN_CUDA = (12, 0)  # vLLM's CUDA builds are CUDA 12: the driver must support at least that
MIN_ARTIFACTS_FREE = 100 * MIB
WARN_ARTIFACTS_FREE = 1 * GIB
VOLATILE_FS = {"overlay", "aufs", "tmpfs", "ramfs", "devtmpfs"}

LAUNCH_REQUIREMENTS = "docs/launch.md#requirements"
VLLM_OS = "Linux"  # vLLM runs on Linux only
VLLM_MACHINES = ("x86_64", "aarch64")  # the machines vLLM's wheels and images are built for

SRC_LEDGER = "docs/ledger.md: the ledger root is a host folder kept for good, not the container's"
SRC_BOT = "docs/bot-status.md: the bot reads the ledger over SSH as its own user"
SRC_CLOCK = "docs/bot-status.md: windows by event time; the bot flags more than 5 s of skew"


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


def gpu(c: Context) -> list[Finding]:
    src = f"{HOST_REQUIREMENTS} (VRAM per model size); the host file's gpus, tp x dp"
    g, host = c.facts.gpu, c.host
    if c.cpu_serving:
        seen = f"; NVML sees {len(g.gpus)}" if g.gpus else ""
        return [Finding("gpu", "n/a", f"CPU serving (gpus: []){seen}", "none", src)]
    if g.unavailable is not None:
        need = f"{c.tp * c.dp} GPU(s) (gpus: {host.gpus!r})"
        return [Finding("gpu", "BLOCKER", f"no NVIDIA GPU readings ({g.unavailable})", need, src)]
    chosen = c.chosen
    absent: list[int] = []
    if host.gpus != "all":
        absent = [int(i) for i in host.gpus if int(i) not in {r.index for r in g.gpus}]
    names = ", ".join(f"{r.index}: {r.name} {gib_text(r.memory_total_bytes or 0)}" for r in chosen)
    found = f"{len(chosen)} GPU(s) [{names}]" if chosen else "no GPU"
    if absent:
        return [Finding("gpu", "BLOCKER", f"{found}; no GPU {absent}", "", src)]
    if len(chosen) < c.tp * c.dp:
        need = f"{c.tp * c.dp} GPUs (tensor_parallel_size {c.tp} x data_parallel_size {c.dp})"
        return [Finding("gpu", "BLOCKER", found, need, src)]
    return [Finding("gpu", "pass", found, f"{c.tp * c.dp} GPU(s)", src)]


def gpu_memory(c: Context) -> list[Finding]:
    src = f"{HOST_REQUIREMENTS} (VRAM per model size); vLLM --gpu-memory-utilization (default 0.9)"
    chosen = c.chosen
    if c.cpu_serving or not chosen:
        why = "CPU serving" if c.cpu_serving else "no GPU readings"
        return [Finding("gpu memory", "n/a", why, "", src)]
    util = c.host.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION
    weights = c.facts.model.weight_bytes
    per_gpu = None if weights is None else weights / c.tp
    need = f"weights/tp below {util:g} x each GPU's memory, room left for the KV cache"
    worst: Result = "pass"
    notes = []
    for r in chosen:
        total = r.memory_total_bytes or 0
        budget = util * total
        free = total - (r.memory_used_bytes or 0)
        if free < budget:
            worst = "BLOCKER"
            notes.append(f"GPU {r.index} has {gib_text(free)} free, vLLM wants {gib_text(budget)}")
        if per_gpu is not None and per_gpu >= budget:
            worst = "BLOCKER"
            notes.append(f"GPU {r.index}: {gib_text(per_gpu)} of weights > {gib_text(budget)}")
        elif per_gpu is not None and per_gpu > KV_ROOM * budget and worst == "pass":
            worst = "warn"
            notes.append(f"GPU {r.index}: weights fill over {KV_ROOM:.0%} of its budget")
    if per_gpu is None:
        worst = "warn" if worst == "pass" else worst
        notes.append(f"model size unknown ({c.facts.model.note})")
    else:
        notes.insert(0, f"model {c.facts.model.note}, {gib_text(per_gpu)} per GPU (tp {c.tp})")
    return [Finding("gpu memory", worst, "; ".join(notes), need, src)]


def driver(c: Context) -> list[Finding]:
    src = f"vLLM's CUDA 12 builds; {HOST_REQUIREMENTS} (driver and CUDA)"
    need = f"a driver supporting CUDA {MIN_CUDA[0]}.{MIN_CUDA[1]}+"
    g = c.facts.gpu
    if c.cpu_serving or g.unavailable is not None or g.cuda is None:
        why = "CPU serving" if c.cpu_serving else "no NVML"
        return [Finding("driver/cuda", "n/a", why, need, src)]
    found = f"driver {g.driver}, CUDA {g.cuda[0]}.{g.cuda[1]}"
    return [Finding("driver/cuda", "pass" if g.cuda >= MIN_CUDA else "BLOCKER", found, need, src)]


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


def cpu(c: Context) -> list[Finding]:
    flags = c.facts.cpu_flags
    avx2, avx512 = "avx2" in flags, "avx512f" in flags
    found = f"{c.facts.cores} cores, AVX2 {'yes' if avx2 else 'no'}, "
    found += f"AVX-512 {'yes' if avx512 else 'no'}"
    res: Result = "pass"
    if not avx2:
        res = "BLOCKER" if c.cpu_serving else "warn"
    elif c.facts.cores < MIN_CORES:
        res = "warn"
    need = f">= {MIN_CORES} cores with AVX2"
    return [Finding("cpu", res, found, need, f"{HOST_REQUIREMENTS} (CPU)")]


def ram(c: Context) -> list[Finding]:
    mem_total, avail = c.facts.mem.get("MemTotal"), c.facts.mem.get("MemAvailable")
    src = f"{HOST_REQUIREMENTS} (RAM: 16 GiB, 32 recommended, in proportion to the model)"
    if mem_total is None:
        return [Finding("ram", "warn", "/proc/meminfo unreadable", ">= 16 GiB", src)]
    found = f"{gib_text(mem_total)} total, {gib_text(avail or 0)} available"
    res: Result = "pass" if mem_total >= MIN_RAM_BYTES else "warn"
    need = ">= 16 GiB"
    weights = c.facts.model.weight_bytes
    if weights is not None:
        kv = 0
        if c.cpu_serving:
            kv_text = dict(c.host.extra_env).get("VLLM_CPU_KVCACHE_SPACE", "4")
            kv = int(kv_text) * GIB if kv_text.isdigit() else 4 * GIB
        need += f", more than the weights{' and KV cache' if c.cpu_serving else ''}"
        if (avail or 0) < weights + kv:
            res = "BLOCKER"
            found += f"; needs {gib_text(weights + kv)} to load"
    return [Finding("ram", res, found, need, src)]


def model_disk(c: Context) -> list[Finding]:
    src = f"{HOST_REQUIREMENTS} (disk: 50 GB free for the model cache)"
    m = c.facts.model
    if m.path is None:
        cache = hub_cache()
        free_b = c.facts.free_bytes.get(str(cache))
        res: Result = "pass" if free_b is not None and free_b >= MIN_MODEL_CACHE_FREE else "warn"
        found = f"{m.note}; {gib_text(free_b or 0)} free in {cache}"
        return [Finding("disk (model)", res, found, ">= 50 GiB free to download", src)]
    if m.weight_bytes is None and not m.path.is_dir():
        return [Finding("disk (model)", "BLOCKER", m.note, "the model folder", src)]
    found = f"model folder {m.path} ({m.note})"
    return [Finding("disk (model)", "pass", found, "the model on disk", src)]


def ledger(c: Context) -> list[Finding]:
    """The artifacts disk, the ledger folder, and whether the bot's user can read it."""
    host = c.host
    if not host.artifacts_dir:
        need = "artifacts_dir with --usage"
        return [
            Finding("disk (artifacts)", "n/a", "no artifacts_dir", need, SRC_LEDGER),
            Finding("ledger dir", "n/a", "no artifacts_dir", need, SRC_LEDGER),
            Finding("bot user", "n/a", "no artifacts_dir", "", SRC_LEDGER),
        ]
    art = Path(host.artifacts_dir)
    free_b = c.facts.free_bytes.get(str(art))
    res: Result = "pass"
    if free_b is None or free_b < MIN_ARTIFACTS_FREE:
        res = "BLOCKER"
    elif free_b < WARN_ARTIFACTS_FREE:
        res = "warn"
    out = [
        Finding(
            "disk (artifacts)",
            res,
            f"{gib_text(free_b or 0)} free at {existing(art)}",
            ">= 1 GiB free",
            SRC_LEDGER,
        )
    ]
    usage = art / LEDGER_SUBDIR
    here = existing(usage)
    point, fstype = mount_of(here.resolve(), c.facts.mountinfo)
    problems = []
    if fstype in VOLATILE_FS:
        problems.append(f"on {fstype} ({point}): gone with the container or at reboot")
    if not os.access(here, os.W_OK | os.X_OK):
        problems.append(f"{here} is not writable by this user")
    state = "exists" if here == usage else f"to be made in {here}"
    found = f"{usage} ({state}) on {fstype} at {point}"
    if problems:
        found += ": " + "; ".join(problems)
    result: Result = "BLOCKER" if problems else "pass"
    need = "writable, on a persistent host mount"
    out.append(Finding("ledger dir", result, found, need, SRC_LEDGER))
    if c.bot_user:
        out.append(bot_user(c.bot_user, usage, here))
    else:
        out.append(Finding("bot user", "n/a", "not checked", "pass --bot-user NAME", SRC_BOT))
    return out


def port(c: Context) -> list[Finding]:
    src = "the host file's host and port: vLLM must be able to listen there"
    where = f"{c.host.host}:{c.host.port}"
    if c.facts.port is None:
        return [Finding("port", "pass", f"{where} free", f"{where} free", src)]
    return [Finding("port", "BLOCKER", c.facts.port, f"{where} free", src)]


def docker(c: Context) -> list[Finding]:
    src = "docker mode runs `docker run`"
    if c.facts.docker is None:
        return [Finding("docker", "n/a", f"{c.host.mode} mode", "", src)]
    problem, found = c.facts.docker
    res: Result = "pass" if problem is None else "BLOCKER"
    return [Finding("docker", res, problem or found, "docker and its daemon", src)]


def toolkit(c: Context) -> list[Finding]:
    """Docker mode with GPUs: ``docker run --gpus`` needs the NVIDIA container toolkit."""
    src = f"{LAUNCH_REQUIREMENTS} (docker mode with GPUs: the NVIDIA container toolkit)"
    need = "nvidia-ctk on PATH or the nvidia runtime in docker info"
    if c.facts.toolkit is None or c.cpu_serving:
        why = f"{c.host.mode} mode" if c.facts.toolkit is None else "CPU serving (gpus: [])"
        return [Finding("nvidia toolkit", "n/a", why, "", src)]
    present, how = c.facts.toolkit
    return [Finding("nvidia toolkit", "pass" if present else "BLOCKER", how, need, src)]


def clock(c: Context) -> list[Finding]:
    synced, how = c.facts.clock
    if synced is None:
        return [Finding("clock", "warn", "synchronisation unknown", "NTP synced", SRC_CLOCK)]
    found = f"{'synchronised' if synced else 'not synchronised'} ({how})"
    return [Finding("clock", "pass" if synced else "warn", found, "NTP synced", SRC_CLOCK)]


RULES: tuple[Rule, ...] = (
    system,
    python,
    gpu,
    gpu_memory,
    driver,
    cudnn,
    cpu,
    ram,
    model_disk,
    ledger,
    port,
    docker,
    toolkit,
    clock,
)


def judge(
    host: Host, facts: Facts, bot_user: str | None = None, rules: Sequence[Rule] = RULES
) -> Preflight:
    """Every rule's findings, in the order of ``rules``."""
    c = Context(host, facts, bot_user)
    return Preflight(tuple(f for rule in rules for f in rule(c)))


def bot_user(name: str, usage: Path, here: Path) -> Finding:
    """Whether ``name`` can read the ledger folder (or pass through to where it will be)."""
    need = f"{name} can read {usage}"
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        return Finding("bot user", "BLOCKER", f"no user {name!r} here", need, SRC_BOT)
    gids = set(os.getgrouplist(name, pw.pw_gid))
    if here == usage:
        ok = can_access(usage, pw.pw_uid, gids, os.R_OK | os.X_OK)
        found = f"{name} (uid {pw.pw_uid}) {'can' if ok else 'cannot'} read {usage}"
        return Finding("bot user", "pass" if ok else "BLOCKER", found, need, SRC_BOT)
    ok = can_access(here, pw.pw_uid, gids, os.X_OK)
    found = f"{usage} is not made yet; {name} {'can' if ok else 'cannot'} pass through {here}" + (
        "; vLLM's user makes it: keep its umask 022" if ok else ""
    )
    return Finding("bot user", "warn" if ok else "BLOCKER", found, need, SRC_BOT)
