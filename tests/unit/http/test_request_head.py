"""Reading a request's head (vllm_ledger/http/request_head.py) off one end of a socket pair: the
request line and headers, the one Content-Length, what is refused, and the total deadline."""

from __future__ import annotations

import io
import socket
import time
from collections.abc import Iterator

import pytest

from vllm_ledger.http.request_head import (
    MAX_HEADERS,
    DeadlineReader,
    Head,
    Refusal,
    body_length,
    content_length,
    joined_headers,
    read_head,
)


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    with a, b:
        yield a, b


def _head(pair: tuple[socket.socket, socket.socket], sent: bytes, seconds: float = 5.0) -> Head:
    client, server = pair
    client.sendall(sent)
    got = read_head(io.BufferedReader(DeadlineReader(server, time.monotonic() + seconds)))
    assert got is not None
    return got


def test_the_request_line_and_headers_are_read(pair: tuple[socket.socket, socket.socket]) -> None:
    head = _head(pair, b"\r\nPOST /echo?a=1 HTTP/1.0\r\nHost: h\r\nX-Two:  1 \r\nx-two: 2\r\n\r\n")
    assert head == Head(
        "POST", "/echo?a=1", "HTTP/1.0", [("host", "h"), ("x-two", "1"), ("x-two", "2")]
    )
    assert joined_headers(head.fields) == {"host": "h", "x-two": "1, 2"}


def test_a_client_that_closes_first_sent_nothing(pair: tuple[socket.socket, socket.socket]) -> None:
    client, server = pair
    client.close()
    assert read_head(io.BufferedReader(DeadlineReader(server, time.monotonic() + 5))) is None


@pytest.mark.parametrize(
    ("sent", "status", "code"),
    [
        (b"GET /x HTTP/2.0\r\n\r\n", 505, "http_version_not_supported"),
        (b"GET /x\r\n\r\n", 400, "bad_request_line"),
        (b"GET /x HTTP/1.1\r\nName : v\r\n\r\n", 400, "bad_header"),
        (
            b"GET /x HTTP/1.1\r\n" + b"A: 1\r\n" * (MAX_HEADERS + 1) + b"\r\n",
            431,
            "too_many_headers",
        ),
    ],
)
def test_a_head_it_cannot_take_is_refused(
    pair: tuple[socket.socket, socket.socket], sent: bytes, status: int, code: str
) -> None:
    with pytest.raises(Refusal) as exc:
        _head(pair, sent)
    assert (exc.value.status, exc.value.code) == (status, code)


def test_a_head_that_drips_past_the_deadline_times_out(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    with pytest.raises(TimeoutError):
        _head(pair, b"GET /x HTTP/1.1\r\n", seconds=0.2)


def test_the_one_content_length_and_the_body_it_may_have() -> None:
    assert content_length([("content-length", "3"), ("content-length", "3, 3")]) == 3
    assert content_length([("host", "h")]) is None
    for fields, code in (
        ([("content-length", "3, 4")], "bad_length"),
        ([("content-length", "+3")], "bad_length"),
        ([("transfer-encoding", "chunked")], "length_required"),
    ):
        with pytest.raises(Refusal) as exc:
            content_length(fields)
        assert exc.value.code == code
    post = Head("POST", "/echo", "HTTP/1.1", [])
    assert body_length(post, "/echo", 0) is None  # a route that takes no body needs no length
    with pytest.raises(Refusal) as exc:
        body_length(post, "/echo", 1024)
    assert (exc.value.status, exc.value.code) == (411, "length_required")
    big = Head("POST", "/echo", "HTTP/1.1", [("content-length", "1025")])
    with pytest.raises(Refusal) as exc:
        body_length(big, "/echo", 1024)
    assert (exc.value.status, exc.value.extra) == (413, {"limit_bytes": 1024})
    assert body_length(big, "/echo", 2048) == 1025
