"""The monitoring stack as files: Prometheus scrape config and alerts, an Alertmanager route to a
webhook, Grafana provisioning and dashboard, and a compose file running Prometheus,
Alertmanager, Grafana (on 3300), the DCGM exporter, the node exporter (the host's CPU, memory,
disks and network) and cAdvisor (each container's CPU and memory).

``stack_write.documents(spec)`` builds every file's content as data (pure) from the parts here
and ``stack_compose``; ``stack_write.write_stack`` renders and writes them (YAML through
PyYAML, the ``observability`` extra); ``targets`` checks the addresses. The ledger exporter is
not in this compose file: it runs on the host that holds the ledgers (``render --units``, or
compose mode's ``ledger-exporter`` service), at the address here (``EXPORTER_LISTEN``).

Alertmanager posts to the webhook with ``Authorization: Bearer`` and the token in
``spec.token_file`` (``http_config.authorization.credentials_file``), at most
``names.MAX_ALERTS_PER_POST`` alerts a post (``max_alerts``: what the notifier reads of one
body). The compose file mounts that file read-only at ``TOKEN_IN_CONTAINER``; for an
Alertmanager of your own, alertmanager.yml names the file itself (a relative path is read from
alertmanager.yml's folder, Alertmanager's rule). ``stack_write.write_stack`` writes a new random
token there when the file does not exist, and never replaces one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vllm_ledger import names
from vllm_ledger.names import BUDGET_LABEL, LEDGER_INSTANCE_LABEL, MODEL_NAME_LABEL
from vllm_ledger.observe.alert_rule import Thresholds
from vllm_ledger.observe.alerts import DEFAULT_RUNBOOK, AlertSet
from vllm_ledger.observe.budget_alerts import DEFAULT_BUDGETS_RUNBOOK
from vllm_ledger.observe.dashboard import DASHBOARD_UID, DEFAULT_MAX_MODEL_LEN
from vllm_ledger.observe.signals import CADVISOR_JOB, DCGM_JOB, EXPORTER_JOB, NODE_JOB, VLLM_JOB
from vllm_ledger.observe.targets import Target
from vllm_ledger.plan.budgets import BudgetConfig

DATASOURCE_UID = "vllm-prometheus"
HOST_GATEWAY = "host.docker.internal"
DCGM_SERVICE_TARGET = "dcgm-exporter:9400"
DEFAULT_VLLM_TARGET = f"{HOST_GATEWAY}:8000"
# The ledger exporter's address, one source for every place that names it: the unit of
# `render --units` listens at EXPORTER_LISTEN, compose mode's exporter service publishes
# EXPORTER_PORT on the host, the Kubernetes sidecar serves it, and this stack's Prometheus
# scrapes DEFAULT_EXPORTER_TARGET (the Docker host, where the first two listen). 0.0.0.0 as
# vLLM itself listens (the host file's default): the Prometheus container reaches the host
# through the Docker gateway, never through its 127.0.0.1.
EXPORTER_PORT = 9464
EXPORTER_LISTEN = f"0.0.0.0:{EXPORTER_PORT}"
DEFAULT_EXPORTER_TARGET = f"{HOST_GATEWAY}:{EXPORTER_PORT}"
ALERTMANAGER_SERVICE_TARGET = "alertmanager:9093"
# The node exporter runs in the host's network namespace (it reports the host's interfaces),
# so Prometheus reaches it through the Docker host; cAdvisor is a service on the compose network.
NODE_PORT = 9100
DEFAULT_NODE_TARGET = f"{HOST_GATEWAY}:{NODE_PORT}"
CADVISOR_SERVICE_TARGET = "cadvisor:8080"
# Where Alertmanager posts alerts until --webhook-url says otherwise: `vllm-ledger notifier`'s
# /alertmanager endpoint at its default port, on the Docker host (the compose file maps
# host.docker.internal to it for the Alertmanager container; the notifier must then listen on
# an address the container reaches, e.g. "listen": "0.0.0.0:9095").
PLACEHOLDER_WEBHOOK = f"http://{HOST_GATEWAY}:9095/alertmanager"
# The bearer token Alertmanager sends: a file beside the stack's files (relative to the output
# folder) unless --alertmanager-token-file names another; the compose file mounts it here.
DEFAULT_TOKEN_FILE = "alertmanager-token"
TOKEN_IN_CONTAINER = "/etc/alertmanager/token"
GRAFANA_PORT = 3300
# Prometheus scrapes itself (its own health: rule evaluation, remote-write backlog, TSDB) here,
# inside its container; PROMETHEUS_LABEL names it in its external_labels.
SELF_JOB = "prometheus"
SELF_TARGET = "localhost:9090"
PROMETHEUS_LABEL = "prometheus"

PROMETHEUS_IMAGE = "prom/prometheus:v2.53.0"
GRAFANA_IMAGE = "grafana/grafana:11.1.0"
ALERTMANAGER_IMAGE = "prom/alertmanager:v0.27.0"
DCGM_IMAGE = "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.1-ubuntu22.04"
NODE_EXPORTER_IMAGE = "quay.io/prometheus/node-exporter:v1.8.2"
CADVISOR_IMAGE = "gcr.io/cadvisor/cadvisor:v0.49.1"

PROMETHEUS_YML = "prometheus.yml"
ALERTS_YML = "alerts.yml"
BUDGETS_YML = "budgets.yml"  # with --budgets: one rule per budget and level
ALERTMANAGER_YML = "alertmanager.yml"
COMPOSE_YAML = "compose.yaml"
DATASOURCE_YML = "grafana/provisioning/datasources/prometheus.yml"
DASHBOARDS_YML = "grafana/provisioning/dashboards/vllm-ledger.yml"
DASHBOARD_JSON = f"grafana/dashboards/{DASHBOARD_UID}.json"

HOME_DASHBOARD = f"/etc/grafana/dashboards/{DASHBOARD_UID}.json"
HEADER = "# Written by `vllm-ledger observability`: regenerate it rather than edit it.\n"


@dataclass(frozen=True)
class StackSpec:
    vllm_targets: tuple[Target, ...] = ((DEFAULT_VLLM_TARGET, None),)
    exporter_target: Target = (DEFAULT_EXPORTER_TARGET, None)
    dcgm_target: Target | None = (DCGM_SERVICE_TARGET, None)  # None: no DCGM job or service
    dcgm_service: bool = True  # run dcgm-exporter in the compose file
    node_target: Target | None = (DEFAULT_NODE_TARGET, None)  # None: no node job or service
    node_service: bool = True  # run the node exporter in the compose file
    cadvisor_target: Target | None = (CADVISOR_SERVICE_TARGET, None)  # None: no cAdvisor
    cadvisor_service: bool = True  # run cAdvisor in the compose file
    alertmanager_target: str = ALERTMANAGER_SERVICE_TARGET
    alertmanager_service: bool = True  # run Alertmanager in the compose file
    webhook_url: str = PLACEHOLDER_WEBHOOK
    # the bearer token's file on the host: relative to the output folder, or absolute
    token_file: str = DEFAULT_TOKEN_FILE
    scrape_interval: str = "15s"
    thresholds: Thresholds = field(default_factory=Thresholds)
    alerts: AlertSet = "minimal"  # the three to start with; "full": every rule
    runbook: str = DEFAULT_RUNBOOK
    max_model_len: int = DEFAULT_MAX_MODEL_LEN
    budgets: BudgetConfig | None = None  # the budgets file: budgets.yml, its rules
    budgets_runbook: str = DEFAULT_BUDGETS_RUNBOOK
    # external_labels: PROMETHEUS_LABEL = this name (the host the stack runs on) on every series
    # it sends away (remote write, federation, alerts), so a store of several tells them apart
    prometheus_name: str = "prometheus"
    remote_write_url: str | None = None  # a remote-write store (VictoriaMetrics, Mimir, ...)


def rule_files(spec: StackSpec) -> list[str]:
    """The rule files Prometheus loads: alerts.yml, and budgets.yml with budgets."""
    return [ALERTS_YML] + ([BUDGETS_YML] if spec.budgets is not None else [])


def _static_configs(targets: tuple[Target, ...]) -> list[dict[str, Any]]:
    """Unnamed targets in one group; each named one in its own, with its ``instance`` label."""
    plain = [a for a, n in targets if n is None]
    groups: list[dict[str, Any]] = [{"targets": plain}] if plain else []
    groups += [{"targets": [a], "labels": {"instance": n}} for a, n in targets if n is not None]
    return groups


# The services of this compose file: on the compose network, but on the Docker host, beside
# the vLLM that Prometheus reaches as host.docker.internal.
_COMPOSE_SERVICE_HOSTS = frozenset(
    t.rsplit(":", 1)[0] for t in (DCGM_SERVICE_TARGET, CADVISOR_SERVICE_TARGET)
)


def _host_of(target: str) -> str:
    return target.rsplit(":", 1)[0]


def watched_host(spec: StackSpec, target: Target) -> Target:
    """A target beside vLLM (the ledger exporter, DCGM, the node exporter, cAdvisor) named by
    the vLLM host it watches: unnamed, on the address host of a vLLM target, its ``instance``
    becomes that vLLM's host (as the vLLM target is named) and its own port, so ``$host`` picks
    vLLM, its GPUs, its host and its containers with one value. A named target stays as named;
    one on no vLLM's host keeps its address."""
    address, name = target
    if name is not None:
        return target
    host = _host_of(address)
    if host in _COMPOSE_SERVICE_HOSTS:
        host = HOST_GATEWAY  # a service of this compose file runs on the Docker host
    for vllm_address, vllm_name in spec.vllm_targets:
        if _host_of(vllm_address) == host:
            named = f"{_host_of(vllm_name or vllm_address)}:{address.rsplit(':', 1)[1]}"
            return (address, None if named == address else named)
    return target


