"""`doctor --stack PROMETHEUS_URL` against a real Prometheus running the stack `observability`
wrote: the real ledger exporter and a real node exporter up, the vLLM target down (nothing
listens there), the alert rules loaded. The down target is named, the rules row passes, and
the run exits 1 (the judging itself, on Prometheus's own answer shape:
tests/unit/doctor/test_stack.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from devtools.ports import free_port
from tests.conftest import run_cli
from tests.e2e.notifier_fakes import wait_for
from tests.e2e.prom import PROMETHEUS, Prometheus, _spawn_until_ready, _stop, node_exporter

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not os.path.exists(PROMETHEUS), reason="needs prometheus"),
]


def _targets_seen(prom: Prometheus) -> dict[str, str] | None:
    """job/instance -> health once every target was scraped at least once."""
    seen = prom.targets_up()
    return seen if seen and "unknown" not in seen.values() else None


Ran = tuple[int, str, str]


def _only_vllm_down(url: str) -> tuple[Ran, Ran] | None:
    """``doctor --stack`` as text and as JSON, when both name vLLM's target and no other down."""
    text = run_cli("doctor", "--stack", url)
    as_json = run_cli("doctor", "--stack", url, "--json")
    targets = [ln for ln in text[1].splitlines() if "stack targets:" in ln]
    rows = json.loads(as_json[1] or "{}").get("checks", [])
    down = [r["checked"] for r in rows if r["result"] == "FAIL"]
    others = ("vllm-ledger/", "node/", "cadvisor/")
    if any(o in line for line in targets + down for o in others):
        return None
    return text, as_json


def test_doctor_stack_names_the_target_that_is_down(tmp_path: Path) -> None:
    exporter_port, vllm_port, prom_port = free_port(), free_port(), free_port()
    root = tmp_path / "usage"
    root.mkdir()
    exporter = _spawn_until_ready(
        [
            sys.executable, "-m", "vllm_ledger", "exporter", "--root", str(root),
            "--listen", f"127.0.0.1:{exporter_port}", "--no-gpu", "--tz", "UTC",
        ],
        f"http://127.0.0.1:{exporter_port}/metrics",
        tmp_path / "exporter.log",
        "vllm-ledger exporter",
        30.0,
        0.2,
    )  # fmt: skip
    try:
        with node_exporter(free_port(), tmp_path / "node-exporter.log") as node:
            stack = tmp_path / "stack"
            code, _out, err = run_cli(
                "observability", str(stack),
                "--vllm", f"127.0.0.1:{vllm_port}=gpu-test:8000",
                "--exporter", f"127.0.0.1:{exporter_port}",
                "--node-exporter", node,
                "--cadvisor", node,  # a /metrics that answers: this test has no cAdvisor
                "--no-dcgm",
                "--alertmanager", f"127.0.0.1:{free_port()}",
                "--scrape-interval", "1s",
            )  # fmt: skip
            assert code == 0, err
            # the one test-only edit: Prometheus scrapes itself at this test's port, not 9090
            config = yaml.safe_load((stack / "prometheus.yml").read_text())
            (own,) = [j for j in config["scrape_configs"] if j["job_name"] == "prometheus"]
            own["static_configs"] = [{"targets": [f"127.0.0.1:{prom_port}"]}]
            (stack / "prometheus.yml").write_text(yaml.safe_dump(config))
            prom = Prometheus(
                stack / "prometheus.yml", tmp_path / "tsdb", tmp_path / "prom.log", port=prom_port
            )
            prom.start()
            try:
                seen = wait_for("every target scraped", lambda: _targets_seen(prom), timeout_s=30)
                assert seen["vllm/gpu-test:8000"] == "down"
                # One scrape's health is not steady on a loaded machine (a 1 s scrape can time
                # out once): both reads are taken when each names only vLLM's target down.
                (code, out, err), (code_json, out_json, _) = wait_for(
                    "doctor --stack naming only vLLM's target down",
                    lambda: _only_vllm_down(prom.url),
                    timeout_s=60,
                )
            finally:
                prom.stop()
    finally:
        _stop(exporter)
    assert code == 1, (out, err)
    lines = out.splitlines()
    assert lines[0].split() == ["check", "result", "what", "was", "checked"]
    (targets,) = [ln for ln in lines if "stack targets:" in ln]
    assert targets.split()[:2] == ["stack", "FAIL"]
    assert "vllm/gpu-test:8000 down (" in targets  # named, with the scrape's error
    assert "vllm-ledger" not in targets and "node/" not in targets  # those are up
    (rules,) = [ln for ln in lines if "stack rules:" in ln]
    assert rules.split()[:2] == ["stack", "pass"]
    assert "3 rules in 1 group(s) loaded, none in error" in rules  # the three to start with
    assert lines[-1] == "1 of 2 checks pass"
    assert code_json == 1
    rows = json.loads(out_json)["checks"]
    assert [(r["check"], r["result"]) for r in rows] == [("stack", "FAIL"), ("stack", "pass")]
