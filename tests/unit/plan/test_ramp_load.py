"""The ramp's load (plan/ramp_load.py) against a stand-in server on 127.0.0.1 that refuses every
request: each failure counted with its status, the answer read bounded, the key sent as a bearer
token. The real vLLM with --api-key is tests/e2e/test_cost_ramp.py's."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from vllm_ledger.plan.ramp import errors_verdict, find_knee
from vllm_ledger.plan.ramp_load import ERROR_BODY_BYTES, Load, bearer, run_ramp


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
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
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
