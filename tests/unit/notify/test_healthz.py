"""The ``notifier status`` side of ``GET /healthz`` (notify/healthz.py)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from vllm_ledger.notify.healthz import live_loops


def _serving(body: bytes) -> Iterator[int]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/healthz" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    ).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def loops_port() -> Iterator[int]:
    yield from _serving(b'{"loops": {"poll": {"ok": true}, "odd": 3}}')


@pytest.fixture
def no_loops_port() -> Iterator[int]:
    yield from _serving(b'{"loops": []}')


def test_the_loops_are_read_and_what_is_not_a_loop_is_left_out(loops_port: int) -> None:
    assert live_loops("127.0.0.1", loops_port) == {"poll": {"ok": True}}


def test_an_answer_without_a_loops_object_is_none(no_loops_port: int) -> None:
    assert live_loops("127.0.0.1", no_loops_port) is None


def test_a_notifier_that_does_not_answer_is_none() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert live_loops("127.0.0.1", port) is None
