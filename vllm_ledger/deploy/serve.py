"""What vLLM is run with, whatever renders it (the launch script, the systemd unit, the
supervisor section, the compose file, the kubernetes manifests): ``serve_args``, the argv after
``vllm`` in a fixed order; ``bare_environment``, its environment outside a container; the
artifacts' folders on the host and in a container; the shutdown timeout; and the checks of an
environment variable name and a zone to record, written into any of them. Pure.
"""

from __future__ import annotations

import posixpath
import re

from vllm_ledger.deploy.attribution import MIDDLEWARE, MIDDLEWARE_FLAG, attribution_env
from vllm_ledger.deploy.budgets import budgets_env
from vllm_ledger.deploy.host import Host
from vllm_ledger.deploy.hostschema import ENV_NAME_PATTERN
from vllm_ledger.errors import ConfigError
from vllm_ledger.format.zonefile import check_zone
from vllm_ledger.units import PORT_ENV, ROOT_ENV, WRITERS_ENV, ZONE_ENV
from vllm_ledger.write.recorder import DRAIN_TIMEOUT_S

PLUGIN_SUBDIR = "ledger-plugin"
LEDGER_SUBDIR = "usage"
CONTAINER_PLUGIN_DIR = "/vllm-ledger/plugin"
CONTAINER_LEDGER_DIR = "/vllm-ledger/usage"
USAGE_SHUTDOWN_TIMEOUT_S = int(DRAIN_TIMEOUT_S) * 2
JSON_LOGS_FLAG = "--logging-config.formatter"  # vLLM's own JSON formatter (LoggingConfig)
DOCKER_STOP_MARGIN_S = 10  # docker stop waits this much past vLLM's own shutdown timeout


def env_name(name: str, key: str = "extra_env") -> str:
    """``name`` if it is a POSIX environment variable name (the whole of it), else ConfigError:
    a name is written unquoted (``export NAME=``, ``${NAME:?}``), so it is checked right here."""
    if not re.fullmatch(ENV_NAME_PATTERN, name):
        raise ConfigError(f"{key}: {name!a} is not an environment variable name", key=key)
    return name


def plugin_dir(host: Host) -> str:
    assert host.artifacts_dir is not None
    return posixpath.join(host.artifacts_dir, PLUGIN_SUBDIR)


def ledger_dir(host: Host) -> str:
    assert host.artifacts_dir is not None
    return posixpath.join(host.artifacts_dir, LEDGER_SUBDIR)


def middleware_env(host: Host, key_names: str | None) -> list[tuple[str, str]]:
    """The host file's ``attribution`` as the middleware's environment (``key_names``: where
    vLLM finds the names file in this mode)."""
    return attribution_env(host.attribute_user, host.tenant_header, key_names)


def check_tz(tz: str | None, usage: bool) -> None:
    """A zone to record (``--tz``) needs the ledger (usage) and must be a zone by the one rule
    (``format/zonefile.check_zone``); every mode checks it here."""
    if tz is None:
        return
    if not usage:
        raise ConfigError("a zone (tz) is recorded by the ledger: it needs usage", key="tz")
    try:
        check_zone(tz)
    except ValueError as exc:
        raise ConfigError(f"tz: {exc}", key="tz") from None


def bare_environment(host: Host, usage: bool, tz: str | None) -> list[tuple[str, str]]:
    """vLLM's environment outside a container (the systemd unit, the supervisor section), in
    bare mode's order: GPUs, extra_env, then the ledger's."""
    env: list[tuple[str, str]] = []
    if isinstance(host.gpus, tuple):
        env.append(("CUDA_VISIBLE_DEVICES", ",".join(str(g) for g in host.gpus)))
    extra = dict(host.extra_env)
    path = extra.pop("PYTHONPATH", None) if usage else None
    env += [(env_name(name), value) for name, value in sorted(extra.items())]
    if usage:
        env.append(("PYTHONPATH", plugin_dir(host) + (f":{path}" if path else "")))
        env.append((ROOT_ENV, ledger_dir(host)))
        env.append((WRITERS_ENV, str(host.api_server_count)))
        env.append((PORT_ENV, str(host.port)))
        if tz is not None:
            env.append((ZONE_ENV, tz))
        env += middleware_env(host, host.key_names)
        env += budgets_env(host.budgets)
    return env


def shutdown_timeout_s(host: Host, usage: bool) -> int | None:
    if host.shutdown_timeout_seconds is not None:
        return host.shutdown_timeout_seconds
    return USAGE_SHUTDOWN_TIMEOUT_S if usage else None


def serve_args(host: Host, *, mode: str, usage: bool) -> list[str]:
    """The argv after ``vllm``: ``serve MODEL --flag value ...``, in a fixed order."""
    args = ["serve", host.model]
    args += ["--host", "0.0.0.0" if mode == "docker" else host.host, "--port", str(host.port)]
    optional: list[tuple[str, object]] = [
        ("--served-model-name", host.served_model_name),
        ("--tensor-parallel-size", host.tensor_parallel_size),
        ("--data-parallel-size", host.data_parallel_size),
        ("--api-server-count", host.api_server_count),
        ("--max-model-len", host.max_model_len),
        ("--gpu-memory-utilization", host.gpu_memory_utilization),
        ("--max-num-seqs", host.max_num_seqs),
        ("--max-num-batched-tokens", host.max_num_batched_tokens),
        ("--dtype", host.dtype),
        ("--quantization", host.quantization),
        ("--shutdown-timeout", shutdown_timeout_s(host, usage)),
        (MIDDLEWARE_FLAG, MIDDLEWARE if usage else None),  # whose tokens (deploy/attribution)
        ("--otlp-traces-endpoint", host.otlp_traces_endpoint),
        ("--collect-detailed-traces", host.collect_detailed_traces),
        (JSON_LOGS_FLAG, "json" if host.log_format == "json" else None),
    ]
    for flag, value in optional:
        if value is not None:
            args += [flag, _number(value) if not isinstance(value, str) else value]
    return args + list(host.extra_args)


def _number(value: object) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)
