"""The one bounded HTTP server (``vllm_ledger.http.server``) against real sockets on loopback.

Every bound a client controls is tried with raw bytes: a total deadline that cuts a drip at
any pace, a connection slot taken before a thread starts (503 at once past the bound),
malformed request lines, headers and ``Content-Length`` (4xx and one log line, never a
traceback), clients that hang up (one DEBUG line), IPv6, no name lookup on bind, and a stop
that does not wait for the accept loop's next poll. Short deadlines are passed to the
constructor; bounds on elapsed time are generous: they catch a hang, not speed.
"""

from __future__ import annotations

import itertools
import json
import logging
import socket
import struct
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from vllm_ledger.http.request_head import MAX_HEADERS, MAX_LINE_BYTES
from vllm_ledger.http.server import (
    LISTEN_BACKLOG,
    Request,
    Response,
    Route,
    Server,
)

SLACK_S = 5.0
_names = itertools.count()
MakeServer = Callable[..., Server]


def _hello(request: Request) -> Response:
    return Response(200, [("Content-Type", "text/plain")], b"hello\n")


def _echo(request: Request) -> Response:
    doc = {
        "body": request.body.decode("latin-1"),
        "query": request.query,
        "headers": dict(request.headers),
        "client": list(request.client),
    }
    return Response(200, [("Content-Type", "application/json")], json.dumps(doc).encode())


def _big(request: Request) -> Response:
    return Response(200, [], b"x" * (16 * 1024 * 1024))


def _boom(request: Request) -> Response:
    raise RuntimeError("a bug in a handler")


ROUTES = {
    ("GET", "/hello"): Route(_hello),
    ("POST", "/echo"): Route(_echo, max_body_bytes=1024),
    ("GET", "/big"): Route(_big),
    ("GET", "/boom"): Route(_boom),
}


@pytest.fixture
def make_server() -> Iterator[MakeServer]:
    made: list[Server] = []

    def make(host: str = "127.0.0.1", **kwargs: Any) -> Server:
        server = Server(ROUTES, host, 0, name=f"test-http-{next(_names)}", **kwargs)
        made.append(server)
        server.start()
        return server

    yield make
    for s in made:
        s.stop()


@pytest.fixture
def log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger="vllm_ledger.http")
    return caplog


def _read_all(sock: socket.socket) -> bytes:
    out = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        out += chunk
    return out


def exchange(port: int, data: bytes, host: str = "127.0.0.1") -> bytes:
    with socket.create_connection((host, port), timeout=SLACK_S) as s:
        s.sendall(data)
        return _read_all(s)


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def doc_of(answer: bytes) -> object:
    return json.loads(answer.split(b"\r\n\r\n", 1)[1])


def conn_threads(server: Server) -> int:
    return sum(t.name == f"{server.name}-conn" for t in threading.enumerate())


def wait_idle(server: Server) -> None:
    """Until no connection of ``server`` is served (its threads have ended)."""
    until = time.monotonic() + SLACK_S
    while conn_threads(server) and time.monotonic() < until:
        time.sleep(0.02)
    assert conn_threads(server) == 0


