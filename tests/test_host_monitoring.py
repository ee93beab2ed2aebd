"""Host and container monitoring in the stack `observability` writes: the node exporter and
cAdvisor services and scrape jobs, the dashboard's host row, and every node_* name the rules
and panels read checked against a real node exporter (Debian's prometheus-node-exporter, started
here on 127.0.0.1 and stopped by pid); a real Prometheus scrapes it and answers every node_*
expression of the host row (e2e). cAdvisor is checked as configuration only (its image is not
run here): every container_* name and label the panels and rules read is one cAdvisor documents
(tests/data/cadvisor_metrics.txt)."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devtools.ports import free_port
from tests.conftest import REPO, run_cli
from tests.e2e.prom import Prometheus, metric_names, node_exporter, observability_stack, promtool
from vllm_ledger.observe.alert_rule import Thresholds
from vllm_ledger.observe.alerts import alert_rules
from vllm_ledger.observe.dashboard import dashboard, expressions, interpolate
from vllm_ledger.observe.signals import memory_available_fraction

# cAdvisor's container series the dashboard reads (cAdvisor's docs, "Prometheus metrics").
CADVISOR_SERIES = {"container_cpu_usage_seconds_total", "container_memory_working_set_bytes"}
CADVISOR_DOC = REPO / "tests" / "data" / "cadvisor_metrics.txt"
# Labels Prometheus attaches to every scraped series (the target's), not cAdvisor's own.
TARGET_LABELS = {"job", "instance"}
_SELECTOR = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}")
_MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"')
_GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def _cadvisor_documented() -> tuple[set[str], set[str]]:
    """cAdvisor's documented metric names and container labels (tests/data/cadvisor_metrics.txt)."""
    names, labels = set(), set()
    for line in CADVISOR_DOC.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith("label "):
            labels.add(line.removeprefix("label "))
        else:
            names.add(line)
    return names, labels


def _container_labels(expr: str) -> set[str]:
    """The labels ``expr`` filters container_* series on, and groups them by."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals, kept as ""
    labels = {
        m.group(1)
        for sel in _SELECTOR.finditer(expr)
        if sel.group(1).startswith("container_")
        for m in _MATCHER.finditer(sel.group(2))
    }
    if any(n.startswith("container_") for n in metric_names(expr)):
        labels |= {
            label.strip() for g in _GROUPING.finditer(expr) for label in g.group(1).split(",")
        }
    return labels - {""}


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
    out = observability_stack(tmp_path)
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
    # the compose file's cAdvisor watches the Docker host: named by the vLLM there, so $host
    # (vLLM's hosts) picks its containers
    assert jobs["cadvisor"] == [
        {"targets": ["cadvisor:8080"], "labels": {"instance": "host.docker.internal:8080"}}
    ]
    r = promtool("check", "config", str(out / "prometheus.yml"))
    assert r.returncode == 0, r.stdout + r.stderr


def test_an_existing_node_exporter_and_cadvisor_are_scraped_not_run(tmp_path: Path) -> None:
    out = observability_stack(
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
    out = observability_stack(tmp_path, "--ledger-mountpoint", "/srv")
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


@pytest.fixture(name="node_exporter")
def node_exporter_fixture(tmp_path: Path) -> Iterator[str]:
    """A real node exporter on 127.0.0.1 (its address), stopped by pid."""
    with node_exporter(free_port(), tmp_path / "node-exporter.log") as address:
        yield address


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


def test_every_container_name_and_label_is_one_cadvisor_documents() -> None:
    """cAdvisor is not run here: its documented metric names and container labels (v0.49.1, the
    pinned image) stand in for a scrape."""
    documented, documented_labels = _cadvisor_documented()
    assert len(documented) == 93 and documented_labels == {"id", "name", "image"}
    exprs = expressions(dashboard()) + [r.expr for r in alert_rules()]
    container = [e for e in exprs if any(n.startswith("container_") for n in metric_names(e))]
    assert len(container) == 2, container  # the host row's two cAdvisor panels
    used = {n for e in container for n in metric_names(e) if n.startswith("container_")}
    assert used == CADVISOR_SERIES
    assert used <= documented, used - documented
    labels = {label for e in container for label in _container_labels(e)}
    assert labels == {"job", "instance", "name"}
    assert labels - TARGET_LABELS <= documented_labels, labels - TARGET_LABELS - documented_labels


def test_the_container_label_reader_sees_a_label_cadvisor_lacks() -> None:
    """The label check can fail: a matcher or grouping on a label cAdvisor does not put on its
    series is seen."""
    _names, documented_labels = _cadvisor_documented()
    expr = 'sum by (pod) (rate(container_cpu_usage_seconds_total{container="vllm"}[5m]))'
    assert _container_labels(expr) - documented_labels == {"pod", "container"}


@pytest.mark.e2e
def test_a_real_prometheus_scrapes_the_node_exporter(tmp_path: Path, node_exporter: str) -> None:
    """Prometheus scrapes the real node exporter as job node; the HostMemoryPressure and
    LedgerDiskNearFull signals have data (and this machine is not short of memory); every
    node_* expression of the dashboard's host row, with $host set to the exporter's host,
    answers a non-empty result once two scrapes are in (so rate() has two samples)."""
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
        # Each read waits out a moment's staleness (one slow scrape on a loaded machine).
        avail = prom.vector_when_any('node_memory_MemAvailable_bytes{job="node"}', 60)
        assert len(avail) == 1
        assert avail[0]["metric"]["instance"] == node_exporter
        total_kib = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
        total = prom.vector_when_any('node_memory_MemTotal_bytes{job="node"}')
        assert float(total[0]["value"][1]) == total_kib * 1024
        (pressure,) = prom.vector_when_any(rules["HostMemoryPressure"].signal)
        assert 0 < float(pressure["value"][1]) <= 1
        disk = prom.vector_when_any(rules["LedgerDiskNearFull"].signal)
        assert [d["metric"]["mountpoint"] for d in disk] == ["/"]

        host = node_exporter.rsplit(":", 1)[0]
        row = _host_row(dashboard())
        node_exprs = {
            title: [
                interpolate(e, {"host": [host], "__rate_interval": "1m"})
                for e in exprs
                if any(n.startswith("node_") for n in metric_names(e))
            ]
            for title, exprs in row.items()
        }
        node_exprs = {title: exprs for title, exprs in node_exprs.items() if exprs}
        assert {t: len(e) for t, e in node_exprs.items()} == {
            "Host CPU busy": 1,
            "Host memory available": 1,
            "Ledger disk free": 1,
            "Host network": 2,
        }
        scrapes = 0.0
        while time.monotonic() < deadline and scrapes < 2:
            scrapes = prom.scalar('count_over_time(up{job="node"}[5m])') or 0.0
            if scrapes < 2:
                time.sleep(0.5)
        assert scrapes >= 2, f"Prometheus scraped the node exporter {scrapes} times in 60 s"
        for title, exprs in node_exprs.items():
            for e in exprs:
                assert "$" not in e, e
                result = prom.vector_when_any(e)
                assert result, f"{title}: {e} is empty after {scrapes:g} scrapes"
                assert {r["metric"]["instance"] for r in result} == {node_exporter}, (e, result)
    finally:
        prom.stop()
