"""deploy/kubernetes.py and deploy/image.py: the pieces, the YAML writer, the refusals."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import REPO
from vllm_ledger.deploy.host import Host, load_host
from vllm_ledger.deploy.image import derived_image, dockerfile
from vllm_ledger.deploy.kubernetes import (
    STARTUP_BUDGET_S,
    gpu_count,
    grace_seconds,
    manifests,
    shm_quantity,
    to_yaml,
)
from vllm_ledger.deploy.serve import serve_args, shutdown_timeout_s
from vllm_ledger.errors import ConfigError
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


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"container_name": "Vllm_Primary"}, "container_name: 'Vllm_Primary' is not a Kubernetes"),
        ({"image": None}, "image: required in kubernetes mode"),
        ({"shutdown_timeout_seconds": 3}, "shutdown_timeout_seconds: 3 is not above"),
    ],
)
def test_refusals_are_one_line_naming_the_key(change: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError) as info:
        manifests(dataclasses.replace(GPU_NODE, **change), usage=True)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_a_zone_needs_usage_and_a_real_zone() -> None:
    with pytest.raises(ConfigError, match="needs usage"):
        manifests(GPU_NODE, tz="Europe/Berlin")
    with pytest.raises(ConfigError, match="tz:"):
        manifests(GPU_NODE, usage=True, tz="Mars/Olympus")


@pytest.mark.parametrize(
    ("image", "derived"),
    [
        ("vllm/vllm-openai:v0.32.0", "vllm-openai-ledger:v0.32.0-0.1.0"),
        ("registry.example:5000/ml/vllm:v1", "vllm-ledger:v1-0.1.0"),
        ("vllm/vllm-openai", "vllm-openai-ledger:latest-0.1.0"),
        ("vllm/vllm-openai@sha256:" + "ab" * 32, "vllm-openai-ledger:abababababab-0.1.0"),
        # a 255-character name is cut so NAME-ledger has 255, at a word's end
        ("n" * 255, "n" * 248 + "-ledger:latest-0.1.0"),
        ("a" * 247 + ".bbbbbbb", "a" * 247 + "-ledger:latest-0.1.0"),
        ("vllm:" + "t" * 128, "vllm-ledger:" + "t" * 122 + "-0.1.0"),
    ],
)
def test_derived_image_names(image: str, derived: str) -> None:
    host = dataclasses.replace(GPU_NODE, image=image)
    assert derived_image(host) == derived
    assert f"FROM {image}\n" in dockerfile(host)


_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
_SCALARS = st.none() | st.booleans() | st.integers() | _TEXT
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, derandomize=True)
@given(st.dictionaries(_TEXT, _VALUES, max_size=5))
def test_yaml_writer_reads_back_the_same(value: dict[str, Any]) -> None:
    assert yaml.safe_load("\n".join(to_yaml(value)) + "\n") == (value or {})


def test_yaml_writer_uses_a_literal_block_for_multiline_text() -> None:
    text = '{\n  "a": 1\n}\n'
    lines = to_yaml({"data": {"x.json": text}})
    assert lines == ["data:", "  x.json: |", "    {", '      "a": 1', "    }"]
    assert yaml.safe_load("\n".join(lines) + "\n") == {"data": {"x.json": text}}