def scrape_jobs(spec: StackSpec) -> list[tuple[str, tuple[Target, ...]]]:
    """Every scrape job and its targets, each target beside vLLM named by its vLLM host."""
    jobs: list[tuple[str, tuple[Target, ...]]] = [(VLLM_JOB, spec.vllm_targets)]
    beside: list[tuple[str, Target | None]] = [
        (DCGM_JOB, spec.dcgm_target),
        (EXPORTER_JOB, spec.exporter_target),
        (NODE_JOB, spec.node_target),
        (CADVISOR_JOB, spec.cadvisor_target),
    ]
    jobs += [(job, (watched_host(spec, t),)) for job, t in beside if t is not None]
    return jobs


def prometheus_config(spec: StackSpec) -> dict[str, Any]:
    jobs = scrape_jobs(spec)
    jobs.append((SELF_JOB, ((SELF_TARGET, None),)))
    config: dict[str, Any] = {
        "global": {
            "scrape_interval": spec.scrape_interval,
            "evaluation_interval": spec.scrape_interval,
            "external_labels": {PROMETHEUS_LABEL: spec.prometheus_name},
        },
        "alerting": {
            "alertmanagers": [{"static_configs": [{"targets": [spec.alertmanager_target]}]}]
        },
        "rule_files": rule_files(spec),
        "scrape_configs": [
            {"job_name": name, "static_configs": _static_configs(targets)} for name, targets in jobs
        ],
    }
    if spec.remote_write_url is not None:
        config["remote_write"] = [{"url": spec.remote_write_url}]
    return config


