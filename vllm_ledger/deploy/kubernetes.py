"""Kubernetes manifests from a host file: ``render --mode kubernetes``. Pure, deterministic.

``manifests(host, usage=, tz=)`` returns the resources as data, in apply order:

* a StatefulSet (one replica: one vLLM server; ``deploy/kubernetes_pod.py``) whose ``vllm``
  container runs ``vllm serve`` with the very argv the other modes render, the API key from a
  Secret (``secretKeyRef``, never argv). With ``usage``: the ledger root on a claim from
  ``volumeClaimTemplates`` (it outlives the pod), ``VLLM_LEDGER_DIR``/``_WRITERS``/``_PORT``
  (and ``_TZ``) as the other modes set them, the plugin from the derived image
  (``deploy/image.py``), the attribution middleware and its settings (``deploy/attribution.py``;
  a key names file from the Secret ``NAME-key-names``, mounted read-only), the budgets file
  (``deploy/budgets.py``: from the ConfigMap ``NAME-budgets``, mounted read-only,
  ``VLLM_LEDGER_BUDGETS``: rank 0 runs the enforcer), and the exporter as a sidecar reading the
  same claim read-only (with ``--budgets`` where there are budgets);
* a Service with named ports (``http``; ``metrics`` with ``usage``);
* a ServiceMonitor scraping each port under the job names the alert rules select by;
* a PrometheusRule whose spec is ``observe.alerts.rules_document()``, the rules
  ``vllm-ledger observability`` writes to alerts.yml;
* the Grafana dashboard (``observe.dashboard.dashboard()``) as a ConfigMap labelled
  ``grafana_dashboard: "1"`` for Grafana's dashboard sidecar;
* with budgets: the ConfigMap ``NAME-budgets`` holding the budgets file (and a cost budget's
  price file), and the PrometheusRule ``NAME-budgets`` with the budgets' rules
  (``observe.budget_alerts``, as ``observability --budgets`` writes them).

``manifests_yaml`` writes them as one multi-document YAML text, ``manifest_files`` as one file
each, through ``deploy/yamltext.py`` (no PyYAML needed). Their names and labels are
``deploy/kubernetes_names.py``'s.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from dataclasses import replace as replaced
from typing import Any

from vllm_ledger import __version__
from vllm_ledger.deploy.attribution import KEY_NAMES_FILE
from vllm_ledger.deploy.budgets import BudgetsFile, budgets_for
from vllm_ledger.deploy.host import Host, check_for
from vllm_ledger.deploy.image import derived_image, require_image
from vllm_ledger.deploy.kubernetes_autoscale import adapter_configmap, adapter_rules, autoscaler
from vllm_ledger.deploy.kubernetes_budgets import budgets_configmap_doc, budgets_rule_doc
from vllm_ledger.deploy.kubernetes_names import (
    all_labels,
    budgets_name,
    key_names_secret,
    labels,
    resource_name,
    secret_name,
    shared_labels,
)
from vllm_ledger.deploy.kubernetes_pod import SECRET_KEY, statefulset
from vllm_ledger.deploy.serve import check_tz
from vllm_ledger.deploy.yamltext import to_yaml
from vllm_ledger.observe.alerts import rules_document
from vllm_ledger.observe.dashboard import DASHBOARD_UID, DEFAULT_MAX_MODEL_LEN, dashboard
from vllm_ledger.observe.signals import EXPORTER_JOB, VLLM_JOB
from vllm_ledger.observe.stack import EXPORTER_PORT

RULE_NAME = "vllm-ledger-alerts"
DASHBOARD_CONFIGMAP = "vllm-ledger-dashboard"
SCRAPE_INTERVAL = "30s"


@dataclass(frozen=True)
class Manifest:
    """One resource: its file name in ``--output DIR`` and its content."""

    filename: str
    doc: dict[str, Any]


def service(host: Host, usage: bool) -> dict[str, Any]:
    ports = [{"name": "http", "port": host.port, "targetPort": "http", "protocol": "TCP"}]
    if usage:
        ports.append(
            {"name": "metrics", "port": EXPORTER_PORT, "targetPort": "metrics", "protocol": "TCP"}
        )
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": resource_name(host), "labels": all_labels(host)},
        "spec": {"selector": labels(host), "ports": ports},
    }


def _endpoint(port: str, job: str) -> dict[str, Any]:
    return {
        "port": port,
        "path": "/metrics",
        "interval": SCRAPE_INTERVAL,
        # the alert rules select targets by job (up{job="vllm"}, ...): set it per port; `host`
        # (the pod's stable name) is what `fleet` names a host by, rather than the pod's IP
        "relabelings": [
            {"action": "replace", "targetLabel": "job", "replacement": job},
            {
                "action": "replace",
                "sourceLabels": ["__meta_kubernetes_pod_name"],
                "targetLabel": "host",
            },
        ],
    }


def service_monitor(host: Host, usage: bool) -> dict[str, Any]:
    endpoints = [_endpoint("http", VLLM_JOB)]
    if usage:
        endpoints.append(_endpoint("metrics", EXPORTER_JOB))
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": resource_name(host), "labels": all_labels(host)},
        "spec": {"selector": {"matchLabels": labels(host)}, "endpoints": endpoints},
    }


def prometheus_rule() -> dict[str, Any]:
    """The alert rules ``observability`` writes, as a PrometheusRule (the same for every
    server: applying two servers' manifests leaves one)."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": RULE_NAME, "labels": shared_labels()},
        "spec": rules_document(),
    }


