"""The host file: one JSON object describing one vLLM instance on one machine.

``SCHEMA`` (a JSON Schema, draft 2020-12) is the single source of truth: ``validate`` checks a
host file against it (``deploy/schemacheck.py``, a small interpreter for the keywords the schema
uses) and ``Host`` takes its defaults from it, so the documented schema (``vllm-ledger render
--print-schema``) and the checks cannot drift apart. Every refusal is one line naming the key,
e.g. ``port: 70000 is above the maximum 65535``.

Beyond the schema, no string may hold a control character other than tab and newline, nor a
bidi or line-separator mark. Two ``format`` values are checked too (JSON Schema leaves a format
it does not define to the application): ``image-reference``, the registries' grammar and limits
(``deploy/imageref.py``), so the image is one word that reaches a Dockerfile's ``FROM`` as is;
and ``absolute-path``, the kernel's path limits in UTF-8 bytes (``deploy/limits.py``), bound by
the key's ``maxLength`` (which JSON Schema counts in characters, never more than the bytes).

The host file never holds the API key itself: ``api_key`` names an environment variable or a
file that holds it, read by the script when it runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_ledger.deploy.attribution import is_ledger_middleware, tenant_header_problem
from vllm_ledger.deploy.imageref import REFERENCE_PATTERN, reference_problem
from vllm_ledger.deploy.limits import PATH_MAX_BYTES, arg_problem, path_problem
from vllm_ledger.deploy.schemacheck import validate as check_schema
from vllm_ledger.errors import BadArgument, ConfigError
from vllm_ledger.strictjson import load_file, shown_key
from vllm_ledger.units import ENV_PREFIX, PLAIN_PATH_PATTERN
from vllm_ledger.write.recorder import DRAIN_TIMEOUT_S

MODES = ("docker", "bare")
MAX_HOST_FILE_BYTES = 1024 * 1024

# Every pattern describes the WHOLE value and is applied with re.fullmatch (JSON Schema's
# ECMA-262 reading of ^...$ is the same: "$" never accepts a trailing newline there).
ENV_NAME_PATTERN = "^[A-Za-z_][A-Za-z0-9_]*$"
ABSOLUTE_PATH_PATTERN = "^/[^\\x00-\\x1f\\x7f]*$"
NOT_AN_OPTION_PATTERN = "^[^-][\\s\\S]*$"  # a positional word: "-x" would be read as a flag
ADDRESS_PATTERN = "^[A-Za-z0-9_.:%][A-Za-z0-9_.:%-]*$"
ACCOUNT_PATTERN = "^[A-Za-z_][A-Za-z0-9_-]{0,31}$"
# An OTLP collector: http(s):// or grpc://, a host name, IPv4 or [IPv6] address, a port, a path.
OTLP_ENDPOINT_PATTERN = (
    "^(https?|grpc)://([A-Za-z0-9][A-Za-z0-9.-]*|\\[[0-9A-Fa-f:.]+\\])"
    ":([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
    "(/[A-Za-z0-9._~/%-]*)?$"
)
DETAILED_TRACE_MODULES = ("model", "worker", "all")
LOG_FORMATS = ("text", "json")
ONE_LINE_PATTERN = "^[^\\n]*$"
# A budgets file: an absolute path whose suffix says how it is read.
BUDGETS_PATH_PATTERN = "^/[^\\x00-\\x1f\\x7f]*\\.(toml|json)$"
# A header an upstream proxy sets: letters, digits and '-' (RFC 9110's field names, as used).
HEADER_NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9-]{0,63}$"
# moby's daemon/names/names.go: [a-zA-Z0-9][a-zA-Z0-9_.-]+, so two characters at least
CONTAINER_NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]+$"
# ARTIFACTS holds the ledger and the plugin bundle; their deepest path below it is
# usage/RUN/w9999.g999999.ledger.sqlite-journal (a run id of up to 128 characters: 171 bytes),
# so the folder leaves 256 bytes of PATH_MAX for them.
ARTIFACTS_ROOM_BYTES = 256
ARTIFACTS_DIR_MAX_BYTES = PATH_MAX_BYTES - ARTIFACTS_ROOM_BYTES

_POSITIVE_INT: dict[str, Any] = {"type": "integer", "minimum": 1}


def _path(description: str, max_bytes: int = PATH_MAX_BYTES, **more: Any) -> dict[str, Any]:
    """An absolute path key: no control characters, within the kernel's limits."""
    return {
        "type": "string",
        "pattern": ABSOLUTE_PATH_PATTERN,
        "format": "absolute-path",
        "maxLength": max_bytes,
        **more,
        "description": description,
    }


SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://vllm-ledger.invalid/schemas/host-1.json",
    "title": "vllm-ledger host file",
    "description": (
        "One vLLM instance on one machine, rendered into a launch script by "
        "`vllm-ledger render --host HOST.json --output run.sh [--usage] [--mode docker|bare]`. "
        "Keys left out take the default shown, or are not passed to vLLM at all."
    ),
    "type": "object",
    "additionalProperties": False,
    "required": ["model"],
    "properties": {
        "$schema": {"type": "string", "description": "ignored; lets editors find this schema"},
        "mode": {
            "enum": list(MODES),
            "default": "docker",
            "description": "docker: `docker run` of the vLLM OpenAI image; bare: `vllm serve` "
            "on a host or in a container that already has vLLM. `--mode` overrides it.",
        },
        "model": {
            "type": "string",
            "minLength": 1,
            "pattern": NOT_AN_OPTION_PATTERN,
            "description": "model path or name, the positional argument of `vllm serve`",
        },
        "served_model_name": {
            "type": "string",
            "minLength": 1,
            "pattern": NOT_AN_OPTION_PATTERN,
            "description": "--served-model-name: the name clients send",
        },
        "host": {
            "type": "string",
            "minLength": 1,
            "pattern": ADDRESS_PATTERN,
            "default": "0.0.0.0",
            "description": "address to listen on (bare: --host; docker: the address the port "
            "is published on, vLLM listens on 0.0.0.0 inside the container)",
        },
        "port": {
            "type": "integer",
            "minimum": 1,
            "maximum": 65535,
            "default": 8000,
            "description": "--port (docker: published as the same port on the host)",
        },
        "image": {
            "type": "string",
            "minLength": 1,
            "pattern": REFERENCE_PATTERN,
            "format": "image-reference",
            "description": "docker mode, required: the vLLM OpenAI image, pinned, "
            "e.g. vllm/vllm-openai:v0.32.0; an image reference "
            "([REGISTRY[:PORT]/]NAME[:TAG][@sha256:HEX], the name lowercase)",
        },
        "container_name": {
            "type": "string",
            "pattern": CONTAINER_NAME_PATTERN,
            "description": "docker --name (default: vllm-PORT)",
        },
        "restart": {
            "type": "string",
            "pattern": "^(no|always|unless-stopped|on-failure(:[0-9]+)?)$",
            "default": "unless-stopped",
            "description": "docker --restart policy",
        },
        "gpus": {
            "oneOf": [
                {"const": "all"},
                {"type": "array", "items": {"type": "integer", "minimum": 0}},
            ],
            "default": "all",
            "description": '"all", or a list of GPU indexes; [] for none (docker: --gpus; '
            "bare: CUDA_VISIBLE_DEVICES for a list)",
        },
        "shm_size": {
            "type": "string",
            "pattern": "^[0-9]+[bkmgBKMG]?$",
            "default": "16g",
            "description": "docker --shm-size (vLLM's workers share memory through /dev/shm)",
        },
        "volumes": {
            "type": "array",
            "default": [],
            "description": "docker bind mounts, e.g. the model folder",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["host", "container"],
                "properties": {
                    "host": _path("absolute path on the host"),
                    "container": _path("absolute path in the container"),
                    "read_only": {
                        "type": "boolean",
                        "default": True,
                        "description": "mount read-only",
                    },
                },
            },
        },
        "tensor_parallel_size": {**_POSITIVE_INT, "description": "--tensor-parallel-size"},
        "data_parallel_size": {**_POSITIVE_INT, "description": "--data-parallel-size"},
        "api_server_count": {
            **_POSITIVE_INT,
            "default": 1,
            "description": "--api-server-count, always passed; with --usage the ledger's "
            "expected writer count (VLLM_LEDGER_WRITERS) is derived from it",
        },
        "max_model_len": {**_POSITIVE_INT, "description": "--max-model-len"},
        "gpu_memory_utilization": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": 1,
            "description": "--gpu-memory-utilization, a fraction",
        },
        "max_num_seqs": {**_POSITIVE_INT, "description": "--max-num-seqs"},
        "max_num_batched_tokens": {**_POSITIVE_INT, "description": "--max-num-batched-tokens"},
        "dtype": {
            "enum": ["auto", "half", "float16", "bfloat16", "float", "float32"],
            "description": "--dtype",
        },
        "quantization": {
            "type": "string",
            "pattern": "^[A-Za-z0-9_][A-Za-z0-9_-]*$",
            "description": "--quantization method, e.g. awq, gptq, fp8",
        },
        "shutdown_timeout_seconds": {
            "type": "integer",
            "minimum": 0,
            "description": "--shutdown-timeout; with --usage it defaults to "
            f"{int(DRAIN_TIMEOUT_S) * 2} and must be above the ledger's "
            f"{int(DRAIN_TIMEOUT_S)} s drain limit",
        },
        "api_key": {
            "type": "object",
            "additionalProperties": False,
            "minProperties": 1,
            "maxProperties": 1,
            "x-unknown-key-note": "the key itself never goes in the host file",
            "description": "where the script reads the API key when it runs, never the key "
            'itself: {"env": "NAME"} or {"file": "/abs/path"}; passed to vLLM as VLLM_API_KEY',
            "properties": {
                "env": {
                    "type": "string",
                    "pattern": ENV_NAME_PATTERN,
                    "description": "environment variable holding the key",
                },
                "file": _path("file holding the key (trailing newlines dropped)"),
            },
        },
        "artifacts_dir": _path(
            "host folder for artifacts; required with --usage: the ledger is written to "
            "ARTIFACTS/usage and the plugin bundled into ARTIFACTS/ledger-plugin (at most "
            f"{ARTIFACTS_DIR_MAX_BYTES} bytes: PATH_MAX less room for the ledger's files)",
            ARTIFACTS_DIR_MAX_BYTES,
        ),
        "ledger_code_dir": _path(
            "with --usage: folder holding the vllm_ledger package; the script bundles the "
            "plugin from it at start. Left out: the script uses the bundle already in "
            "ARTIFACTS/ledger-plugin"
        ),
        "ledger_python": {
            "type": "string",
            "minLength": 1,
            "pattern": NOT_AN_OPTION_PATTERN,
            "default": "python3",
            "description": "with --usage and ledger_code_dir: the Python that runs the bundle "
            "step on the host (standard library only)",
        },
        "extra_args": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "more `vllm serve` arguments, passed verbatim after the others",
        },
        "extra_env": {
            "type": "object",
            "propertyNames": {"pattern": ENV_NAME_PATTERN},
            "additionalProperties": {"type": "string"},
            "default": {},
            "description": "more environment variables for vLLM",
        },
        "vllm_executable": {
            "type": "string",
            "pattern": PLAIN_PATH_PATTERN,
            "format": "absolute-path",
            "maxLength": PATH_MAX_BYTES,
            "default": "/usr/local/bin/vllm",
            "description": "systemd mode: absolute path of the `vllm` program ExecStart runs "
            "(e.g. /opt/vllm/venv/bin/vllm)",
        },
        "user": {
            "type": "string",
            "pattern": ACCOUNT_PATTERN,
            "description": "systemd mode: the account vLLM runs as (User=); default: root",
        },
        "group": {
            "type": "string",
            "pattern": ACCOUNT_PATTERN,
            "description": "systemd mode: the group vLLM runs as (Group=); default: the user's",
        },
        "otlp_traces_endpoint": {
            "type": "string",
            "pattern": OTLP_ENDPOINT_PATTERN,
            "description": "--otlp-traces-endpoint: the OpenTelemetry collector vLLM sends a "
            "trace of every request to, e.g. grpc://127.0.0.1:4317 (gRPC unless extra_env sets "
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf)",
        },
        "collect_detailed_traces": {
            "enum": list(DETAILED_TRACE_MODULES),
            "description": "--collect-detailed-traces, with otlp_traces_endpoint: also time "
            "the model's forward pass (model), the workers (worker) or both (all); it costs "
            "throughput",
        },
        "log_format": {
            "enum": list(LOG_FORMATS),
            "default": "text",
            "description": "json: vLLM logs one JSON object a line (--logging-config.formatter "
            "json: asctime, levelname, name, processName, process, message), and the exporter "
            "and notifier rendered beside it log the same keys (VLLM_LEDGER_LOG_FORMAT=json); "
            "docs/observability.md ships them with Vector",
        },
        "attribution": {
            "type": "object",
            "additionalProperties": False,
            "default": {},
            "description": "with --usage: whose tokens (docs/attribution.md). The middleware "
            "render adds always names the API key and the adapter (the body's model); these "
            "switch on more",
            "properties": {
                "user": {
                    "type": "boolean",
                    "default": False,
                    "description": "also the body's user (OpenAI's end-user id): "
                    "VLLM_LEDGER_ATTRIBUTE_USER=1; past 1,000 users per file and hour the "
                    "rest fold into 'other'",
                },
                "tenant_header": {
                    "type": "string",
                    "pattern": HEADER_NAME_PATTERN,
                    "description": "a header your upstream proxy sets, credited as the tenant "
                    "(VLLM_LEDGER_TENANT_HEADER), e.g. X-Tenant; only where clients cannot "
                    "reach vLLM past that proxy",
                },
                "key_names": _path(
                    'the key names file (JSON: name -> "sha256:<64 hex>", as `vllm-ledger '
                    "keys hash --name NAME` prints): VLLM_LEDGER_KEY_NAMES; mounted read-only "
                    "in a container, a Secret in kubernetes, a credential in systemd"
                ),
            },
        },
        "budgets": _path(
            "with --usage: the budgets file (.toml or .json; docs/budgets.md), checked when "
            "rendered: VLLM_LEDGER_BUDGETS, so vLLM's rank 0 runs the enforcer and the middleware "
            "answers 429 past an enforced hard budget; mounted read-only in a container (a cost "
            "budget's price file too, at its own path), a ConfigMap in kubernetes",
            pattern=BUDGETS_PATH_PATTERN,
        ),
        "gpu_name": {
            "type": "string",
            "minLength": 1,
            "pattern": ONE_LINE_PATTERN,
            "description": "render --explain where NVML cannot be read: the GPU model, e.g. "
            "NVIDIA A100-SXM4-80GB (chooses the dtype hint)",
        },
        "gpu_memory_gb": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "render --explain where NVML cannot be read: memory per GPU in GB "
            "(10^9 bytes; chooses the gpu_memory_utilization and swap hints)",
        },
    },
}

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


