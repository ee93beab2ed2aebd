"""The tuning rules and the calibration (vllm_ledger/deploy/tuning.py), and
`render --explain` on a real ledger."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.inproc import run_cli
from tests.ledgers import ev, write_ledger
from vllm_ledger.deploy.tuning import (
    GB,
    Gpu,
    Hint,
    batch_hints,
    calibration,
    dtype_hint,
    dtype_support,
    host_gpus,
    memory_hints,
)
from vllm_ledger.observe.gpu import GpuReading

DATA = REPO / "tests" / "data" / "render"


def values(hints: Sequence[Hint]) -> dict[str, str | None]:
    return {h.key: h.value for h in hints}


@pytest.mark.parametrize(
    ("gb", "util"),
    [(8, "0.85"), (15.99, "0.85"), (16, "0.9"), (23.99, "0.9"), (24, "0.95"), (80, "0.95")],
)
def test_memory_rule_by_gpu_size(gb: float, util: str) -> None:
    hints = memory_hints([Gpu("x", round(gb * GB))])
    assert values(hints) == {"gpu_memory_utilization": util}  # no swap: vLLM 0.18 dropped it
    assert all(h.rule.startswith("memory by GPU size") for h in hints)


def test_memory_rule_takes_the_smallest_gpu_and_says_unknown() -> None:
    pair = [Gpu("a", 80 * GB), Gpu("b", 20 * GB)]
    assert values(memory_hints(pair)) == {"gpu_memory_utilization": "0.9"}
    assert memory_hints(pair)[0].why == "smallest GPU has 20.0 GB: 16 to 24 GB"
    unknown = [Gpu("a", 80 * GB), Gpu("b", None)]
    assert values(memory_hints(unknown)) == {"gpu_memory_utilization": None}
    assert values(memory_hints([])) == {"gpu_memory_utilization": "n/a"}


def test_batch_rule() -> None:
    assert values(batch_hints("interactive")) == {
        "max_num_seqs": "4",
        "max_num_batched_tokens": "1024",
    }
    assert values(batch_hints("batch")) == {"max_num_seqs": "32", "max_num_batched_tokens": "8192"}


@pytest.mark.parametrize(
    ("name", "dtype"),
    [
        ("NVIDIA A100-SXM4-80GB", "bfloat16"),
        ("NVIDIA H100 80GB HBM3", "bfloat16"),
        ("NVIDIA L40S", "bfloat16"),
        ("NVIDIA A10G", "bfloat16"),
        ("NVIDIA GeForce RTX 4090", "bfloat16"),
        ("NVIDIA RTX A6000", "bfloat16"),
        ("NVIDIA RTX 6000 Ada Generation", "bfloat16"),
        ("Tesla V100-SXM2-16GB", "float16"),
        ("Tesla T4", "float16"),
        ("NVIDIA GeForce RTX 2080 Ti", "float16"),
        ("Quadro RTX 8000", "float16"),
        ("Tesla K80", None),
    ],
)
def test_dtype_support_from_the_name(name: str, dtype: str | None) -> None:
    assert dtype_support(name) == dtype


def test_dtype_rule_order() -> None:
    a100, t4, k80 = Gpu("NVIDIA A100-PCIE-40GB", None), Gpu("Tesla T4", None), Gpu("K80", None)
    assert dtype_hint([a100, a100], cpu=False).value == "bfloat16"
    assert dtype_hint([a100, t4], cpu=False).value == "float16"  # every GPU must support it
    assert dtype_hint([k80], cpu=False).value == "float32"
    assert dtype_hint([Gpu(None, None)], cpu=False).value is None
    assert dtype_hint([], cpu=True).value == "float32"


def reading(index: int, name: str, total: int | None) -> GpuReading:
    return GpuReading(index, f"GPU-{index}", name, None, None, None, total, None)


def test_host_gpus_prefers_nvml_then_the_host_file() -> None:
    nvml = [reading(0, "NVIDIA L4", 24 * GB), reading(1, "NVIDIA A100", 80 * GB)]
    assert host_gpus((1,), nvml, None, None) == (
        [Gpu("NVIDIA A100", 80 * GB)],
        "1 read through NVML on this machine",
    )
    assert host_gpus("all", nvml, None, None)[0] == [
        Gpu("NVIDIA L4", 24 * GB),
        Gpu("NVIDIA A100", 80 * GB),
    ]
    # index 2 is not on this machine: the host file's keys instead
    assert host_gpus((1, 2), nvml, "Tesla T4", 16) == (
        [Gpu("Tesla T4", 16 * GB)] * 2,
        "from the host file (gpu_name, gpu_memory_gb)",
    )
    assert host_gpus("all", [], None, None)[0] == [Gpu(None, None)]
    assert host_gpus((), nvml, None, None) == ([], "none (CPU host)")


def test_calibration_exact() -> None:
    # The documented example: about 3K used per request, 32K reserved.
    c = calibration("7d", 10, 25_000, 5_000, 32768)
    assert (c.mean_prompt_tokens, c.mean_output_tokens) == (2500.0, 500.0)
    assert c.suggested_max_model_len == 16384  # smallest power of two >= 4 x 3000
    assert c.note.startswith("max_model_len is 10.9x the mean request (3000 tokens)")
    close = calibration("7d", 10, 60_000, 20_000, 16384)  # 8000 per request: 2.0x
    assert close.suggested_max_model_len is None
    assert close.note == "max_model_len is 2.0x the mean request: no change suggested"
    assert calibration("7d", 0, 0, 0, 4096).note == "no requests in the 7d window"
    unset = calibration("7d", 2, 100, 100, None)
    assert unset.suggested_max_model_len is None and unset.max_model_len is None


def no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> None:
        raise ImportError("no nvml in this test")

    monkeypatch.setattr("vllm_ledger.observe.gpu._load_pynvml", refuse)


def test_explain_cli_with_a_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    no_nvml(monkeypatch)
    hf = tmp_path / "host.json"
    hf.write_text(
        json.dumps(
            {
                "model": "m",
                "gpus": [0, 1],
                "max_model_len": 32768,
                "gpu_name": "NVIDIA A100-SXM4-80GB",
                "gpu_memory_gb": 80,
            }
        )
    )
    root = tmp_path / "usage"
    root.mkdir()
    t0 = float(int(time.time()) - 7200)
    events = [
        ev(t0 + 10, prompt=2000, gen=300, finished=[(300, 3.0)]),
        ev(t0 + 20, prompt=3000, gen=700, finished=[(700, 5.0)]),
    ]
    write_ledger(root, "run-a", start_ts=t0, end_ts=t0 + 60, events=events)
    rc, out, err = run_cli(
        "render", "--host", str(hf), "--explain", "--workload", "batch", "--root", str(root)
    )
    assert (rc, err) == (0, "")
    assert out == (
        "Tuning hints, batch workload (GPUs: from the host file (gpu_name, gpu_memory_gb))\n"
        "\n"
        "  gpu_memory_utilization  0.95      smallest GPU has 80.0 GB: 24 GB or more\n"
        "                                    rule: memory by GPU size: "
        "<16 GB 0.85, <24 GB 0.90, else 0.95\n"
        "  max_num_seqs            32        batch: many sequences at once for throughput\n"
        "                                    rule: batching by request pattern: "
        "interactive 4 seqs/1024 tokens, batch 32/8192\n"
        "  max_num_batched_tokens  8192      batch: many sequences at once for throughput\n"
        "                                    rule: batching by request pattern: "
        "interactive 4 seqs/1024 tokens, batch 32/8192\n"
        "  dtype                   bfloat16  NVIDIA A100-SXM4-80GB supports bfloat16\n"
        "                                    rule: precision: bfloat16 where "
        "supported, else float16, else float32\n"
        "  swap space (--swap-space): not suggested, vLLM 0.18.0 dropped the flag (the V1 "
        "engine never swaps to CPU memory)\n"
        "\n"
        "Calibration from the ledger (7d window; calibration: mean tokens per "
        "request against max_model_len)\n"
        "  requests               2\n"
        "  mean prompt tokens     2500.0\n"
        "  mean output tokens     500.0\n"
        "  max_model_len          32768\n"
        "  suggested              16384\n"
        "  max_model_len is 10.9x the mean request (3000 tokens): KV cache reserved for "
        "lengths requests do not use; consider 16384 (4x the mean, a power of two) if your "
        "longest requests fit\n"
    )


def test_explain_writes_nothing_and_refuses_output(tmp_path: Path) -> None:
    rc, _, err = run_cli(
        "render",
        "--host",
        str(DATA / "cpu-bare.json"),
        "--explain",
        "--output",
        str(tmp_path / "x"),
    )
    assert (rc, err) == (
        2,
        "vllm-ledger: error: --explain only prints: leave out --output and --units\n",
    )
    assert list(tmp_path.iterdir()) == []
