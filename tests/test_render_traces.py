"""Traces on request: the host file's ``otlp_traces_endpoint`` and ``collect_detailed_traces``
reach vLLM's argv in every mode (through ``serve_args``), and only when the host file asks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from vllm_ledger.deploy.compose import compose_file
from vllm_ledger.deploy.host import parse_host
from vllm_ledger.deploy.launch import render_script
from vllm_ledger.deploy.serve import serve_args
from vllm_ledger.deploy.units import vllm_unit
from vllm_ledger.errors import ConfigError

BASE: dict[str, Any] = {
    "model": "/models/tiny",
    "image": "vllm/vllm-openai:v0.32.0",
    "gpus": [],
    "artifacts_dir": "/srv/artifacts",
}
ENDPOINT = "grpc://10.0.0.5:4317"


def _renders(data: dict[str, Any]) -> dict[str, str]:
    host = parse_host(data)
    return {
        "docker": render_script(host, mode="docker"),
        "bare": render_script(host, mode="bare", usage=True),
        "systemd": vllm_unit(host, usage=True),
        "compose": compose_file(host),
    }


def test_the_endpoint_reaches_every_mode_and_only_when_set() -> None:
    off = _renders(BASE)
    on = _renders({**BASE, "otlp_traces_endpoint": ENDPOINT})
    detailed = _renders(
        {**BASE, "otlp_traces_endpoint": ENDPOINT, "collect_detailed_traces": "all"}
    )
    for mode in ("docker", "bare", "systemd", "compose"):
        assert "otlp" not in off[mode] and "detailed-traces" not in off[mode], mode
        assert "--otlp-traces-endpoint" in on[mode] and ENDPOINT in on[mode], mode
        assert "--collect-detailed-traces" not in on[mode], mode
        assert "--collect-detailed-traces" in detailed[mode], mode
    for mode in ("docker", "bare"):  # the last line of the command
        assert on[mode].endswith("\n  --otlp-traces-endpoint grpc://10.0.0.5:4317\n"), mode
        assert detailed[mode].endswith(
            "\n  --otlp-traces-endpoint grpc://10.0.0.5:4317 \\\n  --collect-detailed-traces all\n"
        ), mode


def test_serve_args_carry_the_flags_in_order() -> None:
    host = parse_host(
        {**BASE, "otlp_traces_endpoint": ENDPOINT, "collect_detailed_traces": "model"}
    )
    args = serve_args(host, mode="bare", usage=False)
    i = args.index("--otlp-traces-endpoint")
    assert args[i : i + 4] == [
        "--otlp-traces-endpoint",
        ENDPOINT,
        "--collect-detailed-traces",
        "model",
    ]
    assert "--otlp-traces-endpoint" not in serve_args(parse_host(BASE), mode="bare", usage=False)


@pytest.mark.parametrize(
    "endpoint",
    [
        "grpc://127.0.0.1:4317",
        "http://jaeger:4318/v1/traces",
        "https://otel.example.com:443",
        "grpc://[::1]:4317",
    ],
)
def test_good_endpoints(endpoint: str) -> None:
    assert parse_host({**BASE, "otlp_traces_endpoint": endpoint}).otlp_traces_endpoint == endpoint


@pytest.mark.parametrize(
    "endpoint",
    [
        "127.0.0.1:4317",
        "ftp://h:21",
        "grpc://h",
        "grpc://h:0",
        "grpc://h:70000",
        "http://h:1 x",
        "",
    ],
)
def test_bad_endpoints_are_refused(endpoint: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_host({**BASE, "otlp_traces_endpoint": endpoint})
    assert str(e.value).startswith("otlp_traces_endpoint: ")
    assert "\n" not in str(e.value)


def test_detailed_traces_without_an_endpoint_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"^collect_detailed_traces: needs otlp_traces_endpoint"):
        parse_host({**BASE, "collect_detailed_traces": "all"})
    with pytest.raises(ConfigError, match=r"is not one of model, worker, all"):
        parse_host({**BASE, "otlp_traces_endpoint": ENDPOINT, "collect_detailed_traces": "gpu"})


def test_extra_args_may_not_set_the_flags() -> None:
    with pytest.raises(ConfigError, match="--otlp-traces-endpoint has its own key"):
        parse_host({**BASE, "extra_args": ["--otlp-traces-endpoint=grpc://h:1"]})


def test_a_bad_endpoint_is_one_line_exit_2(tmp_path: Path) -> None:
    host = tmp_path / "host.json"
    host.write_text(json.dumps({**BASE, "otlp_traces_endpoint": "jaeger:4317"}))
    for mode in ("docker", "bare", "systemd", "compose"):
        code, out, err = run_cli(
            "render", "--host", str(host), "--mode", mode, "--output", str(tmp_path / "x")
        )
        assert code == 2 and out == "", mode
        assert err == (
            f'vllm-ledger: error: host file {host}: otlp_traces_endpoint: "jaeger:4317" is not '
            "an OTLP endpoint URL (http, https or grpc://HOST:PORT)\n"
        )
        assert not (tmp_path / "x").exists()
