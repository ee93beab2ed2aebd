"""compose.yaml from a host file, read back as YAML: docker mode's service, the ledger's
exporter beside it with usage, the API key never in the file, ``$`` never interpolated."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from vllm_ledger.deploy.compose import compose_file
from vllm_ledger.deploy.host import parse_host
from vllm_ledger.errors import ConfigError

BASE: dict[str, Any] = {
    "model": "/models/tiny",
    "image": "vllm/vllm-openai:v0.32.0",
    "gpus": [0, 1],
    "artifacts_dir": "/srv/artifacts",
    "extra_env": {"X": "a$b"},
}


def _load(text: str) -> Any:
    return yaml.safe_load(text)


def test_docker_modes_run_as_one_service() -> None:
    text = compose_file(parse_host(BASE))
    assert text.startswith("# vLLM compose file (compose mode), rendered by vllm-ledger 0.1.0.\n")
    doc = _load(text)
    assert list(doc) == ["services"] and list(doc["services"]) == ["vllm"]
    vllm = doc["services"]["vllm"]
    assert (vllm["image"], vllm["container_name"], vllm["entrypoint"]) == (
        "vllm/vllm-openai:v0.32.0",
        "vllm-8000",
        ["vllm"],
    )
    assert vllm["command"] == [
        "serve",
        "/models/tiny",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
        "--api-server-count",
        "1",
    ]
    assert vllm["ports"] == [
        {"target": 8000, "published": "8000", "host_ip": "0.0.0.0", "protocol": "tcp"}
    ]
    assert vllm["environment"] == {"X": "a$$b"}  # compose reads a$b back
    assert "hostname" not in vllm and "volumes" not in vllm and "stop_grace_period" not in vllm
    devices = vllm["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "device_ids": ["0", "1"], "capabilities": ["gpu"]}]
    assert "deploy" not in _load(compose_file(parse_host({**BASE, "gpus": []})))["services"]["vllm"]


def test_with_usage_the_ledger_is_mounted_and_served_by_an_exporter() -> None:
    doc = _load(compose_file(parse_host({**BASE, "gpus": "all"}), usage=True, tz="Asia/Shanghai"))
    assert list(doc["services"]) == ["vllm", "ledger-exporter"]
    vllm, exporter = doc["services"]["vllm"], doc["services"]["ledger-exporter"]
    assert vllm["hostname"].startswith("${HOSTNAME:?")
    assert vllm["command"][-4:] == [
        "--shutdown-timeout",
        "10",
        "--middleware",
        "vllm_ledger.middleware.LedgerMiddleware",
    ]
    assert [(v["source"], v["target"], v["read_only"]) for v in vllm["volumes"]] == [
        ("/srv/artifacts/ledger-plugin", "/vllm-ledger/plugin", True),
        ("/srv/artifacts/usage", "/vllm-ledger/usage", False),
    ]
    assert vllm["environment"] == {
        "PYTHONPATH": "/vllm-ledger/plugin",
        "VLLM_LEDGER_DIR": "/vllm-ledger/usage",
        "VLLM_LEDGER_PORT": "8000",
        "VLLM_LEDGER_TZ": "Asia/Shanghai",
        "VLLM_LEDGER_WRITERS": "1",
        "X": "a$$b",
    }
    assert vllm["stop_grace_period"] == "20s"
    assert vllm["deploy"]["resources"]["reservations"]["devices"][0]["count"] == "all"
    assert exporter["command"] == [
        "exporter",
        "--root",
        "/vllm-ledger/usage",
        "--listen",
        "0.0.0.0:9464",
        "--no-gpu",
        "--tz",
        "Asia/Shanghai",
    ]
    assert all(v["read_only"] for v in exporter["volumes"])


def test_the_api_key_comes_from_the_environment_or_a_secret_never_the_file() -> None:
    by_env = _load(compose_file(parse_host({**BASE, "api_key": {"env": "MY_KEY"}})))
    assert by_env["services"]["vllm"]["environment"]["VLLM_API_KEY"] == (
        "${MY_KEY:?the API key variable MY_KEY is not set}"
    )
    by_file = _load(compose_file(parse_host({**BASE, "api_key": {"file": "/etc/key"}})))
    vllm = by_file["services"]["vllm"]
    assert vllm["entrypoint"][:2] == ["/bin/sh", "-c"] and vllm["secrets"] == ["vllm_api_key"]
    assert by_file["secrets"] == {"vllm_api_key": {"file": "/etc/key"}}
    assert "VLLM_API_KEY" not in vllm["environment"]


def test_what_docker_mode_refuses_compose_refuses() -> None:
    with pytest.raises(ConfigError, match="image: required in docker mode"):
        compose_file(parse_host({k: v for k, v in BASE.items() if k != "image"}))
    with pytest.raises(ConfigError, match="needs usage"):
        compose_file(parse_host(BASE), tz="Asia/Shanghai")
    with pytest.raises(ConfigError, match="a docker volume path cannot contain ':'"):
        compose_file(parse_host({**BASE, "artifacts_dir": "/srv/a:b"}), usage=True)
