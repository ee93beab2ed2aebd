"""Reading a request's head on the server's side (``http/server.py``), within one total deadline:
the request line, the header lines and the one ``Content-Length``.

The socket is read through ``DeadlineReader``: each read waits at most for what is left of the
deadline, so a client that drips a byte at any pace is cut when it passes. The request line and
each header line are at most ``MAX_LINE_BYTES``, at most ``MAX_HEADERS`` header lines. What is
refused is a ``Refusal``: the status and ``{"error": code}`` the server answers it with.
"""

from __future__ import annotations

import io
import re
import socket
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from vllm_ledger.errors import LedgerError

MAX_LINE_BYTES = 8 * 1024
MAX_HEADERS = 100

# A header's name (an HTTP token), and what its value may not hold.
TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
BAD_IN_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # controls; a tab is allowed
_TARGET = re.compile(r"[\x21-\x7e]+")
_VERSION = re.compile(r"HTTP/([0-9])\.([0-9])")
_DIGITS = re.compile(r"[0-9]+")
_BODY_METHODS = ("POST", "PUT", "PATCH")


class Refusal(LedgerError):
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


class DeadlineReader(io.RawIOBase):
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


def _line(rfile: io.BufferedReader[DeadlineReader], too_long: Refusal) -> bytes:
    """One CRLF- (or LF-) ended line without its end; ``EOFError`` if the client closed."""
    line = rfile.readline(MAX_LINE_BYTES + 1)
    if len(line) > MAX_LINE_BYTES:
        raise too_long
    if not line.endswith(b"\n"):
        raise EOFError("the client closed the connection mid-request")
    return line[:-2] if line.endswith(b"\r\n") else line[:-1]


class Head(NamedTuple):
    method: str
    target: str
    version: str  # the version to answer with
    fields: list[tuple[str, str]]  # (lower-case name, value), in order


def read_head(rfile: io.BufferedReader[DeadlineReader]) -> Head | None:
    """The request line and headers; ``None`` if the client closed before sending a byte."""
    first = rfile.peek(1)[:1]
    if not first:
        return None
    line = _line(rfile, Refusal(414, "request_line_too_long", "request line too long"))
    if not line:  # one empty line before the request line is allowed
        line = _line(rfile, Refusal(414, "request_line_too_long", "request line too long"))
    text = line.decode("latin-1")
    parts = text.split(" ")
    if len(parts) != 3 or not TOKEN.fullmatch(parts[0]) or not _TARGET.fullmatch(parts[1]):
        raise Refusal(400, "bad_request_line", f"bad request line {text!r}")
    method, target, version = parts
    v = _VERSION.fullmatch(version)
    if v is None:
        raise Refusal(400, "bad_request_line", f"bad HTTP version {version!r}")
    if v[1] != "1":
        raise Refusal(505, "http_version_not_supported", f"HTTP version {version!r}")
    answer_version = "HTTP/1.0" if v[2] == "0" else "HTTP/1.1"
    fields: list[tuple[str, str]] = []
    too_long = Refusal(431, "header_too_long", "a header line is too long")
    while True:
        raw = _line(rfile, too_long)
        if not raw:
            break
        if len(fields) >= MAX_HEADERS:
            raise Refusal(431, "too_many_headers", f"more than {MAX_HEADERS} header lines")
        field = raw.decode("latin-1")
        name, colon, value = field.partition(":")
        if not colon or not TOKEN.fullmatch(name):  # also a folded line or "Name : value"
            raise Refusal(400, "bad_header", f"bad header line {field!r}")
        value = value.strip(" \t")
        if BAD_IN_VALUE.search(value):
            raise Refusal(400, "bad_header", f"a control character in header {name!r}")
        fields.append((name.lower(), value))
    return Head(method, target, answer_version, fields)


def content_length(fields: Sequence[tuple[str, str]]) -> int | None:
    """The one ``Content-Length`` of the headers, or ``None`` where there is none."""
    if any(name == "transfer-encoding" for name, _ in fields):
        raise Refusal(411, "length_required", "Transfer-Encoding given; send Content-Length")
    values = [value for name, value in fields if name == "content-length"]
    given = [v.strip(" \t") for value in values for v in value.split(",")]
    if not given:
        return None
    bad = [v for v in given if not _DIGITS.fullmatch(v)]
    if bad:
        raise Refusal(400, "bad_length", f"Content-Length {bad[0]!r} is not a number")
    lengths = {int(v) for v in given}
    if len(lengths) > 1:
        raise Refusal(400, "bad_length", f"Content-Length given as {sorted(lengths)}")
    return lengths.pop()


def body_length(head: Head, path: str, limit: int) -> int | None:
    """The body's length as the headers give it, at most ``limit`` (the route's largest body):
    ``411`` where a method that sends a body gives none to a route that takes one, ``413``
    past ``limit``, unread."""
    length = content_length(head.fields)
    if length is None and head.method in _BODY_METHODS and limit > 0:
        raise Refusal(411, "length_required", f"{head.method} {path} without Content-Length")
    if length is not None and length > limit:
        raise Refusal(
            413,
            "too_large",
            f"a body of {length} bytes to {path}, over {limit}",
            extra={"limit_bytes": limit},
        )
    return length


def joined_headers(fields: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Lower-case name -> value, the values of a repeated name joined with ", "."""
    headers: dict[str, str] = {}
    for name, value in fields:
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


__all__ = [
    "BAD_IN_VALUE",
    "MAX_HEADERS",
    "MAX_LINE_BYTES",
    "TOKEN",
    "DeadlineReader",
    "Head",
    "Refusal",
    "body_length",
    "content_length",
    "joined_headers",
    "read_head",
]
