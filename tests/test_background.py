"""The rank-0 maintenance pass runs in a low-priority child process, never on vLLM's GIL.

Real child processes on real ledgers: the pass compacts and writes the summary exactly as
``vllm-ledger compact`` does, at idle CPU priority, and a pass that fails or hangs is logged
and ended without touching the caller.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli
from tests.generate import generate
from tests.ledgers import second_rows
from vllm_ledger import background
from vllm_ledger.read import summary

NOW = 1_795_000_000


@pytest.fixture(scope="module")
def old_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two writers, three finished runs over 12 days (before today: all past the horizon)."""
    root = tmp_path_factory.mktemp("old") / "ledger"
    generate(root, writers=2, days=12, runs=3, now=NOW)
    return root


def _total(root: Path, at: int) -> dict:
    """The total as of ``at``: after the compaction horizon, so exact after a pass."""
    code, out, err = run_cli("report", "--root", str(root), "--json", "--at", str(at))
    assert code == 0, err
    return json.loads(out)["windows"]["total"]


def test_the_child_pass_compacts_and_writes_the_summary(old_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    shutil.copytree(old_root, root)
    at = int(time.time())  # the child compacts as of the real clock
    before_rows, before_total = second_rows(root), _total(root, at)
    proc = background.spawn_pass(root)
    assert proc.pid != os.getpid()
    assert background.wait_for_pass(proc, timeout_s=120) == 0
    assert second_rows(root) < before_rows  # per-second rows past the horizon are gone
    assert len(summary.load(root)) == 6  # 2 writers x 3 finished runs
    assert _total(root, at) == before_total  # every figure kept


def test_the_child_finds_this_package_without_an_install(tmp_path: Path) -> None:
    """A child without PYTHONPATH imports this package from this checkout (the path and
    command line themselves: tests/unit/test_background.py)."""
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", "import vllm_ledger.maintenance as m; print(m.__file__)"],
        env=background.child_env(clean),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == str(REPO / "vllm_ledger" / "maintenance.py")


def test_the_pass_lowers_its_own_priority_to_idle() -> None:
    code = (
        "import os; from vllm_ledger.maintenance import lower_priority; lower_priority(); "
        "print(os.nice(0), os.sched_getscheduler(0) == os.SCHED_IDLE)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=background.child_env(os.environ),
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["19", "True"]


def test_a_failing_pass_is_one_log_line_and_a_status(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "vllm_ledger.maintenance"],  # no root: usage, exit 2
        env=background.child_env(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    with caplog.at_level(logging.WARNING, logger="vllm.ledger.maintenance"):
        assert background.wait_for_pass(proc) == 2
    (rec,) = caplog.records
    assert "exited with status 2: usage: python -m vllm_ledger.maintenance ROOT" in rec.message


def test_a_hung_pass_is_killed_at_its_limit(caplog: pytest.LogCaptureFixture) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    with caplog.at_level(logging.WARNING, logger="vllm.ledger.maintenance"):
        assert background.wait_for_pass(proc, timeout_s=0.5) == -9
    assert proc.returncode == -9
    assert "killed after 0 s" in caplog.records[0].message


def test_the_background_thread_sleeps_spawns_waits_and_sleeps_again(
    old_root: Path, tmp_path: Path
) -> None:
    root = tmp_path / "ledger"
    shutil.copytree(old_root, root)
    sleeps: list[float] = []
    done = threading.Event()

    def fake_sleep(s: float) -> None:
        sleeps.append(s)
        if len(sleeps) == 2:  # after the first pass: end the thread
            done.set()
            raise SystemExit

    t = background.start_background(root, first_delay_s=60.0, interval_s=21600.0, sleep=fake_sleep)
    assert done.wait(120)
    t.join(10)
    assert sleeps == [60.0, 21600.0]
    assert t.daemon and t.name == "vllm-ledger-maintenance"
    assert len(summary.load(root)) == 6  # the pass ran, in a child, before the second sleep


# A process that spawns passes as the API process does, run as a child subreaper: an orphan
# of its passes comes to it, as to PID 1 in a container without an init, and nothing in it
# reaps but ``background``. It prints its children (pid, state) after the pass: a zombie is
# state Z with its pid as ppid.
SPAWNER = r"""
import ctypes, json, os, signal, subprocess, sys, threading, time
from pathlib import Path

from vllm_ledger import background

def children():
    me, out = str(os.getpid()), []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == me:
            out.append([int(name), fields[0]])
    return sorted(out)

def stopped_pass(root):
    proc = background.spawn_pass(root)
    os.kill(proc.pid, signal.SIGSTOP)  # a pass that hangs
    return proc

def wait_for_file(path):
    while not path.exists():
        time.sleep(0.05)
    return int(path.read_text())

# A child that leaves a process behind in its group, holding its stderr pipe open.
LEAVES = (
    "import os, sys, time\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    time.sleep(600)\n"
    "    os._exit(0)\n"
    "open(sys.argv[1] + '.tmp', 'w').write(str(pid))\n"
    "os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
    "time.sleep(600 if sys.argv[2] == 'hang' else 0)\n"
)

assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
mode, root = sys.argv[1], Path(sys.argv[2])
left, out = root.parent / "left-behind.pid", {}
started = time.monotonic()
if mode == "finishes":
    proc = background.spawn_pass(root)
    out["status"] = background.wait_for_pass(proc, timeout_s=120)
elif mode == "hangs":
    proc = stopped_pass(root)
    out["status"] = background.wait_for_pass(proc, timeout_s=0.5)
elif mode in ("hangs-leaving-one", "exits-leaving-one"):
    how = mode.split("-")[0].removesuffix("s")
    proc = background.spawn_child([sys.executable, "-c", LEAVES, str(left), how])
    out["left_behind"] = wait_for_file(left)
    out["status"] = background.wait_for_pass(proc, timeout_s=0.5 if how == "hang" else 60)
    out["left_behind_alive"] = os.path.exists(f"/proc/{out['left_behind']}")
elif mode == "exits-during-a-pass":  # the API process, under a PID 1 (here: this) that reaps
    inner = [sys.executable, "-c", sys.argv[3], "api-process-exits", str(root), sys.argv[3]]
    out["status"] = subprocess.run(inner, check=True).returncode
elif mode == "api-process-exits":  # starts a pass that hangs, and exits while it runs
    running = threading.Event()
    def spawn(root):
        proc = stopped_pass(root)
        running.set()
        return proc
    background.start_background(root, first_delay_s=0, interval_s=3600, spawn=spawn)
    assert running.wait(60)
    sys.exit(0)
out["seconds"] = round(time.monotonic() - started, 1)
out["children"] = children()
print(json.dumps(out))
"""


def _spawner(mode: str, root: Path) -> dict:
    proc = subprocess.Popen(
        [sys.executable, "-c", SPAWNER, mode, str(root), SPAWNER],
        env=background.child_env(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=240)
    finally:
        _stop_group(proc.pid)
        _stop_left_behind(root.parent / "left-behind.pid")
    assert proc.returncode == 0, err
    doc: dict = json.loads(out)
    print(f"\n{mode}: {doc}")
    return doc


def _stop_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _stop_left_behind(pid_file: Path) -> None:
    """The process a child left behind, where a failing ``background`` left it running."""
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text())
    with contextlib.suppress(OSError):
        if str(pid_file).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    ("mode", "status"),
    [
        ("finishes", 0),  # the pass on a real root
        ("hangs", -9),  # given up at its limit: killed, reaped
        ("hangs-leaving-one", -9),  # and a process it left holds its stderr pipe
        ("exits-leaving-one", 0),  # exits at once, leaving that process behind
        ("exits-during-a-pass", 0),  # the API process exits while a pass hangs
    ],
)
def test_no_zombie_is_left_when_nothing_else_reaps(
    mode: str, status: int, old_root: Path, tmp_path: Path
) -> None:
    """Every path of a pass ends with it reaped by the process that spawned it, and nothing of
    it left to a PID 1 that does not reap (here a child subreaper that reaps nothing itself):
    no zombie child remains, nor any child at all."""
    root = tmp_path / "ledger"
    shutil.copytree(old_root, root)
    doc = _spawner(mode, root)
    assert doc["status"] == status
    assert doc["children"] == []
    if "left_behind" in doc:  # killed with the pass's process group, and reaped here
        assert doc["left_behind_alive"] is False


def test_without_a_pidfd_the_wait_checks_the_child_every_step(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A kernel before 5.3, or a seccomp filter, refuses pidfd_open: the same wait, by steps."""

    def refused(_pid: int) -> int:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "pidfd_open", refused)
    proc = background.spawn_child([sys.executable, "-m", "vllm_ledger.maintenance"])  # usage
    with caplog.at_level(logging.WARNING, logger="vllm.ledger.maintenance"):
        assert background.wait_for_pass(proc, timeout_s=60) == 2
    assert proc.returncode == 2
    (rec,) = caplog.records
    assert rec.message.endswith(
        "exited with status 2: usage: python -m vllm_ledger.maintenance ROOT"
    )
    hung = background.spawn_child([sys.executable, "-c", "import time; time.sleep(60)"])
    assert background.wait_for_pass(hung, timeout_s=0.2) == -9
    assert hung.returncode == -9
