"""deploy/kubernetes.py and deploy/image.py: the refusals and the derived image's name."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.conftest import REPO
from vllm_ledger.deploy.host import load_host
from vllm_ledger.deploy.image import derived_image, dockerfile
from vllm_ledger.deploy.kubernetes import manifests
from vllm_ledger.errors import ConfigError

GPU_NODE = load_host(REPO / "tests" / "data" / "render" / "gpu-node.json")


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
