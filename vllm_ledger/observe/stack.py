"""The monitoring stack as files: Prometheus scrape config and alerts, an Alertmanager route to a
webhook, Grafana provisioning and dashboard, and a compose file running Prometheus,
Alertmanager, Grafana (on 3300), the DCGM exporter, the node exporter (the host's CPU, memory,
disks and network) and cAdvisor (each container's CPU and memory).

``documents(spec)`` builds every file's content as data (pure); ``write_stack`` renders and
writes them (YAML through PyYAML, the ``observability`` extra). The ledger exporter is not in the
compose file: it runs on the host that holds the ledgers (``vllm-ledger exporter``).

Alertmanager posts to the webhook with ``Authorization: Bearer`` and the token in
``spec.token_file`` (``http_config.authorization.credentials_file``), at most
``names.MAX_ALERTS_PER_POST`` alerts a post (``max_alerts``: what the notifier reads of one
body). The compose file mounts that file read-only at ``TOKEN_IN_CONTAINER``; for an
Alertmanager of your own, alertmanager.yml names the file itself (a relative path is read from
alertmanager.yml's folder, Alertmanager's rule). ``write_stack`` writes a new random token there
when the file does not exist, and never replaces one."""

from __future__ import annotations

import json
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllm_ledger import names
from vllm_ledger.errors import BadArgument, MissingExtra
from vllm_ledger.names import BUDGET_LABEL, LEDGER_INSTANCE_LABEL, MODEL_NAME_LABEL
from vllm_ledger.observe.alerts import (
    CADVISOR_JOB,
    DCGM_JOB,
    DEFAULT_RUNBOOK,
    EXPORTER_JOB,
    NODE_JOB,
    VLLM_JOB,
    AlertSet,
    Thresholds,
    rules_document,
)
from vllm_ledger.observe.budget_alerts import DEFAULT_BUDGETS_RUNBOOK, budget_rules_document
from vllm_ledger.observe.dashboard import DASHBOARD_UID, DEFAULT_MAX_MODEL_LEN, dashboard
from vllm_ledger.plan.budgets import BudgetConfig
from vllm_ledger.units import host_port

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

_PORT_DIGITS = re.compile(r"[0-9]{1,5}")
_LOOPBACK = re.compile(r"^(127\.[0-9.]+|localhost|\[::1\])$")


def check_target(value: str) -> str:
    """HOST:PORT as Prometheus wants a static target (``units.host_port``, port 1-65535 in plain
    digits, no IPv6 zone), returned as given; raises BadArgument otherwise."""
    if not _is_target(value):
        raise BadArgument(
            f"target {value!r} is not HOST:PORT",
            argument="target",
            value=value,
            example="192.168.1.10:8000",
        )
    return value


def _is_target(value: str) -> bool:
    try:
        host, _port = host_port(value, zero=False)
    except BadArgument:
        return False
    return "%" not in host and _PORT_DIGITS.fullmatch(value.rpartition(":")[2]) is not None


def is_loopback(target: str) -> bool:
    return bool(_LOOPBACK.match(target.rsplit(":", 1)[0]))


def check_named_target(value: str) -> tuple[str, str | None]:
    """ADDRESS or ADDRESS=NAME, both HOST:PORT: NAME becomes the target's ``instance`` label
    (for a vLLM: the name the ledger gives it, ``report --by instance``)."""
    address, sep, name = value.partition("=")
    check_target(address)
    if sep:
        check_target(name)
        return address, name
    return address, None


Target = tuple[str, str | None]  # (address, instance name or None: the address)


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


def _bind_source(path: str) -> str:
    """A host path as compose's short volume syntax takes it: a relative one must start with
    ``.`` (``alertmanager-token`` alone would name a volume)."""
    return path if path.startswith(("/", "./", "../")) else f"./{path}"


