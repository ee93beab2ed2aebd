"""One bounded HTTP/1.x server for every port vllm-ledger opens: a route table on a thread per
connection, with a bound on everything a client controls. Standard library only.

A route table maps ``(method, path)`` to a ``Route``: a handler and the largest body it takes.
A handler gets a ``Request`` (method, path, query, headers, body bytes, client address) and
returns a ``Response`` (status, headers, body). The path ``"*"`` stands for any path not listed
for that method. One request per connection: every answer says ``Connection: close``.

Bounds, each a constructor argument with the default named here:

- the listen backlog is ``LISTEN_BACKLOG`` (the standard library's 5 leaves a burst waiting on
  SYN retries);
- a connection takes its slot in the accept loop, before a thread starts; at most
  ``max_connections`` are served at once, and one more is answered ``503`` with
  ``Retry-After`` at once, its request unread, and closed;
- ``request_deadline_s`` in all for the request line, the headers and the body: a total
  deadline, not an idle timeout, so a client that drips a byte at any pace is cut when it
  passes (answered ``408``); then ``write_timeout_s`` in all for the answer;
- the request line and each header line ``MAX_LINE_BYTES``, ``MAX_HEADERS`` header lines
  (``http/request_head.py`` reads the head), a body of at most the route's ``max_body_bytes``
  (``413`` past it, unread); ``Content-Length`` is ASCII digits, one value (repeats that agree
  count once), required where a route takes a body (``411``); chunked bodies are not read
  (``411``).

Nothing a client sends makes a traceback. A malformed request is answered ``4xx`` with
``{"error": CODE}`` and logged as one line (INFO); a client that hangs up mid-way is one line at
DEBUG. Lines go to the ``vllm_ledger.http`` logger through ``Server.log_message``, with the
client's text escaped (no control characters) and cut short (``http/logsafe.py``). A handler
that raises is our bug: answered ``500`` and logged with its traceback.

A connection is closed as ``http/closing.py`` says: what the client sent and no one read is
dropped first, so that the close does not reset the connection before the answer is read.

Addresses are resolved with ``socket.getaddrinfo`` (``::1`` or ``[::1]`` listens on IPv6) and
no name is looked up on bind (``http.server.HTTPServer`` calls ``socket.getfqdn``, which can wait
seconds on DNS for a name never used).
"""

from __future__ import annotations

import io
import json
import logging
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, NamedTuple
from urllib.parse import parse_qs, urlsplit

from vllm_ledger.http.closing import answer_and_close, close_draining
from vllm_ledger.http.logsafe import peer, safe
from vllm_ledger.http.request_head import (
    BAD_IN_VALUE,
    TOKEN,
    DeadlineReader,
    Head,
    Refusal,
    body_length,
    joined_headers,
    read_head,
)

LISTEN_BACKLOG = 128
MAX_CONNECTIONS = 128
REQUEST_DEADLINE_S = 10.0
WRITE_TIMEOUT_S = 10.0
RETRY_AFTER_S = 1

LOGGER = logging.getLogger("vllm_ledger.http")


@dataclass(frozen=True)
class Request:
    """One request, read whole before its handler runs."""

    method: str
    path: str  # as sent, without the query; not percent-decoded
    query: dict[str, list[str]]
    headers: Mapping[str, str]  # lower-case name -> value; repeated lines joined with ", "
    body: bytes
    client: tuple[str, int]


class Response(NamedTuple):
    """What a handler returns; the server adds ``Content-Length`` and ``Connection: close``."""

    status: int
    headers: Sequence[tuple[str, str]] = ()
    body: bytes = b""


Handler = Callable[[Request], Response]


class Route(NamedTuple):
    """One entry of a route table: who answers, and the largest body it reads."""

    handler: Handler
    max_body_bytes: int = 0  # a route that takes no body refuses one (413)


Routes = Mapping[tuple[str, str], Route]


def json_response(
    status: int, doc: Mapping[str, Any], headers: Sequence[tuple[str, str]] = ()
) -> Response:
    """A small JSON answer (ASCII, one line)."""
    body = (json.dumps(doc, ensure_ascii=True) + "\n").encode()
    return Response(status, [("Content-Type", "application/json"), *headers], body)