@dataclass(frozen=True)
class Volume:
    host: str
    container: str
    read_only: bool = True


_ATTRIBUTION: dict[str, Any] = SCHEMA["properties"]["attribution"]["properties"]


def _default(key: str) -> Any:
    """The schema's default for ``key`` (None where it has none): the one source of defaults."""
    return SCHEMA["properties"][key].get("default")


@dataclass(frozen=True)
class Host:
    """A validated host file, defaults applied: each default is the schema's (``_default``), so
    a ``Host`` built in code and one read from a file agree."""

    model: str
    mode: str = _default("mode")
    served_model_name: str | None = _default("served_model_name")
    host: str = _default("host")
    port: int = _default("port")
    image: str | None = _default("image")
    container_name: str | None = _default("container_name")
    restart: str = _default("restart")
    gpus: str | tuple[int, ...] = _default("gpus")
    shm_size: str = _default("shm_size")
    volumes: tuple[Volume, ...] = ()  # the schema's default: none
    tensor_parallel_size: int | None = _default("tensor_parallel_size")
    data_parallel_size: int | None = _default("data_parallel_size")
    api_server_count: int = _default("api_server_count")
    max_model_len: int | None = _default("max_model_len")
    gpu_memory_utilization: float | None = _default("gpu_memory_utilization")
    max_num_seqs: int | None = _default("max_num_seqs")
    max_num_batched_tokens: int | None = _default("max_num_batched_tokens")
    dtype: str | None = _default("dtype")
    quantization: str | None = _default("quantization")
    shutdown_timeout_seconds: int | None = _default("shutdown_timeout_seconds")
    api_key_env: str | None = None
    api_key_file: str | None = None
    artifacts_dir: str | None = _default("artifacts_dir")
    ledger_code_dir: str | None = _default("ledger_code_dir")
    ledger_python: str = _default("ledger_python")
    extra_args: tuple[str, ...] = ()  # the schema's default: none
    extra_env: tuple[tuple[str, str], ...] = ()  # the schema's default: none
    vllm_executable: str = _default("vllm_executable")
    user: str | None = _default("user")
    group: str | None = _default("group")
    otlp_traces_endpoint: str | None = _default("otlp_traces_endpoint")
    collect_detailed_traces: str | None = _default("collect_detailed_traces")
    log_format: str = _default("log_format")
    gpu_name: str | None = _default("gpu_name")
    gpu_memory_gb: float | None = _default("gpu_memory_gb")
    # attribution: {user, tenant_header, key_names}
    attribute_user: bool = _ATTRIBUTION["user"]["default"]
    tenant_header: str | None = None
    key_names: str | None = None
    budgets: str | None = _default("budgets")

    @property
    def name(self) -> str:
        return self.container_name or f"vllm-{self.port}"


