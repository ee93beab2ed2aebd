"""vllm-ledger preflight (deploy/preflight.py): this machine's real facts, and the GPU table with
NVML faked only at its module boundary (the object ``pynvml`` would be)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml
import pytest

from devtools.ports import free_port
from tests.inproc import run_cli
from vllm_ledger.deploy.host import parse_host
from vllm_ledger.deploy.preflight import (
    GIB,
    Finding,
    can_access,
    cpu_facts,
    meminfo,
    model_size,
    mount_of,
    preflight,
    safetensors_params,
    table,
)


class FakeNvml:
    """NVML as a module-like object: ``cards`` (name, total GiB, used GiB), a driver."""

    NVMLError = pynvml.NVMLError
    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU

    def __init__(self, cards: list[tuple[str, int, int]], cuda: int = 12080) -> None:
        self.cards = cards
        self.cuda = cuda
        self.shutdowns = 0

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        return len(self.cards)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> str:
        return self.cards[h][0]

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return f"GPU-{h}"

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return 100_000

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
        return SimpleNamespace(gpu=0, memory=0)

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        total, used = self.cards[h][1] * GIB, self.cards[h][2] * GIB
        return SimpleNamespace(used=used, total=total, free=total - used)

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        return 40

    def nvmlSystemGetDriverVersion(self) -> str:
        return "570.86.15"

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return self.cuda


def _loader(nvml: FakeNvml) -> Callable[[], FakeNvml]:
    """An ``nvml_load`` that hands preflight this fake."""
    return lambda: nvml


def _no_nvml() -> Any:
    raise ImportError("no pynvml here")


def _write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> None:
    """A real .safetensors file: its JSON header and zeroed data."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    sizes = {"BF16": 2, "F32": 4, "F16": 2}
    for name, (dtype, shape) in tensors.items():
        n = sizes[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        f.truncate(8 + len(raw) + offset)


def _model(tmp_path: Path, params_millions: int) -> Path:
    """A model folder whose one bf16 tensor holds ``params_millions`` million parameters."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"torch_dtype": "bfloat16"}')
    _write_safetensors(folder / "model.safetensors", {"w": ("BF16", [params_millions, 1_000_000])})
    return folder


def _host(**kw: Any) -> Any:
    return parse_host({"model": "/nowhere/model", "mode": "bare", **kw})


def _by_check(findings: tuple[Finding, ...]) -> dict[str, Finding]:
    return {f.check: f for f in findings}


def test_this_machines_real_facts_for_cpu_serving(tmp_path: Path) -> None:
    """No NVML here: the GPU rows say so; the CPU, RAM, disk and ledger rows are this
    machine's own, read back here the same way a person would."""
    model = _model(tmp_path, 1)
    host = _host(
        model=str(model),
        gpus=[],
        dtype="float32",
        port=free_port(),
        artifacts_dir=str(tmp_path / "artifacts"),
    )
    got = _by_check(preflight(host).findings)
    assert got["gpu"].result == "n/a" and got["gpu"].found.startswith("CPU serving (gpus: [])")
    assert (got["gpu memory"].result, got["gpu memory"].found) == ("n/a", "CPU serving")
    assert got["driver/cuda"].result == "n/a"
    cores = len(os.sched_getaffinity(0))
    cpuinfo = Path("/proc/cpuinfo").read_text()
    avx2 = " avx2" in cpuinfo
    avx512 = " avx512f" in cpuinfo
    assert got["cpu"].found == (
        f"{cores} cores, AVX2 {'yes' if avx2 else 'no'}, AVX-512 {'yes' if avx512 else 'no'}"
    )
    assert got["cpu"].result == ("BLOCKER" if not avx2 else "warn" if cores < 4 else "pass")
    total_kib = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
    assert got["ram"].found.startswith(f"{total_kib * 1024 / GIB:.1f} GiB total")
    assert got["disk (model)"].result == "pass"
    assert "1,000,000 parameters, 3.8 MiB as float32" in got["disk (model)"].found
    assert got["ledger dir"].result == "pass"
    assert got["ledger dir"].found.startswith(f"{tmp_path}/artifacts/usage (to be made in ")
    assert got["port"].result == "pass"
    assert got["docker"] == Finding(
        "docker", "n/a", "bare mode", "", "docker mode runs `docker run`"
    )
    assert got["clock"].result in ("pass", "warn")
    assert [f.check for f in preflight(host).findings] == [
        "os/kernel",
        "python",
        "gpu",
        "gpu memory",
        "driver/cuda",
        "cudnn",
        "cpu",
        "ram",
        "disk (model)",
        "disk (artifacts)",
        "ledger dir",
        "bot user",
        "port",
        "docker",
        "nvidia toolkit",
        "clock",
    ]


def test_gpu_table_from_nvml_against_the_model(tmp_path: Path) -> None:
    """An 8B bf16 model (14.9 GiB of weights): fits an 80 GiB card; on a 20 GiB one at 0.9
    (an 18 GiB budget) the weights fill over 80% of it, little room for the KV cache (warn);
    a 16 GiB one cannot hold it; a card another process already fills is a blocker whatever
    the model."""
    model = _model(tmp_path, 8000)
    base = {"model": str(model), "gpus": "all", "port": free_port(), "dtype": "bfloat16"}
    cases = [
        ([("NVIDIA H100 80GB HBM3", 80, 0)], "pass", "14.9 GiB per GPU (tp 1)"),
        ([("NVIDIA RTX 4000 Ada", 20, 0)], "warn", "GPU 0: weights fill over 80% of its budget"),
        ([("Tesla T4", 16, 0)], "BLOCKER", "GPU 0: 14.9 GiB of weights > 14.4 GiB"),
        (
            [("NVIDIA H100 80GB HBM3", 80, 40)],
            "BLOCKER",
            "GPU 0 has 40.0 GiB free, vLLM wants 72.0",
        ),
    ]
    for cards, result, says in cases:
        nvml = FakeNvml(cards)
        got = _by_check(preflight(_host(**base), nvml_load=_loader(nvml)).findings)
        assert got["gpu"].result == "pass", got["gpu"]
        assert got["gpu"].found == f"1 GPU(s) [0: {cards[0][0]} {cards[0][1]:.1f} GiB]"
        assert got["gpu memory"].result == result, got["gpu memory"]
        assert says in got["gpu memory"].found
        assert got["driver/cuda"].found == "driver 570.86.15, CUDA 12.8"
        assert nvml.shutdowns == 1

    # Tensor parallel splits the weights; too few GPUs, a GPU index not there, an old driver.
    two = FakeNvml([("NVIDIA L4", 24, 0), ("NVIDIA L4", 24, 0)], cuda=11080)
    got = _by_check(
        preflight(_host(**base, tensor_parallel_size=2), nvml_load=lambda: two).findings
    )
    assert (
        got["gpu memory"].result == "pass" and "7.5 GiB per GPU (tp 2)" in got["gpu memory"].found
    )
    assert (got["driver/cuda"].result, got["driver/cuda"].found) == (
        "BLOCKER",
        "driver 570.86.15, CUDA 11.8",
    )
    got = _by_check(preflight(_host(**{**base, "gpus": [0, 3]}), nvml_load=lambda: two).findings)
    assert got["gpu"].result == "BLOCKER" and got["gpu"].found.endswith("; no GPU [3]")
    got = _by_check(
        preflight(_host(**base, tensor_parallel_size=4), nvml_load=lambda: two).findings
    )
    assert got["gpu"].result == "BLOCKER"
    assert got["gpu"].needs == "4 GPUs (tensor_parallel_size 4 x data_parallel_size 1)"
    # No NVML at all on a host file that asks for GPUs: a blocker saying why.
    got = _by_check(preflight(_host(**base), nvml_load=_no_nvml).findings)
    assert got["gpu"].result == "BLOCKER"
    assert got["gpu"].found.startswith("no NVIDIA GPU readings (nvidia-ml-py is not installed")


def _vllm_without_torch(folder: Path) -> Path:
    """A ``vllm`` program whose Python is this one but answers the preflight's probe without
    importing torch for cuDNN (2 s of CPU; the real one runs in test_preflight_system.py)."""
    python = folder / "python"
    python.write_text(
        f'#!/bin/sh\n# -I -c PROBE [torch]: the probe alone\nexec {sys.executable} -I -c "$3"\n'
    )
    vllm = folder / "vllm"
    vllm.write_text(f"#!{python}\n")
    for p in (python, vllm):
        p.chmod(0o755)
    return vllm


def test_a_port_in_use_is_a_blocker_and_exits_1(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        hostfile = tmp_path / "host.json"
        hostfile.write_text(
            json.dumps(
                {
                    "mode": "bare",
                    "model": str(_model(tmp_path, 1)),
                    "host": "127.0.0.1",
                    "port": port,
                    "gpus": [],
                    "vllm_executable": str(_vllm_without_torch(tmp_path)),
                }
            )
        )
        code, out, err = run_cli("preflight", "--host", str(hostfile))
    assert (code, err) == (1, ""), err
    lines = out.splitlines()
    assert lines[0].split() == ["check", "result", "found", "|", "needs", "(from)"]
    (row,) = [ln for ln in lines if ln.startswith("port ")]
    assert row.split()[1] == "BLOCKER"
    assert f"127.0.0.1:{port}: Address already in use | needs 127.0.0.1:{port} free" in row
    assert lines[-1] == "1 blocker"
    assert len(lines) == 18  # header, sixteen checks, the count: one line each


@pytest.fixture
def open_base() -> Iterator[Path]:
    """A folder in /tmp every user can pass through (pytest's tmp_path is root's 0700)."""
    base = Path(tempfile.mkdtemp(prefix="preflight-", dir="/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base)


def test_an_overlay_ledger_folder_and_a_bot_that_cannot_read_it(open_base: Path) -> None:
    tmp_path = open_base
    mountinfo = (
        "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
        "40 27 0:50 / /srv/artifacts rw,relatime - overlay overlay rw,lowerdir=/a\n"
        "41 27 0:51 / /srv/art\\040x rw - ext4 /dev/vdb rw\n"
    )
    assert mount_of(Path("/srv/artifacts/usage"), mountinfo) == ("/srv/artifacts", "overlay")
    assert mount_of(Path("/srv/artifactsX"), mountinfo) == ("/", "ext4")
    assert mount_of(Path("/srv/art x/usage"), mountinfo) == ("/srv/art x", "ext4")

    usage = tmp_path / "art" / "usage"
    usage.mkdir(parents=True)
    usage.chmod(0o750)
    os.chown(usage, 0, 0)
    nobody = 65534
    assert can_access(usage, 0, {0}, os.R_OK | os.X_OK)
    assert not can_access(usage, nobody, {nobody}, os.R_OK | os.X_OK)
    assert can_access(usage, nobody, {nobody, 0}, os.R_OK | os.X_OK)  # in root's group
    usage.chmod(0o755)
    assert can_access(usage, nobody, {nobody}, os.R_OK | os.X_OK)
    assert not can_access(usage, nobody, {nobody}, os.W_OK)
    (tmp_path / "art").chmod(0o700)  # a folder above it the bot cannot pass through
    assert not can_access(usage, nobody, {nobody}, os.R_OK | os.X_OK)

    host = _host(gpus=[], port=free_port(), artifacts_dir=str(tmp_path / "art"))
    got = _by_check(preflight(host, bot_user="nobody").findings)
    assert got["bot user"].result == "BLOCKER"
    assert got["bot user"].found == f"nobody (uid {nobody}) cannot read {usage}"
    (tmp_path / "art").chmod(0o755)
    got = _by_check(preflight(host, bot_user="nobody").findings)
    assert (got["bot user"].result, got["bot user"].found) == (
        "pass",
        f"nobody (uid {nobody}) can read {usage}",
    )
    got = _by_check(preflight(host, bot_user="no-such-user-x").findings)
    assert (got["bot user"].result, got["bot user"].found) == (
        "BLOCKER",
        "no user 'no-such-user-x' here",
    )


def test_a_ledger_folder_on_tmpfs_is_a_blocker(tmp_path: Path) -> None:
    """The ledger must outlive the container (docs/ledger.md): a real tmpfs is refused."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    from tests.faults.helpers import tmpfs

    with tmpfs("1m") as mnt:
        host = _host(gpus=[], port=free_port(), artifacts_dir=str(mnt))
        got = _by_check(preflight(host).findings)
    assert got["ledger dir"].result == "BLOCKER"
    assert f"on tmpfs ({mnt}): gone with the container or at reboot" in got["ledger dir"].found
    assert got["disk (artifacts)"].result == "BLOCKER"  # 1 MiB free: under 100 MiB


def test_facts_from_proc_and_safetensors(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cpuinfo").write_text("processor\t: 0\nflags\t\t: fpu sse2 avx avx2 avx512f\n")
    (proc / "meminfo").write_text("MemTotal:       24684084 kB\nMemAvailable:   100 kB\n")
    assert cpu_facts(proc)[1] == {"fpu", "sse2", "avx", "avx2", "avx512f"}
    assert meminfo(proc) == {"MemTotal": 24684084 * 1024, "MemAvailable": 102400}
    f = tmp_path / "x.safetensors"
    _write_safetensors(f, {"a": ("F32", [3, 4]), "b": ("BF16", [5])})
    assert safetensors_params(f) == (17, 58, {"F32", "BF16"})
    # A model given by hub name is no folder here: its size is unknown, the cache is checked.
    size = model_size(_host(model="Qwen/Qwen3-8B"))
    assert (size.path, size.weight_bytes) == (None, None)


def test_table_is_one_line_per_check() -> None:
    from vllm_ledger.deploy.preflight import Preflight

    p = Preflight((Finding("port", "BLOCKER", "in use", "free", "host file"),))
    assert table(p) == [
        "check  result   found | needs (from)",
        "port   BLOCKER  in use | needs free (host file)",
    ]


def test_the_table_shows_control_characters_in_a_model_path_escaped() -> None:
    from vllm_ledger.deploy.preflight import Preflight

    evil = "/models/qwen\n\x1b[2Jgpu  pass  forged line"
    p = Preflight((Finding("disk (model)", "BLOCKER", f"model folder {evil} not found", "", "x"),))
    lines = table(p)
    assert len(lines) == 2  # no forged line
    assert "\\x0a\\x1b[2Jgpu" in lines[1] and "\x1b" not in lines[1]