def _head(version: str, status: int, headers: Sequence[tuple[str, str]], length: int) -> bytes:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    lines = [f"{version} {status} {phrase}".rstrip()]
    for name, value in headers:
        if name.lower() in ("content-length", "connection", "transfer-encoding"):
            continue  # the server's own
        if not TOKEN.fullmatch(name) or BAD_IN_VALUE.search(value):
            raise ValueError(f"a handler gave a header that cannot be sent: {name!r}")
        lines.append(f"{name}: {value}")
    lines += [f"Content-Length: {length}", "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1")


_BUSY_BODY = json_response(503, {"error": "busy"}).body
_BUSY = (
    _head(
        "HTTP/1.0",
        503,
        [("Content-Type", "application/json"), ("Retry-After", str(RETRY_AFTER_S))],
        len(_BUSY_BODY),
    )
    + _BUSY_BODY
)


class Server(socketserver.TCPServer):
    """Serves a route table, a thread per connection. ``start`` runs it on a daemon thread."""

    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG  # socketserver passes this to listen()

    def __init__(
        self,
        routes: Routes,
        host: str,
        port: int,
        *,
        name: str = "vllm-ledger-http",
        request_deadline_s: float = REQUEST_DEADLINE_S,
        write_timeout_s: float = WRITE_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
        logger: logging.Logger = LOGGER,
    ) -> None:
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        family, _type, _proto, _name, sockaddr = infos[0]
        self.address_family = family
        self.routes = dict(routes)
        self._paths = {path for _method, path in self.routes}
        self.name = name
        self.request_deadline_s = request_deadline_s
        self.write_timeout_s = write_timeout_s
        self.max_connections = max_connections
        self.logger = logger
        self.port = 0
        self._slots = threading.BoundedSemaphore(max_connections)
        self._thread: threading.Thread | None = None
        address: Any = sockaddr  # (host, port), or (host, port, flowinfo, scope_id) for IPv6
        super().__init__(address, socketserver.BaseRequestHandler)

    def server_bind(self) -> None:
        # socketserver's bind alone: http.server.HTTPServer's also calls socket.getfqdn().
        super().server_bind()
        self.port = int(self.server_address[1])

    # ---- the accept loop ------------------------------------------------------------------

    def process_request(self, request: Any, client_address: Any) -> None:
        """Take a slot, then start the connection's thread; with no slot free, 503 at once."""
        if not self._slots.acquire(blocking=False):
            self._busy(request, client_address)
            return
        try:
            threading.Thread(
                target=self._connection,
                args=(request, client_address),
                name=f"{self.name}-conn",
                daemon=True,
            ).start()
        except BaseException:
            self._slots.release()
            raise

    def _busy(self, sock: socket.socket, client_address: Any) -> None:
        """Answer 503 without reading the request and without waiting on the client."""
        self.log_message(
            "%s: %d connections open; answered 503", peer(client_address), self.max_connections
        )
        answer_and_close(sock, _BUSY)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A fault of the accept loop (a thread that cannot start): one line, no traceback."""
        exc = sys.exc_info()[1]
        self.log_message(
            "%s: cannot serve: %s: %s",
            peer(client_address),
            type(exc).__name__,
            exc,
            level=logging.WARNING,
        )

    # ---- one connection -------------------------------------------------------------------

    def _connection(self, sock: socket.socket, client_address: Any) -> None:
        linger = False
        try:
            linger = self._serve(sock, client_address)
        except Exception:  # a bug of ours: said, and the connection closed
            self.logger.exception("%s: %s: error serving", self.name, peer(client_address))
        finally:
            try:
                close_draining(sock, linger)
            finally:
                self._slots.release()

    def _serve(self, sock: socket.socket, client_address: Any) -> bool:
        """Read one request, answer it; True when the client may still be sending."""
        who = peer(client_address)
        deadline = time.monotonic() + self.request_deadline_s
        rfile = io.BufferedReader(DeadlineReader(sock, deadline))
        version = "HTTP/1.0"
        try:
            head = read_head(rfile)
            if head is None:
                self.log_message("%s: closed without a request", who, level=logging.DEBUG)
                return False
            version = head.version
            request, route = self._read_request(sock, rfile, head, client_address)
        except Refusal as r:
            self.log_message("%s: %d %s: %s", who, r.status, r.code, str(r))
            doc = {"error": r.code, **r.extra}
            return self._send(sock, who, version, json_response(r.status, doc, r.headers), True)
        except TimeoutError:
            self.log_message(
                "%s: the request was not in within %g s; answered 408",
                who,
                self.request_deadline_s,
            )
            self._send(sock, who, version, json_response(408, {"error": "request_timeout"}), False)
            return False
        except (EOFError, OSError) as exc:
            self._gone(who, exc)
            return False
        try:
            response = route.handler(request)
        except Exception:  # a bug in a handler: 500, with its traceback in the log
            self.logger.exception(
                "%s: %s: error in the handler of %s %s",
                self.name,
                who,
                request.method,
                safe(request.path),
            )
            response = json_response(500, {"error": "internal_error"})
        self.log_message(
            '%s: "%s %s" %d, %d bytes',
            who,
            request.method,
            request.path,
            response.status,
            len(response.body),
            level=logging.DEBUG,
        )
        return self._send(sock, who, version, response, False)

    def _read_request(
        self,
        sock: socket.socket,
        rfile: io.BufferedReader[DeadlineReader],
        head: Head,
        client_address: Any,
    ) -> tuple[Request, Route]:
        url = urlsplit(head.target)
        path = url.path
        if not path.startswith("/"):
            raise Refusal(400, "bad_request_line", f"bad request target {head.target!r}")
        route = self.routes.get((head.method, path)) or self.routes.get((head.method, "*"))
        if route is None:
            if path in self._paths or "*" in self._paths:
                allow = sorted({m for m, p in self.routes if p in (path, "*")})
                raise Refusal(
                    405,
                    "method_not_allowed",
                    f"{head.method} {path}",
                    headers=[("Allow", ", ".join(allow))],
                )
            raise Refusal(404, "not_found", f"{head.method} {path}")
        length = body_length(head, path, route.max_body_bytes)
        headers = joined_headers(head.fields)
        expect = headers.get("expect")
        if expect is not None:
            if expect.lower() != "100-continue":
                raise Refusal(417, "expectation_failed", f"Expect {expect!r}")
            if head.version == "HTTP/1.1" and length:
                sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = rfile.read(length) if length else b""
        if len(body) != (length or 0):
            raise Refusal(400, "short_body", f"{len(body)} of {length} body bytes, then closed")
        request = Request(
            method=head.method,
            path=path,
            query=parse_qs(url.query),
            headers=headers,
            body=body,
            client=(str(client_address[0]), int(client_address[1])),
        )
        return request, route

    def _send(
        self, sock: socket.socket, who: str, version: str, response: Response, linger: bool
    ) -> bool:
        """Write the answer within the write timeout; ``linger`` back, or False if it failed."""
        data = _head(version, response.status, response.headers, len(response.body))
        try:
            sock.settimeout(self.write_timeout_s)
            sock.sendall(data + response.body)
        except OSError as exc:
            self._gone(who, exc)
            return False
        return linger

    def _gone(self, who: str, exc: BaseException) -> None:
        self.log_message(
            "%s: the client went away (%s: %s)",
            who,
            type(exc).__name__,
            exc,
            level=logging.DEBUG,
        )

    # ---- logging and life -----------------------------------------------------------------

    def log_message(self, format: str, *args: object, level: int = logging.INFO) -> None:
        """One line to ``self.logger``, each text argument made safe (it may be the client's)."""
        if self.logger.isEnabledFor(level):
            safe_args = tuple(safe(a) if isinstance(a, str | BaseException) else a for a in args)
            self.logger.log(level, f"%s: {format}", self.name, *safe_args)

    @property
    def serving(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> threading.Thread:
        """Serve on a daemon thread; ``stop`` ends it."""
        self._thread = threading.Thread(target=self.serve_forever, name=self.name, daemon=True)
        self._thread.start()
        return self._thread

    def stop(self) -> None:
        """Stop accepting, close the listening socket, and wait for the serving thread.
        Connections being served end within their deadlines."""
        if self._thread is not None:
            try:  # wakes the accept loop now, not at its next poll (0.5 s): accept then fails
                self.socket.shutdown(socket.SHUT_RDWR)
            except OSError:  # not shut down here: the loop sees the stop at its next poll
                pass
            self.shutdown()  # waits for serve_forever, so only once it runs
        self.server_close()
        if self._thread is not None:
            self._thread.join(5.0)


__all__ = [
    "LISTEN_BACKLOG",
    "MAX_CONNECTIONS",
    "REQUEST_DEADLINE_S",
    "WRITE_TIMEOUT_S",
    "Handler",
    "Request",
    "Response",
    "Route",
    "Routes",
    "Server",
    "json_response",
]
