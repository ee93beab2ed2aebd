"""Kubernetes manifests from a host file: ``render --mode kubernetes``. Pure, deterministic.

``manifests(host, usage=, tz=)`` returns the resources as data, in apply order:

* a StatefulSet (one replica: one vLLM server) whose ``vllm`` container runs ``vllm serve``
  with the very argv the other modes render (``launch.serve_args``), GPUs as
  ``nvidia.com/gpu`` limits, ``/dev/shm`` a memory ``emptyDir`` of the host file's
  ``shm_size``, startup/readiness/liveness probes on ``/health`` (the startup probe allows
  ``STARTUP_BUDGET_S`` for loading the model), the API key from a Secret (``secretKeyRef``,
  never argv), and ``terminationGracePeriodSeconds`` above vLLM's ``--shutdown-timeout`` plus
  the ledger's drain. With ``usage``: the ledger root on a claim from ``volumeClaimTemplates``
  (it outlives the pod), ``VLLM_LEDGER_DIR``/``_WRITERS``/``_PORT`` (and ``_TZ``) as the other
  modes set them, the plugin from the derived image (``deploy/image.py``), the attribution
  middleware and its settings (``deploy/attribution.py``; a key names file from the Secret
  ``NAME-key-names``, mounted read-only), the budgets file (``deploy/budgets.py``: from the
  ConfigMap ``NAME-budgets``, mounted read-only, ``VLLM_LEDGER_BUDGETS``: rank 0 runs the
  enforcer), and the exporter as a sidecar reading the same claim read-only (with
  ``--budgets`` where there are budgets);
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
each. YAML is written here (no PyYAML needed): keys are fixed words or quoted, every string a
JSON string (JSON's double-quoted strings are YAML's), the dashboard a literal block.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from dataclasses import replace as replaced
from typing import Any

from vllm_ledger import __version__
from vllm_ledger.deploy.attribution import (
    CONTAINER_KEY_NAMES_DIR,
    KEY_NAMES_FILE,
    container_key_names,
)
from vllm_ledger.deploy.budgets import BudgetsFile, budgets_env, budgets_for, container_budgets
from vllm_ledger.deploy.host import Host, check_for
from vllm_ledger.deploy.image import derived_image, require_image
from vllm_ledger.deploy.kubernetes_autoscale import adapter_configmap, adapter_rules, autoscaler
from vllm_ledger.deploy.kubernetes_budgets import (
    BUDGETS_DIGEST,
    budgets_configmap_doc,
    budgets_mounts,
    budgets_rule_doc,
    budgets_volume,
)
from vllm_ledger.deploy.launch import (
    CONTAINER_LEDGER_DIR,
    DOCKER_STOP_MARGIN_S,
    check_tz,
    env_name,
    middleware_env,
    serve_args,
    shutdown_timeout_s,
)
from vllm_ledger.errors import ConfigError
from vllm_ledger.observe.alerts import rules_document
from vllm_ledger.observe.dashboard import DASHBOARD_UID, DEFAULT_MAX_MODEL_LEN, dashboard
from vllm_ledger.observe.signals import EXPORTER_JOB, VLLM_JOB
from vllm_ledger.observe.stack import EXPORTER_PORT
from vllm_ledger.units import LOG_FORMAT_ENV, PORT_ENV, ROOT_ENV, WRITERS_ENV, ZONE_ENV
from vllm_ledger.write.recorder import DRAIN_TIMEOUT_S

LEDGER_VOLUME = "ledger"
LEDGER_CLAIM_SIZE = "10Gi"
SHM_VOLUME = "dshm"
KEY_NAMES_VOLUME = "key-names"
SECRET_KEY = "api-key"
RULE_NAME = "vllm-ledger-alerts"
DASHBOARD_CONFIGMAP = "vllm-ledger-dashboard"
GPU_RESOURCE = "nvidia.com/gpu"
HEALTH_PATH = "/health"
STARTUP_PERIOD_S = 10
STARTUP_FAILURES = 180  # 180 x 10 s = 30 min to load the model before the pod is restarted
STARTUP_BUDGET_S = STARTUP_PERIOD_S * STARTUP_FAILURES
MIN_GRACE_S = 30  # Kubernetes' own default: never shorter
SCRAPE_INTERVAL = "30s"
MAX_NAME = 52  # a StatefulSet's name + "-" + a 10-character revision hash fits a 63 label
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_SHM = re.compile(r"([0-9]+)([bkmgBKMG]?)")


@dataclass(frozen=True)
class Manifest:
    """One resource: its file name in ``--output DIR`` and its content."""

    filename: str
    doc: dict[str, Any]


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


def gpu_count(host: Host) -> int:
    """GPUs to ask for: a list's length; "all": tensor x data parallel size (1 if unset)."""
    if isinstance(host.gpus, tuple):
        return len(host.gpus)
    return (host.tensor_parallel_size or 1) * (host.data_parallel_size or 1)


