"""The rank-0 maintenance pass runs in a low-priority child process, never on vLLM's GIL.

Real child processes on real ledgers: the pass compacts and writes the summary exactly as
``vllm-ledger compact`` does, at idle CPU priority, and a pass that fails or hangs is logged
and ended without touching the caller.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
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
    """As in a container with the bundle on PYTHONPATH: the child's path starts with the
    folder this package was loaded from, whatever the serving process's PYTHONPATH held."""
    env = background.child_env({"PYTHONPATH": "/opt/elsewhere", "HOME": "/root"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(REPO), "/opt/elsewhere"]
    assert background.child_env({})["PYTHONPATH"] == str(REPO)
    argv = background.child_argv(tmp_path)
    assert argv == [sys.executable, "-m", "vllm_ledger.maintenance", str(tmp_path)]
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
