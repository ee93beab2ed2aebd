"""A rendered supervisor section run by a real supervisord: the program starts, gets exactly
bare mode's argv and the ledger's environment, and a ``supervisorctl stop`` reaches it as
SIGTERM. vLLM is a stand-in (a Python program that records what it got, then waits for
SIGTERM); supervisord runs in the foreground on a unix socket in the test's folder and is
stopped by its pid."""

from __future__ import annotations

import dataclasses
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from vllm_ledger.deploy.host import load_host
from vllm_ledger.deploy.launch import serve_args
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


def test_supervisord_runs_the_section_and_stops_it_with_sigterm(tmp_path: Path) -> None:
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
            deadline = time.monotonic() + 120  # a bound on the wait, not an assertion
            status = ""
            while "RUNNING" not in status and time.monotonic() < deadline:
                assert daemon.poll() is None, (run / "supervisord.log").read_text()
                status = ctl(conf, "status", "vllm-primary")
                time.sleep(0.5)
            assert status.split()[:2] == ["vllm-primary", "RUNNING"], status
            got = json.loads(record.read_text())
            assert got["argv"] == [str(exe), *serve_args(h, mode="bare", usage=True)]
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
            assert ctl(conf, "stop", "vllm-primary").split() == ["vllm-primary:", "stopped"]
            assert Path(f"{record}.signal").read_text() == "SIGTERM"
            assert ctl(conf, "status", "vllm-primary").split()[:2] == ["vllm-primary", "STOPPED"]
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=60)
    finally:
        shutil.rmtree(run, ignore_errors=True)