def schema_json() -> str:
    """The schema as the JSON text `render --print-schema` prints."""
    return json.dumps(SCHEMA, indent=2, ensure_ascii=False) + "\n"


def load_host(path: Path) -> Host:
    """Read and validate a host file; any problem is one ConfigError line naming the key (a file
    that cannot be read: a ``BadArgument`` naming ``path``)."""
    try:
        data = load_file(path, max_bytes=MAX_HOST_FILE_BYTES, what=f"host file {path}")
    except FileNotFoundError as exc:
        raise BadArgument(f"host file {path} not found", argument="path", value=path) from exc
    except OSError as exc:
        raise BadArgument(
            f"host file {path} could not be read: {exc.strerror}", argument="path", value=path
        ) from exc
    try:
        return parse_host(data)
    except ConfigError as exc:
        raise ConfigError(f"host file {path}: {exc.what}", key=exc.key, hint=exc.hint) from exc


def parse_host(data: Any) -> Host:
    """Validate a decoded host file and build the Host."""
    validate(data, SCHEMA, "")
    _check_extras(data)
    props = SCHEMA["properties"]

    def get(key: str) -> Any:
        return data.get(key, props[key].get("default"))

    api_key = data.get("api_key", {})
    attribution = get("attribution")
    gpus = get("gpus")
    return Host(
        model=data["model"],
        mode=get("mode"),
        served_model_name=get("served_model_name"),
        host=get("host"),
        port=get("port"),
        image=get("image"),
        container_name=get("container_name"),
        restart=get("restart"),
        gpus=gpus if isinstance(gpus, str) else tuple(gpus),
        shm_size=get("shm_size"),
        volumes=tuple(
            Volume(v["host"], v["container"], v.get("read_only", True)) for v in get("volumes")
        ),
        tensor_parallel_size=get("tensor_parallel_size"),
        data_parallel_size=get("data_parallel_size"),
        api_server_count=get("api_server_count"),
        max_model_len=get("max_model_len"),
        gpu_memory_utilization=get("gpu_memory_utilization"),
        max_num_seqs=get("max_num_seqs"),
        max_num_batched_tokens=get("max_num_batched_tokens"),
        dtype=get("dtype"),
        quantization=get("quantization"),
        shutdown_timeout_seconds=get("shutdown_timeout_seconds"),
        api_key_env=api_key.get("env"),
        api_key_file=api_key.get("file"),
        artifacts_dir=get("artifacts_dir"),
        ledger_code_dir=get("ledger_code_dir"),
        ledger_python=get("ledger_python"),
        extra_args=tuple(get("extra_args")),
        extra_env=tuple(sorted(get("extra_env").items())),
        vllm_executable=get("vllm_executable"),
        user=get("user"),
        group=get("group"),
        otlp_traces_endpoint=get("otlp_traces_endpoint"),
        collect_detailed_traces=get("collect_detailed_traces"),
        log_format=get("log_format"),
        gpu_name=get("gpu_name"),
        gpu_memory_gb=get("gpu_memory_gb"),
        attribute_user=attribution.get("user", _ATTRIBUTION["user"]["default"]),
        tenant_header=attribution.get("tenant_header"),
        key_names=attribution.get("key_names"),
        budgets=get("budgets"),
    )


