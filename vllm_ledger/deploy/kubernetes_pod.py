"""The StatefulSet a host file renders into for kubernetes, and its pod: the ``vllm`` container
running ``vllm serve`` with the very argv the other modes render (``serve.serve_args``), GPUs as
``nvidia.com/gpu`` limits, ``/dev/shm`` a memory ``emptyDir`` of the host file's ``shm_size``,
startup/readiness/liveness probes on ``/health`` (the startup probe allows ``STARTUP_BUDGET_S``
for loading the model), the API key from a Secret, and ``terminationGracePeriodSeconds`` above
vLLM's ``--shutdown-timeout`` plus the ledger's drain; with ``usage``, the ledger's claim, its
settings, the key names and budgets mounted read-only, and the exporter as a sidecar. Pure.
"""

from __future__ import annotations

import re
from typing import Any

from vllm_ledger.deploy.attribution import (
    CONTAINER_KEY_NAMES_DIR,
    KEY_NAMES_FILE,
    container_key_names,
)
from vllm_ledger.deploy.budgets import BudgetsFile, budgets_env, container_budgets
from vllm_ledger.deploy.host import Host
from vllm_ledger.deploy.image import derived_image, require_image
from vllm_ledger.deploy.kubernetes_budgets import BUDGETS_DIGEST, budgets_mounts, budgets_volume
from vllm_ledger.deploy.kubernetes_names import (
    all_labels,
    budgets_name,
    key_names_secret,
    labels,
    resource_name,
    secret_name,
)
from vllm_ledger.deploy.serve import (
    CONTAINER_LEDGER_DIR,
    DOCKER_STOP_MARGIN_S,
    env_name,
    middleware_env,
    serve_args,
    shutdown_timeout_s,
)
from vllm_ledger.observe.stack import EXPORTER_PORT
from vllm_ledger.units import LOG_FORMAT_ENV, PORT_ENV, ROOT_ENV, WRITERS_ENV, ZONE_ENV
from vllm_ledger.write.recorder import DRAIN_TIMEOUT_S

LEDGER_VOLUME = "ledger"
LEDGER_CLAIM_SIZE = "10Gi"
SHM_VOLUME = "dshm"
KEY_NAMES_VOLUME = "key-names"
SECRET_KEY = "api-key"
GPU_RESOURCE = "nvidia.com/gpu"
HEALTH_PATH = "/health"
STARTUP_PERIOD_S = 10
STARTUP_FAILURES = 180  # 180 x 10 s = 30 min to load the model before the pod is restarted
STARTUP_BUDGET_S = STARTUP_PERIOD_S * STARTUP_FAILURES
MIN_GRACE_S = 30  # Kubernetes' own default: never shorter
_SHM = re.compile(r"([0-9]+)([bkmgBKMG]?)")


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
    metadata: dict[str, Any] = {"labels": all_labels(host)}
    if budgets is not None:
        metadata["annotations"] = {BUDGETS_DIGEST: budgets.digest}  # a new file restarts it
    spec: dict[str, Any] = {
        "serviceName": resource_name(host),
        "replicas": 1,
        "selector": {"matchLabels": labels(host)},
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
        "metadata": {"name": resource_name(host), "labels": all_labels(host)},
        "spec": spec,
    }