def shm_quantity(shm_size: str) -> str:
    """docker's size (16g, 512m: powers of 1024) as a Kubernetes quantity (16Gi, 512Mi)."""
    m = _SHM.fullmatch(shm_size)
    assert m is not None, "the host schema checked it"
    unit = {"": "", "b": "", "k": "Ki", "m": "Mi", "g": "Gi"}[m.group(2).lower()]
    return f"{int(m.group(1))}{unit}"


def grace_seconds(host: Host, usage: bool) -> int:
    """terminationGracePeriodSeconds: vLLM's shutdown timeout, the ledger's drain, a margin."""
    drain = int(DRAIN_TIMEOUT_S) if usage else 0
    return max(MIN_GRACE_S, (shutdown_timeout_s(host, usage) or 0) + drain + DOCKER_STOP_MARGIN_S)


def _labels(host: Host) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "vllm",
        "app.kubernetes.io/instance": resource_name(host),
    }


def _all_labels(host: Host) -> dict[str, str]:
    return {**_labels(host), "app.kubernetes.io/managed-by": "vllm-ledger"}


def _shared_labels() -> dict[str, str]:
    return {
        "app.kubernetes.io/part-of": "vllm-ledger",
        "app.kubernetes.io/managed-by": "vllm-ledger",
    }


def _probe(period: int, failures: int, timeout: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": HEALTH_PATH, "port": "http"},
        "periodSeconds": period,
        "timeoutSeconds": timeout,
        "failureThreshold": failures,
    }


def _env(
    host: Host, usage: bool, tz: str | None, budgets: BudgetsFile | None = None
) -> list[dict[str, Any]]:
    env: dict[str, str] = {env_name(k): v for k, v in host.extra_env}
    if usage:
        env[ROOT_ENV] = CONTAINER_LEDGER_DIR
        env[WRITERS_ENV] = str(host.api_server_count)
        env[PORT_ENV] = str(host.port)
        if tz is not None:  # recorded in the root as ROOT/zone by the plugin
            env[ZONE_ENV] = tz
        env.update(middleware_env(host, container_key_names(host.key_names)))
        if budgets is not None and host.budgets is not None:
            env.update(budgets_env(container_budgets(host.budgets)))
    out: list[dict[str, Any]] = [{"name": k, "value": env[k]} for k in sorted(env)]
    if host.api_key_env or host.api_key_file:
        ref = {"name": secret_name(host), "key": SECRET_KEY}
        out.append({"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": ref}})
    return out


def _vllm_container(
    host: Host, usage: bool, tz: str | None, budgets: BudgetsFile | None = None
) -> dict[str, Any]:
    mounts: list[dict[str, Any]] = [{"name": SHM_VOLUME, "mountPath": "/dev/shm"}]
    if usage:
        mounts.append({"name": LEDGER_VOLUME, "mountPath": CONTAINER_LEDGER_DIR})
        if host.key_names is not None:
            mounts.append(
                {"name": KEY_NAMES_VOLUME, "mountPath": CONTAINER_KEY_NAMES_DIR, "readOnly": True}
            )
        mounts += budgets_mounts(budgets)
    for i, v in enumerate(host.volumes):
        mounts.append({"name": f"volume-{i}", "mountPath": v.container, "readOnly": v.read_only})
    container: dict[str, Any] = {
        "name": "vllm",
        "image": derived_image(host) if usage else require_image(host, "kubernetes"),
        "imagePullPolicy": "IfNotPresent",
        "command": ["vllm"],
        "args": serve_args(host, mode="docker", usage=usage),
        "ports": [{"name": "http", "containerPort": host.port, "protocol": "TCP"}],
        "env": _env(host, usage, tz, budgets),
    }
    gpus = gpu_count(host)
    if gpus:
        container["resources"] = {"limits": {GPU_RESOURCE: gpus}}
    container["volumeMounts"] = mounts
    container["startupProbe"] = _probe(STARTUP_PERIOD_S, STARTUP_FAILURES, 5)
    container["readinessProbe"] = _probe(10, 3, 5)
    container["livenessProbe"] = _probe(20, 6, 10)
    return container