def host_data(host: Host) -> dict[str, Any]:
    """The host file a ``Host`` stands for, defaults written out (``parse_host``'s inverse)."""
    data: dict[str, Any] = {
        "mode": host.mode,
        "model": host.model,
        "gpus": host.gpus if isinstance(host.gpus, str) else list(host.gpus),
        "volumes": [
            {"host": v.host, "container": v.container, "read_only": v.read_only}
            for v in host.volumes
        ],
        "extra_args": list(host.extra_args),
        "extra_env": dict(host.extra_env),
    }
    for key in SCHEMA["properties"]:
        if key not in data and key not in ("$schema", "api_key", "attribution"):
            value = getattr(host, key)
            if value is not None:
                data[key] = value
    api_key = {"env": host.api_key_env, "file": host.api_key_file}
    api_key = {k: v for k, v in api_key.items() if v is not None}
    if api_key:
        data["api_key"] = api_key
    attribution: dict[str, Any] = {}
    if host.attribute_user is not False:  # as given, so check_values sees any other value
        attribution["user"] = host.attribute_user
    for key, value in (("tenant_header", host.tenant_header), ("key_names", host.key_names)):
        if value is not None:
            attribution[key] = value
    if attribution:
        data["attribution"] = attribution
    return data


def check_values(host: Host) -> None:
    """Check every value of ``host`` against the schema again, however the Host was built:
    what reaches a script is exactly what a host file may hold."""
    data = host_data(host)
    if len(data["extra_env"]) != len(host.extra_env):
        raise ConfigError("extra_env: a name given twice", key="extra_env")
    validate(data, SCHEMA, "")
    _check_extras(data)


