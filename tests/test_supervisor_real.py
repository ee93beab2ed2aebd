"""A rendered supervisor section run by a real supervisord: the program starts, gets exactly
bare mode's argv and the ledger's environment, and a ``supervisorctl stop`` reaches it as
SIGTERM; killed with SIGKILL, it is started again under a new pid. vLLM is a stand-in (a
Python program that records what it got and appends its pid at each start, then waits for
SIGTERM); supervisord runs in the foreground on a unix socket in the test's folder and is
stopped by its pid."""

from __future__ import annotations

import contextlib
import dataclasses
import getpass
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO
from vllm_ledger.deploy.host import Host, load_host
from vllm_ledger.deploy.serve import serve_args
from vllm_ledger.deploy.supervisor import program_section

SUPERVISORD = shutil.which("supervisord")
SUPERVISORCTL = shutil.which("supervisorctl")
pytestmark = pytest.mark.skipif(
    SUPERVISORD is None or SUPERVISORCTL is None, reason="supervisor is not installed"
)

STAND_IN = """#!{python}
import json, os, signal, sys, time
out = {out!r}
def stop(signum, frame):
    with open(out + ".signal", "w") as f:
        f.write(signal.Signals(signum).name)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
with open(out + ".pids", "a") as f:
    f.write(f"{{os.getpid()}}\\n")
keys = ("VLLM_API_KEY", "VLLM_LEDGER_DIR", "VLLM_LEDGER_WRITERS", "VLLM_LEDGER_PORT",
        "VLLM_LEDGER_TZ", "PYTHONPATH", "CUDA_VISIBLE_DEVICES", "A")
with open(out + ".tmp", "w") as f:
    json.dump({{"argv": sys.argv, "env": {{k: os.environ.get(k) for k in keys}},
               "cwd": os.getcwd()}}, f)
os.replace(out + ".tmp", out)
while True:
    time.sleep(3600)
"""


def ctl(conf: Path, *args: str) -> str:
    assert SUPERVISORCTL is not None
    proc = subprocess.run(
        [SUPERVISORCTL, "-c", str(conf), *args], capture_output=True, text=True, timeout=120
    )
    return proc.stdout


@dataclass(frozen=True)
class Supervised:
    """supervisord running the rendered section for ``host``: its config, the stand-in's
    record (``record``; its pids, one a start, in ``record.pids``) and the daemon."""

    conf: Path
    host: Host
    exe: Path
    art: Path
    record: Path
    daemon: subprocess.Popen[bytes]
    run: Path

    def pids(self) -> list[int]:
        path = Path(f"{self.record}.pids")
        return [int(line) for line in path.read_text().split()] if path.exists() else []

    def wait_running(self, timeout_s: float) -> str:
        """The program's status line once it is RUNNING, or the last one after ``timeout_s``
        (a bound on the wait, not an assertion)."""
        deadline = time.monotonic() + timeout_s
        status = ""
        while time.monotonic() < deadline:
            assert self.daemon.poll() is None, (self.run / "supervisord.log").read_text()
            status = ctl(self.conf, "status", "vllm-primary")
            if status.split()[1:2] == ["RUNNING"]:
                break
            time.sleep(0.5)
        return status


