"""Host and container monitoring in the stack `observability` writes: the node exporter and
cAdvisor services and scrape jobs, the dashboard's host row, and every node_* name the rules
and panels read checked against a real node exporter (Debian's prometheus-node-exporter, started
here on 127.0.0.1 and stopped by pid); a real Prometheus scrapes it (e2e). cAdvisor is checked as
configuration only: its image is not run here."""

from __future__ import annotations

import json
import shutil
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devtools.vllm_server import free_port
from tests.conftest import run_cli
from tests.e2e.prom import Prometheus, _spawn_until_ready, _stop, metric_names, promtool
from vllm_ledger.observe.alerts import Thresholds, alert_rules, memory_available_fraction
from vllm_ledger.observe.dashboard import dashboard, expressions

NODE_EXPORTER = shutil.which("prometheus-node-exporter") or "/usr/bin/prometheus-node-exporter"
# cAdvisor's container series the dashboard reads (cAdvisor's docs, "Prometheus metrics").
CADVISOR_SERIES = {"container_cpu_usage_seconds_total", "container_memory_working_set_bytes"}


def _stack(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "stack"
    code, _stdout, err = run_cli("observability", str(out), *args)
    assert code == 0, err
    return out


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def _host_row(model: dict[str, Any]) -> dict[str, list[str]]:
    """The host row's panels: title -> its expressions."""
    out: dict[str, list[str]] = {}
    row = None
    for p in model["panels"]:
        if p["type"] == "row":
            row = p["title"]
        elif row and row.startswith("Host"):
            out[p["title"]] = [t["expr"] for t in p["targets"]]
    return out


def test_compose_runs_node_exporter_and_cadvisor_and_prometheus_scrapes_them(
    tmp_path: Path,
) -> None:
    out = _stack(tmp_path)
    services = _load(out / "compose.yaml")["services"]
    node = services["node-exporter"]
    assert node["image"] == "quay.io/prometheus/node-exporter:v1.8.2"
    assert (node["network_mode"], node["pid"]) == ("host", "host")
    assert node["command"] == ["--path.rootfs=/host", "--web.listen-address=:9100"]
    assert node["volumes"] == ["/:/host:ro,rslave"]
    cadvisor = services["cadvisor"]
    assert cadvisor["image"] == "gcr.io/cadvisor/cadvisor:v0.49.1"  # pinned, never latest
    assert cadvisor["privileged"] is True and "ports" not in cadvisor
    assert "/var/lib/docker/:/var/lib/docker:ro" in cadvisor["volumes"]
    jobs = {
        j["job_name"]: j["static_configs"] for j in _load(out / "prometheus.yml")["scrape_configs"]
    }
    assert jobs["node"] == [{"targets": ["host.docker.internal:9100"]}]
    assert jobs["cadvisor"] == [{"targets": ["cadvisor:8080"]}]
    r = promtool("check", "config", str(out / "prometheus.yml"))
    assert r.returncode == 0, r.stdout + r.stderr


def test_an_existing_node_exporter_and_cadvisor_are_scraped_not_run(tmp_path: Path) -> None:
    out = _stack(
        tmp_path, "--node-exporter", "10.0.0.1:9100=gpu1:9100", "--cadvisor", "10.0.0.1:8080"
    )
    services = _load(out / "compose.yaml")["services"]
    assert "node-exporter" not in services and "cadvisor" not in services
    jobs = {
        j["job_name"]: j["static_configs"] for j in _load(out / "prometheus.yml")["scrape_configs"]
    }
    assert jobs["node"] == [{"targets": ["10.0.0.1:9100"], "labels": {"instance": "gpu1:9100"}}]
    assert jobs["cadvisor"] == [{"targets": ["10.0.0.1:8080"]}]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--node-exporter", "nope"], "target 'nope' is not HOST:PORT"),
        (["--cadvisor", "h:0"], "target 'h:0' is not HOST:PORT"),
        (["--ledger-mountpoint", "srv"], "--ledger-mountpoint 'srv' is not an absolute path"),
        (["--disk-free-threshold", "2"], "--disk-free-threshold '2' looks like a percentage"),
    ],
)
def test_bad_host_flags_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    code, out, err = run_cli("observability", str(tmp_path / "s"), *args)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and message in err, err