def dashboard_configmap(host: Host) -> dict[str, Any]:
    model = dashboard(host.max_model_len or DEFAULT_MAX_MODEL_LEN)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": DASHBOARD_CONFIGMAP,
            "labels": {**shared_labels(), "grafana_dashboard": "1"},
        },
        "data": {f"{DASHBOARD_UID}.json": json.dumps(model, indent=2, ensure_ascii=False) + "\n"},
    }


def budgets_configmap(host: Host, budgets: BudgetsFile) -> dict[str, Any]:
    assert host.budgets is not None
    return budgets_configmap_doc(budgets_name(host), all_labels(host), host.budgets, budgets)


def budgets_rule(host: Host, budgets: BudgetsFile) -> dict[str, Any]:
    return budgets_rule_doc(budgets_name(host), all_labels(host), budgets)


def manifests(
    host: Host,
    *,
    usage: bool = False,
    tz: str | None = None,
    budgets: BudgetsFile | None = None,
    autoscale: bool = False,
) -> list[Manifest]:
    """Every resource, in apply order. Raises ConfigError if the host file does not fit.
    ``budgets``: the host's budgets file, read already (else it is read here); ``autoscale``:
    a HorizontalPodAutoscaler and prometheus-adapter's rule (deploy/kubernetes_autoscale.py)."""
    # The ledger's root is a claim here, not ARTIFACTS/usage: the checks that need
    # artifacts_dir are given a stand-in for it, every other check is the other modes'.
    check_for(replaced(host, artifacts_dir=host.artifacts_dir or "/"), "bare", usage)
    require_image(host, "kubernetes")
    check_tz(tz, usage)
    budgets = budgets_for(host, usage, budgets)
    docs = [
        *([budgets_configmap(host, budgets)] if budgets is not None else []),
        statefulset(host, usage, tz, budgets),
        service(host, usage),
        service_monitor(host, usage),
        prometheus_rule(),
        dashboard_configmap(host),
        *([budgets_rule(host, budgets)] if budgets is not None else []),
    ]
    if autoscale:
        name, labels = resource_name(host), all_labels(host)
        del docs[1 if budgets is not None else 0]["spec"]["replicas"]  # the autoscaler's now
        rules = "\n".join(to_yaml(adapter_rules())) + "\n"
        docs += [adapter_configmap(name, labels, rules), autoscaler(name, labels)]
    return [Manifest(f"{d['kind'].lower()}-{d['metadata']['name']}.yaml", d) for d in docs]


def _header(host: Host, usage: bool) -> list[str]:
    lines = [
        f"# vLLM on Kubernetes (kubernetes mode{', usage ledger on' if usage else ''}), rendered "
        f"by vllm-ledger {__version__}.",
        "# Do not edit: change the host file, render again and review the diff.",
    ]
    if usage:
        lines.append(
            f"# Image: {derived_image(host)} (render --mode image builds it; push it and "
            "point both containers at your registry's copy)."
        )
    if host.api_key_env or host.api_key_file:
        source = f"={shlex.quote(host.api_key_file)}" if host.api_key_file else '="$KEY"'
        flag = "--from-file" if host.api_key_file else "--from-literal"
        lines.append(
            f"# API key: kubectl create secret generic {secret_name(host)} "
            f"{flag}={SECRET_KEY}{source}"
        )
    if usage and host.key_names is not None:
        lines.append(
            f"# Key names: kubectl create secret generic {key_names_secret(host)} "
            f"--from-file={KEY_NAMES_FILE}={shlex.quote(host.key_names)}"
        )
    return lines


def manifests_yaml(
    host: Host,
    *,
    usage: bool = False,
    tz: str | None = None,
    budgets: BudgetsFile | None = None,
    autoscale: bool = False,
) -> str:
    """All resources as one multi-document YAML text."""
    items = manifests(host, usage=usage, tz=tz, budgets=budgets, autoscale=autoscale)
    out = _header(host, usage)
    for m in items:
        out += ["---", *to_yaml(m.doc)]
    return "\n".join(out) + "\n"


def manifest_files(
    host: Host,
    *,
    usage: bool = False,
    tz: str | None = None,
    budgets: BudgetsFile | None = None,
    autoscale: bool = False,
) -> list[tuple[str, str]]:
    """One (file name, YAML text) per resource."""
    items = manifests(host, usage=usage, tz=tz, budgets=budgets, autoscale=autoscale)
    head = _header(host, usage)
    return [(m.filename, "\n".join([*head, *to_yaml(m.doc)]) + "\n") for m in items]


__all__ = ["Manifest", "manifest_files", "manifests", "manifests_yaml"]
