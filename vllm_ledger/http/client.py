"""The one HTTP client: every request this package makes, within one total deadline.

``request(method, url, deadline_s=...)`` looks the host up, connects, sends, and reads the
status line, the headers and the body, all within ``deadline_s``: each step that can block
(the name lookup, each connect, the TLS handshake, each send, each receive) waits at most
the time left, so a server that drips its answer a byte at a time is cut at the deadline,
whatever its pace (``RemoteTimeout``).

- The body is read to at most ``max_bytes``: beyond it, ``AnswerTooLarge``, or with
  ``truncate=True`` the first ``max_bytes`` are kept and the rest is never read.
- Redirects: with ``redirects=0`` (the default) a 3xx is the answer. With ``redirects=N`` at
  most N are followed, each only to the same scheme, host and port (a POST only through 307
  and 308, with its body); one to anywhere else, or one more, is ``RedirectRefused``.
- A status line that is not ``HTTP/1.x NNN``, more than ``MAX_HEADERS`` headers, a header
  block over ``MAX_HEADER_BYTES``, a body whose framing cannot be read, or a connection closed
  before the answer ends: ``BadResponse`` (``.problem`` says which).
- Anything else that stops the exchange (refused, reset, no such host, a TLS failure): a
  ``RemoteError``. No byte the remote sent reaches an error's message, except a refused
  redirect's host.

Whether the request reached the remote: an error raised after every byte of the request was
written carries ``request_sent`` true (``request_sent(exc)``): a timeout or a reset then means
the remote may have acted on it. ``track_sent()`` tells a caller that never sees the error
(one that catches it below) the same: ``with track_sent() as sent: ...; sent.value``.

http and https (the system's trust store: ``ssl.create_default_context()``), IPv6 literals
(``http://[::1]:8000/metrics``), ``user:password@`` as Basic auth. One request per connection
(``Connection: close``); no compression, cookies or proxies. Standard library only.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import math
import re
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Literal

from vllm_ledger.errors import (
    AnswerTooLarge,
    BadResponse,
    BadResponseProblem,
    RedirectRefused,
    RemoteError,
    RemoteTimeout,
)

Method = Literal["GET", "POST"]
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
MAX_HEADERS = 100
MAX_HEADER_BYTES = 64 * 1024  # the status line and every header line together
MAX_INTERIM_ANSWERS = 8  # 1xx answers skipped before the real one
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
DEFAULT_HINT = "check the URL and that it is up"
USER_AGENT = "vllm-ledger"
_RECV_BYTES = 65536
_SEND_BYTES = 65536
_STATUS_LINE = re.compile(rb"HTTP/1\.[01] ([1-9][0-9]{2})(?: [\x20-\x7e\t\x80-\xff]*)?")
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_OURS = frozenset({"host", "content-length", "connection", "transfer-encoding"})
_NOT_STATUS: tuple[BadResponseProblem, str] = (
    "status_line",
    "did not answer with an HTTP/1.x status line",
)
_HEADERS_TOO_LONG: tuple[BadResponseProblem, str] = (
    "headers",
    f"sent a header block over {MAX_HEADER_BYTES // 1024} KiB",
)
_BAD_CHUNK: tuple[BadResponseProblem, str] = ("framing", "sent a chunk size line it cannot read")


@dataclass
class Sent:
    """Set by ``track_sent``: ``value`` turns true once a request was written whole."""

    value: bool = False


_TRACKING: contextvars.ContextVar[Sent | None] = contextvars.ContextVar(
    "vllm_ledger_http_sent", default=None
)


@contextlib.contextmanager
def track_sent() -> Iterator[Sent]:
    """Within the block, ``Sent.value`` says whether a request was written whole (in this
    thread), whatever became of its answer."""
    sent = Sent()
    token = _TRACKING.set(sent)
    try:
        yield sent
    finally:
        _TRACKING.reset(token)


def request_sent(exc: BaseException) -> bool:
    """Whether the request of this error was written whole before it was raised."""
    return bool(getattr(exc, "request_sent", False))


def _mark_sent(exc: BaseException) -> BaseException:
    with contextlib.suppress(AttributeError):
        exc.request_sent = True  # type: ignore[attr-defined]
    return exc


@dataclass(frozen=True)
class Response:
    """An answer: its status, headers (in order, names as sent), body and the URL that gave it
    (the last one, after same-host redirects). ``truncated``: the body is the first
    ``max_bytes`` of a longer one."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    url: str
    truncated: bool = False

    def header(self, name: str) -> str | None:
        """The last value of header ``name`` (any case), or None."""
        want = name.lower()
        found = [v for k, v in self.headers if k.lower() == want]
        return found[-1] if found else None

    @property
    def status_text(self) -> str:
        """``HTTP 404 Not Found``: the code and its standard phrase (never the remote's words)."""
        try:
            return f"HTTP {self.status} {HTTPStatus(self.status).phrase}"
        except ValueError:
            return f"HTTP {self.status}"