def no_traceback(log: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> None:
    assert [r for r in log.records if r.exc_info] == []
    assert "Traceback" not in log.text
    assert "Traceback" not in capfd.readouterr().err


def test_routes_answer_and_other_paths_and_methods_are_refused(make_server: MakeServer) -> None:
    server = make_server()
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/hello", timeout=SLACK_S) as r:
        assert (r.status, r.read(), r.headers["Connection"]) == (200, b"hello\n", "close")
    answer = exchange(
        server.port,
        b"POST /echo?a=1&a=2&b=x HTTP/1.1\r\nHost: h\r\nX-Two: 1\r\nx-two: 2\r\n"
        b"Content-Length: 3\r\n\r\nabc",
    )
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"\r\nContent-Length: " in answer and b"\r\nConnection: close\r\n" in answer
    doc = doc_of(answer)
    assert isinstance(doc, dict)
    assert doc["body"] == "abc" and doc["query"] == {"a": ["1", "2"], "b": ["x"]}
    assert doc["headers"]["x-two"] == "1, 2" and doc["headers"]["host"] == "h"
    assert doc["client"][0] == "127.0.0.1"
    assert exchange(server.port, b"GET /hello HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.0 200 OK")
    missing = exchange(server.port, b"GET /nowhere HTTP/1.1\r\n\r\n")
    assert (status_of(missing), doc_of(missing)) == (404, {"error": "not_found"})
    wrong = exchange(server.port, b"DELETE /echo HTTP/1.1\r\n\r\n")
    assert (status_of(wrong), doc_of(wrong)) == (405, {"error": "method_not_allowed"})
    assert b"\r\nAllow: POST\r\n" in wrong


@pytest.mark.parametrize(
    ("headers", "status", "error"),
    [
        (b"Content-Length: \xb2", 400, "bad_length"),  # superscript two: str.isdigit() is True
        (b"Content-Length: \xd9\xa3", 400, "bad_length"),  # an Arabic-Indic digit in UTF-8
        (b"Content-Length: -1", 400, "bad_length"),
        (b"Content-Length: +3", 400, "bad_length"),
        (b"Content-Length: 1e3", 400, "bad_length"),
        (b"Content-Length: ", 400, "bad_length"),
        (b"Content-Length: 3\r\nContent-Length: 4", 400, "bad_length"),
        (b"Content-Length: 3, 4", 400, "bad_length"),
        (b"Content-Length: 1025", 413, "too_large"),
        (b"Content-Length: 99999999999999999999999999", 413, "too_large"),
        (b"X-Nothing: 0", 411, "length_required"),
        (b"Transfer-Encoding: chunked", 411, "length_required"),
        (b"Expect: something-else\r\nContent-Length: 3", 417, "expectation_failed"),
    ],
)
def test_a_bad_content_length_is_a_4xx_and_one_log_line_without_traceback(
    make_server: MakeServer,
    log: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    headers: bytes,
    status: int,
    error: str,
) -> None:
    server = make_server()
    answer = exchange(server.port, b"POST /echo HTTP/1.1\r\n" + headers + b"\r\n\r\nabc")
    assert status_of(answer) == status, answer[:200]
    doc = doc_of(answer)
    assert isinstance(doc, dict) and doc["error"] == error
    if status == 413:
        assert doc["limit_bytes"] == 1024
    wait_idle(server)
    said = [r for r in log.records if r.levelno >= logging.INFO]
    assert len(said) == 1, log.text
    assert f" {status} {error}: " in said[0].getMessage()
    no_traceback(log, capfd)


def test_content_length_repeated_with_one_value_is_one_length(make_server: MakeServer) -> None:
    server = make_server()
    for headers in (b"Content-Length: 3\r\nContent-Length: 3", b"Content-Length: 3, 3"):
        answer = exchange(server.port, b"POST /echo HTTP/1.1\r\n" + headers + b"\r\n\r\nabc")
        assert status_of(answer) == 200
        doc = doc_of(answer)
        assert isinstance(doc, dict) and doc["body"] == "abc"


@pytest.mark.parametrize(
    ("request_bytes", "status", "error"),
    [
        (b"GARBAGE\r\n\r\n", 400, "bad_request_line"),
        (b"GET /hello\r\n\r\n", 400, "bad_request_line"),  # HTTP/0.9
        (b"GET /hello HTTP/1.1 extra\r\n\r\n", 400, "bad_request_line"),
        (b"GET /he\x1b[2Jllo HTTP/1.1\r\n\r\n", 400, "bad_request_line"),
        (b"GET hello HTTP/1.1\r\n\r\n", 400, "bad_request_line"),
        (b"GET /hello HTTPS/1.1\r\n\r\n", 400, "bad_request_line"),
        (b"GET /hello HTTP/2.0\r\n\r\n", 505, "http_version_not_supported"),
        (b"GET /" + b"a" * MAX_LINE_BYTES + b" HTTP/1.1\r\n\r\n", 414, "request_line_too_long"),
        (b"GET /hello HTTP/1.1\r\nNo-Colon\r\n\r\n", 400, "bad_header"),
        (b"GET /hello HTTP/1.1\r\nName : v\r\n\r\n", 400, "bad_header"),
        (b"GET /hello HTTP/1.1\r\nA: 1\r\n folded\r\n\r\n", 400, "bad_header"),
        (b"GET /hello HTTP/1.1\r\nA: 1\x002\r\n\r\n", 400, "bad_header"),
        (b"GET / HTTP/1.1\r\nA: " + b"v" * MAX_LINE_BYTES + b"\r\n\r\n", 431, "header_too_long"),
        (
            b"GET /hello HTTP/1.1\r\n" + b"A: 1\r\n" * (MAX_HEADERS + 1) + b"\r\n",
            431,
            "too_many_headers",
        ),
        (b"GET /hello HTTP/1.1\r\nContent-Length: 1\r\n\r\nx", 413, "too_large"),
    ],
)
def test_a_malformed_request_is_a_4xx_and_one_safe_log_line(
    make_server: MakeServer,
    log: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    request_bytes: bytes,
    status: int,
    error: str,
) -> None:
    server = make_server()
    answer = exchange(server.port, request_bytes)
    doc = doc_of(answer)
    assert isinstance(doc, dict) and (status_of(answer), doc["error"]) == (status, error), answer
    wait_idle(server)
    said = [r.getMessage() for r in log.records if r.levelno >= logging.INFO]
    assert len(said) == 1, log.text
    assert all(0x20 <= ord(c) < 0x7F for c in said[0]), said  # escaped, cut short
    assert len(said[0]) < 400
    no_traceback(log, capfd)


def test_log_message_escapes_client_text(
    make_server: MakeServer, log: pytest.LogCaptureFixture
) -> None:
    server = make_server()
    server.log_message("%s said %s", "c", "\x1b]0;owned\x07\r\nforged line \u202e")
    (line,) = [r.getMessage() for r in log.records]
    assert line.endswith(r"c said \x1b]0;owned\x07\x0d\x0aforged line \u202e")


def _drip(sock: socket.socket, data: bytes, pace_s: float, stop: threading.Event) -> None:
    for i in range(len(data)):
        if stop.wait(pace_s):
            return
        try:
            sock.send(data[i : i + 1])
        except OSError:
            return


@pytest.mark.parametrize("pace_s", [0.1, 0.45])
@pytest.mark.parametrize("part", ["request line", "headers", "body"])
def test_a_total_deadline_cuts_a_drip_at_any_pace(
    make_server: MakeServer,
    log: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    pace_s: float,
    part: str,
) -> None:
    deadline_s = 1.0
    server = make_server(request_deadline_s=deadline_s)
    request = b"POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\n"
    first, rest = {
        "request line": (b"POS", request[3:]),
        "headers": (request[:25], request[25:]),
        "body": (request, b"x" * 1000),
    }[part]
    stop = threading.Event()
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(first)
        dripper = threading.Thread(target=_drip, args=(s, rest, pace_s, stop), daemon=True)
        dripper.start()
        s.settimeout(deadline_s + SLACK_S)
        try:
            answer = _read_all(s)
        finally:
            stop.set()
            dripper.join(SLACK_S)
        took = time.monotonic() - started
    assert (status_of(answer), doc_of(answer)) == (408, {"error": "request_timeout"})
    assert deadline_s - 0.2 <= took <= deadline_s + SLACK_S
    wait_idle(server)
    said = [r.getMessage() for r in log.records if r.levelno >= logging.INFO]
    assert len(said) == 1 and "not in within 1 s; answered 408" in said[0], said
    no_traceback(log, capfd)


def test_at_the_bound_the_next_connection_gets_503_at_once_and_no_thread(
    make_server: MakeServer, log: pytest.LogCaptureFixture
) -> None:
    server = make_server(max_connections=3, request_deadline_s=30.0)
    assert server.request_queue_size == LISTEN_BACKLOG >= 128
    holders = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(3)]
    try:
        until = time.monotonic() + SLACK_S
        while conn_threads(server) < 3 and time.monotonic() < until:
            time.sleep(0.02)
        assert conn_threads(server) == 3
        for _ in range(20):
            # Nothing sent: the answer comes at once, long before any holder's 30 s deadline,
            # and the accept loop gave it without starting a thread.
            with socket.create_connection(("127.0.0.1", server.port), timeout=SLACK_S) as extra:
                answer = _read_all(extra)
            assert answer.startswith(b"HTTP/1.0 503 Service Unavailable\r\n"), answer
            assert b"\r\nRetry-After: 1\r\n" in answer
            assert doc_of(answer) == {"error": "busy"}
            assert conn_threads(server) == 3
    finally:
        for h in holders:
            h.close()
    wait_idle(server)
    assert exchange(server.port, b"GET /hello HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.0 200")
    assert sum("answered 503" in r.getMessage() for r in log.records) == 20


