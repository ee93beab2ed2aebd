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
- the request line and each header line ``MAX_LINE_BYTES``, ``MAX_HEADERS`` header lines, a
  body of at most the route's ``max_body_bytes`` (``413`` past it, unread); ``Content-Length``
  is ASCII digits, one value (repeats that agree count once), required where a route takes a
  body (``411``); chunked bodies are not read (``411``).

Nothing a client sends makes a traceback. A malformed request is answered ``4xx`` with
``{"error": CODE}`` and logged as one line (INFO); a client that hangs up mid-way is one line at
DEBUG. Lines go to the ``vllm_ledger.http`` logger through ``Server.log_message``, with the
client's text escaped (no control characters) and cut short. A handler that raises is our
bug: answered ``500`` and logged with its traceback.

Addresses are resolved with ``socket.getaddrinfo`` (``::1`` or ``[::1]`` listens on IPv6) and
no name is looked up on bind (``http.server.HTTPServer`` calls ``socket.getfqdn``, which can wait
seconds on DNS for a name never used).
"""

from __future__ import annotations

import io
import json
import logging
import re
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

from vllm_ledger.errors import LedgerError

LISTEN_BACKLOG = 128
MAX_CONNECTIONS = 128
REQUEST_DEADLINE_S = 10.0
WRITE_TIMEOUT_S = 10.0
MAX_LINE_BYTES = 8 * 1024
MAX_HEADERS = 100
RETRY_AFTER_S = 1
# After a refusal, what the client still sends is read and dropped for this long, so that
# closing does not reset the connection before the client has read the answer.
LINGER_S = 1.0
LINGER_BYTES = 1024 * 1024

LOGGER = logging.getLogger("vllm_ledger.http")

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TARGET = re.compile(r"[\x21-\x7e]+")
_VERSION = re.compile(r"HTTP/([0-9])\.([0-9])")
_DIGITS = re.compile(r"[0-9]+")
_BAD_IN_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # controls; a tab is allowed
_UNSAFE = re.compile(r"[^\x20-\x7e]")
_BODY_METHODS = ("POST", "PUT", "PATCH")


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


class _Refusal(LedgerError):
    """A request answered before (or instead of) its handler, ``{"error": code}``."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        extra: Mapping[str, Any] | None = None,
        headers: Sequence[tuple[str, str]] = (),
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.extra = dict(extra or {})
        self.headers = headers


def json_response(
    status: int, doc: Mapping[str, Any], headers: Sequence[tuple[str, str]] = ()
) -> Response:
    """A small JSON answer (ASCII, one line)."""
    body = (json.dumps(doc, ensure_ascii=True) + "\n").encode()
    return Response(status, [("Content-Type", "application/json"), *headers], body)


def safe(value: object, limit: int = 200) -> str:
    """``value`` for a log line: printable ASCII only (others as ``\\xNN``), at most ``limit``
    characters of it."""
    text = str(value)
    cut = len(text) > limit
    text = _UNSAFE.sub(lambda m: _escape(m.group()), text[:limit])
    return text + "..." if cut else text


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _head(version: str, status: int, headers: Sequence[tuple[str, str]], length: int) -> bytes:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    lines = [f"{version} {status} {phrase}".rstrip()]
    for name, value in headers:
        if name.lower() in ("content-length", "connection", "transfer-encoding"):
            continue  # the server's own
        if not _TOKEN.fullmatch(name) or _BAD_IN_VALUE.search(value):
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


def _line(rfile: io.BufferedReader[_DeadlineReader], too_long: _Refusal) -> bytes:
    """One CRLF- (or LF-) ended line without its end; ``EOFError`` if the client closed."""
    line = rfile.readline(MAX_LINE_BYTES + 1)
    if len(line) > MAX_LINE_BYTES:
        raise too_long
    if not line.endswith(b"\n"):
        raise EOFError("the client closed the connection mid-request")
    return line[:-2] if line.endswith(b"\r\n") else line[:-1]


class _Head(NamedTuple):
    method: str
    target: str
    version: str  # the version to answer with
    fields: list[tuple[str, str]]  # (lower-case name, value), in order


