"""Reading one answer off a client's socket within its deadline (``http/client.py``): the status
line, the headers and the body, each receive waiting at most the time left.

Interim answers (1xx) are skipped, at most ``MAX_INTERIM_ANSWERS``; the status line and the
headers together are at most ``MAX_HEADER_BYTES``, at most ``MAX_HEADERS`` headers. The body is
framed by chunks, by ``Content-Length`` or by the close, and read to at most ``max_bytes``:
beyond it ``AnswerTooLarge``, or with ``truncate`` the first ``max_bytes`` and the rest unread.
What cannot be read is a ``BadResponse`` whose ``.problem`` says which.
"""

from __future__ import annotations

import re
import socket

from vllm_ledger.errors import BadResponseProblem
from vllm_ledger.http.limits import Limits

MAX_HEADERS = 100
MAX_HEADER_BYTES = 64 * 1024  # the status line and every header line together
MAX_INTERIM_ANSWERS = 8  # 1xx answers skipped before the real one
_RECV_BYTES = 65536
_STATUS_LINE = re.compile(rb"HTTP/1\.[01] ([1-9][0-9]{2})(?: [\x20-\x7e\t\x80-\xff]*)?")
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_NOT_STATUS: tuple[BadResponseProblem, str] = (
    "status_line",
    "did not answer with an HTTP/1.x status line",
)
_HEADERS_TOO_LONG: tuple[BadResponseProblem, str] = (
    "headers",
    f"sent a header block over {MAX_HEADER_BYTES // 1024} KiB",
)
_BAD_CHUNK: tuple[BadResponseProblem, str] = ("framing", "sent a chunk size line it cannot read")


class Reader:
    """Reads from one socket, each receive waiting at most the time left."""

    def __init__(self, sock: socket.socket, limits: Limits) -> None:
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


def read_answer(
    reader: Reader, limits: Limits
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
    body, truncated = read_body(reader, headers, limits)
    return status, tuple(headers), body, truncated


def read_body(reader: Reader, headers: list[tuple[str, str]], limits: Limits) -> tuple[bytes, bool]:
    coding = [v.strip().lower() for k, v in headers if k.lower() == "transfer-encoding"]
    lengths = {v.strip() for k, v in headers if k.lower() == "content-length"}
    if coding:
        if coding != ["chunked"]:
            raise limits.bad("framing", "sent a transfer coding other than chunked")
        return read_chunked(reader, limits)
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


def read_chunked(reader: Reader, limits: Limits) -> tuple[bytes, bool]:
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


__all__ = ["MAX_HEADERS", "MAX_HEADER_BYTES", "MAX_INTERIM_ANSWERS", "Reader", "read_answer"]
