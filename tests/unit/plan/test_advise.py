"""The capacity decision table over /metrics snapshots built from a real vLLM 0.32 /metrics.

tests/data/vllm-0.32.0-metrics.txt was captured from the tiny model on CPU after the
traffic mix; each scenario edits its values to meet one rule of the capacity decision table.
A reading from an answer the store called partial judges no rule (not judgeable, and why).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.inproc import run_cli
from vllm_ledger.plan.advise import advise, throughput_flat
from vllm_ledger.plan.advise_readings import Readings, readings_from_snapshots
from vllm_ledger.plan.prom import Said

BASE = (REPO / "tests" / "data" / "vllm-0.32.0-metrics.txt").read_text()
INTERVAL_S = 10.0


def set_value(text: str, name: str, value: float) -> str:
    pattern = re.compile(rf"^({re.escape(name)}(\{{[^}}]*\}})?) \S+$", re.M)
    assert pattern.search(text), name
    return pattern.sub(lambda m: f"{m.group(1)} {value}", text)


def add_value(text: str, name: str, delta: float, le_at_least: float | None = None) -> str:
    pattern = re.compile(rf"^({re.escape(name)}(\{{[^}}]*\}})?) (\S+)$", re.M)

    def bump(m: re.Match[str]) -> str:
        if le_at_least is not None:
            le = float(re.search(r'le="([^"]+)"', m.group(2)).group(1))  # type: ignore[union-attr]
            if le < le_at_least:
                return m.group(0)
        return f"{m.group(1)} {float(m.group(3)) + delta}"

    assert pattern.search(text), name
    return pattern.sub(bump, text)


def snapshot(
    *,
    kv: float,
    waiting: float,
    generated: float,
    ttft: tuple[int, float] = (0, 0.0),
    gpu: float | None = None,
    power: float | None = None,
    limit: float = 450.0,
) -> str:
    text = set_value(BASE, "vllm:kv_cache_usage_perc", kv)
    text = set_value(text, "vllm:num_requests_waiting", waiting)
    text = add_value(text, "vllm:generation_tokens_total", generated)
    n, seconds = ttft
    if n:
        text = add_value(text, "vllm:time_to_first_token_seconds_bucket", n, le_at_least=seconds)
        text = add_value(text, "vllm:time_to_first_token_seconds_count", n)
        text = add_value(text, "vllm:time_to_first_token_seconds_sum", n * seconds)
    if gpu is not None:
        text += f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="GPU-0",Hostname="h"}} {gpu}\n'
    if power is not None:
        text += f'DCGM_FI_DEV_POWER_USAGE{{gpu="0",UUID="GPU-0",Hostname="h"}} {power}\n'
        text += f'DCGM_FI_DEV_POWER_MGMT_LIMIT{{gpu="0",UUID="GPU-0",Hostname="h"}} {limit}\n'
    return text


def series(
    *,
    kv: float = 0.35,
    waiting: float = 0,
    steps: tuple[float, float] = (1000, 1500),
    ttft_seconds: float = 0.2,
    gpu: float | None = 70,
    power: float | None = 250,
) -> list[str]:
    """Three snapshots 10 s apart: generation grows by steps[0], then steps[1]; 20 TTFTs."""
    done = [0.0, steps[0], steps[0] + steps[1]]
    ttfts = [(0, 0.0), (10, ttft_seconds), (20, ttft_seconds)]
    return [
        snapshot(kv=kv, waiting=waiting, generated=g, ttft=t, gpu=gpu, power=power)
        for g, t in zip(done, ttfts, strict=True)
    ]


SCENARIOS: dict[str, dict[str, object]] = {
    "healthy": {},
    "kv-capacity": {"kv": 0.95, "waiting": 3},
    "compute-bound": {"gpu": 98, "steps": (1000, 1000)},
    "scheduling-prefill": {"gpu": 40, "ttft_seconds": 5.0},
    "power-efficiency": {"gpu": 80, "power": 440, "steps": (1000, 980)},
}


def _readings(texts: list[str]) -> Readings:
    return readings_from_snapshots([(i * INTERVAL_S, t) for i, t in enumerate(texts)], "test")


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_each_snapshot_names_its_rule_and_only_it(name: str) -> None:
    a = advise(_readings(series(**SCENARIOS[name])))  # type: ignore[arg-type]
    assert [v.rule.name for v in a.met] == ([] if name == "healthy" else [name])
    assert a.not_judgeable == ()


def test_without_gpu_readings_three_rules_are_not_judgeable() -> None:
    a = advise(_readings(series(kv=0.95, waiting=2, gpu=None, power=None)))
    states = {v.rule.name: (v.state, v.why) for v in a.verdicts}
    assert states == {
        "kv-capacity": ("met", "KV 95.0 %, waiting 2.00"),
        "compute-bound": ("not judgeable", "no reading of GPU utilisation"),
        "scheduling-prefill": ("not judgeable", "no reading of GPU utilisation"),
        "power-efficiency": ("not judgeable", "no reading of power, power limit"),
    }


def test_a_reading_from_a_partial_answer_judges_no_rule() -> None:
    r = _readings(series(kv=0.95, waiting=2, gpu=None, power=None))
    told = {"kv_cache_usage": Said(partial=True), "num_running": Said(warnings=("w",))}
    a = advise(dataclasses.replace(r, said={**told, "num_waiting": Said(infos=("i",))}))
    states = {v.rule.name: (v.state, v.why) for v in a.verdicts}
    assert states == {
        "kv-capacity": ("not judgeable", "a partial answer for KV-cache usage"),
        "compute-bound": ("not judgeable", "no reading of GPU utilisation"),
        "scheduling-prefill": ("not judgeable", "no reading of GPU utilisation"),
        "power-efficiency": ("not judgeable", "no reading of power, power limit"),
    }
    assert a.met == ()  # KV 95 % with 2 waiting: met on whole answers, not on this one
    r = _readings(series(**SCENARIOS["compute-bound"]))  # type: ignore[arg-type]
    halves = {"gen_tokens_per_s_halves": Said(warnings=("w",)), "power_limit_watts": Said(True)}
    why = {v.rule.name: v.why for v in advise(dataclasses.replace(r, said=halves)).verdicts}
    assert why["compute-bound"] == "a partial answer for throughput trend"
    assert why["power-efficiency"] == "a partial answer for power limit, throughput trend"


def test_no_first_token_in_the_sample_leaves_ttft_unjudged() -> None:
    texts = series(gpu=40)
    texts = [texts[0], texts[0], texts[0]]  # nothing happened
    r = _readings(texts)
    assert r.ttft_p99_seconds is None and r.num_ttft == 0
    assert throughput_flat(r) is None  # no generation: the trend cannot be told
    states = {v.rule.name: v.state for v in advise(r).verdicts}
    assert states["scheduling-prefill"] == "not judgeable"
    assert states["compute-bound"] == "not judgeable"


def _cli(tmp_path: Path, texts: list[str], *extra: str) -> tuple[int, str, str]:
    args: list[str] = []
    for i, text in enumerate(texts):
        p = tmp_path / f"m{i}.txt"
        p.write_text(text)
        args += ["--snapshot", str(p)]
    return run_cli("advise", *args, "--interval", str(INTERVAL_S), *extra)


def test_cli_names_the_rule_and_the_action(tmp_path: Path) -> None:
    code, out, err = _cli(tmp_path, series(kv=0.95, waiting=3))
    assert code == 0, err
    assert out.splitlines()[:9] == [
        "readings over 20.0 s from 3 recorded snapshots",
        "  KV-cache usage    95.0 %",
        "  waiting requests  3.00",
        "  running requests  0.00",
        "  GPU utilisation   70.0 %",
        "  TTFT P99          0.249 s (20 requests)",
        "  power             250 W of 450 W limit",
        "  throughput        125.0 generation tokens/s (halves 100.0 -> 150.0)",
        "",
    ]
    assert "[met] kv-capacity: KV-cache usage > 90 % and requests waiting > 0" in out
    assert (
        "    diagnosis: KV-cache capacity bottleneck; action: lower --max-model-len; "
        "quantise the weights or the KV cache (--kv-cache-dtype fp8)"
    ) in out
    assert out.endswith("met: kv-capacity\n")


def test_cli_json_and_healthy(tmp_path: Path) -> None:
    code, out, err = _cli(tmp_path, series(), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["met"] == []
    assert [r["state"] for r in doc["rules"]] == ["missed"] * 4
    code, out, err = _cli(tmp_path, series(gpu=None, power=None))
    assert out.endswith(
        "met: none of the judged rules\n"
        "not judgeable: compute-bound (no reading of GPU utilisation), scheduling-prefill "
        "(no reading of GPU utilisation), power-efficiency (no reading of power, power limit)\n"
    )
    # A power limit given on the command line makes the power rule judgeable.
    code, out, err = _cli(tmp_path, series(gpu=None, power=None), "--power-limit-watts", "450")
    assert "power-efficiency (no reading of power)" in out


def test_cli_errors(tmp_path: Path) -> None:
    code, _out, err = _cli(tmp_path, series()[:1])
    assert (code, err) == (
        2,
        "vllm-ledger: error: give --snapshot at least twice: rates need two readings\n",
    )
    code, _out, err = run_cli(
        "advise", "--metrics-url", "http://127.0.0.1:9/metrics", "--sample-for", "1s"
    )
    assert code == 2
    assert err.startswith("vllm-ledger: error: cannot read http://127.0.0.1:9/metrics: ")


def test_the_rule_says_the_threshold_in_force(tmp_path: Path) -> None:
    code, out, err = _cli(tmp_path, series(kv=0.95, waiting=3), "--ttft-p99-seconds", "1.5")
    assert code == 0, err
    assert "scheduling-prefill: TTFT P99 high (> 1.5 s) with GPU utilisation < 60 %" in out
    code, out, err = _cli(tmp_path, series(kv=0.95, waiting=3))
    assert "scheduling-prefill: TTFT P99 high (> 3 s) with GPU utilisation < 60 %" in out
