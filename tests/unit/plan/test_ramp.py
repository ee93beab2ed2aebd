"""The ramp's error threshold and verdict (plan/ramp.py). A failed request's answer read
bounded is tests/unit/plan/test_ramp_load.py's, where its API key comes from
tests/unit/commands/test_ramp.py's; the real vLLM with --api-key is
tests/e2e/test_cost_ramp.py's."""

from __future__ import annotations

from dataclasses import replace

from vllm_ledger.plan.ramp import (
    ERROR_EXCERPT_CHARS,
    MAX_ERROR_FRACTION,
    StepResult,
    error_excerpt,
    error_text,
    errors_verdict,
    find_knee,
    too_many_errors,
)


def _step(c: int, tokens: int, requests: int = 100, errors: int = 0) -> StepResult:
    return StepResult(
        concurrency=c, seconds=10.0, requests=requests, errors=errors, prompt_tokens=tokens,
        output_tokens=tokens, server_prompt_tokens=tokens, server_output_tokens=tokens,
        ttft_p50_s=0.01, ttft_p99_s=0.02, tpot_s=0.005, client_tpot_s=None,
        kv_usage_max=0.2, kv_usage_mean=0.1, waiting_max=0.0, waiting_mean=0.0,
        first_error_status=503 if errors else None, first_error="busy" if errors else "",
    )  # fmt: skip


def test_one_percent_of_errors_still_draws_a_knee_and_more_does_not() -> None:
    assert MAX_ERROR_FRACTION == 0.01
    flat = [_step(1, 1000), _step(2, 1000, requests=1000, errors=10)]  # exactly 1 %
    knee = find_knee(flat)
    assert knee is not None and knee.concurrency == 2
    assert too_many_errors(flat) == [] and errors_verdict(flat) is None
    over = [_step(1, 1000), _step(2, 1000, requests=1000, errors=11)]  # 1.1 %
    assert find_knee(over) is None
    assert too_many_errors(over) == [over[1]]
    assert errors_verdict(over) == (
        "none drawn: 11 of 1000 requests failed at concurrency 2 (1.1 %, over 1 %), first "
        "HTTP 503: busy; the figures are those of the requests that did not fail: fix the "
        "cause and run again"  # the API key is named for a 401 or 403 only
    )


def test_the_verdict_names_the_worst_step_and_counts_the_others() -> None:
    steps = [_step(1, 100, 10, 2), _step(2, 100, 10, 10), _step(4, 100, 10, 5)]
    verdict = errors_verdict(steps)
    assert verdict is not None
    assert verdict.startswith("none drawn: 10 of 10 requests failed at concurrency 2 (100.0 %")
    assert "(and 2 more steps)" in verdict
    # A step that sent nothing has no error fraction, not a division by zero.
    assert errors_verdict([_step(1, 0, requests=0)]) is None


def test_error_text_and_excerpt() -> None:
    assert error_text(_step(1, 10)) == ""
    assert error_text(replace(_step(1, 10, 5, 5), first_error_status=None)) == "no answer: busy"
    long = "x" * (ERROR_EXCERPT_CHARS + 50)
    assert error_excerpt(long) == "x" * ERROR_EXCERPT_CHARS + "..."
    assert error_excerpt("  short\n") == "short"
