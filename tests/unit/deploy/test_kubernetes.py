"""deploy/kubernetes.py: the refusals (the derived image's name: test_image.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.conftest import REPO
from vllm_ledger.deploy.host import load_host
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
