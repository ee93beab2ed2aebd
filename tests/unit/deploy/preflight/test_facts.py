"""What preflight reads off the machine, each reader on text or files made here: /proc, the
mount table, permissions for another user, a port, Docker and the clock (their commands given
as stand-ins), NVML at its module boundary, /etc/os-release."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from vllm_ledger.deploy.preflight.facts import (
    GpuFacts,
    can_access,
    clock_sync,
    cpu_facts,
    docker_problem,
    existing,
    gpu_facts,
    meminfo,
    mount_of,
    os_release,
    port_problem,
    system_facts,
)

MOUNTINFO = (
    "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
    "30 22 0:25 / /srv rw - xfs /dev/sdb1 rw\n"
    "31 30 0:26 / /srv/my\\040data rw - tmpfs tmpfs rw\n"
    "bad line\n"
)


def test_cpu_flags_and_memory_from_proc(tmp_path: Path) -> None:
    (tmp_path / "cpuinfo").write_text("processor\t: 0\nflags\t\t: fpu avx2\nflags\t: other\n")
    (tmp_path / "meminfo").write_text("MemTotal: 2 kB\nHugePages_Total: 3\nBad: x kB\n")
    cores, flags = cpu_facts(tmp_path)
    assert cores == len(os.sched_getaffinity(0)) and flags == {"fpu", "avx2"}
    assert meminfo(tmp_path) == {"MemTotal": 2048, "HugePages_Total": 3}
    assert cpu_facts(tmp_path / "none")[1] == set() and meminfo(tmp_path / "none") == {}


def test_the_mount_holding_a_path() -> None:
    assert mount_of(Path("/srv/models/x"), MOUNTINFO) == ("/srv", "xfs")
    assert mount_of(Path("/srv/my data/usage"), MOUNTINFO) == ("/srv/my data", "tmpfs")
    assert mount_of(Path("/srvx"), MOUNTINFO) == ("/", "ext4")
    assert mount_of(Path("/x"), "") == ("/", "?")


def test_existing_walks_up_to_a_folder_that_is_there(tmp_path: Path) -> None:
    assert existing(tmp_path / "a" / "b" / "c") == tmp_path
    assert existing(tmp_path) == tmp_path


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A folder every user may search up to (pytest's own is its owner's alone)."""
    with tempfile.TemporaryDirectory() as name:
        os.chmod(name, 0o755)
        yield Path(name)


def test_access_for_another_user_by_the_mode_bits(open_dir: Path) -> None:
    folder = open_dir / "usage"
    folder.mkdir()
    f = folder / "ledger"
    f.write_text("")
    st = f.stat()
    other = st.st_uid + 12345
    assert can_access(f, 0, set(), os.W_OK)  # root
    os.chmod(f, 0o640)
    assert can_access(f, st.st_uid, set(), os.R_OK | os.W_OK)
    assert can_access(f, other, {st.st_gid}, os.R_OK)
    assert not can_access(f, other, {st.st_gid}, os.W_OK)
    assert not can_access(f, other, set(), os.R_OK)
    os.chmod(f, 0o644)
    assert can_access(f, other, set(), os.R_OK)
    os.chmod(folder, 0o700)  # no search permission on the way
    try:
        assert not can_access(f, other, set(), os.R_OK)
    finally:
        os.chmod(folder, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    assert not can_access(open_dir / "none", other, set(), os.R_OK)


def test_a_port_in_use_is_named() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert port_problem("127.0.0.1", port) == f"127.0.0.1:{port}: Address already in use"
    assert port_problem("127.0.0.1", port) is None
    assert port_problem("192.0.2.1", port) == f"192.0.2.1:{port}: Cannot assign requested address"


def _on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    for name in names:
        exe = tmp_path / name
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))


def _answer(code: int, out: str = "", err: str = "") -> Any:
    def run(argv: list[str], **_kw: Any) -> Any:
        return SimpleNamespace(returncode=code, stdout=out, stderr=err)

    return run


def test_docker_client_and_daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _on_path(tmp_path, monkeypatch)
    assert docker_problem(_answer(0)) == ("no docker command on PATH", "no docker")
    _on_path(tmp_path, monkeypatch, "docker")
    exe = str(tmp_path / "docker")
    assert docker_problem(_answer(0, "27.1.1\n")) == (None, "Docker 27.1.1")
    assert docker_problem(_answer(1, err="x\nCannot connect to the Docker daemon\n")) == (
        "the Docker daemon does not answer: Cannot connect to the Docker daemon",
        exe,
    )

    def hangs(argv: list[str], **_kw: Any) -> Any:
        raise subprocess.TimeoutExpired(argv, 15)

    problem, found = docker_problem(hangs)
    assert problem is not None and problem.startswith("docker version failed: Command ")
    assert found == exe


def test_clock_sync_from_timedatectl_then_chronyc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _on_path(tmp_path, monkeypatch, "timedatectl", "chronyc")
    assert clock_sync(_answer(0, "yes\n")) == (True, "timedatectl")
    assert clock_sync(_answer(0, "no\n")) == (False, "timedatectl")

    def chrony(argv: list[str], **_kw: Any) -> Any:
        if argv[0] == "timedatectl":
            return SimpleNamespace(returncode=1, stdout="", stderr="")
        return SimpleNamespace(returncode=0, stdout="Leap status     : Not synchronised\n")

    assert clock_sync(chrony) == (False, "chronyc")
    synced, how = clock_sync(_answer(1))  # neither answers: the kernel's own word
    assert how in ("adjtimex", "unknown") and synced in (True, False, None)


def test_nvml_missing_failing_or_unreadable_is_said() -> None:
    def missing() -> Any:
        raise ImportError("No module named 'pynvml'")

    assert gpu_facts(missing) == GpuFacts(
        unavailable="nvidia-ml-py is not installed: pip install 'vllm-ledger[gpu]'"
    )

    class NoDriver(Exception):
        pass

    class Nvml:
        shutdowns = 0

        def nvmlInit(self) -> None:
            raise NoDriver("Driver Not Loaded")

        def nvmlShutdown(self) -> None:
            Nvml.shutdowns += 1

    assert gpu_facts(Nvml) == GpuFacts(unavailable="NoDriver: Driver Not Loaded")

    class Broken(Nvml):
        def nvmlInit(self) -> None:
            pass

        def nvmlDeviceGetCount(self) -> int:
            raise RuntimeError("GPU is lost")

    got = gpu_facts(Broken)
    assert got.unavailable == "NVML read failed: RuntimeError: GPU is lost"
    assert Nvml.shutdowns == 1  # shut down after a read, not after a failed init


def test_os_release_and_the_system_line(tmp_path: Path) -> None:
    rel = tmp_path / "os-release"
    rel.write_text('NAME="Ubuntu"\nVERSION="22.04.4 LTS (Jammy)"\n#X=1\nEMPTY=\n')
    assert os_release(rel) == {"NAME": "Ubuntu", "VERSION": "22.04.4 LTS (Jammy)", "EMPTY": ""}
    facts = system_facts(rel)
    u = os.uname()
    assert facts.os_name == "Ubuntu 22.04.4 LTS (Jammy)"
    assert (facts.kernel_name, facts.kernel_release, facts.machine) == (
        u.sysname,
        u.release,
        u.machine,
    )
    rel.write_text('PRETTY_NAME="Debian GNU/Linux 12"\nNAME=Debian\n')
    assert system_facts(rel).os_name == "Debian GNU/Linux 12"
    assert system_facts(tmp_path / "none").os_name is None
