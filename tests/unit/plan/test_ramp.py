"""The ramp's error threshold and verdict (plan/ramp.py), and a failed request's answer read
bounded (plan/ramp_load.py) from a stand-in server on 127.0.0.1. Where its API key comes from is
tests/unit/commands/test_ramp.py's; the real vLLM with --api-key is
tests/e2e/test_cost_ramp.py's."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

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
from vllm_ledger.plan.ramp_load import ERROR_BODY_BYTES, Load, bearer, run_ramp


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


@pytest.fixture
def refusing() -> Iterator[tuple[str, list[str | None]]]:
    """A stand-in that answers every completion 401 with a 1 MiB body and serves an empty
    /metrics; it records each request's Authorization header."""
    seen: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.append(self.headers.get("Authorization"))
            body = b'{"error": "Unauthorized \x1b[2J"}' + b" " * (1 << 20)
            self.send_response(401)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:  # the client stopped reading: what the test wants
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        thread.join()


def test_a_refused_request_is_counted_with_its_status_and_the_start_of_its_answer(
    refusing: tuple[str, list[str | None]],
) -> None:
    url, seen = refusing
    load = Load(url, "m", url + "/metrics", headers=bearer("sk-wrong"), max_tokens=4)
    [step] = run_ramp(load, [2], 0.3, progress_bars=False)
    assert step.requests >= 2 and step.errors == step.requests and step.output_tokens == 0
    assert step.first_error_status == 401
    assert step.first_error == '{"error": "Unauthorized \x1b[2J"}'  # escaped when shown
    assert ERROR_BODY_BYTES < 1 << 20  # the rest of the body was never read
    assert set(seen) == {"Bearer sk-wrong"}
    assert find_knee([step]) is None and errors_verdict([step]) is not None
    assert json.dumps(step.first_error).isascii()