def test_the_dashboard_host_row(tmp_path: Path) -> None:
    out = _stack(tmp_path, "--ledger-mountpoint", "/srv")
    model = json.loads((out / "grafana/dashboards/vllm-ledger.json").read_text())
    row = _host_row(model)
    assert list(row) == [
        "Host CPU busy",
        "Host memory available",
        "Ledger disk free",
        "Host network",
        "vLLM container CPU",
        "vLLM container memory",
    ]
    names = {title: {n for e in exprs for n in metric_names(e)} for title, exprs in row.items()}
    assert names["Host CPU busy"] == {"node_cpu_seconds_total"}
    assert names["Host memory available"] == {
        "node_memory_MemAvailable_bytes",
        "node_memory_MemTotal_bytes",
    }
    assert names["Ledger disk free"] == {
        "node_filesystem_avail_bytes",
        "node_filesystem_size_bytes",
    }
    assert 'mountpoint="/srv"' in row["Ledger disk free"][0]
    assert names["Host network"] == {
        "node_network_receive_bytes_total",
        "node_network_transmit_bytes_total",
    }
    assert names["vLLM container CPU"] == {"container_cpu_usage_seconds_total"}
    assert names["vLLM container memory"] == {"container_memory_working_set_bytes"}
    for exprs in row.values():
        for e in exprs:
            assert 'instance=~"$host:[0-9]+"' in e, e  # a host's, filtered by $host
    for e in row["vLLM container CPU"] + row["vLLM container memory"]:
        assert 'job="cadvisor"' in e and 'name=~"vllm.*"' in e
    # the memory panel draws what the alert judges
    assert row["Host memory available"] == [memory_available_fraction('instance=~"$host:[0-9]+"')]
    assert 'mountpoint="/"' in _host_row(dashboard())["Ledger disk free"][0]  # the default


@pytest.fixture
def node_exporter(tmp_path: Path) -> Iterator[str]:
    """A real node exporter on 127.0.0.1 (its address), stopped by pid."""
    port = free_port()
    proc = _spawn_until_ready(
        [NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}"],
        f"http://127.0.0.1:{port}/metrics",
        tmp_path / "node-exporter.log",
        "prometheus-node-exporter",
        30.0,
        0.2,
    )
    try:
        yield f"127.0.0.1:{port}"
    finally:
        _stop(proc)


def test_every_node_name_is_one_a_real_node_exporter_serves(
    tmp_path: Path, node_exporter: str
) -> None:
    with urllib.request.urlopen(f"http://{node_exporter}/metrics", timeout=10) as r:
        text = r.read().decode()
    served = {
        line.split("{")[0].split(" ")[0]
        for line in text.splitlines()
        if line and not line.startswith("#")
    }
    used = {n for e in expressions(dashboard()) for n in metric_names(e)}
    used |= {n for r in alert_rules() for n in metric_names(r.expr)}
    node = {n for n in used if n.startswith("node_")}
    assert len(node) == 7
    assert node <= served, node - served
    assert {n for n in used if n.startswith("container_")} == CADVISOR_SERIES


@pytest.mark.e2e
def test_a_real_prometheus_scrapes_the_node_exporter(tmp_path: Path, node_exporter: str) -> None:
    """Prometheus scrapes the real node exporter as job node; the HostMemoryPressure and
    LedgerDiskNearFull signals have data (and this machine is not short of memory)."""
    rules = {r.name: r for r in alert_rules(Thresholds())}
    config = tmp_path / "prometheus.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "1s"},
                "scrape_configs": [
                    {"job_name": "node", "static_configs": [{"targets": [node_exporter]}]}
                ],
            }
        )
    )
    prom = Prometheus(config, tmp_path / "data", tmp_path / "prometheus.log").start()
    try:
        deadline = time.monotonic() + 60
        avail: list[dict[str, Any]] = []
        while time.monotonic() < deadline and not avail:
            avail = prom.vector('node_memory_MemAvailable_bytes{job="node"}')
            if not avail:
                time.sleep(0.5)
        assert len(avail) == 1
        assert avail[0]["metric"]["instance"] == node_exporter
        total_kib = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
        total = prom.vector('node_memory_MemTotal_bytes{job="node"}')
        assert float(total[0]["value"][1]) == total_kib * 1024
        (pressure,) = prom.vector(rules["HostMemoryPressure"].signal)
        assert 0 < float(pressure["value"][1]) <= 1
        disk = prom.vector(rules["LedgerDiskNearFull"].signal)
        assert [d["metric"]["mountpoint"] for d in disk] == ["/"]
    finally:
        prom.stop()
