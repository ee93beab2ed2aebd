"""A real TCP server on 127.0.0.1 (or ::1) that answers with exactly the bytes a test scripts:
a body dripped a byte every 0.2 s, a status line that is not HTTP, 101 headers, a redirect.

Each connection runs ``answer(conn, request)`` on its own thread, ``request`` being the request
line, headers and ``Content-Length`` body it read (``b""`` with ``read=False``: the answer reads
for itself, as a TLS server does after its handshake); the server keeps every request it read.
``DripServer`` answers every connection with a head, then drips a byte every 0.2 s until the
client goes away, whatever it was asked.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from types import TracebackType

Answer = Callable[[socket.socket, bytes], None]
DRIP_EVERY_S = 0.2


class RawServer:
    def __init__(self, answer: Answer, host: str = "127.0.0.1", *, read: bool = True) -> None:
        self.answer = answer
        self.read = read
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.create_server((host, 0), family=family)
        self.port = self.sock.getsockname()[1]
        self.where = f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"
        self.requests: list[bytes] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def url(self, path: str = "/") -> str:
        return f"http://{self.where}{path}"

    def _serve(self) -> None:
        self.sock.settimeout(0.05)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            try:
                request = read_request(conn) if self.read else b""
                self.requests.append(request)
                self.answer(conn, request)
            except OSError:
                return  # the client hung up: what a cut looks like from here

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()

    def __enter__(self) -> RawServer:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def read_request(conn: socket.socket) -> bytes:
    """The request line, the headers and a ``Content-Length`` body, as sent."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def canned(data: bytes) -> Answer:
    """Send ``data``, then close."""

    def answer(conn: socket.socket, _request: bytes) -> None:
        conn.sendall(data)

    return answer


def drip(head: bytes, body: bytes, stop: threading.Event | None = None) -> Answer:
    """Send ``head`` at once, then ``body`` a byte every ``DRIP_EVERY_S`` (again and again,
    until the client hangs up or ``stop`` is set)."""
    stopped = stop or threading.Event()

    def answer(conn: socket.socket, _request: bytes) -> None:
        conn.sendall(head)
        i = 0
        while not stopped.wait(DRIP_EVERY_S):
            conn.sendall(body[i % len(body) : i % len(body) + 1])
            i += 1

    return answer


def response(status: str, body: bytes = b"", headers: tuple[str, ...] = ()) -> bytes:
    """``HTTP/1.1 {status}`` with ``headers``, a Content-Length and ``body``."""
    lines = [f"HTTP/1.1 {status}", *headers, f"Content-Length: {len(body)}", "", ""]
    return "\r\n".join(lines).encode() + body


class DripServer:
    """Answers every connection with ``head``, then drips ``drip`` a byte every 0.2 s until the
    client goes away."""

    def __init__(self, head: bytes, drip: bytes) -> None:
        self.head, self.drip = head, drip
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            try:
                conn.sendall(self.head)
                i = 0
                while not self.stop.wait(0.2):
                    conn.sendall(self.drip[i % len(self.drip) : i % len(self.drip) + 1])
                    i += 1
            except OSError:
                return  # the client hung up: what we want

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


# What a DripServer answers: headers that never end, or a body that never ends.
HEADERS_DRIP = (b"HTTP/1.1 200 OK\r\n", b"X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n")
BODY_DRIP = (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", b"{")
