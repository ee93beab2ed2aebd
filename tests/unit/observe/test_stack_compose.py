"""The stack's compose file as data: Prometheus and Grafana always, every other service only
where the spec runs it here, and the token mounted from a path compose reads as a file."""

from __future__ import annotations

from dataclasses import replace

from vllm_ledger.observe.stack import (
    GRAFANA_IMAGE,
    PROMETHEUS_IMAGE,
    TOKEN_IN_CONTAINER,
    StackSpec,
)
from vllm_ledger.observe.stack_compose import compose

ALL = StackSpec()


def test_the_default_stack_runs_every_service_here() -> None:
    doc = compose(ALL)
    assert list(doc["services"]) == [
        "prometheus",
        "grafana",
        "alertmanager",
        "dcgm-exporter",
        "node-exporter",
        "cadvisor",
    ]
    assert list(doc["volumes"]) == ["prometheus-data", "grafana-data", "alertmanager-data"]
    prometheus = doc["services"]["prometheus"]
    assert prometheus["image"] == PROMETHEUS_IMAGE and prometheus["ports"] == ["9090:9090"]
    assert prometheus["depends_on"] == ["alertmanager"]
    assert prometheus["volumes"] == [
        "./prometheus.yml:/etc/prometheus/prometheus.yml:ro",
        "./alerts.yml:/etc/prometheus/alerts.yml:ro",
        "prometheus-data:/prometheus",
    ]
    grafana = doc["services"]["grafana"]
    assert (grafana["image"], grafana["ports"]) == (GRAFANA_IMAGE, ["3300:3000"])
    dcgm = doc["services"]["dcgm-exporter"]["deploy"]["resources"]["reservations"]["devices"]
    assert dcgm == [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}]
    assert doc["services"]["node-exporter"]["network_mode"] == "host"


def test_the_token_is_mounted_from_a_path_compose_reads_as_a_file() -> None:
    def token_volume(spec: StackSpec) -> str:
        return compose(spec)["services"]["alertmanager"]["volumes"][1]

    assert token_volume(ALL) == f"./alertmanager-token:{TOKEN_IN_CONTAINER}:ro"
    absolute = replace(ALL, token_file="/etc/notify/token")
    assert token_volume(absolute) == f"/etc/notify/token:{TOKEN_IN_CONTAINER}:ro"
    assert token_volume(replace(ALL, token_file="../t")) == f"../t:{TOKEN_IN_CONTAINER}:ro"


def test_a_target_given_elsewhere_is_scraped_not_run() -> None:
    spec = replace(
        ALL,
        alertmanager_service=False,
        dcgm_service=False,
        node_target=None,
        cadvisor_target=("cadvisor.example:8080", None),
        cadvisor_service=False,
    )
    doc = compose(spec)
    assert list(doc["services"]) == ["prometheus", "grafana"]
    assert "depends_on" not in doc["services"]["prometheus"]
    assert list(doc["volumes"]) == ["prometheus-data", "grafana-data"]
    assert list(compose(replace(ALL, dcgm_target=None))["services"]) == [
        "prometheus",
        "grafana",
        "alertmanager",
        "node-exporter",
        "cadvisor",
    ]
