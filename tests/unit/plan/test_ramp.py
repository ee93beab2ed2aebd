"""The ramp's error threshold and verdict (plan/ramp.py), where its API key comes from
(commands/ramp.py), and a failed request's answer read bounded (plan/ramp_load.py) from a
stand-in server on 127.0.0.1. The real vLLM with --api-key is tests/e2e/test_cost_ramp.py's."""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import run_cli
from vllm_ledger.commands.ramp import api_key
from vllm_ledger.deploy.host import Host
from vllm_ledger.errors import BadArgument
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


def _args(key_file: Path | None = None) -> argparse.Namespace:
    return argparse.Namespace(api_key_file=key_file)


def test_the_key_from_a_file_the_host_file_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    assert api_key(_args(), None) is None
    monkeypatch.setenv("VLLM_API_KEY", "")  # empty: no key, as vLLM reads it
    assert api_key(_args(), None) is None
    monkeypatch.setenv("VLLM_API_KEY", "sk-env")
    assert api_key(_args(), None) == "sk-env"
    key = tmp_path / "key"
    key.write_text("sk-file\n\n")
    assert api_key(_args(key), None) == "sk-file"  # the file before the environment
    # The host file's key, before $VLLM_API_KEY: its variable, or its file.
    monkeypatch.setenv("TINY_KEY", "sk-host")
    assert api_key(_args(), Host(model="m", api_key_env="TINY_KEY")) == "sk-host"
    assert api_key(_args(), Host(model="m", api_key_file=str(key))) == "sk-file"
    assert api_key(_args(), Host(model="m")) == "sk-env"  # a host file without a key
    monkeypatch.delenv("TINY_KEY")
    with pytest.raises(BadArgument, match=r"api_key\.env TINY_KEY is not set here: export"):
        api_key(_args(), Host(model="m", api_key_env="TINY_KEY"))
    with pytest.raises(BadArgument, match=r"api_key\.file /nonexistent/key cannot be read"):
        api_key(_args(), Host(model="m", api_key_file="/nonexistent/key"))


def test_a_key_that_cannot_be_a_header_is_refused_without_showing_it(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text("sk-one\nsk-two\n")
    with pytest.raises(BadArgument, match="has a line break") as caught:
        api_key(_args(key), None)
    assert "sk-one" not in str(caught.value)
    key.write_text("\n")
    with pytest.raises(BadArgument, match="is empty"):
        api_key(_args(key), None)


def test_the_key_is_never_taken_from_the_command_line() -> None:
    for form in (["--api-key", "sk-SECRET"], ["--api-key=sk-SECRET"]):
        code, out, err = run_cli("ramp", "--url", "http://127.0.0.1:1", "--model", "m", *form)
        assert (code, out) == (2, "")
        assert "--api-key on the command line is readable by every user" in err
        assert "sk-SECRET" not in err
    code, _out, err = run_cli("ramp", "--model", "m")
    assert code == 2 and "give --url, or --host HOST.json to take it from the host file" in err


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
