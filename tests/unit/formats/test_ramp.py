"""formats/ramp.py: the ramp's terminal table and its CSV and JSON, from built steps."""

from __future__ import annotations

import json
from dataclasses import replace

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
    # No error: the first error's status and text are empty cells too.
    assert render_csv(steps).splitlines()[1] == "1,62,0,10.0,1000,1000,100.0,10,,5,50.0,,,"
    assert render_csv(steps).endswith(",\n") and "\r" not in render_csv(steps)
    doc = json.loads(render_json(steps, None, "t"))
    assert doc["knee"] is None and doc["steps"][0]["throughput_tokens_per_s"] == 100.0
    assert doc["errors_over_limit"] is False and doc["verdict"].startswith("knee: not reached")


def _failing(
    c: int, requests: int, errors: int, text: str = '{"error":"Unauthorized"}'
) -> StepResult:
    ok = _step(c, 16 * (requests - errors), 16 * (requests - errors))
    return replace(ok, requests=requests, errors=errors, first_error_status=401, first_error=text)


def test_a_step_with_errors_is_reported_and_over_1_percent_draws_no_knee() -> None:
    steps = [_failing(1, 100, 1), _failing(2, 200, 200)]
    lines = render_table(steps, None).splitlines()
    assert lines[3:] == [
        "errors at concurrency 1: 1 of 100 requests (1.0 %), first HTTP 401: "
        '{"error":"Unauthorized"}',
        "errors at concurrency 2: 200 of 200 requests (100.0 %), first HTTP 401: "
        '{"error":"Unauthorized"}',
        "knee: none drawn: 200 of 200 requests failed at concurrency 2 (100.0 %, over 1 %), "
        'first HTTP 401: {"error":"Unauthorized"}; the figures are those of the requests that '
        "did not fail: fix the cause (an API key: --api-key-file or VLLM_API_KEY) and run again",
    ]
    doc = json.loads(render_json(steps, None, "t"))
    assert doc["errors_over_limit"] is True and doc["verdict"] == lines[-1]
    assert doc["steps"][1]["first_error_status"] == 401
    row = render_csv(steps).splitlines()[2]
    assert row.endswith(',401,"{""error"":""Unauthorized""}"'), row


def test_an_error_text_from_the_server_is_shown_escaped() -> None:
    hostile = "\x1b]0;owned\x07\x1b[2J<script>\n=cmd"
    steps = [_failing(1, 10, 10, hostile)]
    table = render_table(steps, None)
    assert "\x1b" not in table and "\x07" not in table
    assert "\\x1b]0;owned\\x07\\x1b[2J<script>\\x0a=cmd" in table
    assert "\x1b" not in render_csv(steps) and "\x1b" not in knee_text(None, steps)


def test_an_error_text_that_looks_like_a_formula_is_defused_in_the_csv() -> None:
    # The one CSV dialect's guard (formats/csvout.py): the server's words are shown, never run.
    steps = [_failing(1, 10, 10, '=HYPERLINK("http://x","y")')]
    assert render_csv(steps).splitlines()[1].endswith(',401,"\'=HYPERLINK(""http://x"",""y"")"')
