"""The host file: read and validated into a Host (defaults filled in), written back out, and
the checks that depend on how it is rendered, each refusal one line naming the key."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from vllm_ledger.deploy.host import (
    Host,
    Volume,
    check_for,
    check_values,
    host_data,
    load_host,
    parse_host,
)
from vllm_ledger.errors import BadArgument, ConfigError

CPU_BARE = REPO / "tests" / "data" / "render" / "cpu-bare.json"
DOCKER: dict[str, Any] = {
    "model": "/models/tiny",
    "image": "vllm/vllm-openai:v0.32.0",
    "gpus": [0, 1],
    "artifacts_dir": "/srv/artifacts",
}


def test_a_host_file_is_read_with_its_defaults() -> None:
    host = load_host(CPU_BARE)
    assert (host.mode, host.model, host.port, host.name) == (
        "bare",
        "/srv/models/tiny llama",
        8001,
        "vllm-8001",
    )
    assert (host.api_key_env, host.api_key_file, host.gpus) == ("TINY_API_KEY", None, ())
    assert host.extra_args == ("--enforce-eager", "--block-size", "32")
    assert host.extra_env == (("VLLM_CPU_KVCACHE_SPACE", "1"), ("VLLM_TARGET_DEVICE", "cpu"))
    assert (host.attribute_user, host.tenant_header, host.budgets) == (False, None, None)


def test_host_data_is_parse_hosts_inverse() -> None:
    host = load_host(CPU_BARE)
    assert parse_host(host_data(host)) == host
    named = parse_host(
        {
            **DOCKER,
            "container_name": "llm",
            "volumes": [{"host": "/m", "container": "/models"}],
            "attribution": {"user": True, "tenant_header": "X-Tenant"},
        }
    )
    assert named.name == "llm" and named.volumes == (Volume("/m", "/models", True),)
    assert parse_host(host_data(named)) == named
    assert host_data(named)["attribution"] == {"user": True, "tenant_header": "X-Tenant"}


def test_a_file_that_cannot_be_read_or_holds_a_bad_value_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(BadArgument, match=f"host file {tmp_path / 'none.json'} not found"):
        load_host(tmp_path / "none.json")
    bad = tmp_path / "h.json"
    bad.write_text(json.dumps({**DOCKER, "port": 0}))
    with pytest.raises(ConfigError, match=f"^host file {bad}: ") as caught:
        load_host(bad)
    assert caught.value.key == "port"


def test_values_are_checked_again_however_the_host_was_built() -> None:
    host = parse_host(DOCKER)
    check_values(host)
    twice = dataclasses.replace(host, extra_env=(("A", "1"), ("A", "2")))
    with pytest.raises(ConfigError, match="extra_env: a name given twice"):
        check_values(twice)
    with pytest.raises(ConfigError):
        check_values(dataclasses.replace(host, port=70000))


def _refused(host: Host, mode: str, usage: bool) -> str:
    with pytest.raises(ConfigError) as caught:
        check_for(host, mode, usage)
    return f"{caught.value.key}: {caught.value}"


def test_what_each_rendering_needs() -> None:
    host = parse_host(DOCKER)
    check_for(host, "docker", True)
    check_for(host, "bare", False)
    assert _refused(host, "kubernetes", False).startswith("mode: mode: 'kubernetes' is not one")
    no_image = dataclasses.replace(host, image=None)
    assert _refused(no_image, "docker", False).startswith("image: image: required in docker")
    check_for(no_image, "bare", False)
    colon = dataclasses.replace(host, volumes=(Volume("/a:b", "/c"),))
    assert _refused(colon, "docker", False).startswith("volumes[0].host: ")
    colon_dir = dataclasses.replace(host, artifacts_dir="/srv/a:b")
    assert _refused(colon_dir, "docker", True).startswith("artifacts_dir: ")
    check_for(colon_dir, "docker", False)  # not mounted without usage


def test_what_the_ledger_needs_with_usage() -> None:
    host = parse_host(DOCKER)
    with_budgets = dataclasses.replace(host, budgets="/etc/budgets.json")
    assert _refused(with_budgets, "bare", False).startswith("budgets: budgets: ")
    no_dir = dataclasses.replace(host, artifacts_dir=None)
    assert _refused(no_dir, "bare", True).startswith("artifacts_dir: artifacts_dir: required")
    check_for(no_dir, "bare", False)
    short = dataclasses.replace(host, shutdown_timeout_seconds=5)
    assert _refused(short, "bare", True) == (
        "shutdown_timeout_seconds: shutdown_timeout_seconds: 5 is not above the ledger's 5 s "
        "drain limit; with usage give at least 6 or leave it out"
    )
    check_for(dataclasses.replace(host, shutdown_timeout_seconds=6), "bare", True)
