"""Bare mode end to end: a rendered script starts a real `vllm serve` on CPU.

With --usage the ledger counts every token of real requests (`report --json`, the report
command the script printed, and `verify` against /metrics all agree); rendered again without
--usage, the same host file writes no ledger anywhere. Two vLLM starts in all.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import httpx
import pytest

from devtools.vllm_server import SHIM, free_port
from tests.conftest import REPO, run_cli

pytestmark = pytest.mark.e2e

VENV_BIN = REPO / ".venv" / "bin"
API_KEY = "sk-tiny $(not run) `nor this`"
PROMPTS = ["count the tokens one", "count the tokens two please", "how many tokens is three"]
MAX_TOKENS = 8


def host_data(tiny_model: Path, port: int, artifacts: Path) -> dict[str, Any]:
    """The tiny CPU model with devtools/vllm_server.py's settings, as a host file."""
    return {
        "mode": "bare",
        "model": str(tiny_model),
        "served_model_name": "tiny",
        "host": "127.0.0.1",
        "port": port,
        "api_server_count": 1,
        "max_model_len": 1024,
        "dtype": "float32",
        "api_key": {"env": "TINY_KEY"},
        "artifacts_dir": str(artifacts),
        "ledger_code_dir": str(REPO),
        "extra_args": ["--enforce-eager", "--block-size", "32", "--enable-prefix-caching"],
        "extra_env": {
            "VLLM_TARGET_DEVICE": "cpu",
            "VLLM_CPU_KVCACHE_SPACE": "1",
            "PYTHONPATH": str(SHIM),  # lets `vllm serve` find a distribution named vllm
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "OMP_NUM_THREADS": "1",
        },
    }


def render(tmp_path: Path, data: dict[str, Any], name: str, *flags: str) -> Path:
    hf = tmp_path / f"{name}.json"
    hf.write_text(json.dumps(data))
    out = tmp_path / f"{name}.sh"
    rc, _, err = run_cli("render", "--host", str(hf), "--output", str(out), *flags)
    assert rc == 0, err
    return out


class Launched:
    """The rendered script started as its own process group; stopped by pid."""

    def __init__(self, script: Path, env: dict[str, str], log: Path) -> None:
        self.log = log
        with open(log, "wb") as f:
            self.proc = subprocess.Popen(
                ["bash", str(script)],
                env=env,
                stdout=f,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=script.parent,
            )

    def wait_healthy(self, url: str, deadline_s: float = 300.0) -> None:
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                pytest.fail(
                    f"script exited {self.proc.returncode}:\n{self.log.read_text()[-3000:]}"
                )
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return
            time.sleep(0.5)
        self.stop()
        pytest.fail(f"not healthy after {deadline_s} s:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        """SIGTERM the script's pid (it exec'd vllm), then SIGKILL the whole group."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(60)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)


def send_completions(url: str, prompts: list[str]) -> tuple[int, int]:
    """Real completions with the API key; returns (prompt tokens, completion tokens)."""
    prompt_tokens = completion_tokens = 0
    with httpx.Client(base_url=url, timeout=120) as client:
        assert (
            client.post("/v1/completions", json={"model": "tiny", "prompt": "x"}).status_code == 401
        )
        for prompt in prompts:
            r = client.post(
                "/v1/completions",
                headers={"Authorization": f"Bearer {API_KEY}"},
                json={
                    "model": "tiny",
                    "prompt": prompt,
                    "max_tokens": MAX_TOKENS,
                    "ignore_eos": True,
                    "temperature": 0,
                },
            )
            r.raise_for_status()
            usage = r.json()["usage"]
            prompt_tokens += usage["prompt_tokens"]
            completion_tokens += usage["completion_tokens"]
    return prompt_tokens, completion_tokens


def ledger_files(under: Path) -> list[Path]:
    return sorted(under.rglob("*.ledger.sqlite"))


def test_rendered_bare_script_with_and_without_usage(tiny_model: Path, tmp_path: Path) -> None:
    # HOME and XDG_DATA_HOME (where a ledger would land by default) must stay empty; vLLM's
    # own caches go to XDG_CACHE_HOME.
    home, xdg, cache = tmp_path / "home", tmp_path / "xdg-data", tmp_path / "xdg-cache"
    for d in (home, xdg, cache):
        d.mkdir()
    env = {
        "PATH": f"{VENV_BIN}:/usr/bin:/bin",
        "HOME": str(home),
        "XDG_DATA_HOME": str(xdg),
        "XDG_CACHE_HOME": str(cache),
        "TINY_KEY": API_KEY,
        "LANG": "C.UTF-8",
    }

    # 1. --usage: the ledger counts every token.
    artifacts = tmp_path / "artifacts one"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    script = render(tmp_path, host_data(tiny_model, port, artifacts), "usage", "--usage")
    assert API_KEY not in script.read_text()
    server = Launched(script, env, tmp_path / "usage.log")
    try:
        server.wait_healthy(url)
        prompt_tokens, completion_tokens = send_completions(url, PROMPTS)
        ledger = artifacts / "usage"
        rc, out, err = run_cli(
            "verify", "--metrics-url", url + "/metrics", "--root", str(ledger), "--wait", "30"
        )
        assert rc == 0, out + err
        assert out.startswith("match: run ")
        assert f"input {prompt_tokens:,}" in out and f"output {completion_tokens:,}" in out
    finally:
        server.stop()
    assert completion_tokens == MAX_TOKENS * len(PROMPTS)
    assert prompt_tokens > len(PROMPTS)

    rc, out, err = run_cli("report", "--json", "--root", str(ledger))
    assert rc == 0, err
    report = json.loads(out)
    total = report["windows"]["total"]
    assert (total["input"], total["output"], total["requests"]) == (
        prompt_tokens,
        completion_tokens,
        len(PROMPTS),
    )
    [writer] = report["writers"]
    assert (writer["writer_rank"], writer["expected_writers"]) == (0, 1)
    assert writer["state"] == "closed"  # --shutdown-timeout let the ledger drain on SIGTERM
    assert writer["instance"].endswith(f":{port}")

    # The report command the script printed works as printed.
    log = (tmp_path / "usage.log").read_text()
    [line] = [ln for ln in log.splitlines() if ln.startswith("ledger report: ")]
    p = subprocess.run(
        ["bash", "-c", line.removeprefix("ledger report: ") + " --json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["windows"]["total"]["output"] == completion_tokens
    assert list(xdg.iterdir()) == [] and list(home.iterdir()) == []

    # 2. The same host file rendered without --usage writes no ledger anywhere.
    artifacts_two = tmp_path / "artifacts two"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    script = render(tmp_path, host_data(tiny_model, port, artifacts_two), "plain")
    assert "VLLM_LEDGER" not in script.read_text()
    before = ledger_files(tmp_path)
    server = Launched(script, env, tmp_path / "plain.log")
    try:
        server.wait_healthy(url)
        assert send_completions(url, PROMPTS[:1])[1] == MAX_TOKENS
    finally:
        server.stop()
    assert "ledger report:" not in (tmp_path / "plain.log").read_text()
    assert not artifacts_two.exists()
    assert list(xdg.iterdir()) == [] and list(home.iterdir()) == []
    assert ledger_files(tmp_path) == before
    assert not list(cache.rglob("*.ledger.sqlite")) and not list(cache.rglob("vllm-ledger"))
