"""`observability --remote-write URL`: the generated Prometheus (a real one, Debian's) sends what
it scrapes to a real VictoriaMetrics (Debian's victoria-metrics) on 127.0.0.1, each series with
the stack's external label, and the series are queried back from VictoriaMetrics. The target
is a real node exporter; the self-scrape job's `up` comes along."""

from __future__ import annotations

import json
import os
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devtools.ports import free_port
from tests.conftest import run_cli
from tests.e2e.prom import (
    PROMETHEUS,
    VICTORIA_METRICS,
    Prometheus,
    VictoriaMetrics,
    node_exporter,
    promtool,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not (os.path.exists(VICTORIA_METRICS) and os.path.exists(PROMETHEUS)),
        reason="needs victoria-metrics and prometheus (scripts/setup.sh installs them)",
    ),
]

NAME = "monitor-test"


def _vm_series(vm: VictoriaMetrics, expr: str) -> list[dict[str, Any]]:
    vm.force_flush()
    url = f"{vm.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=30) as r:
        doc = json.loads(r.read())
    assert doc["status"] == "success", doc
    result: list[dict[str, Any]] = doc["data"]["result"]
    return result


def _wait_for_series(
    vm: VictoriaMetrics,
    expr: str,
    timeout_s: float = 60.0,
    check: Callable[[list[Any]], bool] = bool,
) -> list[Any]:
    """The answer to ``expr`` once ``check`` passes (polled: remote write sends in batches)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = _vm_series(vm, expr)
        if check(found):
            return found
        time.sleep(0.5)
    raise AssertionError(f"{expr}: not in VictoriaMetrics within {timeout_s} s")


def test_prometheus_remote_writes_to_victoria_metrics_with_its_external_label(
    tmp_path: Path,
) -> None:
    vm = VictoriaMetrics(tmp_path / "vm", tmp_path / "vm.log").start()
    try:
        with node_exporter(free_port(), tmp_path / "node-exporter.log") as node:
            stack = tmp_path / "stack"
            code, _out, err = run_cli(
                "observability", str(stack),
                "--node-exporter", node,
                "--no-dcgm",
                "--alertmanager", f"127.0.0.1:{free_port()}",  # none: no alert is sent here
                "--scrape-interval", "1s",
                "--prometheus-name", NAME,
                "--remote-write", vm.write_url,
            )  # fmt: skip
            assert code == 0, err
            r = promtool("check", "config", str(stack / "prometheus.yml"))
            assert r.returncode == 0, r.stdout + r.stderr
            prom = Prometheus(stack / "prometheus.yml", tmp_path / "tsdb", tmp_path / "prom.log")
            prom.start()
            try:
                found = _wait_for_series(
                    vm, f'node_memory_MemTotal_bytes{{job="node",prometheus="{NAME}"}}'
                )
                (series,) = found
                assert series["metric"]["instance"] == node
                assert float(series["value"][1]) > 0
                # the self-scrape job (its target is the compose file's localhost:9090, not this
                # test's port: up says whether it answered) and the stack's other jobs
                jobs = {
                    s["metric"]["job"]
                    for s in _wait_for_series(vm, f'up{{prometheus="{NAME}",job="prometheus"}}')
                }
                assert jobs == {"prometheus"}
                want = {"vllm", "vllm-ledger", "node", "cadvisor", "prometheus"}
                every = f'count by (job) (up{{prometheus="{NAME}"}})'
                _wait_for_series(vm, every, check=lambda found: len(found) == len(want))
                assert {s["metric"]["job"] for s in _vm_series(vm, every)} == want
                # nothing arrives without the external label
                assert _vm_series(vm, 'up{prometheus=""}') == []
            finally:
                prom.stop()
    finally:
        vm.stop()