def alertmanager_config(spec: StackSpec) -> dict[str, Any]:
    """One receiver: every alert to the webhook, grouped per alert and per instance and model, at
    the pace of its level (a child route per severity), a critical alert holding back the
    warnings and infos of its instance; the webhook gets the bearer token and at most
    ``names.MAX_ALERTS_PER_POST`` alerts a post."""
    token = TOKEN_IN_CONTAINER if spec.alertmanager_service else spec.token_file
    return {
        "route": {
            "receiver": "notifier",
            "group_by": [
                "alertname",
                "instance",
                LEDGER_INSTANCE_LABEL,
                MODEL_NAME_LABEL,
                *([BUDGET_LABEL] if spec.budgets is not None else []),
            ],
            "group_wait": "30s",
            "group_interval": "5m",
            "repeat_interval": "4h",
            # One pace per level (alerts.SEVERITIES): critical again every hour, warning every
            # 4 h (the route's own), info, an early sign, once a day.
            "routes": [
                {"matchers": ['severity="critical"'], "repeat_interval": "1h"},
                {"matchers": ['severity="warning"']},
                {
                    "matchers": ['severity="info"'],
                    "group_interval": "30m",
                    "repeat_interval": "24h",
                },
            ],
        },
        # A critical alert of a target holds back its warnings and early signs: one message
        # about the target that is down, not three.
        "inhibit_rules": [
            {
                "source_matchers": ['severity="critical"'],
                "target_matchers": ['severity=~"warning|info"'],
                "equal": ["instance"],
            }
        ],
        "receivers": [
            {
                "name": "notifier",
                "webhook_configs": [
                    {
                        "url": spec.webhook_url,
                        "send_resolved": True,
                        "max_alerts": names.MAX_ALERTS_PER_POST,
                        "http_config": {
                            "authorization": {"type": "Bearer", "credentials_file": token}
                        },
                    }
                ],
            }
        ],
    }


def datasource_provisioning() -> dict[str, Any]:
    return {
        "apiVersion": 1,
        "datasources": [
            {
                "name": "Prometheus",
                "uid": DATASOURCE_UID,
                "type": "prometheus",
                "access": "proxy",
                "url": "http://prometheus:9090",
                "isDefault": True,
                "editable": False,
                "jsonData": {"timeInterval": "15s"},
            }
        ],
    }


def dashboard_provisioning() -> dict[str, Any]:
    return {
        "apiVersion": 1,
        "providers": [
            {
                "name": "vllm-ledger",
                "folder": "vLLM",
                "type": "file",
                "disableDeletion": False,
                "allowUiUpdates": True,
                "options": {"path": "/etc/grafana/dashboards", "foldersFromFilesStructure": False},
            }
        ],
    }


__all__ = [
    "DATASOURCE_UID",
    "DEFAULT_EXPORTER_TARGET",
    "DEFAULT_TOKEN_FILE",
    "EXPORTER_LISTEN",
    "EXPORTER_PORT",
    "HEADER",
    "PLACEHOLDER_WEBHOOK",
    "TOKEN_IN_CONTAINER",
    "StackSpec",
    "alertmanager_config",
    "prometheus_config",
    "scrape_jobs",
    "watched_host",
]