def _stop_by_pid(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to supervisord by its pid (it stops its program first), SIGKILL after 60 s."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.fixture
def supervised(tmp_path: Path) -> Iterator[Supervised]:
    assert SUPERVISORD is not None
    run = Path(tempfile.mkdtemp(prefix="sv-", dir="/tmp"))  # a short unix socket path
    try:
        record = tmp_path / "got.json"
        exe = tmp_path / "bin" / "vllm"
        exe.parent.mkdir()
        exe.write_text(STAND_IN.format(python=sys.executable, out=str(record)))
        exe.chmod(0o755)
        key = tmp_path / "key"
        key.write_text("sk-test-1\n")
        art = tmp_path / "art"
        art.mkdir()
        base = load_host(REPO / "tests" / "data" / "render" / "gpu-node.json")
        h = dataclasses.replace(
            base,
            model="/m/a b;c #d %e $HOME 'q'",
            vllm_executable=str(exe),
            api_key_file=str(key),
            artifacts_dir=str(art),
            extra_env=(("A", "x,y %z it's"), ("HF_HUB_OFFLINE", "1")),
            user=getpass.getuser(),  # supervisord here runs as this account, not root's vllm
        )
        logs = tmp_path / "logs"
        logs.mkdir()
        (run / "vllm.conf").write_text(
            program_section(h, usage=True, tz="Europe/Berlin", log_dir=str(logs))
        )
        conf = run / "supervisord.conf"
        conf.write_text(
            f"[unix_http_server]\nfile={run}/s.sock\n\n"
            f"[supervisord]\nlogfile={run}/supervisord.log\npidfile={run}/supervisord.pid\n"
            f"childlogdir={run}\nnodaemon=true\n\n"
            "[rpcinterface:supervisor]\n"
            "supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n\n"
            f"[supervisorctl]\nserverurl=unix://{run}/s.sock\n\n"
            f"[include]\nfiles = {run}/vllm.conf\n"
        )
        daemon = subprocess.Popen(
            [SUPERVISORD, "-n", "-c", str(conf)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            yield Supervised(conf, h, exe, art, record, daemon, run)
        finally:
            _stop_by_pid(daemon)
    finally:
        shutil.rmtree(run, ignore_errors=True)


def test_supervisord_runs_the_section_and_stops_it_with_sigterm(supervised: Supervised) -> None:
    s, h, art = supervised, supervised.host, supervised.art
    status = s.wait_running(120)
    assert status.split()[:2] == ["vllm-primary", "RUNNING"], status
    got = json.loads(s.record.read_text())
    assert got["argv"] == [str(s.exe), *serve_args(h, mode="bare", usage=True)]
    assert got["env"] == {
        "VLLM_API_KEY": "sk-test-1",
        "VLLM_LEDGER_DIR": f"{art}/usage",
        "VLLM_LEDGER_WRITERS": "8",
        "VLLM_LEDGER_PORT": "19001",
        "VLLM_LEDGER_TZ": "Europe/Berlin",
        "PYTHONPATH": f"{art}/ledger-plugin",
        "CUDA_VISIBLE_DEVICES": "0,1,2,3",
        "A": "x,y %z it's",
    }
    assert got["cwd"] == str(art)
    assert ctl(s.conf, "stop", "vllm-primary").split() == ["vllm-primary:", "stopped"]
    assert Path(f"{s.record}.signal").read_text() == "SIGTERM"
    assert ctl(s.conf, "status", "vllm-primary").split()[:2] == ["vllm-primary", "STOPPED"]


def test_supervisord_starts_the_program_again_after_sigkill(supervised: Supervised) -> None:
    """``autorestart=true``: a vLLM killed outright (SIGKILL, the OOM killer) is started again
    under a new pid and reaches RUNNING; the stand-in records both starts."""
    s = supervised
    status = s.wait_running(120)
    assert status.split()[:2] == ["vllm-primary", "RUNNING"], status
    first = int(ctl(s.conf, "pid", "vllm-primary"))
    assert s.pids() == [first]
    os.kill(first, signal.SIGKILL)
    deadline = time.monotonic() + 60  # startsecs is 10: a bound on the wait, not an assertion
    second, status = first, ""
    while time.monotonic() < deadline:
        assert s.daemon.poll() is None, (s.run / "supervisord.log").read_text()
        status = ctl(s.conf, "status", "vllm-primary")
        if status.split()[1:2] == ["RUNNING"]:
            second = int(ctl(s.conf, "pid", "vllm-primary"))
            if second != first:
                break
        time.sleep(0.5)
    assert second != first, (
        f"supervisord did not start vllm-primary again within 60 s of SIGKILL to pid {first}: "
        f"status {status.strip()!r}; log:\n" + (s.run / "supervisord.log").read_text()
    )
    assert status.split()[:2] == ["vllm-primary", "RUNNING"], status
    assert s.pids() == [first, second]
    assert not Path(f"{s.record}.signal").exists()  # killed, never asked to stop