def _read_head(rfile: io.BufferedReader[_DeadlineReader]) -> _Head | None:
    """The request line and headers; ``None`` if the client closed before sending a byte."""
    first = rfile.peek(1)[:1]
    if not first:
        return None
    line = _line(rfile, _Refusal(414, "request_line_too_long", "request line too long"))
    if not line:  # one empty line before the request line is allowed
        line = _line(rfile, _Refusal(414, "request_line_too_long", "request line too long"))
    text = line.decode("latin-1")
    parts = text.split(" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not _TARGET.fullmatch(parts[1]):
        raise _Refusal(400, "bad_request_line", f"bad request line {text!r}")
    method, target, version = parts
    v = _VERSION.fullmatch(version)
    if v is None:
        raise _Refusal(400, "bad_request_line", f"bad HTTP version {version!r}")
    if v[1] != "1":
        raise _Refusal(505, "http_version_not_supported", f"HTTP version {version!r}")
    answer_version = "HTTP/1.0" if v[2] == "0" else "HTTP/1.1"
    fields: list[tuple[str, str]] = []
    too_long = _Refusal(431, "header_too_long", "a header line is too long")
    while True:
        raw = _line(rfile, too_long)
        if not raw:
            break
        if len(fields) >= MAX_HEADERS:
            raise _Refusal(431, "too_many_headers", f"more than {MAX_HEADERS} header lines")
        field = raw.decode("latin-1")
        name, colon, value = field.partition(":")
        if not colon or not _TOKEN.fullmatch(name):  # also a folded line or "Name : value"
            raise _Refusal(400, "bad_header", f"bad header line {field!r}")
        value = value.strip(" \t")
        if _BAD_IN_VALUE.search(value):
            raise _Refusal(400, "bad_header", f"a control character in header {name!r}")
        fields.append((name.lower(), value))
    return _Head(method, target, answer_version, fields)


def _content_length(fields: Sequence[tuple[str, str]]) -> int | None:
    """The one ``Content-Length`` of the headers, or ``None`` where there is none."""
    if any(name == "transfer-encoding" for name, _ in fields):
        raise _Refusal(411, "length_required", "Transfer-Encoding given; send Content-Length")
    values = [value for name, value in fields if name == "content-length"]
    given = [v.strip(" \t") for value in values for v in value.split(",")]
    if not given:
        return None
    bad = [v for v in given if not _DIGITS.fullmatch(v)]
    if bad:
        raise _Refusal(400, "bad_length", f"Content-Length {bad[0]!r} is not a number")
    lengths = {int(v) for v in given}
    if len(lengths) > 1:
        raise _Refusal(400, "bad_length", f"Content-Length given as {sorted(lengths)}")
    return lengths.pop()


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
            "%s: %d connections open; answered 503", _who(client_address), self.max_connections
        )
        try:
            sock.setblocking(False)
            sock.send(_BUSY)
            sock.shutdown(socket.SHUT_WR)
            for _ in range(4):  # what already arrived (bounded), so that closing sends no reset
                if not sock.recv(65536):
                    break
        except OSError:  # BlockingIOError: nothing (more) has arrived
            pass
        finally:
            sock.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A fault of the accept loop (a thread that cannot start): one line, no traceback."""
        exc = sys.exc_info()[1]
        self.log_message(
            "%s: cannot serve: %s: %s",
            _who(client_address),
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
            self.logger.exception("%s: %s: error serving", self.name, _who(client_address))
        finally:
            try:
                self._close(sock, linger)
            finally:
                self._slots.release()

    def _serve(self, sock: socket.socket, client_address: Any) -> bool:
        """Read one request, answer it; True when the client may still be sending."""
        who = _who(client_address)
        deadline = time.monotonic() + self.request_deadline_s
        rfile = io.BufferedReader(_DeadlineReader(sock, deadline))
        version = "HTTP/1.0"
        try:
            head = _read_head(rfile)
            if head is None:
                self.log_message("%s: closed without a request", who, level=logging.DEBUG)
                return False
            version = head.version
            request, route = self._read_request(sock, rfile, head, client_address)
        except _Refusal as r:
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
        rfile: io.BufferedReader[_DeadlineReader],
        head: _Head,
        client_address: Any,
    ) -> tuple[Request, Route]:
        url = urlsplit(head.target)
        path = url.path
        if not path.startswith("/"):
            raise _Refusal(400, "bad_request_line", f"bad request target {head.target!r}")
        route = self.routes.get((head.method, path)) or self.routes.get((head.method, "*"))
        if route is None:
            if path in self._paths or "*" in self._paths:
                allow = sorted({m for m, p in self.routes if p in (path, "*")})
                raise _Refusal(
                    405,
                    "method_not_allowed",
                    f"{head.method} {path}",
                    headers=[("Allow", ", ".join(allow))],
                )
            raise _Refusal(404, "not_found", f"{head.method} {path}")
        length = _content_length(head.fields)
        limit = route.max_body_bytes
        if length is None and head.method in _BODY_METHODS and limit > 0:
            raise _Refusal(411, "length_required", f"{head.method} {path} without Content-Length")
        if length is not None and length > limit:
            raise _Refusal(
                413,
                "too_large",
                f"a body of {length} bytes to {path}, over {limit}",
                extra={"limit_bytes": limit},
            )
        headers: dict[str, str] = {}
        for name, value in head.fields:
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        expect = headers.get("expect")
        if expect is not None:
            if expect.lower() != "100-continue":
                raise _Refusal(417, "expectation_failed", f"Expect {expect!r}")
            if head.version == "HTTP/1.1" and length:
                sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = rfile.read(length) if length else b""
        if len(body) != (length or 0):
            raise _Refusal(400, "short_body", f"{len(body)} of {length} body bytes, then closed")
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

    def _close(self, sock: socket.socket, linger: bool) -> None:
        """Close, first reading and dropping what the client sent that no one read (a close
        with unread bytes resets the connection, and the client can lose the answer): what
        has arrived, and after a refusal what still comes within ``LINGER_S``; at most
        ``LINGER_BYTES``."""
        until = time.monotonic() + (LINGER_S if linger else 0.0)
        dropped = 0
        try:
            sock.shutdown(socket.SHUT_WR)
            while dropped < LINGER_BYTES:
                left = until - time.monotonic()
                if left > 0:
                    sock.settimeout(left)
                else:
                    sock.setblocking(False)
                chunk = sock.recv(65536)
                if not chunk:
                    break
                dropped += len(chunk)
        except OSError:  # nothing more in time (BlockingIOError, TimeoutError), or a reset
            pass
        finally:
            sock.close()

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
            self.shutdown()  # waits for serve_forever, so only once it runs
        self.server_close()
        if self._thread is not None:
            self._thread.join(5.0)


def _who(client_address: Any) -> str:
    try:
        host, port = str(client_address[0]), int(client_address[1])
    except (TypeError, ValueError, IndexError):
        return safe(client_address)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


__all__ = [
    "LISTEN_BACKLOG",
    "MAX_CONNECTIONS",
    "MAX_HEADERS",
    "MAX_LINE_BYTES",
    "REQUEST_DEADLINE_S",
    "WRITE_TIMEOUT_S",
    "Handler",
    "Request",
    "Response",
    "Route",
    "Routes",
    "Server",
    "json_response",
    "safe",
]
