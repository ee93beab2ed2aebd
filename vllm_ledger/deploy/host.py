"""The host file: one JSON object describing one vLLM instance on one machine.

``load_host`` reads one and ``parse_host`` checks it against its schema (``deploy/hostschema.py``)
and the checks beyond it (``deploy/hostchecks.py``) and builds the ``Host``, whose defaults are
the schema's; ``check_values`` checks a ``Host`` however it was built, and ``check_for`` what
depends on how it is rendered. Every refusal is one line naming the key.

The host file never holds the API key itself: ``api_key`` names an environment variable or a
file that holds it, read by the script when it runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_ledger.deploy.hostchecks import check_extras
from vllm_ledger.deploy.hostschema import MODES, SCHEMA, validate
from vllm_ledger.errors import BadArgument, ConfigError
from vllm_ledger.strictjson import load_file
from vllm_ledger.write.recorder import DRAIN_TIMEOUT_S

MAX_HOST_FILE_BYTES = 1024 * 1024


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
    validate(data)
    check_extras(data)
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
    validate(data)
    check_extras(data)


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
