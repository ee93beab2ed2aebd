"""deploy/kubernetes_pod.py: the StatefulSet's pod: vLLM's argv, the API key, the ledger's
claim and sidecar, GPUs, /dev/shm, probes and the grace period."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.conftest import REPO
from vllm_ledger.deploy.host import Host, load_host
from vllm_ledger.deploy.image import derived_image
from vllm_ledger.deploy.kubernetes import manifests
from vllm_ledger.deploy.kubernetes_pod import (
    STARTUP_BUDGET_S,
    gpu_count,
    grace_seconds,
    shm_quantity,
)
from vllm_ledger.deploy.serve import serve_args, shutdown_timeout_s
from vllm_ledger.write.recorder import DRAIN_TIMEOUT_S

GPU_NODE = load_host(REPO / "tests" / "data" / "render" / "gpu-node.json")
CPU_BARE = dataclasses.replace(
    load_host(REPO / "tests" / "data" / "render" / "cpu-bare.json"), image="vllm/cpu:v1"
)


def _sts(host: Host, usage: bool = True, tz: str | None = None) -> dict[str, Any]:
    return manifests(host, usage=usage, tz=tz)[0].doc


def _containers(host: Host, usage: bool = True) -> list[dict[str, Any]]:
    containers: list[dict[str, Any]] = _sts(host, usage)["spec"]["template"]["spec"]["containers"]
    return containers


def test_vllm_runs_the_same_serve_args_as_the_other_modes() -> None:
    for host in (GPU_NODE, CPU_BARE):
        for usage in (False, True):
            vllm = _containers(host, usage)[0]
            assert vllm["command"] == ["vllm"]
            assert vllm["args"] == serve_args(host, mode="docker", usage=usage)


def test_the_api_key_comes_from_a_secret_never_argv() -> None:
    for host in (GPU_NODE, CPU_BARE):
        vllm = _containers(host)[0]
        (key,) = [e for e in vllm["env"] if e["name"] == "VLLM_API_KEY"]
        assert key == {
            "name": "VLLM_API_KEY",
            "valueFrom": {"secretKeyRef": {"name": f"{host.name}-api-key", "key": "api-key"}},
        }
        assert not any("api-key" in a or "secrets" in a for a in vllm["args"])
    no_key = dataclasses.replace(GPU_NODE, api_key_file=None)
    assert all(e["name"] != "VLLM_API_KEY" for e in _containers(no_key)[0]["env"])


def test_ledger_settings_claim_and_sidecar_only_with_usage() -> None:
    spec = _sts(GPU_NODE, tz="Europe/Berlin")["spec"]
    vllm, exporter = spec["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in vllm["env"]}
    assert env["VLLM_LEDGER_DIR"] == "/vllm-ledger/usage"
    assert env["VLLM_LEDGER_WRITERS"] == "8" and env["VLLM_LEDGER_TZ"] == "Europe/Berlin"
    assert spec["volumeClaimTemplates"][0]["metadata"]["name"] == "ledger"
    assert spec["volumeClaimTemplates"][0]["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert exporter["volumeMounts"] == [
        {"name": "ledger", "mountPath": "/vllm-ledger/usage", "readOnly": True}
    ]
    assert exporter["command"] + exporter["args"][:5] == [
        "vllm-ledger", "exporter", "--root", "/vllm-ledger/usage", "--listen", "0.0.0.0:9464"
    ]  # fmt: skip
    assert vllm["image"] == exporter["image"] == derived_image(GPU_NODE)
    off = _sts(GPU_NODE, usage=False)["spec"]
    assert "volumeClaimTemplates" not in off
    (vllm_off,) = off["template"]["spec"]["containers"]
    assert vllm_off["image"] == GPU_NODE.image
    assert not any(e["name"].startswith("VLLM_LEDGER_") for e in vllm_off["env"])


def test_gpus_shm_probes_and_grace() -> None:
    vllm = _containers(GPU_NODE)[0]
    assert vllm["resources"] == {"limits": {"nvidia.com/gpu": 4}}
    assert "resources" not in _containers(CPU_BARE)[0]
    startup = vllm["startupProbe"]
    assert startup["httpGet"] == {"path": "/health", "port": "http"}
    assert startup["periodSeconds"] * startup["failureThreshold"] == STARTUP_BUDGET_S >= 1800
    assert vllm["livenessProbe"]["httpGet"]["path"] == "/health"
    assert vllm["readinessProbe"]["httpGet"]["path"] == "/health"
    pod = _sts(GPU_NODE)["spec"]["template"]["spec"]
    assert pod["volumes"][0] == {
        "name": "dshm",
        "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"},
    }
    for host in (GPU_NODE, CPU_BARE, dataclasses.replace(GPU_NODE, shutdown_timeout_seconds=90)):
        timeout = shutdown_timeout_s(host, True)
        assert timeout is not None
        assert grace_seconds(host, True) >= timeout + DRAIN_TIMEOUT_S
    assert (
        _sts(dataclasses.replace(GPU_NODE, shutdown_timeout_seconds=90))["spec"]["template"][
            "spec"
        ]["terminationGracePeriodSeconds"]
        == 90 + 5 + 10
    )


@pytest.mark.parametrize(
    ("shm", "quantity"), [("16g", "16Gi"), ("512M", "512Mi"), ("64k", "64Ki"), ("1000", "1000")]
)
def test_shm_quantity(shm: str, quantity: str) -> None:
    assert shm_quantity(shm) == quantity


def test_gpu_count() -> None:
    assert gpu_count(dataclasses.replace(GPU_NODE, gpus=(0, 1))) == 2
    assert gpu_count(dataclasses.replace(GPU_NODE, gpus=())) == 0
    assert gpu_count(dataclasses.replace(GPU_NODE, gpus="all", data_parallel_size=2)) == 8
    assert gpu_count(Host(model="m", gpus="all")) == 1
