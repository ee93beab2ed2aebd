"""The maintenance pass and the enforcer kept out of the serving process: the child's command
line and environment, its wait, its end and the threads that start it again. The children here
are tiny shell commands (the real pass in a child: tests/test_background.py)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import REPO
from vllm_ledger import background

LOGGER = "vllm.ledger.maintenance"
# The loop never returns: a test ends its thread by raising from the sleep it hands in.
ENDS_THE_LOOP = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


def _sh(script: str) -> subprocess.Popen[bytes]:
    return background.spawn_child(["/bin/sh", "-c", script])


def test_the_child_finds_this_package_without_an_install(tmp_path: Path) -> None:
    """As in a container with the bundle on PYTHONPATH: the child's path starts with the
    folder this package was loaded from, whatever the serving process's PYTHONPATH held."""
    env = background.child_env({"PYTHONPATH": "/opt/elsewhere", "HOME": "/root"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(REPO), "/opt/elsewhere"]
    assert background.child_env({})["PYTHONPATH"] == str(REPO)
    argv = background.child_argv(tmp_path)
    assert argv == [sys.executable, "-m", "vllm_ledger.maintenance", str(tmp_path)]
    assert background.enforcer_argv(tmp_path, tmp_path / "b.json") == [
        sys.executable,
        "-m",
        "vllm_ledger.enforcer",
        str(tmp_path),
        "--config",
        str(tmp_path / "b.json"),
    ]


def test_a_pass_that_exits_is_reaped_and_a_failure_is_its_last_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert background.wait_for_pass(_sh("exit 0")) == 0
    proc = _sh("echo first >&2; echo the last words >&2; exit 3")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert background.wait_for_pass(proc, timeout_s=30) == 3
    assert [r.message for r in caplog.records] == [
        "vllm-ledger: maintenance pass exited with status 3: the last words"
    ]
    assert proc.returncode == 3 and proc.stderr is not None and proc.stderr.closed
    assert background.end_child(proc) == 3  # safe twice


def test_a_silent_failure_says_no_message(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert background.wait_for_pass(_sh("exit 4")) == 4
    assert caplog.records[0].message.endswith("status 4: no message")


def test_a_pass_past_its_limit_is_killed_with_its_group(caplog: pytest.LogCaptureFixture) -> None:
    proc = _sh("sleep 30 & sleep 30")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert background.wait_for_pass(proc, timeout_s=0.05) == -9
    assert f"maintenance pass killed after 0 s (pid {proc.pid})" in caplog.records[0].message
    assert proc.returncode == -9


@ENDS_THE_LOOP
def test_the_background_thread_sleeps_spawns_and_sleeps_again(tmp_path: Path) -> None:
    sleeps: list[float] = []
    spawned: list[Path] = []
    done = threading.Event()

    def fake_sleep(s: float) -> None:
        sleeps.append(s)
        if len(sleeps) == 2:  # after the first pass: end the thread
            done.set()
            raise SystemExit

    def spawn(root: Path) -> subprocess.Popen[bytes]:
        spawned.append(root)
        return _sh("exit 0")

    t = background.start_background(
        tmp_path, first_delay_s=60.0, interval_s=21600.0, sleep=fake_sleep, spawn=spawn
    )
    assert done.wait(30)
    t.join(10)
    assert (sleeps, spawned) == ([60.0, 21600.0], [tmp_path])
    assert t.daemon and t.name == "vllm-ledger-maintenance"


@ENDS_THE_LOOP
def test_a_pass_that_cannot_start_is_one_line_and_the_loop_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sleeps: list[float] = []
    done = threading.Event()

    def fake_sleep(s: float) -> None:
        sleeps.append(s)
        if len(sleeps) == 3:
            done.set()
            raise SystemExit

    def spawn(_root: Path) -> subprocess.Popen[bytes]:
        raise OSError(11, "Resource temporarily unavailable")

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        t = background.start_background(
            tmp_path, first_delay_s=1, interval_s=2, sleep=fake_sleep, spawn=spawn
        )
        assert done.wait(30)
        t.join(10)
    assert sleeps == [1, 2, 2]
    assert [r.message for r in caplog.records] == [
        "vllm-ledger: maintenance pass not started: [Errno 11] Resource temporarily unavailable"
    ] * 2


def test_the_enforcer_is_started_again_backing_off(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sleeps: list[float] = []
    rounds = iter([True, True, True, False])

    def spawn(root: Path, config: Path) -> subprocess.Popen[bytes]:
        assert (root, config) == (tmp_path, tmp_path / "b.json")
        return _sh("echo budgets file gone >&2; exit 2")

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        background.supervise_enforcer(
            tmp_path,
            tmp_path / "b.json",
            sleep=sleeps.append,
            spawn=spawn,
            keep_going=lambda: next(rounds),
        )
    assert sleeps == [5.0, 5.0, 10.0, 20.0]
    assert [r.message for r in caplog.records] == [
        "vllm-ledger: the enforcer exited with status 2 (budgets file gone); hard budgets are "
        "not enforced until it runs again (docs/budgets.md)"
    ] * 3
