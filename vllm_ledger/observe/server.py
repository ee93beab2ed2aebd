"""The exporter's HTTP server: /metrics on a thread per connection, with bounds on everything.

prometheus_client's own server (``start_http_server``) listens with the standard library's
backlog of 5 and reads each request with no timeout, so a client that opens a connection and
sends half a request line holds a thread forever, and one that drips a byte every few seconds
beats any idle timeout. This one:

- listens with a backlog of ``LISTEN_BACKLOG`` connections;
- gives each connection ``REQUEST_DEADLINE_S`` in all to deliver its request line and headers
  (a total deadline, not an idle timeout: a drip of a byte every 2 s is dropped on time), then
  ``WRITE_TIMEOUT_S`` in all for each write of the answer, and closes it after one request;
- serves at most ``MAX_CONNECTIONS`` connections at once; one more is answered ``503`` at once
  and closed, so slow clients can hold at most that many threads, each for a bounded time.

The answer is prometheus_client's text for the registry (content negotiation, gzip and
``name[]`` as in its own server), on any path but ``/favicon.ico``, as before.
"""

from __future__ import annotations

import gzip
import io
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

LISTEN_BACKLOG = 128
REQUEST_DEADLINE_S = 10.0
WRITE_TIMEOUT_S = 10.0
MAX_CONNECTIONS = 128
_BUSY = b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class _DeadlineReader(io.RawIOBase):
    """A socket's reading side that gives up at a fixed monotonic instant, however the bytes
    trickle in: each read waits at most for what is left of the deadline."""

    def __init__(self, sock: socket.socket, deadline_monotonic: float) -> None:
        super().__init__()
        self._sock = sock
        self.deadline_monotonic = deadline_monotonic

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        left = self.deadline_monotonic - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive in time")
        self._sock.settimeout(left)
        return self._sock.recv_into(buf)


class _Handler(BaseHTTPRequestHandler):
    server: MetricsServer

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the plain reader: replaced by one with a deadline
        deadline = time.monotonic() + self.server.request_deadline_s
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, deadline))

    def do_GET(self) -> None:
        self.connection.settimeout(self.server.write_timeout_s)  # the request is in
        url = urlsplit(self.path)
        if url.path == "/favicon.ico":
            status, headers, body = 200, [("Content-Length", "0")], b""
        else:
            try:
                status, headers, body = self.server.render(
                    self.headers.get("Accept"),
                    self.headers.get("Accept-Encoding"),
                    parse_qs(url.query),
                )
            except Exception as exc:  # a bug in a collector: 500, said once
                self.server.say_once(f"error serving a scrape: {type(exc).__name__}: {exc}")
                body = f"cannot build the metrics: {type(exc).__name__}\n".encode()
                status = 500
                headers = [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))]
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Log nothing: a scrape every 15 s is no news, nor a client that gave up."""


class MetricsServer(socketserver.ThreadingMixIn, HTTPServer):
    """Serves a prometheus_client registry. ``start`` runs it on a daemon thread."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG  # socketserver passes this to listen()

    def __init__(
        self,
        registry: Any,
        host: str,
        port: int,
        *,
        request_deadline_s: float = REQUEST_DEADLINE_S,
        write_timeout_s: float = WRITE_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, _type, _proto, _name, sockaddr = infos[0]
        self.address_family = family
        self.registry = registry
        self.request_deadline_s = request_deadline_s
        self.write_timeout_s = write_timeout_s
        self.max_connections = max_connections
        self.on_error = on_error
        self._slots = threading.BoundedSemaphore(max_connections)
        self._thread: threading.Thread | None = None
        self._errors_said: set[str] = set()
        super().__init__((str(sockaddr[0]), int(sockaddr[1])), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks the host's name up (socket.getfqdn), which can wait on
        # DNS for seconds; the name is never used.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]

    @property
    def port(self) -> int:
        return int(self.server_port)

    def render(
        self, accept: str | None, accept_encoding: str | None, params: dict[str, list[str]]
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """The registry's text, as prometheus_client's own server answers it."""
        from prometheus_client.exposition import choose_encoder, gzip_accepted

        encoder, content_type = choose_encoder(accept or "")
        registry = self.registry
        if "name[]" in params:
            registry = registry.restricted_registry(params["name[]"])
        body = encoder(registry)
        headers = [("Content-Type", content_type)]
        if gzip_accepted(accept_encoding or ""):
            body = gzip.compress(body)
            headers.append(("Content-Encoding", "gzip"))
        headers.append(("Content-Length", str(len(body))))
        return 200, headers, body

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            # Full: say so at once and close, rather than queue behind slow clients.
            try:
                request.setblocking(False)
                request.send(_BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up or timed out is no error; anything else is said once."""
        exc = sys.exc_info()[1]
        if exc is None or isinstance(exc, OSError):
            return
        self.say_once(f"error serving a scrape: {type(exc).__name__}: {exc}")

    def say_once(self, line: str) -> None:
        if self.on_error is not None and line not in self._errors_said:
            self._errors_said.add(line)
            self.on_error(line)

    @property
    def serving(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> threading.Thread:
        """Serve on a daemon thread; ``stop`` ends it."""
        self._thread = threading.Thread(
            target=self.serve_forever, name="vllm-ledger-exporter", daemon=True
        )
        self._thread.start()
        return self._thread

    def stop(self) -> None:
        """Stop accepting, close the listening socket, and wait for the serving thread."""
        if self._thread is not None:
            self.shutdown()  # waits for serve_forever, so only once it runs
        self.server_close()
        if self._thread is not None:
            self._thread.join(5.0)


__all__ = [
    "LISTEN_BACKLOG",
    "MAX_CONNECTIONS",
    "REQUEST_DEADLINE_S",
    "WRITE_TIMEOUT_S",
    "MetricsServer",
]
