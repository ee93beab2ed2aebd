"""The model preflight judges, as it lies on this machine: its folder (the host file's path, or
in docker mode the source of the volume that holds it; a hub name: the hub cache) and the
weights' size in memory at the serving dtype, from the safetensors headers without their data.
"""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from vllm_ledger.deploy.host import Host
from vllm_ledger.deploy.preflight.sizes import MIB, gib_text
from vllm_ledger.infile import open_regular, read_regular_text, read_up_to

MAX_SAFETENSORS_HEADER = 100 * MIB
MAX_MODEL_CONFIG_BYTES = 4 * MIB  # a model folder's config.json
SERVE_DTYPE_BYTES = {"half": 2, "float16": 2, "bfloat16": 2, "float": 4, "float32": 4}


@dataclass(frozen=True)
class ModelSize:
    path: Path | None  # the folder on this machine, if the model is one
    weight_bytes: int | None  # in memory at the serving dtype
    note: str


def _host_path(host: Host) -> Path | None:
    """The model folder on this machine: the host file's path, or (docker) its volume's source."""
    model = host.model
    if not model.startswith("/"):
        p = Path(model)
        return p.resolve() if p.is_dir() else None
    if host.mode == "docker":
        for v in host.volumes:
            c = v.container.rstrip("/")
            if model == c or model.startswith(c + "/"):
                return Path(v.host + model[len(c) :])
    return Path(model)


def safetensors_params(path: Path) -> tuple[int, int, set[str]]:
    """(parameters, bytes, dtypes) from a .safetensors file's header, without its data."""
    with open_regular(path) as (fd, _st):
        (n,) = struct.unpack("<Q", read_up_to(fd, 8))
        if n > MAX_SAFETENSORS_HEADER:
            raise ValueError(f"{path.name}: header of {n} bytes")
        header = json.loads(read_up_to(fd, n))
    params = size = 0
    dtypes: set[str] = set()
    for name, t in header.items():
        if name == "__metadata__":
            continue
        params += math.prod(t["shape"])
        size += t["data_offsets"][1] - t["data_offsets"][0]
        dtypes.add(t["dtype"])
    return params, size, dtypes


def model_size(host: Host) -> ModelSize:
    folder = _host_path(host)
    if folder is None:
        return ModelSize(None, None, f"{host.model} is not a folder here (a hub name?)")
    if not folder.is_dir():
        return ModelSize(folder, None, f"model folder {folder} not found")
    params = size = 0
    dtypes: set[str] = set()
    try:
        for f in sorted(folder.glob("*.safetensors")):
            p, s, d = safetensors_params(f)
            params, size, dtypes = params + p, size + s, dtypes | d
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return ModelSize(folder, None, f"safetensors unreadable: {exc}")
    if not size:
        size = sum(f.stat().st_size for pat in ("*.bin", "*.pt", "*.pth") for f in folder.glob(pat))
        if not size:
            return ModelSize(folder, None, f"no weights (*.safetensors, *.bin) in {folder}")
        return ModelSize(folder, size, f"{gib_text(size)} of weight files")
    quantized = host.quantization is not None or _config_quantized(folder)
    serve = SERVE_DTYPE_BYTES.get(host.dtype or "auto")
    if quantized or serve is None:
        return ModelSize(folder, size, f"{params:,} parameters, {gib_text(size)} as stored")
    return ModelSize(
        folder,
        params * serve,
        f"{params:,} parameters, {gib_text(params * serve)} as {host.dtype}",
    )


def _config_quantized(folder: Path) -> bool:
    try:
        cfg = json.loads(read_regular_text(folder / "config.json", MAX_MODEL_CONFIG_BYTES))
    except (OSError, ValueError):
        return False
    return isinstance(cfg, dict) and "quantization_config" in cfg


def hub_cache() -> Path:
    """Where a model named by its hub name is kept: ``$HF_HOME``, else ~/.cache/huggingface."""
    home = os.environ.get("HF_HOME") or str(Path.home() / ".cache" / "huggingface")
    return Path(home)
