"""``notify/server.py``: the notifier's route table over the one bounded server: each
``path: (body bound, handler)`` served as POST with the handler's (status, JSON) as the answer,
its refusals one line on stderr, ``GET /healthz``, and the deadline and connection bound
passed through; served on 127.0.0.1 with handlers that record what they were given."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from vllm_ledger.notify.server import (
    MAX_CONNECTIONS,
    REQUEST_DEADLINE_S,
    Endpoint,
    Route,
    route_table,
)


class Recorder:
    """A route handler: keeps (body, headers) of each call and answers ``answer``."""

    def __init__(self, answer: tuple[int, dict[str, Any]]) -> None:
        self.answer = answer
        self.calls: list[tuple[bytes, dict[str, str]]] = []

    def __call__(self, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        self.calls.append((body, headers))
        return self.answer


def raw(port: int, data: bytes) -> tuple[bytes, bytes]:
    """Send ``data``, read to the end: (head, body) of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10.0) as s:
        s.sendall(data)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return head, body


def status_of(head: bytes) -> int:
    return int(head.split(b" ", 2)[1])


def post(port: int, path: str, body: bytes, *headers: str) -> tuple[bytes, bytes]:
    lines = [f"POST {path} HTTP/1.1", "Host: notifier", *headers, f"Content-Length: {len(body)}"]
    return raw(port, ("\r\n".join(lines) + "\r\n\r\n").encode() + body)


@pytest.fixture
def served() -> Iterator[tuple[Endpoint, Recorder, Recorder]]:
    ok = Recorder((202, {"status": "accepted", "seq": 7}))
    refuse = Recorder((401, {"error": "bad_signature"}))
    endpoint = Endpoint("127.0.0.1", 0, {"/ok": (64, ok), "/refuse": (16, refuse)})
    endpoint.start()
    try:
        yield endpoint, ok, refuse
    finally:
        endpoint.stop()


def test_the_table_is_each_path_as_post_with_its_bound_and_healthz() -> None:
    def handler(body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        return 200, {}

    routes: dict[str, tuple[int, Route]] = {"/command": (10, handler), "/alerts": (20, handler)}
    table = route_table(routes)
    assert {key: route.max_body_bytes for key, route in table.items()} == {
        ("POST", "/command"): 10,
        ("POST", "/alerts"): 20,
        ("GET", "/healthz"): 0,
    }
    assert route_table({}).keys() == {("GET", "/healthz")}


def test_the_handler_gets_the_body_and_lower_case_headers_and_its_answer_is_sent(
    served: tuple[Endpoint, Recorder, Recorder], capfd: pytest.CaptureFixture[str]
) -> None:
    endpoint, ok, _refuse = served
    head, body = post(endpoint.port, "/ok", b'{"a": 1}', "X-Ledger-Timestamp: 17", "X-Two: b")
    assert status_of(head) == 202
    assert b"\r\nContent-Type: application/json" in head
    assert body == b'{"status": "accepted", "seq": 7}\n'
    ((got_body, got_headers),) = ok.calls
    assert got_body == b'{"a": 1}'
    assert got_headers["x-ledger-timestamp"] == "17" and got_headers["x-two"] == "b"
    assert got_headers["content-length"] == "8"
    assert all(name == name.lower() for name in got_headers)
    assert capfd.readouterr().err == ""  # an accepted request says nothing


def test_a_refusal_is_one_line_on_stderr_without_body_or_headers(
    served: tuple[Endpoint, Recorder, Recorder], capfd: pytest.CaptureFixture[str]
) -> None:
    endpoint, _ok, refuse = served
    head, body = post(endpoint.port, "/refuse", b"secret-body", "X-Ledger-Signature: v1=abc")
    assert (status_of(head), json.loads(body)) == (401, {"error": "bad_signature"})
    assert len(refuse.calls) == 1
    err = capfd.readouterr().err
    assert err == "vllm-ledger notifier: refused /refuse: bad_signature\n"
    refuse.answer = (503, {"detail": "no error key"})
    head, body = post(endpoint.port, "/refuse", b"x")
    assert (status_of(head), json.loads(body)) == (503, {"detail": "no error key"})
    assert capfd.readouterr().err == "vllm-ledger notifier: refused /refuse: 503\n"


def test_each_route_reads_a_body_only_within_its_own_bound(
    served: tuple[Endpoint, Recorder, Recorder],
) -> None:
    endpoint, ok, refuse = served
    head, body = post(endpoint.port, "/refuse", b"x" * 17)
    assert (status_of(head), json.loads(body)) == (413, {"error": "too_large", "limit_bytes": 16})
    head, _body = post(endpoint.port, "/ok", b"x" * 17)  # the other route's bound is its own
    assert status_of(head) == 202
    head, body = post(endpoint.port, "/ok", b"x" * 65)
    assert (status_of(head), json.loads(body)) == (413, {"error": "too_large", "limit_bytes": 64})
    assert refuse.calls == [] and len(ok.calls) == 1


def test_healthz_and_the_wrong_method(served: tuple[Endpoint, Recorder, Recorder]) -> None:
    endpoint, ok, _refuse = served
    head, body = raw(endpoint.port, b"GET /healthz HTTP/1.1\r\nHost: n\r\n\r\n")
    assert (status_of(head), body) == (200, b'{"status": "ok"}\n')
    head, body = post(endpoint.port, "/healthz", b"")
    assert (status_of(head), json.loads(body)) == (405, {"error": "method_not_allowed"})
    head, body = raw(endpoint.port, b"GET /ok HTTP/1.1\r\nHost: n\r\n\r\n")
    assert (status_of(head), json.loads(body)) == (405, {"error": "method_not_allowed"})
    assert ok.calls == []


def test_the_defaults_are_the_modules_bounds() -> None:
    endpoint = Endpoint("127.0.0.1", 0, {})
    try:
        assert (endpoint.request_deadline_s, endpoint.max_connections) == (10.0, 128)
        assert (REQUEST_DEADLINE_S, MAX_CONNECTIONS) == (10.0, 128)
        assert endpoint.name == "vllm-ledger-notifier-http"
    finally:
        endpoint.server_close()


def test_the_deadline_and_the_connection_bound_are_passed_through() -> None:
    ok = Recorder((200, {"status": "ok"}))
    endpoint = Endpoint(
        "127.0.0.1", 0, {"/ok": (64, ok)}, request_deadline_s=0.5, max_connections=1
    )
    thread = endpoint.start()
    try:
        assert thread.name == "vllm-ledger-notifier-http"
        with socket.create_connection(("127.0.0.1", endpoint.port), timeout=10.0) as held:
            held.sendall(b"POST /ok HTTP/1.1\r\n")  # and no more: holds the one slot
            time.sleep(0.1)
            head, body = raw(endpoint.port, b"GET /healthz HTTP/1.1\r\n\r\n")
            assert (status_of(head), json.loads(body)) == (503, {"error": "busy"})
            began = time.monotonic()
            answer = b""
            while chunk := held.recv(65536):
                answer += chunk
            took = time.monotonic() - began
        assert status_of(answer) == 408
        assert took < 0.5 + 3.0, took  # cut by the deadline, not by the client
    finally:
        endpoint.stop()
    assert ok.calls == []
