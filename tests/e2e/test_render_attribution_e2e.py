"""A rendered bare-mode script with the host file's attribution settings starts a real vLLM on
CPU: the middleware it passes tags each request, the names file it hands over names the key, the
user and the tenant header reach the ledger, and the helpers agree with it: ``keys hash`` wrote
the names file's line, ``keys label`` gives the label the ledger shows, ``doctor --only
attribution`` says it is on. One vLLM start."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from devtools.ports import free_port
from tests.conftest import REPO
from tests.e2e.test_render_bare import API_KEY, MAX_TOKENS, VENV_BIN, Launched, host_data, render
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.windows import Window
from vllm_ledger.write import keys

pytestmark = pytest.mark.e2e

ALL = Window("all", 0, 2**40)
SENT = [("u1", "t1", "count the tokens one"), ("u2", "t1", "two"), ("u1", "t2", "three please")]


def cli(*args: str, stdin: bytes = b"") -> tuple[int, str, str]:
    p = subprocess.run(
        [sys.executable, "-m", "vllm_ledger", *args],
        input=stdin,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def test_the_rendered_settings_reach_the_ledger(tiny_model: Path, tmp_path: Path) -> None:
    code, line, err = cli("keys", "hash", "--name", "alice", stdin=API_KEY.encode() + b"\n")
    assert code == 0, err
    names = tmp_path / "key-names.json"
    names.write_text("{" + line.strip() + "}\n")
    digest = hashlib.sha256(API_KEY.encode()).hexdigest()
    assert json.loads(names.read_text()) == {"alice": f"sha256:{digest}"}

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    artifacts = tmp_path / "artifacts"
    data = host_data(tiny_model, port, artifacts)
    data["attribution"] = {"user": True, "tenant_header": "X-Tenant", "key_names": str(names)}
    script = render(tmp_path, data, "whose", "--usage")
    text = script.read_text()
    assert "--middleware vllm_ledger.middleware.LedgerMiddleware" in text
    assert API_KEY not in text
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": str(home), "TINY_KEY": API_KEY}
    env |= {"LANG": "C.UTF-8", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    server = Launched(script, env, tmp_path / "whose.log")
    told = [0, 0]
    try:
        server.wait_healthy(url)
        with httpx.Client(base_url=url, timeout=120) as c:
            refused = c.post("/v1/completions", json={"model": "tiny", "prompt": "no key"})
            assert refused.status_code == 401
            for user, tenant, prompt in SENT:
                r = c.post(
                    "/v1/completions",
                    headers={"Authorization": f"Bearer {API_KEY}", "X-Tenant": tenant},
                    json={"model": "tiny", "prompt": prompt, "user": user,
                          "max_tokens": MAX_TOKENS, "ignore_eos": True, "temperature": 0},
                )  # fmt: skip
                r.raise_for_status()
                told[0] += r.json()["usage"]["prompt_tokens"]
                told[1] += r.json()["usage"]["completion_tokens"]
    finally:
        server.stop()

    ledger = artifacts / "usage"
    with LedgerSet.read([ledger]) as ls:
        credits = ls.credits(ls.sources(), ALL)
    credited = {
        k: (c.input_tokens, c.output_tokens, c.requests) for k, c in credits.by_label.items()
    }
    assert set(credited) == {
        ("alice", "tiny", "u1", "t1", ""),
        ("alice", "tiny", "u2", "t1", ""),
        ("alice", "tiny", "u1", "t2", ""),
    }, credited
    assert [sum(v[i] for v in credited.values()) for i in range(3)] == [*told, len(SENT)]
    for path in ledger.rglob("*"):
        if path.is_file():
            assert API_KEY.encode() not in path.read_bytes(), path
    assert API_KEY not in (tmp_path / "whose.log").read_text()

    # The helpers say what the ledger shows: the name with the names file, the keyed hash
    # under the secret the middleware made in the root without it.
    code, out, err = cli("keys", "label", "--root", str(ledger), "--key-names", str(names),
                         stdin=API_KEY.encode())  # fmt: skip
    assert (code, out, err) == (0, "alice\n", "")
    secret = keys._read_secret(ledger / keys.SECRET_FILE)
    assert secret is not None
    code, out, err = cli("keys", "label", "--root", str(ledger), stdin=API_KEY.encode())
    assert (code, out, err) == (0, keys.KeyLabels(secret).label(API_KEY.encode()) + "\n", "")

    code, out, err = cli("doctor", "--only", "attribution", "--root", str(ledger))
    table = out[out.index("check ") :].splitlines()  # vLLM may print a line of its own first
    assert code == 0, out + err
    assert table[1].startswith("attribution  pass    on: run ")
    assert table[1].endswith(": 3 of 3 finished requests credited (1 key, 1 adapter)")
    assert table[2:] == ["1 of 1 checks pass"]
