"""Ending a served connection (vllm_ledger/http/closing.py) on a socket pair: what the client
sent and no one read is dropped before the close, so the client reads the answer and then the
end, not a reset."""

from __future__ import annotations

import socket
import time

from vllm_ledger.http.closing import answer_and_close, close_draining


def _read_to_end(sock: socket.socket) -> bytes:
    sock.settimeout(5)
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


def test_unread_bytes_are_dropped_and_the_answer_kept() -> None:
    client, server = socket.socketpair()
    with client:
        client.sendall(b"a request no one read")
        server.sendall(b"the answer")
        time.sleep(0.05)
        close_draining(server, linger=False)
        assert server.fileno() == -1
        assert _read_to_end(client) == b"the answer"


def test_after_a_refusal_it_lingers_at_most_linger_s_for_what_still_comes() -> None:
    client, server = socket.socketpair()
    with client:
        began = time.monotonic()
        close_draining(server, linger=True)  # the client sends nothing more, nor closes
        assert 0.9 <= time.monotonic() - began < 3.0
        assert _read_to_end(client) == b""


def test_an_answer_at_once_is_sent_whole_then_the_end() -> None:
    client, server = socket.socketpair()
    with client:
        client.sendall(b"GET / HTTP/1.1\r\n\r\n")
        answer_and_close(server, b"HTTP/1.0 503 Service Unavailable\r\n\r\n")
        assert server.fileno() == -1
        assert _read_to_end(client) == b"HTTP/1.0 503 Service Unavailable\r\n\r\n"
