"""The ledger against a real vLLM 0.32 server on CPU: exact to the token, across restarts."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from devtools.traffic import send_mix
from tests.conftest import run_cli
from tests.e2e.settle import settle
from tests.usage_hosts import midday_zone

pytestmark = pytest.mark.e2e

SECRET = "zebra-quokka-7731"


def _report_json(root: Path) -> dict:
    time.sleep(2.2)  # the report leaves out the unfinished second; let the last commit land
    # In a zone where it is about noon: "today" holds the last minutes, at any hour of the day.
    code, out, err = run_cli("report", "--root", str(root), "--json", "--tz", midday_zone())
    assert code == 0, err
    return json.loads(out)


def _totals(doc: dict) -> dict[str, int]:
    t = doc["windows"]["total"]
    return {k: t[k] for k in ("input", "output", "cached", "requests")}


def test_single_api_process_matches_vllm_and_survives_restart(vllm_server, tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    s1 = vllm_server(root)
    result = send_mix(s1.url, "tiny", secret=SECRET)
    assert result.disconnected == 1 and result.ok == result.sent - 1
    counters1 = settle(s1)
    doc1 = _report_json(root)
    assert _totals(doc1) == counters1
    assert counters1["cached"] > 0  # the repeated long prompts hit the prefix cache
    assert doc1["schema"] == 1
    assert [w["state"] for w in doc1["writers"]] == ["alive"]
    for name in ("today", "24h", "3d", "7d"):
        assert _totals({"windows": {"total": doc1["windows"][name]}}) == counters1
    s1.stop()

    # Nothing but numbers in the ledger: no prompt text, no request id.
    raw = b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())
    assert SECRET.encode() not in raw
    assert b"req-" + SECRET.encode() not in raw
    assert b"count the tokens" not in raw

    s2 = vllm_server(root)
    before = _totals(_report_json(root))
    assert before == counters1  # a restart never resets the total
    send_mix(s2.url, "tiny", rounds=1)
    counters2 = settle(s2)
    doc2 = _report_json(root)
    assert doc2["runs"] == 2
    assert _totals(doc2) == {k: counters1[k] + counters2[k] for k in counters1}
    assert all(doc2["windows"]["total"][k] >= before[k] for k in before)
    code, out, _ = run_cli("verify", "--root", str(root), "--metrics-url", s2.url + "/metrics")
    assert code == 0 and out.startswith("match: run "), out


def test_two_dp_ranks_two_api_processes(vllm_server, tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    s = vllm_server(root, extra_args=("--data-parallel-size", "2", "--api-server-count", "2"))
    send_mix(s.url, "tiny", rounds=2)
    counters = settle(s)
    doc = _report_json(root)
    assert _totals(doc) == counters
    writers = sorted((w["writer_rank"], w["expected_writers"], w["state"]) for w in doc["writers"])
    assert writers == [(0, 2, "alive"), (1, 2, "alive")]
    # Both API processes know the instance's port (spawned children read the launcher's argv).
    assert {w["instance"].rsplit(":", 1)[1] for w in doc["writers"]} == {str(s.port)}
    assert doc["windows"]["total"]["complete"] is True
    code, out, err = run_cli("verify", "--root", str(root), "--metrics-url", s.url + "/metrics")
    assert code == 0, out + err
    code, out, _ = run_cli("report", "--root", str(root), "--by", "engine", "--json")
    rows = json.loads(out)["breakdown"]["rows"]
    assert sorted(r["key"] for r in rows) == ["0", "1"]
    assert sum(r["windows"]["total"]["output"] for r in rows) == counters["output"]
