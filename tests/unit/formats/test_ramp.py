"""formats/ramp.py: the ramp's terminal table and its CSV and JSON, from built steps."""

from __future__ import annotations

import json

from vllm_ledger.formats.ramp import knee_text, render_csv, render_json, render_table
from vllm_ledger.plan.ramp import Knee, StepResult


def _step(c: int, tokens: int, server: int | None = None) -> StepResult:
    return StepResult(
        concurrency=c, seconds=10.0, requests=tokens // 16, errors=0, prompt_tokens=tokens,
        output_tokens=tokens, server_prompt_tokens=server, server_output_tokens=server,
        ttft_p50_s=0.01 * c, ttft_p99_s=None, tpot_s=0.005 * c, client_tpot_s=None,
        kv_usage_max=0.5, kv_usage_mean=0.25, waiting_max=None, waiting_mean=None,
    )  # fmt: skip


def test_every_column_is_right_aligned_under_its_heading() -> None:
    knee = Knee(1, 16, "KV-cache usage reached 93 %")
    assert render_table([_step(1, 1000, 1000), _step(16, 12000)], knee).splitlines() == [
        "concurrency  requests  errors  seconds  output tokens  server output  tokens/s"
        "  TTFT P50 ms  TTFT P99 ms  TPOT ms  KV max %  waiting max",
        "          1        62       0     10.0           1000           1000     100.0"
        "           10            -        5      50.0            -",
        "         16       750       0     10.0          12000              -    1200.0"
        "          160            -       80      50.0            -",
        "knee: concurrency 16: KV-cache usage reached 93 %",
    ]
    assert knee_text(None).startswith("knee: not reached")


def test_csv_and_json_carry_the_same_steps() -> None:
    steps = [_step(1, 1000, 1000)]
    # The one CSV dialect (formats/csvout.py): a figure with no value is an empty cell.
    assert render_csv(steps).splitlines()[1] == "1,62,0,10.0,1000,1000,100.0,10,,5,50.0,"
    assert render_csv(steps).endswith(",\n") and "\r" not in render_csv(steps)
    doc = json.loads(render_json(steps, None, "t"))
    assert doc["knee"] is None and doc["steps"][0]["throughput_tokens_per_s"] == 100.0
