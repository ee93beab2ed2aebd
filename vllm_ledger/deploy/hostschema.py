"""The host file's schema: ``SCHEMA`` (a JSON Schema, draft 2020-12), the single source of
truth. ``validate`` checks a host file against it (``deploy/schemacheck.py``, through the
``jsonschema`` library) and ``Host`` takes its defaults from it (``deploy/host.py``), so the
documented schema (``vllm-ledger render --print-schema``, ``schema_json``) and the checks cannot
drift apart. Every refusal is one line naming the key, e.g. ``port: 70000 is above the maximum
65535``, each pattern's worded in ``PATTERN_WORDS``.

Beyond the schema, no string may hold a control character other than tab and newline, nor a
bidi or line-separator mark. Two ``format`` values are checked too (JSON Schema leaves a format
it does not define to the application; ``FORMATS``): ``image-reference``, the registries'
grammar and limits (``deploy/imageref.py``), so the image is one word that reaches a
Dockerfile's ``FROM`` as is; and ``absolute-path``, the kernel's path limits in UTF-8 bytes
(``deploy/limits.py``), bound by the key's ``maxLength`` (which JSON Schema counts in
characters, never more than the bytes).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from vllm_ledger.deploy.imageref import REFERENCE_PATTERN, reference_problem
from vllm_ledger.deploy.limits import PATH_MAX_BYTES, path_problem
from vllm_ledger.deploy.schemacheck import validate as check_schema
from vllm_ledger.units import PLAIN_PATH_PATTERN
from vllm_ledger.write.recorder import DRAIN_TIMEOUT_S

MODES = ("docker", "bare")

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

# How each pattern's refusal reads (any other: "does not match PATTERN").
PATTERN_WORDS = {
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


def _path_format(value: str, schema: dict[str, Any]) -> str | None:
    return path_problem(value, schema.get("maxLength", PATH_MAX_BYTES))


# The checks of the ``format`` values the schema uses, given the value and its schema.
FORMATS: dict[str, Callable[[str, dict[str, Any]], str | None]] = {
    "image-reference": lambda value, schema: reference_problem(value),
    "absolute-path": _path_format,
}


def validate(data: Any) -> None:
    """Raise ConfigError naming the key if ``data`` (a decoded host file) breaks ``SCHEMA``."""
    check_schema(data, SCHEMA, "", words=PATTERN_WORDS, formats=FORMATS)


def schema_json() -> str:
    """The schema as the JSON text `render --print-schema` prints."""
    return json.dumps(SCHEMA, indent=2, ensure_ascii=False) + "\n"
