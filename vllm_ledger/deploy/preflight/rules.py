"""The rules preflight judges a host file by: one function per row, over gathered facts. Pure.

Each rule returns its findings: what was found, what is needed and where that requirement is
written down in this project's docs (docs/doctor.md's host requirements, the ledger's and the
bot's pages) or in vLLM's own rules. ``BLOCKER`` means the launch would fail or the ledger would
not survive; ``warn`` that it runs below what is recommended; ``n/a`` that the check does not
apply to this host file. Only ``bot_user`` reads the machine (the user database and modes).
The rows on the software vLLM runs on are ``preflight/softwarerules.py``'s; what a rule is
given and returns, ``preflight/findings.py``'s.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Sequence
from pathlib import Path

from vllm_ledger.deploy.host import Host
from vllm_ledger.deploy.preflight.facts import Facts, can_access, existing, mount_of
from vllm_ledger.deploy.preflight.findings import Context, Finding, Preflight, Result, Rule
from vllm_ledger.deploy.preflight.model import hub_cache
from vllm_ledger.deploy.preflight.sizes import GIB, MIB, gib_text
from vllm_ledger.deploy.preflight.softwarerules import cudnn, python, system, toolkit
from vllm_ledger.deploy.serve import LEDGER_SUBDIR

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

SRC_LEDGER = "docs/ledger.md: the ledger root is a host folder kept for good, not the container's"
SRC_BOT = "docs/bot-status.md: the bot reads the ledger over SSH as its own user"
SRC_CLOCK = "docs/bot-status.md: windows by event time; the bot flags more than 5 s of skew"


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
