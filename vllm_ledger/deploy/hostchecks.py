"""The host file's checks beyond its schema (``deploy/hostschema.py``), on a decoded host file
that passed it: each value that becomes one argument of vLLM fits the kernel's limit, detailed
traces have an endpoint to go to, the tenant header is one the middleware may read, and
``extra_args`` and ``extra_env`` hold nothing that has its own key or that the ledger sets.
Every refusal is one ConfigError line naming the key.
"""

from __future__ import annotations

from typing import Any

from vllm_ledger.deploy.attribution import is_ledger_middleware, tenant_header_problem
from vllm_ledger.deploy.hostschema import ARTIFACTS_DIR_MAX_BYTES
from vllm_ledger.deploy.limits import arg_problem
from vllm_ledger.errors import ConfigError
from vllm_ledger.strictjson import shown_key
from vllm_ledger.units import ENV_PREFIX

# Keys whose value is one argument of vLLM (or the program run), beside extra_args.
_ARGUMENT_KEYS = ("model", "served_model_name", "ledger_python", "otlp_traces_endpoint")
# extra_args flags that have their own key (or must not be set at all).
_OWNED_FLAGS = {
    "--host": "host",
    "--port": "port",
    "--served-model-name": "served_model_name",
    "--tensor-parallel-size": "tensor_parallel_size",
    "-tp": "tensor_parallel_size",
    "--data-parallel-size": "data_parallel_size",
    "-dp": "data_parallel_size",
    "--api-server-count": "api_server_count",
    "-asc": "api_server_count",
    "--max-model-len": "max_model_len",
    "--gpu-memory-utilization": "gpu_memory_utilization",
    "--max-num-seqs": "max_num_seqs",
    "--max-num-batched-tokens": "max_num_batched_tokens",
    "--dtype": "dtype",
    "--quantization": "quantization",
    "-q": "quantization",
    "--shutdown-timeout": "shutdown_timeout_seconds",
    "--api-key": "api_key",
    "--otlp-traces-endpoint": "otlp_traces_endpoint",
    "--collect-detailed-traces": "collect_detailed_traces",
}
_FORBIDDEN_FLAGS = {
    "--headless": "it starts no API server, so no ledger writer",
}
_FORBIDDEN_ENV_PREFIX = ENV_PREFIX


def check_extras(data: dict[str, Any]) -> None:
    """Raise ConfigError naming the key at the first check beyond the schema ``data`` fails."""
    _check_arg_sizes(data)
    if "collect_detailed_traces" in data and "otlp_traces_endpoint" not in data:
        raise ConfigError(
            "collect_detailed_traces: needs otlp_traces_endpoint (the traces go there)",
            key="collect_detailed_traces",
            hint="set otlp_traces_endpoint, e.g. grpc://127.0.0.1:4317",
        )
    _check_attribution(data)
    _check_extra_args(data.get("extra_args", []))
    _check_extra_env(data.get("extra_env", {}))


def _check_arg_sizes(data: dict[str, Any]) -> None:
    """Each value that becomes one argument or environment entry of vLLM fits the kernel's
    limit (``limits.ARG_MAX_BYTES``); PYTHONPATH gets the plugin's folder put in front."""
    words = [(key, data.get(key)) for key in _ARGUMENT_KEYS]
    words += [(f"extra_args[{i}]", arg) for i, arg in enumerate(data.get("extra_args", []))]
    for key, word in words:
        problem = arg_problem(word) if isinstance(word, str) else None
        if problem is not None:
            raise ConfigError(f"{key}: {problem}", key=key.split("[")[0])
    for name, value in data.get("extra_env", {}).items():
        room = ARTIFACTS_DIR_MAX_BYTES + len("/ledger-plugin:") if name == "PYTHONPATH" else 0
        problem = arg_problem(f"{name}={value}", room)
        if problem is not None:
            raise ConfigError(f"extra_env.{shown_key(name)}: NAME=VALUE {problem}", key="extra_env")


def _check_extra_args(args: list[str]) -> None:
    """No ledger middleware (usage adds it), no flag that has its own key or is forbidden."""
    for i, arg in enumerate(args):
        if is_ledger_middleware(tuple(args), i):
            raise ConfigError(
                f"extra_args[{i}]: the ledger's middleware is added by usage",
                key="extra_args",
                hint="leave it out (a second copy would see every request twice)",
            )
        flag = arg.split("=", 1)[0]
        if flag.startswith("--"):
            flag = "--" + flag[2:].replace("_", "-")
        if flag in _FORBIDDEN_FLAGS:
            raise ConfigError(
                f"extra_args[{i}]: {flag} is not allowed: {_FORBIDDEN_FLAGS[flag]}",
                key="extra_args",
            )
        if flag in _OWNED_FLAGS:
            key = _OWNED_FLAGS[flag]
            why = " (never the key itself)" if key == "api_key" else ""
            raise ConfigError(
                f"extra_args[{i}]: {flag} has its own key",
                key="extra_args",
                hint=f"set {key}{why} instead",
            )


def _check_extra_env(env: dict[str, str]) -> None:
    """No ledger setting (usage sets them) and never the API key itself."""
    for name in env:
        if name.startswith(_FORBIDDEN_ENV_PREFIX):
            raise ConfigError(
                f"extra_env.{shown_key(name)}: ledger settings come from usage, not from extra_env",
                key="extra_env",
            )
        if name == "VLLM_API_KEY":
            raise ConfigError(
                "extra_env.VLLM_API_KEY: the key must not be in the host file",
                key="extra_env",
                hint='set api_key {"env": NAME} or {"file": PATH} instead',
            )


def _check_attribution(data: dict[str, Any]) -> None:
    header = data.get("attribution", {}).get("tenant_header")
    problem = tenant_header_problem(header) if header is not None else None
    if problem is not None:
        raise ConfigError(
            f"attribution.tenant_header: {problem}",
            key="attribution.tenant_header",
            hint="name the header your proxy sets, e.g. X-Tenant",
        )