def check_for(host: Host, mode: str, usage: bool) -> None:
    """The checks that depend on how the host file is rendered (after ``check_values``). A
    refusal that holds only with the ledger on names it ``usage``, as the renderers' parameter
    is called (the commands word it as their flag)."""
    check_values(host)
    if mode not in MODES:
        raise ConfigError(f"mode: {mode!r} is not one of docker, bare", key="mode")
    if mode == "docker":
        if host.image is None:
            raise ConfigError(
                "image: required in docker mode (a pinned vLLM OpenAI image, e.g. "
                "vllm/vllm-openai:v0.32.0)",
                key="image",
            )
        for i, v in enumerate(host.volumes):
            for side in ("host", "container"):
                if ":" in getattr(v, side):
                    raise ConfigError(
                        f"volumes[{i}].{side}: a docker volume path cannot contain ':'",
                        key=f"volumes[{i}].{side}",
                    )
        mounted = (
            ("artifacts_dir", host.artifacts_dir),
            ("attribution.key_names", host.key_names),
            ("budgets", host.budgets),
        )
        for key, path in mounted if usage else ():
            if path and ":" in path:
                raise ConfigError(f"{key}: a docker volume path cannot contain ':'", key=key)
    if host.budgets is not None and not usage:
        raise ConfigError(
            "budgets: the budgets are judged from the ledger and refused by its middleware: "
            "render with usage",
            key="budgets",
        )
    if usage:
        if host.artifacts_dir is None:
            raise ConfigError(
                "artifacts_dir: required with usage (the ledger goes to ARTIFACTS/usage)",
                key="artifacts_dir",
            )
        t = host.shutdown_timeout_seconds
        if t is not None and t <= DRAIN_TIMEOUT_S:
            raise ConfigError(
                f"shutdown_timeout_seconds: {t} is not above the ledger's "
                f"{int(DRAIN_TIMEOUT_S)} s drain limit; with usage give at least "
                f"{int(DRAIN_TIMEOUT_S) + 1} or leave it out",
                key="shutdown_timeout_seconds",
            )


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