def exporter_args(tz: str | None, budgets: str | None = None) -> list[str]:
    """The sidecar's argv: the exporter over the claim, every address, no NVML (no GPU here),
    and the budgets file where a container finds it."""
    args = ["vllm-ledger", "exporter", "--root", CONTAINER_LEDGER_DIR]
    args += ["--listen", f"0.0.0.0:{EXPORTER_PORT}", "--no-gpu"]
    args += ["--budgets", budgets] if budgets is not None else []
    return args + (["--tz", tz] if tz is not None else [])


def _exporter_container(
    host: Host, tz: str | None, budgets: BudgetsFile | None = None
) -> dict[str, Any]:
    path = container_budgets(host.budgets) if budgets and host.budgets is not None else None
    logs = [{"name": LOG_FORMAT_ENV, "value": "json"}] * (host.log_format == "json")
    return {
        "name": "ledger-exporter",
        "image": derived_image(host),
        "imagePullPolicy": "IfNotPresent",
        "command": exporter_args(tz, path)[:1],
        "args": exporter_args(tz, path)[1:],
        "ports": [{"name": "metrics", "containerPort": EXPORTER_PORT, "protocol": "TCP"}],
        **({"env": logs} if logs else {}),
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
        "volumeMounts": [
            {"name": LEDGER_VOLUME, "mountPath": CONTAINER_LEDGER_DIR, "readOnly": True},
            *budgets_mounts(budgets),
        ],
        "readinessProbe": {"tcpSocket": {"port": "metrics"}, "periodSeconds": 10},
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True},
    }


def _key_names_item() -> dict[str, Any]:
    return {"key": KEY_NAMES_FILE, "path": KEY_NAMES_FILE}


def statefulset(
    host: Host, usage: bool, tz: str | None, budgets: BudgetsFile | None = None
) -> dict[str, Any]:
    """The StatefulSet; ``budgets``: the host's budgets file, read already (with ``usage``)."""
    volumes: list[dict[str, Any]] = [
        {
            "name": SHM_VOLUME,
            "emptyDir": {"medium": "Memory", "sizeLimit": shm_quantity(host.shm_size)},
        }
    ]
    for i, v in enumerate(host.volumes):
        kind = "Directory" if v.read_only else "DirectoryOrCreate"
        volumes.append({"name": f"volume-{i}", "hostPath": {"path": v.host, "type": kind}})
    if usage and host.key_names is not None:
        secret = {"secretName": key_names_secret(host), "items": [_key_names_item()]}
        volumes.append({"name": KEY_NAMES_VOLUME, "secret": secret})
    budgets = budgets if usage else None
    if budgets is not None:
        assert host.budgets is not None
        volumes.append(budgets_volume(budgets_name(host), host.budgets))
    containers = [_vllm_container(host, usage, tz, budgets)]
    if usage:
        containers.append(_exporter_container(host, tz, budgets))
    metadata: dict[str, Any] = {"labels": _all_labels(host)}
    if budgets is not None:
        metadata["annotations"] = {BUDGETS_DIGEST: budgets.digest}  # a new file restarts it
    spec: dict[str, Any] = {
        "serviceName": resource_name(host),
        "replicas": 1,
        "selector": {"matchLabels": _labels(host)},
        "template": {
            "metadata": metadata,
            "spec": {
                "enableServiceLinks": False,  # no FOO_PORT variables: vLLM reads VLLM_* ones
                "terminationGracePeriodSeconds": grace_seconds(host, usage),
                "containers": containers,
                "volumes": volumes,
            },
        },
    }
    if usage:
        spec["volumeClaimTemplates"] = [
            {
                "metadata": {"name": LEDGER_VOLUME},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": LEDGER_CLAIM_SIZE}},
                },
            }
        ]
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": resource_name(host), "labels": _all_labels(host)},
        "spec": spec,
    }


