"""deploy/image.py: the derived image's name, its Dockerfile and build folder, and how to
build it."""

from __future__ import annotations

import dataclasses

import pytest

from tests.conftest import REPO
from vllm_ledger.deploy.host import load_host
from vllm_ledger.deploy.image import (
    WHEEL,
    build_command,
    derived_image,
    dockerfile,
    image_files,
    require_image,
)
from vllm_ledger.errors import ConfigError

GPU_NODE = load_host(REPO / "tests" / "data" / "render" / "gpu-node.json")


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


def test_the_build_folder_sends_the_wheel_alone() -> None:
    assert WHEEL == "vllm_ledger-0.1.0-py3-none-any.whl"
    files = image_files(GPU_NODE)
    assert [name for name, _ in files] == ["Dockerfile", ".dockerignore"]
    assert files[1][1] == f"# Send the wheel alone to the builder.\n*\n!{WHEEL}\n"
    text = files[0][1]
    assert f"COPY {WHEEL} /tmp/vllm-ledger/" in text.splitlines()
    assert "--no-deps --no-index" in text and text.endswith("\n")
    assert f"# Build: docker build -t {derived_image(GPU_NODE)} ." in text.splitlines()


def test_how_to_build_it_quotes_the_folder() -> None:
    host = dataclasses.replace(GPU_NODE, image="vllm/vllm-openai:v0.32.0")
    assert build_command(host, "out dir") == (
        f"make dist && cp dist/{WHEEL} 'out dir'/ && "
        "docker build -t vllm-openai-ledger:v0.32.0-0.1.0 'out dir'"
    )


def test_no_image_or_a_bad_value_is_refused() -> None:
    no_image = dataclasses.replace(GPU_NODE, image=None)
    with pytest.raises(ConfigError, match=r"^image: required in image mode"):
        require_image(no_image, "image")
    with pytest.raises(ConfigError, match=r"^image: required in image mode"):
        derived_image(no_image)
    with pytest.raises(ConfigError):
        dockerfile(dataclasses.replace(GPU_NODE, image="vllm\nRUN curl x"))
