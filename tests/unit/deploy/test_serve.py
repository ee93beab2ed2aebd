"""deploy/serve.py: what vLLM is run with, whatever renders it."""

from __future__ import annotations

import pytest

from vllm_ledger.deploy.host import Host
from vllm_ledger.deploy.serve import (
    JSON_LOGS_FLAG,
    USAGE_SHUTDOWN_TIMEOUT_S,
    bare_environment,
    check_tz,
    env_name,
    ledger_dir,
    plugin_dir,
    serve_args,
    shutdown_timeout_s,
)
from vllm_ledger.errors import ConfigError
from vllm_ledger.units import ROOT_ENV, WRITERS_ENV, ZONE_ENV


def test_serve_args_in_their_fixed_order() -> None:
    host = Host(model="m", max_model_len=4096, gpu_memory_utilization=0.9, log_format="json")
    assert serve_args(host, mode="bare", usage=False) == [
        "serve",
        "m",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
        "--api-server-count",
        "1",
        "--max-model-len",
        "4096",
        "--gpu-memory-utilization",
        "0.9",
        JSON_LOGS_FLAG,
        "json",
    ]
    usage = serve_args(Host(model="m", extra_args=("--x",)), mode="docker", usage=True)
    assert usage[-1] == "--x" and "--middleware" in usage
    assert usage[usage.index("--shutdown-timeout") + 1] == str(USAGE_SHUTDOWN_TIMEOUT_S)


def test_the_shutdown_timeout_is_the_host_files_else_the_ledgers() -> None:
    assert shutdown_timeout_s(Host(model="m"), usage=False) is None
    assert shutdown_timeout_s(Host(model="m"), usage=True) == USAGE_SHUTDOWN_TIMEOUT_S
    assert shutdown_timeout_s(Host(model="m", shutdown_timeout_seconds=30), usage=True) == 30


def test_bare_environment_gpus_extra_env_then_the_ledgers() -> None:
    host = Host(
        model="m",
        gpus=(0, 1),
        artifacts_dir="/srv/a",
        extra_env=(("PYTHONPATH", "/p"), ("B", "2")),
    )
    assert bare_environment(host, usage=False, tz=None)[:2] == [
        ("CUDA_VISIBLE_DEVICES", "0,1"),
        ("B", "2"),
    ]
    env = dict(bare_environment(host, usage=True, tz="Europe/Paris"))
    assert env["PYTHONPATH"] == f"{plugin_dir(host)}:/p" == "/srv/a/ledger-plugin:/p"
    assert (env[ROOT_ENV], env[WRITERS_ENV], env[ZONE_ENV]) == (
        ledger_dir(host),
        "1",
        "Europe/Paris",
    )


def test_a_name_written_unquoted_is_checked() -> None:
    assert env_name("A_1") == "A_1"
    with pytest.raises(ConfigError, match=r"^api_key\.env: 'A\\n' is not an environment"):
        env_name("A\n", "api_key.env")


def test_a_zone_needs_the_ledger_and_a_real_zone() -> None:
    check_tz(None, usage=False)
    check_tz("UTC", usage=True)
    with pytest.raises(ConfigError, match="needs usage"):
        check_tz("UTC", usage=False)
    with pytest.raises(ConfigError, match=r"^tz: "):
        check_tz("Not/AZone", usage=True)