def compose(spec: StackSpec) -> dict[str, Any]:
    services: dict[str, Any] = {
        "prometheus": {
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
        },
        "grafana": {
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
        },
    }
    if spec.alertmanager_service:
        services["alertmanager"] = {
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
        services["prometheus"]["depends_on"] = ["alertmanager"]
    if spec.dcgm_target is not None and spec.dcgm_service:
        services["dcgm-exporter"] = {
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
    if spec.node_target is not None and spec.node_service:
        services["node-exporter"] = {
            "image": NODE_EXPORTER_IMAGE,
            # The host's root read-only: file systems are reported by their host mount points
            # (the ledger's disk alert names one); the host's network and processes.
            "command": ["--path.rootfs=/host", f"--web.listen-address=:{NODE_PORT}"],
            "network_mode": "host",
            "pid": "host",
            "volumes": ["/:/host:ro,rslave"],
            "restart": "unless-stopped",
        }
    if spec.cadvisor_target is not None and spec.cadvisor_service:
        services["cadvisor"] = {
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
    volumes: dict[str, Any] = {"prometheus-data": {}, "grafana-data": {}}
    if spec.alertmanager_service:
        volumes["alertmanager-data"] = {}
    return {"services": services, "volumes": volumes}


def documents(spec: StackSpec) -> dict[str, Any]:
    """Every file of the stack, by path relative to the output folder, as data."""
    budgets: dict[str, Any] = {}
    if spec.budgets is not None:
        budgets[BUDGETS_YML] = budget_rules_document(spec.budgets, spec.budgets_runbook)
    return {
        PROMETHEUS_YML: prometheus_config(spec),
        ALERTS_YML: rules_document(spec.thresholds, spec.alerts, spec.runbook),
        **budgets,
        ALERTMANAGER_YML: alertmanager_config(spec),
        COMPOSE_YAML: compose(spec),
        DATASOURCE_YML: datasource_provisioning(),
        DASHBOARDS_YML: dashboard_provisioning(),
        DASHBOARD_JSON: dashboard(
            spec.max_model_len, ledger_mountpoint=spec.thresholds.ledger_mountpoint
        ),
    }


def _yaml(doc: Any) -> str:
    try:
        import yaml
    except ImportError as exc:
        raise MissingExtra("PyYAML", "observability") from exc
    return HEADER + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1000)


def render(path: str, doc: Any) -> str:
    if path.endswith(".json"):
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    return _yaml(doc)


@dataclass(frozen=True)
class Written:
    """What ``write_stack`` wrote: the stack's files, and the token's file (``token_created``
    when it wrote a new token there, False when the file was already there)."""

    files: list[Path]
    token_file: Path
    token_created: bool


def token_path(out_dir: Path, spec: StackSpec) -> Path:
    return out_dir / spec.token_file  # an absolute token_file stays itself


def _check_token_file(path: Path) -> None:
    if os.path.lexists(path) and not path.is_file():
        raise BadArgument(
            f"{path} is not a regular file (docker compose makes a folder where a mounted file "
            "is missing)",
            hint="remove it and run again, or give another token file",
            argument="token_file",
            value=str(path),
        )


def _create_token_file(path: Path) -> bool:
    """A new random token in ``path``, mode 0600, unless the file exists (then kept as is)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        _check_token_file(path)
        return False
    except OSError as exc:
        raise BadArgument(
            f"cannot write the Alertmanager token {path}: {exc.strerror}",
            hint="give a token file in a folder that exists",
            argument="token_file",
            value=str(path),
        ) from exc
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(secrets.token_urlsafe(32) + "\n")
    return True


def write_stack(out_dir: Path, spec: StackSpec) -> Written:
    """Write the stack under ``out_dir`` (created if needed), and a new token in its token file
    when that file does not exist."""
    if out_dir.exists() and not out_dir.is_dir():
        raise BadArgument(f"{out_dir} exists and is not a directory: pass a folder for the stack")
    token = token_path(out_dir, spec)
    _check_token_file(token)
    written = []
    for rel, doc in documents(spec).items():
        text = render(rel, doc)
        path = out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return Written(written, token, _create_token_file(token))


__all__ = [
    "DATASOURCE_UID",
    "DEFAULT_TOKEN_FILE",
    "PLACEHOLDER_WEBHOOK",
    "TOKEN_IN_CONTAINER",
    "StackSpec",
    "Written",
    "check_named_target",
    "check_target",
    "documents",
    "is_loopback",
    "token_path",
    "write_stack",
]