def test_a_slot_is_taken_before_the_thread_starts(
    make_server: MakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = make_server(max_connections=2)
    free_at_start: list[int] = []
    real_start = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        if thread.name == f"{server.name}-conn":
            # The slot is already taken: the bounded semaphore has one left of two.
            free_at_start.append(server._slots._value)
        real_start(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    assert exchange(server.port, b"GET /hello HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.0 200")
    assert free_at_start == [1]


def test_clients_that_hang_up_are_one_debug_line_each(
    make_server: MakeServer, log: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    server = make_server()

    def lines_with(text: str, n: int) -> None:
        until = time.monotonic() + SLACK_S
        while time.monotonic() < until:
            if sum(text in r.getMessage() for r in log.records) >= n:
                return
            time.sleep(0.02)

    # Half a request line, then gone.
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(b"GET /hel")
    lines_with("the client went away", 1)
    # A body announced and cut short.
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(b"POST /echo HTTP/1.1\r\nContent-Length: 100\r\n\r\nabc")
        s.shutdown(socket.SHUT_WR)
        assert status_of(_read_all(s)) == 400
    # A large answer asked for, then a reset: the server's write fails (broken pipe / reset).
    for _ in range(3):
        s = socket.create_connection(("127.0.0.1", server.port))
        s.sendall(b"GET /big HTTP/1.1\r\n\r\n")
        s.recv(1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    lines_with("the client went away", 4)
    # Connected, nothing sent, closed: a port check.
    socket.create_connection(("127.0.0.1", server.port)).close()
    lines_with("closed without a request", 1)
    wait_idle(server)
    lines = [r.getMessage() for r in log.records]
    gone = [line for line in lines if "the client went away" in line]
    assert len(gone) == 4, lines  # the half line and the three resets
    assert sum("closed without a request" in line for line in lines) == 1, lines
    assert [r for r in log.records if r.levelno >= logging.WARNING] == []
    no_traceback(log, capfd)


def test_a_handler_that_raises_is_a_500_and_said(
    make_server: MakeServer, log: pytest.LogCaptureFixture
) -> None:
    server = make_server()
    answer = exchange(server.port, b"GET /boom HTTP/1.1\r\n\r\n")
    assert (status_of(answer), doc_of(answer)) == (500, {"error": "internal_error"})
    wait_idle(server)
    (bug,) = [r for r in log.records if r.levelno >= logging.ERROR]
    assert bug.exc_info is not None  # our bug: its traceback is wanted


def test_expect_100_continue_is_answered_before_the_body(make_server: MakeServer) -> None:
    server = make_server()
    with socket.create_connection(("127.0.0.1", server.port), timeout=SLACK_S) as s:
        s.sendall(b"POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
        assert s.recv(64) == b"HTTP/1.1 100 Continue\r\n\r\n"
        s.sendall(b"abc")
        answer = _read_all(s)
    assert status_of(answer) == 200
    doc = doc_of(answer)
    assert isinstance(doc, dict) and doc["body"] == "abc"


def _has_ipv6_loopback() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="this machine has no IPv6 on loopback")
@pytest.mark.parametrize("host", ["::1", "[::1]"])
def test_ipv6_loopback(make_server: MakeServer, host: str) -> None:
    server = make_server(host)
    assert server.address_family == socket.AF_INET6
    with urllib.request.urlopen(f"http://[::1]:{server.port}/hello", timeout=SLACK_S) as r:
        assert r.read() == b"hello\n"
    answer = exchange(server.port, b"POST /echo HTTP/1.1\r\nContent-Length: 0\r\n\r\n", host="::1")
    doc = doc_of(answer)
    assert isinstance(doc, dict) and doc["client"][0] == "::1"


def test_no_name_is_looked_up_on_bind(monkeypatch: pytest.MonkeyPatch) -> None:
    def getfqdn(name: str = "") -> str:
        raise AssertionError("socket.getfqdn called")

    monkeypatch.setattr(socket, "getfqdn", getfqdn)
    server = Server(ROUTES, "127.0.0.1", 0)
    try:
        assert server.port > 0
    finally:
        server.stop()


def test_stop_wakes_the_accept_loop_at_once() -> None:
    """``stop`` does not wait for the accept loop's next poll: a loop that polls once a minute
    still stops within the slack, and its port is closed."""
    server = Server(ROUTES, "127.0.0.1", 0, name=f"test-http-{next(_names)}")
    server._thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 60.0}, daemon=True
    )
    server._thread.start()
    assert exchange(server.port, b"GET /hello HTTP/1.1\r\n\r\n").endswith(b"hello\n")
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < SLACK_S
    assert not server.serving
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", server.port), timeout=SLACK_S)
