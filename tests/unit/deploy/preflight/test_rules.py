"""The rules preflight judges a host file by, each fed facts made here: what it finds, what it
needs, and whether that blocks, warns, passes or does not apply."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from vllm_ledger.deploy.host import parse_host
from vllm_ledger.deploy.preflight.facts import Facts, GpuFacts
from vllm_ledger.deploy.preflight.findings import Context, Finding
from vllm_ledger.deploy.preflight.model import ModelSize, hub_cache
from vllm_ledger.deploy.preflight.rules import (
    RULES,
    bot_user,
    clock,
    cpu,
    docker,
    driver,
    gpu,
    gpu_memory,
    judge,
    ledger,
    model_disk,
    port,
    ram,
)
from vllm_ledger.deploy.preflight.sizes import GIB
from vllm_ledger.observe.gpu import GpuReading


def _gpu(index: int, used_gib: float = 1) -> GpuReading:
    return GpuReading(
        index, f"GPU-{index}", "NVIDIA L4", None, None, int(used_gib * GIB), 24 * GIB, None
    )


FACTS = Facts(
    gpu=GpuFacts(gpus=(_gpu(0), _gpu(1)), driver="550.54", cuda=(12, 4)),
    model=ModelSize(None, 8 * GIB, "8.0 GiB of weights"),
    cores=8,
    cpu_flags={"avx2"},
    mem={"MemTotal": 32 * GIB, "MemAvailable": 20 * GIB},
    mountinfo="",
    port=None,
    docker=None,
    clock=(True, "timedatectl"),
)


def _one(rule: Any, facts: Facts = FACTS, **host: Any) -> Finding:
    (f,) = rule(Context(parse_host({"model": "m", "mode": "bare", "gpus": [0], **host}), facts))
    return f


def _said(f: Finding) -> tuple[str, str]:
    return f.result, f.found


def test_gpus_present_missing_or_too_few() -> None:
    assert _said(_one(gpu)) == ("pass", "1 GPU(s) [0: NVIDIA L4 24.0 GiB]")
    assert _said(_one(gpu, gpus=[0, 3])) == (
        "BLOCKER",
        "1 GPU(s) [0: NVIDIA L4 24.0 GiB]; no GPU [3]",
    )
    few = _one(gpu, gpus="all", tensor_parallel_size=2, data_parallel_size=2)
    assert few.result == "BLOCKER"
    assert few.needs == "4 GPUs (tensor_parallel_size 2 x data_parallel_size 2)"
    assert _said(_one(gpu, gpus=[])) == ("n/a", "CPU serving (gpus: []); NVML sees 2")
    no_nvml = replace(FACTS, gpu=GpuFacts(unavailable="no NVML"))
    assert _said(_one(gpu, no_nvml)) == ("BLOCKER", "no NVIDIA GPU readings (no NVML)")


def test_gpu_memory_against_the_weights_and_whats_free() -> None:
    assert _said(_one(gpu_memory)) == ("pass", "model 8.0 GiB of weights, 8.0 GiB per GPU (tp 1)")
    big = replace(FACTS, model=ModelSize(None, 20 * GIB, "20 GiB"))
    assert _one(gpu_memory, big).result == "warn"  # over 80% of 21.6 GiB
    huge = replace(FACTS, model=ModelSize(None, 30 * GIB, "30 GiB"))
    assert _one(gpu_memory, huge).result == "BLOCKER"
    assert _one(gpu_memory, huge, gpus=[0, 1], tensor_parallel_size=2).result == "pass"
    busy = replace(FACTS, gpu=GpuFacts(gpus=(_gpu(0, used_gib=10),)))
    assert "GPU 0 has 14.0 GiB free, vLLM wants 21.6 GiB" in _one(gpu_memory, busy).found
    unknown = replace(FACTS, model=ModelSize(None, None, "hub name"))
    assert _said(_one(gpu_memory, unknown)) == ("warn", "model size unknown (hub name)")
    assert _one(gpu_memory, gpus=[]).result == "n/a"


def test_the_driver_must_support_cuda_12() -> None:
    assert _said(_one(driver)) == ("pass", "driver 550.54, CUDA 12.4")
    old = replace(FACTS, gpu=replace(FACTS.gpu, cuda=(11, 8)))
    assert _one(driver, old).result == "BLOCKER"
    assert _said(_one(driver, gpus=[])) == ("n/a", "CPU serving")


def test_cpu_cores_and_avx2() -> None:
    assert _said(_one(cpu)) == ("pass", "8 cores, AVX2 yes, AVX-512 no")
    assert _one(cpu, replace(FACTS, cores=2)).result == "warn"
    no_avx2 = replace(FACTS, cpu_flags=set())
    assert (_one(cpu, no_avx2).result, _one(cpu, no_avx2, gpus=[]).result) == ("warn", "BLOCKER")


def test_ram_for_the_weights_and_on_cpu_the_kv_cache() -> None:
    assert _said(_one(ram)) == ("pass", "32.0 GiB total, 20.0 GiB available")
    cpu_kv = _one(ram, gpus=[], extra_env={"VLLM_CPU_KVCACHE_SPACE": "16"})
    assert _said(cpu_kv) == (
        "BLOCKER",
        "32.0 GiB total, 20.0 GiB available; needs 24.0 GiB to load",
    )
    small = replace(FACTS, mem={"MemTotal": 8 * GIB, "MemAvailable": 9 * GIB})
    assert _one(ram, small).result == "warn"
    assert _said(_one(ram, replace(FACTS, mem={}))) == ("warn", "/proc/meminfo unreadable")


def test_the_model_on_disk_or_room_to_download_it(tmp_path: Path) -> None:
    cache = str(hub_cache())
    roomy = replace(FACTS, free_bytes={cache: 60 * GIB})
    assert _one(model_disk, roomy).result == "pass"
    assert _one(model_disk, replace(FACTS, free_bytes={cache: GIB})).result == "warn"
    here = replace(FACTS, model=ModelSize(tmp_path, 8 * GIB, "8.0 GiB"))
    assert _said(_one(model_disk, here)) == ("pass", f"model folder {tmp_path} (8.0 GiB)")
    gone = replace(FACTS, model=ModelSize(tmp_path / "none", None, "not found"))
    assert _said(_one(model_disk, gone)) == ("BLOCKER", "not found")


def test_the_ledger_folder_on_a_persistent_writable_mount(tmp_path: Path) -> None:
    none = Context(parse_host({"model": "m", "mode": "bare"}), FACTS)
    assert [f.result for f in ledger(none)] == ["n/a", "n/a", "n/a"]
    mountinfo = f"22 1 8:1 / {tmp_path} rw - ext4 /dev/sda1 rw\n"
    facts = replace(FACTS, mountinfo=mountinfo, free_bytes={str(tmp_path): 5 * GIB})
    host = parse_host({"model": "m", "mode": "bare", "artifacts_dir": str(tmp_path)})
    disk, folder, bot = ledger(Context(host, facts))
    assert _said(disk) == ("pass", f"5.0 GiB free at {tmp_path}")
    assert _said(folder) == (
        "pass",
        f"{tmp_path / 'usage'} (to be made in {tmp_path}) on ext4 at {tmp_path}",
    )
    assert (bot.result, bot.needs) == ("n/a", "pass --bot-user NAME")
    volatile = replace(facts, mountinfo=mountinfo.replace("ext4", "tmpfs"))
    _disk, folder, _bot = ledger(Context(host, volatile))
    assert folder.result == "BLOCKER" and "gone with the container or at reboot" in folder.found
    low = replace(facts, free_bytes={str(tmp_path): 500 * 2**20})
    assert ledger(Context(host, low))[0].result == "warn"
    assert ledger(Context(host, replace(facts, free_bytes={})))[0].result == "BLOCKER"


def test_the_bot_users_read_of_the_ledger(tmp_path: Path) -> None:
    usage = tmp_path / "usage"
    missing = bot_user("no-such-user-here", usage, tmp_path)
    assert _said(missing) == ("BLOCKER", "no user 'no-such-user-here' here")
    usage.mkdir()
    assert _said(bot_user("root", usage, usage)) == ("pass", f"root (uid 0) can read {usage}")
    later = bot_user("root", tmp_path / "later", tmp_path)
    assert later.result == "warn" and later.found.endswith("keep its umask 022")


def test_port_docker_and_clock() -> None:
    assert _said(_one(port)) == ("pass", "0.0.0.0:8000 free")
    in_use = replace(FACTS, port="127.0.0.1:8000: Address already in use")
    assert _said(_one(port, in_use)) == ("BLOCKER", "127.0.0.1:8000: Address already in use")
    assert _said(_one(docker)) == ("n/a", "bare mode")
    up = replace(FACTS, docker=(None, "Docker 27.1.1"))
    assert _said(_one(docker, up)) == ("pass", "Docker 27.1.1")
    down = replace(FACTS, docker=("the Docker daemon does not answer: x", "/usr/bin/docker"))
    assert _one(docker, down).result == "BLOCKER"
    assert _said(_one(clock)) == ("pass", "synchronised (timedatectl)")
    assert _said(_one(clock, replace(FACTS, clock=(False, "chronyc")))) == (
        "warn",
        "not synchronised (chronyc)",
    )
    assert _one(clock, replace(FACTS, clock=(None, "unknown"))).result == "warn"


def test_judge_runs_the_rules_in_order() -> None:
    host = parse_host({"model": "m", "mode": "bare", "gpus": [0]})
    assert [f.check for f in judge(host, FACTS, rules=(clock, port)).findings] == [
        "clock",
        "port",
    ]
    assert len(RULES) == 14