def _check_extras(data: dict[str, Any]) -> None:
    _check_arg_sizes(data)
    if "collect_detailed_traces" in data and "otlp_traces_endpoint" not in data:
        raise ConfigError(
            "collect_detailed_traces: needs otlp_traces_endpoint (the traces go there)",
            key="collect_detailed_traces",
            hint="set otlp_traces_endpoint, e.g. grpc://127.0.0.1:4317",
        )
    _check_attribution(data)
    for i, arg in enumerate(data.get("extra_args", [])):
        if is_ledger_middleware(tuple(data["extra_args"]), i):
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
    for name in data.get("extra_env", {}):
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


# How each pattern's refusal reads (any other: "does not match PATTERN").
_PATTERN_WORDS = {
    ABSOLUTE_PATH_PATTERN: "must be an absolute path without control characters",
    BUDGETS_PATH_PATTERN: "must be an absolute path ending in .toml or .json",
    ENV_NAME_PATTERN: "is not an environment variable name (letters, digits, _)",
    NOT_AN_OPTION_PATTERN: "must not start with '-'",
    ADDRESS_PATTERN: "is not an address or host name",
    PLAIN_PATH_PATTERN: "must be an absolute path of letters, digits and ._+/@,- only",
    ACCOUNT_PATTERN: "is not a user or group name",
    ONE_LINE_PATTERN: "must be one line",
    OTLP_ENDPOINT_PATTERN: "is not an OTLP endpoint URL (http, https or grpc://HOST:PORT)",
    HEADER_NAME_PATTERN: "is not a header name (letters, digits and '-', at most 64)",
}


def validate(value: Any, schema: dict[str, Any], where: str) -> None:
    """Raise ConfigError naming ``where`` (the key path) if ``value`` breaks ``schema``
    (``deploy/schemacheck.py``, with this schema's wording and formats)."""
    check_schema(value, schema, where, words=_PATTERN_WORDS, formats=_FORMATS)


def _path_format(value: str, schema: dict[str, Any]) -> str | None:
    return path_problem(value, schema.get("maxLength", PATH_MAX_BYTES))


_FORMATS: dict[str, Callable[[str, dict[str, Any]], str | None]] = {
    "image-reference": lambda value, schema: reference_problem(value),
    "absolute-path": _path_format,
}
