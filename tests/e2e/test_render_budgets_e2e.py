"""A rendered bare-mode script with the host file's budgets starts a real vLLM on CPU: the
budgets file it hands over makes rank 0 run the enforcer (nothing else starts it), ``doctor
--only budgets`` says budgets are on and enforcing, the key past its hard budget is answered 429
within the stated lag, and ``enforce --once`` says it refuses. One vLLM start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from devtools.ports import free_port
from tests.conftest import REPO
from tests.e2e.test_render_bare import API_KEY, MAX_TOKENS, VENV_BIN, Launched, host_data, render
from tests.usage_hosts import midday_zone
from vllm_ledger.format import overbudget

pytestmark = pytest.mark.e2e

LAG_S = 10.0  # the stated bound (docs/budgets.md)
START_S = 60.0  # rank 0 starts the enforcer 5 s after the plugin loads; its first read


def cli(*args: str, stdin: bytes = b"") -> tuple[int, str, str]:
    p = subprocess.run(
        [sys.executable, "-m", "vllm_ledger", *args],
        input=stdin,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "VLLM_LEDGER_BUDGETS": ""},
        timeout=300,
    )
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def _ask(c: httpx.Client) -> httpx.Response:
    return c.post(
        "/v1/completions",
        headers={"Authorization": f"Bearer {API_KEY}"},
        json={"model": "tiny", "prompt": "count the tokens", "max_tokens": MAX_TOKENS,
              "ignore_eos": True, "temperature": 0},
    )  # fmt: skip


def test_the_rendered_budgets_file_is_enforced(tiny_model: Path, tmp_path: Path) -> None:
    code, line, err = cli("keys", "hash", "--name", "alice", stdin=API_KEY.encode() + b"\n")
    assert code == 0, err
    names = tmp_path / "key-names.json"
    names.write_text("{" + line.strip() + "}\n")
    budgets = tmp_path / "budgets.toml"
    budgets.write_text(  # the first request crosses it; about noon in its zone: no midnight
        f'zone = "{midday_zone()}"\nenforce = true\n[[budget]]\nkey = "alice"\ntokens = 1\n'
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    artifacts = tmp_path / "artifacts"
    data = host_data(tiny_model, port, artifacts)
    data["attribution"] = {"key_names": str(names)}
    data["budgets"] = str(budgets)
    script = render(tmp_path, data, "budgeted", "--usage")
    assert f"export VLLM_LEDGER_BUDGETS={budgets}" in script.read_text()
    ledger = artifacts / "usage"
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": str(home), "TINY_KEY": API_KEY}
    env |= {"LANG": "C.UTF-8", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    server = Launched(script, env, tmp_path / "budgeted.log")
    try:
        server.wait_healthy(url)
        path = overbudget.path_in(ledger)
        end = time.monotonic() + START_S
        while not path.exists():
            assert time.monotonic() < end, "rank 0 started no enforcer"
            time.sleep(0.2)
        code, out, err = cli("doctor", "--only", "budgets", "--root", str(ledger),
                             "--budgets", str(budgets))  # fmt: skip
        table = out[out.index("check ") :].splitlines()
        assert code == 0, out + err
        assert table[1].startswith(f"budgets  pass    on and enforcing: 1 budget in {budgets}")
        with httpx.Client(base_url=url, timeout=120) as c:
            assert _ask(c).status_code == 200
            crossed = time.monotonic()
            while True:  # the lag: from the crossing to the sending of the first refused one
                sent = time.monotonic()
                if (r := _ask(c)).status_code != 200:
                    break
                assert sent - crossed < LAG_S + 5, "never refused"
            lag = sent - crossed
            print(f"\nalice refused {lag:.1f} s after the request that crossed her budget")
            assert lag <= LAG_S
            assert r.status_code == 429
            assert r.json()["error"]["code"] == "budget_exceeded"
            assert 1 <= int(r.headers["retry-after"]) <= 86400
        code, out, err = cli("enforce", "--root", str(ledger), "--config", str(budgets),
                             "--once", "--json")  # fmt: skip
        assert code == 0, err
        [state] = json.loads(out)["budgets"]
        assert (state["name"], state["level"], state["refused"]) == ("key-alice-day", "hard", True)
        assert json.loads(out)["enforcer"]["state"] == "fresh"
    finally:
        server.stop()
    assert "vllm-ledger: enforcer not started" not in (tmp_path / "budgeted.log").read_text()
