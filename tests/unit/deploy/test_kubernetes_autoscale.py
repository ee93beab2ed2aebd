"""``render --mode kubernetes --autoscale``: an autoscaling/v2 HorizontalPodAutoscaler on the
requests waiting per pod, through prometheus-adapter's rule (a ConfigMap), validated strictly
like the other manifests (kubernetes-validate), the StatefulSet without ``replicas`` (the
autoscaler's) and, with --usage, each replica its own ledger claim."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.inproc import run_cli
from tests.test_kubernetes_manifests import HOSTS, K8S_VERSIONS
from vllm_ledger.deploy.kubernetes_autoscale import (
    ADAPTER_CONFIG_KEY,
    MAX_REPLICAS,
    QUEUE_METRIC,
    QUEUE_SERIES,
)


def _render(tmp_path: Path, *flags: str) -> list[dict[str, Any]]:
    out = tmp_path / "k8s.yaml"
    rc, _, err = run_cli(
        "render",
        *("--host", str(HOSTS / "gpu-node.json"), "--mode", "kubernetes"),
        *("--output", str(out), *flags),
    )
    assert rc == 0, err
    return [d for d in yaml.safe_load_all(out.read_text()) if d is not None]


@pytest.fixture(scope="module")
def scaled(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return _render(tmp_path_factory.mktemp("k8s"), "--usage", "--autoscale")


def _kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_every_core_resource_passes_kubernetes_validate_strict(
    scaled: list[dict[str, Any]], version: str
) -> None:
    kinds = []
    for doc in scaled:
        if doc["kind"] in ("ServiceMonitor", "PrometheusRule"):
            continue
        assert kubernetes_validate.validate(doc, version, strict=True) == version.rsplit(".", 1)[0]
        kinds.append(doc["kind"])
    assert kinds == ["StatefulSet", "Service", "ConfigMap", "ConfigMap", "HorizontalPodAutoscaler"]


def test_the_autoscaler_scales_the_statefulset_on_the_adapters_metric(
    scaled: list[dict[str, Any]],
) -> None:
    (sts,) = _kind(scaled, "StatefulSet")
    (hpa,) = _kind(scaled, "HorizontalPodAutoscaler")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": sts["apiVersion"],
        "kind": "StatefulSet",
        "name": sts["metadata"]["name"],
    }
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, MAX_REPLICAS)
    (metric,) = hpa["spec"]["metrics"]
    assert metric["type"] == "Pods" and metric["pods"]["metric"]["name"] == QUEUE_METRIC
    assert "replicas" not in sts["spec"]  # the autoscaler owns it
    (adapter,) = [c for c in _kind(scaled, "ConfigMap") if "adapter" in c["metadata"]["name"]]
    (rule,) = yaml.safe_load(adapter["data"][ADAPTER_CONFIG_KEY])["rules"]
    assert QUEUE_SERIES in rule["seriesQuery"]
    assert rule["name"] == {"matches": f"^{QUEUE_SERIES}$", "as": QUEUE_METRIC}
    assert set(rule["resources"]["overrides"]) == {"namespace", "pod"}


def test_each_replica_has_its_own_ledger_claim(scaled: list[dict[str, Any]]) -> None:
    (sts,) = _kind(scaled, "StatefulSet")
    (claim,) = sts["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    mounts = [
        m["name"] for c in sts["spec"]["template"]["spec"]["containers"] for m in c["volumeMounts"]
    ]
    assert mounts.count(claim["metadata"]["name"]) == 2  # vLLM writes it, the sidecar reads it
    assert claim["metadata"]["name"] not in [
        v["name"] for v in sts["spec"]["template"]["spec"]["volumes"]
    ]  # a claim per pod, never one volume shared by the pods


def test_without_autoscale_nothing_changes(tmp_path: Path) -> None:
    docs = _render(tmp_path, "--usage")
    assert not _kind(docs, "HorizontalPodAutoscaler")
    assert _kind(docs, "StatefulSet")[0]["spec"]["replicas"] == 1


def test_autoscale_outside_kubernetes_is_one_line(tmp_path: Path) -> None:
    rc, out, err = run_cli(
        "render",
        *("--host", str(HOSTS / "gpu-node.json"), "--mode", "systemd"),
        *("--output", str(tmp_path / "x.service"), "--autoscale"),
    )
    assert (rc, out) == (2, "")
    assert err == (
        "vllm-ledger: error: --autoscale scales a StatefulSet: it needs --mode kubernetes\n"
    )
