"""deploy/preflight/model.py: where the model lies here and its weights' size when served."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from vllm_ledger.deploy.host import parse_host
from vllm_ledger.deploy.preflight.model import hub_cache, model_size
from vllm_ledger.deploy.preflight.sizes import GIB


def _write_header(path: Path, header: dict[str, Any]) -> None:
    """A .safetensors file's header; the sizes are read from it, never from the data."""
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)


def _host(**kw: Any) -> Any:
    return parse_host({"model": "/nowhere/model", "mode": "bare", **kw})


def test_the_size_is_the_parameters_at_the_serving_dtype(tmp_path: Path) -> None:
    tensor = {"dtype": "F32", "shape": [1024, 1024, 256], "data_offsets": [0, GIB]}
    _write_header(tmp_path / "model.safetensors", {"w": tensor})
    size = model_size(_host(model=str(tmp_path), dtype="bfloat16"))
    assert (size.path, size.weight_bytes) == (tmp_path, GIB // 2)
    assert size.note == "268,435,456 parameters, 0.5 GiB as bfloat16"
    stored = model_size(_host(model=str(tmp_path)))
    assert (stored.weight_bytes, stored.note) == (GIB, "268,435,456 parameters, 1.0 GiB as stored")


def test_docker_mode_reads_the_volume_that_holds_the_model(tmp_path: Path) -> None:
    host = _host(
        model="/models/m",
        mode="docker",
        image="vllm/vllm-openai:v0.32.0",
        volumes=[{"host": str(tmp_path), "container": "/models"}],
    )
    size = model_size(host)
    assert (size.path, size.note) == (tmp_path / "m", f"model folder {tmp_path / 'm'} not found")


def test_a_hub_name_is_no_folder_here(monkeypatch: pytest.MonkeyPatch) -> None:
    size = model_size(_host(model="Qwen/Qwen3-8B"))
    assert (size.path, size.weight_bytes) == (None, None)
    monkeypatch.setenv("HF_HOME", "/srv/hf")
    assert hub_cache() == Path("/srv/hf")
