"""Two real vLLM servers on CPU, different served names and ports, one ledger root.

`report --by instance` must give one row per server ("host:port"), each equal to that server's
own /metrics counter deltas, and the rows must add up exactly to the total.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from devtools.metrics import vllm_counters
from devtools.traffic import send_mix
from tests.conftest import run_cli
from tests.e2e.settle import settle

pytestmark = pytest.mark.e2e

FIELDS = ("input", "output", "cached", "requests")
SUMMED = ("input", "output", "cached", "requests", "decode_tokens")


def _report(root: Path, *args: str) -> dict:
    code, out, err = run_cli("report", "--root", str(root), "--json", *args)
    assert code == 0, err
    return json.loads(out)


def _rows(doc: dict) -> dict[str, dict[str, int]]:
    return {
        r["key"]: {k: r["windows"]["total"][k] for k in FIELDS} for r in doc["breakdown"]["rows"]
    }


def _delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in FIELDS}


def test_two_instances_share_one_root(vllm_server, tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    a = vllm_server(root, served_name="alpha")
    b = vllm_server(root, served_name="beta")
    assert a.port != b.port
    host = socket.gethostname()
    key_a, key_b = f"{host}:{a.port}", f"{host}:{b.port}"

    before = {key_a: vllm_counters(a.metrics_text()), key_b: vllm_counters(b.metrics_text())}
    # A server's row holds unknown figures (null, read/known.py) until its writer's first
    # commit vouches for a second: the baseline is the report once both rows are known.
    deadline = time.monotonic() + 60
    while True:
        doc = _report(root, "--by", "instance")
        known = {r["key"]: r["windows"]["total"]["figures"] for r in doc["breakdown"]["rows"]}
        if sorted(known) == sorted([key_a, key_b]) and "unknown" not in known.values():
            break
        assert time.monotonic() < deadline, doc["breakdown"]["rows"]
        time.sleep(1.0)
    rows_before = _rows(doc)
    send_mix(a.url, "alpha", rounds=1)
    send_mix(b.url, "beta", rounds=2)
    after = {key_a: settle(a), key_b: settle(b)}
    want = {k: _delta(after[k], before[k]) for k in after}
    assert want[key_a] != want[key_b] and all(v["cached"] > 0 for v in want.values())

    # The ledger commits about once a second and leaves out the unfinished second: wait for
    # the last commit to be inside the cutoff (no assertion depends on how long that takes).
    deadline = time.monotonic() + 60
    while True:
        doc = _report(root, "--by", "instance")
        rows = _rows(doc)
        got = {k: _delta(rows[k], rows_before.get(k, dict.fromkeys(FIELDS, 0))) for k in rows}
        if got == want or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    assert doc["breakdown"]["by"] == "instance"
    assert sorted(rows) == sorted([key_a, key_b])
    assert got == want  # each row is that server's own /metrics deltas
    assert rows == {k: {f: after[k][f] for f in FIELDS} for k in rows}  # and its whole count
    # The rows add up exactly to the total, in every window.
    for name, window in doc["windows"].items():
        for f in SUMMED:
            assert sum(r["windows"][name][f] for r in doc["breakdown"]["rows"]) == window[f], (
                name,
                f,
            )
    assert sorted(w["instance"] for w in doc["writers"]) == sorted([key_a, key_b])
    assert {w["state"] for w in doc["writers"]} == {"alive"}

    # Filters: by port and by served model name.
    only_a = _report(root, "--instance", str(a.port))["windows"]["total"]
    assert {k: only_a[k] for k in FIELDS} == rows[key_a]
    only_b = _report(root, "--model", "beta")["windows"]["total"]
    assert {k: only_b[k] for k in FIELDS} == rows[key_b]
    by_model = _rows(_report(root, "--by", "model"))
    assert by_model == {"alpha": rows[key_a], "beta": rows[key_b]}

    # The timeline and the page read the same two instances.
    cutoff = str(doc["at"])
    code, out, err = run_cli(
        "timeline", "--root", str(root), "--json", "--at", cutoff, "--window", "24h", "--step", "5m"
    )
    assert code == 0, err
    tl = json.loads(out)
    rep24 = _report(root, "--at", cutoff)["windows"]["24h"]
    # The steps before the servers started are unknown (null figures): they counted nothing.
    known_steps = [s for s in tl["steps"] if s["figures"] != "unknown"]
    assert all(s[f] is None for s in tl["steps"] if s["figures"] == "unknown" for f in SUMMED)
    for f in SUMMED:
        assert sum(s[f] for s in known_steps) == tl["window"][f] == rep24[f], f
    uncovered = sum(s["uncovered_seconds"] for s in tl["steps"])
    assert uncovered == tl["window"]["uncovered_seconds"] == rep24["uncovered_seconds"]
    page = tmp_path / "page.html"
    code, out, err = run_cli(
        "report",
        "--root",
        str(root),
        "--json",
        "--by",
        "instance",
        "--at",
        cutoff,
        "--html",
        str(page),
    )
    assert code == 0, err
    for key in (key_a, key_b):
        assert f'data-key="{key}"' in page.read_text()