def get(
    url: str,
    *,
    deadline_s: float,
    headers: Mapping[str, str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    truncate: bool = False,
    redirects: int = 0,
    hint: str = DEFAULT_HINT,
    context: ssl.SSLContext | None = None,
) -> Response:
    """``request("GET", url, ...)``."""
    return request(
        "GET",
        url,
        deadline_s=deadline_s,
        headers=headers,
        max_bytes=max_bytes,
        truncate=truncate,
        redirects=redirects,
        hint=hint,
        context=context,
    )


def post(
    url: str,
    body: bytes,
    *,
    deadline_s: float,
    headers: Mapping[str, str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    truncate: bool = False,
    redirects: int = 0,
    hint: str = DEFAULT_HINT,
    context: ssl.SSLContext | None = None,
) -> Response:
    """``request("POST", url, body=body, ...)``."""
    return request(
        "POST",
        url,
        body=body,
        deadline_s=deadline_s,
        headers=headers,
        max_bytes=max_bytes,
        truncate=truncate,
        redirects=redirects,
        hint=hint,
        context=context,
    )


def request(
    method: Method,
    url: str,
    *,
    deadline_s: float,
    body: bytes = b"",
    headers: Mapping[str, str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    truncate: bool = False,
    redirects: int = 0,
    hint: str = DEFAULT_HINT,
    context: ssl.SSLContext | None = None,
) -> Response:
    """One request and its answer, all within ``deadline_s`` (redirects included).

    ``hint`` ends the line of a timeout, a connection that failed or an answer it cannot read
    (what to check: "is vLLM running there?"); a refused redirect and a body over the cap say
    their own. Raises ``RemoteError`` or one of its kinds, never anything else for a
    remote's doing; a ``ValueError`` for a caller's mistake (a bad deadline, a header with a
    line break)."""
    if not (math.isfinite(deadline_s) and deadline_s > 0):
        raise ValueError(f"deadline_s must be a positive number of seconds, not {deadline_s!r}")
    if max_bytes < 0 or redirects < 0:
        raise ValueError("max_bytes and redirects cannot be negative")
    extra = dict(headers or {})
    for name, value in extra.items():
        if not _HEADER_NAME.fullmatch(name) or any(c in value for c in "\r\n\0"):
            raise ValueError(f"header {name!r} is not a header name and a one-line value")
        value.encode("latin-1")  # a UnicodeEncodeError (a ValueError) if it cannot be sent
    ends_monotonic = time.monotonic() + deadline_s
    current = url
    for hop in range(redirects + 1):
        answer = _exchange(
            method,
            current,
            body,
            extra,
            _Limits(url, deadline_s, ends_monotonic, max_bytes, truncate, hint),
            context,
        )
        location = answer.header("location")
        if redirects == 0 or answer.status not in REDIRECT_STATUSES or location is None:
            return answer
        following = urllib.parse.urljoin(current, location.strip())
        if _origin(following) != _origin(current):
            shown = urllib.parse.urlsplit(following).netloc.rpartition("@")[2][:100]
            raise RedirectRefused(
                url,
                following,
                f"redirects to another host ({shown!r}): not followed",
                hint="give the URL that answers without leaving its host",
            )
        if method == "POST" and answer.status not in (307, 308):
            raise RedirectRefused(
                url,
                following,
                f"answered a POST with HTTP {answer.status}: the body would not be sent on",
                hint="give the URL that answers without a redirect",
            )
        if hop == redirects:
            raise RedirectRefused(
                url,
                following,
                f"redirected more than {redirects} times",
                hint="give the URL that answers without a redirect",
            )
        current = following
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True)
class _Limits:
    """What bounds one request: its deadline, its byte cap, and the words of its errors."""

    url: str  # the URL the caller gave: every error names it
    deadline_s: float
    ends_monotonic: float
    max_bytes: int
    truncate: bool
    hint: str

    def left_s(self) -> float:
        """Seconds left, at least a millisecond; ``RemoteTimeout`` when none are."""
        left = self.ends_monotonic - time.monotonic()
        if left <= 0:
            raise self.late()
        return max(left, 0.001)

    def late(self) -> RemoteTimeout:
        return RemoteTimeout(self.url, self.deadline_s, hint=self.hint)

    def too_large(self) -> AnswerTooLarge:
        return AnswerTooLarge(self.url, self.max_bytes, hint="check that it is the URL meant")

    def bad(self, problem: BadResponseProblem, why: str) -> BadResponse:
        return BadResponse(self.url, problem, why, hint=self.hint)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme)


def _exchange(
    method: Method,
    url: str,
    body: bytes,
    headers: dict[str, str],
    limits: _Limits,
    context: ssl.SSLContext | None,
) -> Response:
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme not in ("http", "https") or not parts.hostname or port == -1:
        raise RemoteError(
            f"cannot read {limits.url}: not an http(s) URL with a host",
            limits.url,
            hint=limits.hint,
        )
    host = parts.hostname
    port = port or (443 if parts.scheme == "https" else 80)
    sock = _connect(host, port, limits)
    sent = False
    try:
        if parts.scheme == "https":
            sock.settimeout(limits.left_s())
            sock = (context or ssl.create_default_context()).wrap_socket(sock, server_hostname=host)
        _send(sock, _head(method, parts, body, headers) + body, limits)
        sent = True
        tracking = _TRACKING.get()
        if tracking is not None:
            tracking.value = True
        status, answer_headers, answer_body, truncated = _read_answer(
            _Reader(sock, limits), method, limits
        )
    except RemoteError as exc:
        if sent:
            _mark_sent(exc)
        raise
    except TimeoutError as exc:  # socket.timeout too
        raise (_mark_sent(limits.late()) if sent else limits.late()) from exc
    except OSError as exc:  # refused, reset, a TLS failure (ssl.SSLError is an OSError)
        late = time.monotonic() >= limits.ends_monotonic
        error = limits.late() if late else _unreachable(limits, exc)
        raise (_mark_sent(error) if sent else error) from exc
    except ValueError as exc:  # a host name that IDNA cannot encode for TLS
        raise RemoteError(
            f"cannot read {limits.url}: not a host name it can use", limits.url, hint=limits.hint
        ) from exc
    finally:
        sock.close()
    return Response(status, answer_headers, answer_body, url, truncated)


def _unreachable(limits: _Limits, exc: OSError) -> RemoteError:
    why = exc.strerror or getattr(exc, "reason", None) or type(exc).__name__
    return RemoteError(f"cannot read {limits.url}: {why}", limits.url, hint=limits.hint)


def _connect(host: str, port: int, limits: _Limits) -> socket.socket:
    """A connected socket to the first of ``host``'s addresses that answers in time."""
    addresses = _resolve(host, port, limits)
    last: OSError | None = None
    for family, kind, proto, _name, address in addresses:
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(limits.left_s())
            sock.connect(address)
        except TimeoutError as exc:
            sock.close()
            raise limits.late() from exc
        except OSError as exc:
            sock.close()
            last = exc
            continue
        except BaseException:
            sock.close()
            raise
        return sock
    assert last is not None  # getaddrinfo returns at least one address or raises
    raise _unreachable(limits, last) from last


_AddrInfo = Sequence[tuple[socket.AddressFamily, socket.SocketKind, int, str, Any]]


def _resolve(host: str, port: int, limits: _Limits) -> _AddrInfo:
    """``getaddrinfo``, within the time left: an address literal at once, a name on a helper
    thread that is left behind (a daemon) if the resolver is slower than the deadline."""
    try:
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    except socket.gaierror:
        pass  # a name, not a literal
    found: list[_AddrInfo | OSError] = []

    def look_up() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as exc:
            found.append(exc)
        except UnicodeError:  # a name that IDNA cannot encode
            found.append(socket.gaierror(socket.EAI_NONAME, "not a host name"))

    thread = threading.Thread(target=look_up, name="vllm-ledger-resolve", daemon=True)
    thread.start()
    thread.join(limits.left_s())
    if not found:
        raise limits.late()
    if isinstance(found[0], OSError):
        raise _unreachable(limits, found[0]) from found[0]
    return found[0]


def _head(
    method: Method, parts: urllib.parse.SplitResult, body: bytes, headers: dict[str, str]
) -> bytes:
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    target = urllib.parse.quote(target, safe="!#$%&'()*+,/:;=?@[]~")
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None:
        host += f":{parts.port}"
    lines = {
        "Host": host,
        "User-Agent": USER_AGENT,
        "Accept-Encoding": "identity",
        "Connection": "close",
    }
    if parts.username is not None:
        user = urllib.parse.unquote(parts.username)
        password = urllib.parse.unquote(parts.password or "")
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        lines["Authorization"] = f"Basic {token}"
    if method == "POST":
        lines["Content-Length"] = str(len(body))
    lower = {k.lower(): k for k in lines}
    for name, value in headers.items():
        if name.lower() in _OURS:
            continue
        lines.pop(lower.get(name.lower(), name), None)
        lines[name] = value
    text = f"{method} {target} HTTP/1.1\r\n"
    text += "".join(f"{k}: {v}\r\n" for k, v in lines.items())
    return (text + "\r\n").encode("latin-1")


def _send(sock: socket.socket, data: bytes, limits: _Limits) -> None:
    view = memoryview(data)
    for start in range(0, len(view), _SEND_BYTES):
        sock.settimeout(limits.left_s())
        sock.sendall(view[start : start + _SEND_BYTES])


class _Reader:
    """Reads from one socket, each receive waiting at most the time left."""

    def __init__(self, sock: socket.socket, limits: _Limits) -> None:
        self.sock = sock
        self.limits = limits
        self.buf = bytearray()
        self.closed = False

    def fill(self) -> bool:
        """Receive what comes next; False at the end of the stream."""
        if self.closed:
            return False
        self.sock.settimeout(self.limits.left_s())
        chunk = self.sock.recv(_RECV_BYTES)
        if not chunk:
            self.closed = True
            return False
        self.buf += chunk
        return True

    def line(self, limit: int, too_long: tuple[BadResponseProblem, str]) -> bytes | None:
        """The next line without its CRLF (or LF), at most ``limit`` bytes (else ``BadResponse``
        with ``too_long``'s problem and words); None if the stream ends before any byte of it."""
        scanned = 0
        while True:
            at = self.buf.find(b"\n", scanned)
            if at >= 0:
                if at > limit:
                    break
                out = bytes(self.buf[:at])
                del self.buf[: at + 1]
                return out[:-1] if out.endswith(b"\r") else out
            scanned = len(self.buf)
            if scanned > limit:
                break
            if not self.fill():
                if self.buf:
                    raise self.limits.bad("truncated", "closed the connection mid-answer")
                return None
        raise self.limits.bad(*too_long)

    def exactly(self, n: int) -> bytes:
        while len(self.buf) < n:
            if not self.fill():
                raise self.limits.bad("truncated", "closed the connection mid-answer")
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def up_to(self, n: int) -> bytes:
        """At most ``n`` bytes: the buffer, or what comes next if it is empty (b"" at the end)."""
        if not self.buf:
            self.fill()
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out


def _read_answer(
    reader: _Reader, method: Method, limits: _Limits
) -> tuple[int, tuple[tuple[str, str], ...], bytes, bool]:
    """(status, headers, body, truncated) of the one answer on this connection."""
    budget = MAX_HEADER_BYTES
    for _interim in range(MAX_INTERIM_ANSWERS + 1):
        status_line = reader.line(budget, _NOT_STATUS)
        if status_line is None:
            raise limits.bad("no_answer", "closed the connection without an answer")
        budget -= len(status_line) + 2
        m = _STATUS_LINE.fullmatch(status_line)
        if m is None:
            raise limits.bad("status_line", "did not answer with an HTTP/1.x status line")
        status = int(m.group(1))
        headers: list[tuple[str, str]] = []
        while True:
            line = reader.line(max(budget, 0), _HEADERS_TOO_LONG)
            if line is None:
                raise limits.bad("truncated", "closed the connection mid-answer")
            budget -= len(line) + 2
            if not line:
                break
            if len(headers) >= MAX_HEADERS:
                raise limits.bad("too_many_headers", f"sent more than {MAX_HEADERS} headers")
            name, colon, value = line.partition(b":")
            if not colon or not _TOKEN.fullmatch(name):
                raise limits.bad("headers", "sent a header line that is not NAME: VALUE")
            headers.append((name.decode("ascii"), value.strip(b" \t").decode("latin-1")))
        if not 100 <= status <= 199 or status == 101:
            break
    else:
        raise limits.bad("headers", f"sent more than {MAX_INTERIM_ANSWERS} interim answers")
    if status == 101:
        raise limits.bad("status_line", "switched protocols (HTTP 101)")
    if 100 <= status <= 199 or status in (204, 304):
        return status, tuple(headers), b"", False
    body, truncated = _read_body(reader, headers, limits)
    return status, tuple(headers), body, truncated


def _read_body(
    reader: _Reader, headers: list[tuple[str, str]], limits: _Limits
) -> tuple[bytes, bool]:
    coding = [v.strip().lower() for k, v in headers if k.lower() == "transfer-encoding"]
    lengths = {v.strip() for k, v in headers if k.lower() == "content-length"}
    if coding:
        if coding != ["chunked"]:
            raise limits.bad("framing", "sent a transfer coding other than chunked")
        return _read_chunked(reader, limits)
    if lengths:
        if len(lengths) > 1 or not all(re.fullmatch(r"[0-9]{1,18}", v) for v in lengths):
            raise limits.bad("framing", "sent a Content-Length that is not one number")
        length = int(next(iter(lengths)))
        if length > limits.max_bytes:
            if not limits.truncate:
                raise limits.too_large()
            return reader.exactly(limits.max_bytes), True
        return reader.exactly(length), False
    out = bytearray()
    while True:  # no length given: the body ends when the connection does
        chunk = reader.up_to(limits.max_bytes + 1 - len(out))
        if not chunk:
            return bytes(out), False
        out += chunk
        if len(out) > limits.max_bytes:
            if not limits.truncate:
                raise limits.too_large()
            return bytes(out[: limits.max_bytes]), True


def _read_chunked(reader: _Reader, limits: _Limits) -> tuple[bytes, bool]:
    out = bytearray()
    trailer_budget = MAX_HEADER_BYTES
    while True:
        size_line = reader.line(1024, _BAD_CHUNK)
        if size_line is None:
            raise limits.bad("truncated", "closed the connection mid-answer")
        size_text = size_line.split(b";", 1)[0].strip()
        if not re.fullmatch(rb"[0-9A-Fa-f]{1,16}", size_text):
            raise limits.bad("framing", "sent a chunk size that is not a hex number")
        size = int(size_text, 16)
        if size == 0:
            break
        if len(out) + size > limits.max_bytes:
            if not limits.truncate:
                raise limits.too_large()
            out += reader.exactly(limits.max_bytes - len(out))
            return bytes(out), True
        out += reader.exactly(size)
        end = reader.exactly(1)
        if end == b"\r":
            end += reader.exactly(1)
        if end not in (b"\r\n", b"\n"):
            raise limits.bad("framing", "sent a chunk longer than its size")
    while True:  # trailers, dropped
        line = reader.line(max(trailer_budget, 0), _HEADERS_TOO_LONG)
        if line is None:
            raise limits.bad("truncated", "closed the connection mid-answer")
        if not line:
            return bytes(out), False
        trailer_budget -= len(line) + 2


__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_HEADERS",
    "MAX_HEADER_BYTES",
    "Method",
    "Response",
    "Sent",
    "get",
    "post",
    "request",
    "request_sent",
    "track_sent",
]
