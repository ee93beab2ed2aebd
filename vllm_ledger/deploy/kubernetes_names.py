"""The names and labels of the kubernetes resources a host file renders into: the StatefulSet's,
Service's and ServiceMonitor's name is the host file's (a DNS label of at most ``MAX_NAME``), the
Secrets and the budgets' ConfigMap and rule are named after it, and the labels select its pods.
"""

from __future__ import annotations

import re

from vllm_ledger.deploy.host import Host
from vllm_ledger.errors import ConfigError

MAX_NAME = 52  # a StatefulSet's name + "-" + a 10-character revision hash fits a 63 label
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def resource_name(host: Host) -> str:
    """The StatefulSet's, Service's and ServiceMonitor's name: the host file's name."""
    name = host.name
    if not _DNS_LABEL.fullmatch(name) or len(name) > MAX_NAME:
        raise ConfigError(
            f"container_name: {name!a} is not a Kubernetes name (lowercase letters, digits and "
            f"'-', at most {MAX_NAME})",
            key="container_name",
            hint="set container_name to e.g. vllm-primary",
        )
    return name


def secret_name(host: Host) -> str:
    return f"{resource_name(host)}-api-key"


def key_names_secret(host: Host) -> str:
    """The Secret holding the attribution key names file (``key-names.json``)."""
    return f"{resource_name(host)}-key-names"


def labels(host: Host) -> dict[str, str]:
    """What selects the host's pods."""
    return {
        "app.kubernetes.io/name": "vllm",
        "app.kubernetes.io/instance": resource_name(host),
    }


def all_labels(host: Host) -> dict[str, str]:
    """The labels of each resource rendered for the host."""
    return {**labels(host), "app.kubernetes.io/managed-by": "vllm-ledger"}


def shared_labels() -> dict[str, str]:
    """The labels of a resource every server shares (alert rules, dashboard)."""
    return {
        "app.kubernetes.io/part-of": "vllm-ledger",
        "app.kubernetes.io/managed-by": "vllm-ledger",
    }


def budgets_name(host: Host) -> str:
    """The ConfigMap holding the budgets file, and the PrometheusRule of its rules."""
    return f"{resource_name(host)}-budgets"
