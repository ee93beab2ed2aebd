"""The notifier answers "@bot status" and "@bot usage" for hosts it reaches without SSH.

No sshd runs, and the notifier's PATH holds no ssh client: one node port's ledger is read by
the status command run here (transport ``local``), another's through a real exporter's
``/status`` with its bearer token from a file (transport ``http``), and a third entry names
the same exporter with a wrong token: refused there (401), so that port's figures are
"query failed", never zeros. The local port has a stand-in vLLM answering /health, probed by
the status command itself as under the forced command.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.e2e.notifier_fakes import (
    SECRET,
    FakePlatform,
    HealthStandIn,
    NotifierProc,
    send_command,
    wait_for,
    write_config,
)
from tests.e2e.sshd import free_port, write_instance_ledger

pytestmark = pytest.mark.e2e

NOW = time.time()
TOKEN = "k8s-secret-status-token"
EVENTS = [
    (NOW - 2 * 86400, 0, 7000, 300, 2000, ((150, 3.0),)),
    (NOW - 600, 0, 1200, 40, 600, ((40, 0.8),)),
]


def _status_code(url: str, token: str | None) -> int:
    req = urllib.request.Request(url)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@contextlib.contextmanager
def exporter(root: Path, token_file: Path, port: int) -> Iterator[str]:
    """``vllm-ledger exporter --status-token-file`` as a child; yields its /status URL."""
    log = root.parent / "exporter.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "vllm_ledger", "exporter", "--root", str(root), "--no-gpu",
             "--listen", f"127.0.0.1:{port}", "--status-token-file", str(token_file)],
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}/status"
    try:
        wait_for("the exporter", lambda: proc.poll() is not None or _up(url), 30)
        assert proc.poll() is None, log.read_text()
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)


def _up(url: str) -> bool:
    with contextlib.suppress(OSError):
        return _status_code(url, None) == 401
    return False


def test_status_and_usage_over_local_and_http_with_no_ssh(
    tmp_path: Path, platform: FakePlatform
) -> None:
    vllm_up = HealthStandIn().start()
    via_http, refused = free_port(), free_port()
    local_root, http_root = tmp_path / "usage-local", tmp_path / "usage-http"
    write_instance_ledger(local_root, vllm_up.port, EVENTS, run_id="run-l", host_name="gpu0")
    write_instance_ledger(http_root, via_http, EVENTS[1:], run_id="run-h", host_name="pod0")
    token_file, wrong_file = tmp_path / "status_token", tmp_path / "wrong_token"
    token_file.write_text(TOKEN + "\n")
    wrong_file.write_text(TOKEN + "-old\n")
    no_ssh = tmp_path / "bin"  # the notifier's PATH: no ssh client to run
    no_ssh.mkdir()
    try:
        with exporter(http_root, token_file, free_port()) as url:
            assert _status_code(url, TOKEN + "-old") == 401  # a wrong token: refused there
            usage = {
                str(vllm_up.port): {"transport": "local", "data_dir": str(local_root)},
                str(via_http): {"transport": "http", "url": url, "token_file": str(token_file)},
                str(refused): {"transport": "http", "url": url, "token_file": str(wrong_file)},
            }
            listen = free_port()
            config = write_config(
                tmp_path / "private.json", usage, {"lang": "en", "startup_wait_s": 20}
            )
            n = NotifierProc(
                config,
                {
                    "VLLM_LEDGER_COMMAND_SECRET": SECRET.decode(),
                    "VLLM_LEDGER_WEBHOOK_URL": platform.hook_url,
                    "PATH": str(no_ssh),
                },
                listen,
            )
            n.start_args = ["--listen", f"127.0.0.1:{listen}"]
            n.start()
            try:
                assert send_command(listen, "s1", "@bot status")[0] == 202
                reply = wait_for("the status reply", lambda: platform.posts, 60)[0]
                assert send_command(listen, "u1", "@bot usage key today")[0] == 202
                answer = wait_for("the usage reply", lambda: platform.posts[1:], 60)[0]
            finally:
                n.stop()
    finally:
        vllm_up.stop()
    assert reply.startswith("Status\ndeployments 3: healthy 1, "), reply
    assert f"── :{vllm_up.port} ──\nvLLM healthy · ledger: no live writer" in reply
    assert f"── :{via_http} ──\nvLLM not responding · ledger: no live writer" in reply
    assert f"── :{refused} ──\nvLLM not checked · ledger query failed" in reply, reply
    blocks = reply.split("── :")
    local_block = next(b for b in blocks if b.startswith(f"{vllm_up.port} "))
    http_block = next(b for b in blocks if b.startswith(f"{via_http} "))
    assert "\ntotal    8.2K " in local_block, local_block  # 7000 + 1200 input tokens
    assert "\ntotal    1.2K " in http_block, http_block
    refused_block = next(b for b in blocks if b.startswith(f"{refused} "))
    assert "no figures" in refused_block and "8.2K" not in refused_block
    assert answer.startswith("Usage by key"), answer
    assert f"── :{vllm_up.port} ──" in answer and f":{via_http}" in answer, answer