def service(host: Host, usage: bool) -> dict[str, Any]:
    ports = [{"name": "http", "port": host.port, "targetPort": "http", "protocol": "TCP"}]
    if usage:
        ports.append(
            {"name": "metrics", "port": EXPORTER_PORT, "targetPort": "metrics", "protocol": "TCP"}
        )
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": resource_name(host), "labels": _all_labels(host)},
        "spec": {"selector": _labels(host), "ports": ports},
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
        "metadata": {"name": resource_name(host), "labels": _all_labels(host)},
        "spec": {"selector": {"matchLabels": _labels(host)}, "endpoints": endpoints},
    }


def prometheus_rule() -> dict[str, Any]:
    """The alert rules ``observability`` writes, as a PrometheusRule (the same for every
    server: applying two servers' manifests leaves one)."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": RULE_NAME, "labels": _shared_labels()},
        "spec": rules_document(),
    }


def dashboard_configmap(host: Host) -> dict[str, Any]:
    model = dashboard(host.max_model_len or DEFAULT_MAX_MODEL_LEN)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": DASHBOARD_CONFIGMAP,
            "labels": {**_shared_labels(), "grafana_dashboard": "1"},
        },
        "data": {f"{DASHBOARD_UID}.json": json.dumps(model, indent=2, ensure_ascii=False) + "\n"},
    }


def budgets_name(host: Host) -> str:
    """The ConfigMap holding the budgets file, and the PrometheusRule of its rules."""
    return f"{resource_name(host)}-budgets"


def budgets_configmap(host: Host, budgets: BudgetsFile) -> dict[str, Any]:
    assert host.budgets is not None
    return budgets_configmap_doc(budgets_name(host), _all_labels(host), host.budgets, budgets)


def budgets_rule(host: Host, budgets: BudgetsFile) -> dict[str, Any]:
    return budgets_rule_doc(budgets_name(host), _all_labels(host), budgets)


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
        name, labels = resource_name(host), _all_labels(host)
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


# ---- a small YAML writer for the values above ---------------------------------------------------

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
_YAML_WORDS = {"y", "n", "yes", "no", "true", "false", "on", "off", "null"}


def _quote(text: str) -> str:
    """A YAML double-quoted string: JSON's, with what YAML may not hold raw escaped too."""
    return "".join(
        c
        if c.isprintable() or c in "\t"
        else (f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}")
        for c in json.dumps(text, ensure_ascii=False)
    )


def _key(key: str) -> str:
    if _PLAIN_KEY.fullmatch(key) and key.lower() not in _YAML_WORDS:
        return key
    return _quote(key)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return _quote(value)
    raise TypeError(f"no YAML for {type(value).__name__}")


def _block(value: Any) -> bool:
    """A string written as a literal block: many lines, one final newline, nothing a block
    would change (tabs, trailing blanks, a leading space, unprintable characters)."""
    if not isinstance(value, str) or "\n" not in value.rstrip("\n"):
        return False
    if not value.endswith("\n") or value.endswith("\n\n") or value.startswith(" "):
        return False
    return all(line == line.rstrip() and line.isprintable() for line in value.split("\n"))


def to_yaml(value: Any, indent: int = 0) -> list[str]:
    """``value`` (dicts, lists, strings, numbers, booleans) as YAML lines."""
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return [pad + "{}"]
        out: list[str] = []
        for k, v in value.items():
            out += _entry(pad + _key(k) + ":", v, indent)
        return out
    if isinstance(value, list):
        if not value:
            return [pad + "[]"]
        out = []
        for item in value:
            if isinstance(item, (dict, list)) and item:
                lines = to_yaml(item, indent + 2)
                out += [pad + "- " + lines[0][indent + 2 :], *lines[1:]]
            else:
                out += _entry(pad + "-", item, indent)
        return out
    return [pad + _scalar(value)]


def _entry(head: str, v: Any, indent: int) -> list[str]:
    if isinstance(v, dict) and v:
        return [head, *to_yaml(v, indent + 2)]
    if isinstance(v, list) and v:
        return [head, *to_yaml(v, indent)]
    if _block(v):
        body = " " * (indent + 2)
        return [head + " |", *[(body + line).rstrip() for line in v.rstrip("\n").split("\n")]]
    return [f"{head} {to_yaml(v)[0]}"]


__all__ = [
    "EXPORTER_PORT",
    "STARTUP_BUDGET_S",
    "Manifest",
    "exporter_args",
    "grace_seconds",
    "manifest_files",
    "manifests",
    "manifests_yaml",
    "to_yaml",
]
