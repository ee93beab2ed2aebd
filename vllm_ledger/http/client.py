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
- A status line that is not ``HTTP/1.x NNN``, more than ``answer.MAX_HEADERS`` headers, a
  header block over ``answer.MAX_HEADER_BYTES``, a body whose framing cannot be read, or a
  connection closed before the answer ends: ``BadResponse`` (``.problem`` says which).
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

Its parts: ``http/limits.py`` (the deadline, the byte cap and the errors that name them),
``http/connect.py`` (the name lookup, the connect, TLS), ``http/answer.py`` (reading the
answer), ``http/redirects.py`` (which redirects are followed).
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import math
import re
import socket
import ssl
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Literal

from vllm_ledger.errors import RemoteError
from vllm_ledger.http.answer import Reader, read_answer
from vllm_ledger.http.connect import connect, wrap_tls
from vllm_ledger.http.limits import Limits
from vllm_ledger.http.redirects import REDIRECT_STATUSES, next_url
from vllm_ledger.http.urls import url_host, url_problem

Method = Literal["GET", "POST"]
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
DEFAULT_HINT = "check the URL and that it is up"
USER_AGENT = "vllm-ledger"
_SEND_BYTES = 65536
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_OURS = frozenset({"host", "content-length", "connection", "transfer-encoding"})


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
            Limits(url, deadline_s, ends_monotonic, max_bytes, truncate, hint),
            context,
        )
        location = answer.header("location")
        if redirects == 0 or answer.status not in REDIRECT_STATUSES or location is None:
            return answer
        current = next_url(
            url,
            current,
            location,
            method=method,
            status=answer.status,
            hop=hop,
            redirects=redirects,
        )
    raise AssertionError("unreachable")  # pragma: no cover


def _exchange(
    method: Method,
    url: str,
    body: bytes,
    headers: dict[str, str],
    limits: Limits,
    context: ssl.SSLContext | None,
) -> Response:
    if url_problem(url) is not None:
        raise RemoteError(
            f"cannot read {limits.url}: not an http(s) URL with a host",
            limits.url,
            hint=limits.hint,
        )
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    sock = connect(host, port, limits)
    sent = False
    try:
        if parts.scheme == "https":
            sock = wrap_tls(sock, host, limits, context)
        _send(sock, _head(method, parts, body, headers) + body, limits)
        sent = True
        tracking = _TRACKING.get()
        if tracking is not None:
            tracking.value = True
        status, answer_headers, answer_body, truncated = read_answer(Reader(sock, limits), limits)
    except RemoteError as exc:
        if sent:
            _mark_sent(exc)
        raise
    except TimeoutError as exc:  # socket.timeout too
        raise (_mark_sent(limits.late()) if sent else limits.late()) from exc
    except OSError as exc:  # refused, reset, a TLS failure (ssl.SSLError is an OSError)
        late = time.monotonic() >= limits.ends_monotonic
        error = limits.late() if late else limits.unreachable(exc)
        raise (_mark_sent(error) if sent else error) from exc
    except ValueError as exc:  # a host name that IDNA cannot encode for TLS
        raise RemoteError(
            f"cannot read {limits.url}: not a host name it can use", limits.url, hint=limits.hint
        ) from exc
    finally:
        sock.close()
    return Response(status, answer_headers, answer_body, url, truncated)


def _head(
    method: Method, parts: urllib.parse.SplitResult, body: bytes, headers: dict[str, str]
) -> bytes:
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    target = urllib.parse.quote(target, safe="!#$%&'()*+,/:;=?@[]~")
    host = url_host(parts.hostname or "")
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


def _send(sock: socket.socket, data: bytes, limits: Limits) -> None:
    view = memoryview(data)
    for start in range(0, len(view), _SEND_BYTES):
        sock.settimeout(limits.left_s())
        sock.sendall(view[start : start + _SEND_BYTES])


__all__ = [
    "DEFAULT_MAX_BYTES",
    "Method",
    "Response",
    "Sent",
    "get",
    "post",
    "request",
    "request_sent",
    "track_sent",
]
