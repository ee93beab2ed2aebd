"""The stack's compose.yaml as data: Prometheus, Grafana (on ``GRAFANA_PORT``), Alertmanager,
the DCGM exporter, the node exporter and cAdvisor, each only where ``StackSpec`` runs it here
(a target given on the command line is scraped, not run). Pure."""

from __future__ import annotations

from typing import Any

from vllm_ledger.observe.stack import (
    ALERTMANAGER_IMAGE,
    ALERTMANAGER_YML,
    CADVISOR_IMAGE,
    DCGM_IMAGE,
    GRAFANA_IMAGE,
    GRAFANA_PORT,
    HOME_DASHBOARD,
    HOST_GATEWAY,
    NODE_EXPORTER_IMAGE,
    NODE_PORT,
    PROMETHEUS_IMAGE,
    PROMETHEUS_YML,
    TOKEN_IN_CONTAINER,
    StackSpec,
    rule_files,
)


def _bind_source(path: str) -> str:
    """A host path as compose's short volume syntax takes it: a relative one must start with
    ``.`` (``alertmanager-token`` alone would name a volume)."""
    return path if path.startswith(("/", "./", "../")) else f"./{path}"


def _prometheus(spec: StackSpec) -> dict[str, Any]:
    return {
        "image": PROMETHEUS_IMAGE,
        "command": [
            "--config.file=/etc/prometheus/prometheus.yml",
            "--storage.tsdb.path=/prometheus",
            "--storage.tsdb.retention.time=15d",
        ],
        "volumes": [
            f"./{PROMETHEUS_YML}:/etc/prometheus/{PROMETHEUS_YML}:ro",
            *(f"./{name}:/etc/prometheus/{name}:ro" for name in rule_files(spec)),
            "prometheus-data:/prometheus",
        ],
        "ports": ["9090:9090"],
        # Lets the container reach vLLM and the exporter on the Docker host.
        "extra_hosts": [f"{HOST_GATEWAY}:host-gateway"],
        "restart": "unless-stopped",
    }


def _grafana() -> dict[str, Any]:
    return {
        "image": GRAFANA_IMAGE,
        "depends_on": ["prometheus"],
        "ports": [f"{GRAFANA_PORT}:3000"],
        "volumes": [
            "./grafana/provisioning:/etc/grafana/provisioning:ro",
            "./grafana/dashboards:/etc/grafana/dashboards:ro",
            "grafana-data:/var/lib/grafana",
        ],
        "environment": {"GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH": HOME_DASHBOARD},
        "restart": "unless-stopped",
    }


def _alertmanager(spec: StackSpec) -> dict[str, Any]:
    return {
        "image": ALERTMANAGER_IMAGE,
        "command": [
            f"--config.file=/etc/alertmanager/{ALERTMANAGER_YML}",
            "--storage.path=/alertmanager",
        ],
        "volumes": [
            f"./{ALERTMANAGER_YML}:/etc/alertmanager/{ALERTMANAGER_YML}:ro",
            f"{_bind_source(spec.token_file)}:{TOKEN_IN_CONTAINER}:ro",
            "alertmanager-data:/alertmanager",
        ],
        "ports": ["9093:9093"],
        # Lets it post to a notifier on the Docker host.
        "extra_hosts": [f"{HOST_GATEWAY}:host-gateway"],
        "restart": "unless-stopped",
    }


def _dcgm_exporter() -> dict[str, Any]:
    return {
        "image": DCGM_IMAGE,
        "cap_add": ["SYS_ADMIN"],
        "ports": ["9400:9400"],
        # The compose form of `docker run --gpus all`: without it the container sees no GPU
        # and /metrics has not a single GPU line.
        "deploy": {
            "resources": {
                "reservations": {
                    "devices": [
                        {"driver": "nvidia", "count": "all", "capabilities": ["gpu"]},
                    ]
                }
            }
        },
        "restart": "unless-stopped",
    }


def _node_exporter() -> dict[str, Any]:
    return {
        "image": NODE_EXPORTER_IMAGE,
        # The host's root read-only: file systems are reported by their host mount points
        # (the ledger's disk alert names one); the host's network and processes.
        "command": ["--path.rootfs=/host", f"--web.listen-address=:{NODE_PORT}"],
        "network_mode": "host",
        "pid": "host",
        "volumes": ["/:/host:ro,rslave"],
        "restart": "unless-stopped",
    }


def _cadvisor() -> dict[str, Any]:
    return {
        "image": CADVISOR_IMAGE,
        # What cAdvisor's own docs mount to read every container's cgroups; scraped on the
        # compose network, not published.
        "privileged": True,
        "devices": ["/dev/kmsg"],
        "volumes": [
            "/:/rootfs:ro",
            "/var/run:/var/run:ro",
            "/sys:/sys:ro",
            "/var/lib/docker/:/var/lib/docker:ro",
            "/dev/disk/:/dev/disk:ro",
        ],
        "restart": "unless-stopped",
    }


def compose(spec: StackSpec) -> dict[str, Any]:
    """The compose file: Prometheus and Grafana always, each other service where ``spec`` runs
    it here."""
    services: dict[str, Any] = {"prometheus": _prometheus(spec), "grafana": _grafana()}
    if spec.alertmanager_service:
        services["alertmanager"] = _alertmanager(spec)
        services["prometheus"]["depends_on"] = ["alertmanager"]
    if spec.dcgm_target is not None and spec.dcgm_service:
        services["dcgm-exporter"] = _dcgm_exporter()
    if spec.node_target is not None and spec.node_service:
        services["node-exporter"] = _node_exporter()
    if spec.cadvisor_target is not None and spec.cadvisor_service:
        services["cadvisor"] = _cadvisor()
    volumes: dict[str, Any] = {"prometheus-data": {}, "grafana-data": {}}
    if spec.alertmanager_service:
        volumes["alertmanager-data"] = {}
    return {"services": services, "volumes": volumes}


__all__ = ["compose"]
