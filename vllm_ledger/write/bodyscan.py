"""A few top-level string fields of a JSON request body, read as the body streams past.

The attribution middleware (``write/middleware.py``) needs the body's ``model``, ``user`` and
``request_id`` and nothing else. It never holds the body: each chunk the server hands to vLLM
is looked at in passing (``BodyScan.feed``) and let go, so a large body is buffered once, by
vLLM, never twice. Memory is constant (the fields' values, each at most ``MAX_VALUE_BYTES``,
and a key of at most ``MAX_KEY_BYTES``); the scan stops as soon as every wanted field is
found, the top-level object closes, the body is not an object, or ``max_steps`` structural
characters were passed (a body built to be slow to scan).

Speed: string contents, numbers and whitespace are skipped by C (``bytes.find`` and one
compiled pattern), so the Python work is per structural character: a 400 KB chat body of a
few messages is a few hundred steps; a body of 100,000 tiny strings stops at ``max_steps``.

It is not a JSON validator: vLLM parses the body and refuses what is not JSON. A field's value
is the first occurrence's, raw (escapes kept as written, ``\\u00e9`` stays six characters; the
callers print labels through the terminal-safe renderers). Standard library only.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_KEY_BYTES = 32  # keys longer than this are not wanted ones: skipped, not kept
MAX_VALUE_BYTES = 256  # a wanted value longer than this is "too long": kept as None
MAX_STEPS = 20_000  # structural characters passed before the scan gives up
# A body that arrives whole and this small is parsed by ``json`` (C) instead: for a small body
# that is cheaper than stepping through its structure in Python.
MAX_WHOLE_PARSE_BYTES = 16 * 1024

_AT_TOP = re.compile(rb'["{}\[\]:,]')  # what matters inside the top-level object
_DEEPER = re.compile(rb'["{}\[\]]')  # what matters inside a nested value
_FIRST = re.compile(rb"[^ \t\r\n]")
# A string's inside up to (not over) its closing quote or a backslash the chunk ends on:
# escapes and runs of plain bytes skipped in C, whatever the mix of escaped quotes.
_IN_STRING = re.compile(rb'(?:[^"\\]++|\\.)*+', re.DOTALL)
# The wanted keys of each caller as bytes and as text (a caller passes one constant tuple).
_NAMES: dict[tuple[bytes, ...], tuple[tuple[bytes, str], ...]] = {}
_DECODER = json.JSONDecoder()  # json.loads' own: no hooks
_JSON_SPACE = " \t\n\r"
_FIND_ESCAPES = 16  # escaped quotes one string steps over in Python before the pattern takes it


class BodyScan:
    """Feed the body's chunks in order; ``found`` holds each wanted key's string value."""

    __slots__ = (
        "_capture",
        "_depth",
        "_escaped",
        "_expect_key",
        "_in_string",
        "_key",
        "_steps",
        "_text",
        "_too_long",
        "done",
        "found",
        "max_steps",
        "text",
        "too_long",
        "wanted",
    )

    def __init__(self, wanted: tuple[bytes, ...], max_steps: int = MAX_STEPS) -> None:
        self.wanted = wanted
        self.found: dict[bytes, bytes] = {}  # raw JSON string bytes, escapes as written
        self.text: dict[bytes, str] = {}  # decoded already (a body parsed whole)
        self.too_long: set[bytes] = set()
        self.done = False
        self.max_steps = max_steps
        self._depth = -1  # -1: before the first non-blank byte; 0: after the object closed
        # The rest of the streaming state is set where the object opens (``_open_object``):
        # a body parsed whole never needs it.

    def _open_object(self) -> None:
        self._depth = 1
        self._steps = 0
        self._in_string = False
        self._escaped = False  # the string's last byte seen was an unpaired backslash
        # What the open string is, where it is kept: "key", "value" (a wanted one) or "" (skip)
        self._capture = ""
        self._text = bytearray()
        self._too_long = False
        self._expect_key = True
        self._key: bytes | None = None  # the key whose value comes next (depth 1)

    def whole(self, body: bytes) -> bool:
        """Parse a body that arrived whole and small with ``json``; False where it is too
        large or not JSON at all (the caller feeds it instead: the same answer, slower)."""
        if len(body) > MAX_WHOLE_PARSE_BYTES:
            return False
        try:
            doc = parse_whole(body)
        except (ValueError, RecursionError):
            return False
        if not isinstance(doc, dict):
            self.done = True
            return True
        names = _NAMES.get(self.wanted)
        if names is None:
            names = _NAMES[self.wanted] = tuple((key, key.decode()) for key in self.wanted)
        for key, name in names:
            value = doc.get(name)
            if isinstance(value, str):
                # At most 4 bytes a character: a short value needs no encoding to measure.
                if len(value) * 4 > MAX_VALUE_BYTES and (
                    len(value.encode("utf-8", "surrogatepass")) > MAX_VALUE_BYTES
                ):
                    self.too_long.add(key)
                else:
                    self.text[key] = value
        self.done = True
        return True

    def value(self, key: bytes) -> str | None:
        """A wanted field's text, escapes resolved; None where the body named none."""
        got = self.text.get(key)
        if got is not None:
            return got
        raw = self.found.get(key)
        return None if raw is None else _unescape(raw)

    def feed(self, chunk: bytes) -> None:
        """Look at the next chunk of the body (in order). Never raises on any bytes."""
        if self.done or not chunk:
            return
        pos = 0
        n = len(chunk)
        if self._depth == -1:
            m = _FIRST.search(chunk)
            if m is None:
                return
            if chunk[m.start()] != 0x7B:  # "{": only an object has fields
                self.done = True
                return
            self._open_object()
            pos = m.start() + 1
        while pos < n and not self.done:
            if self._in_string:
                pos = self._string(chunk, pos)
                continue
            self._steps += 1
            if self._steps > self.max_steps:
                self.done = True
                return
            m = (_AT_TOP if self._depth == 1 else _DEEPER).search(chunk, pos)
            if m is None:
                return
            pos = m.end()
            self._structural(m.group()[0])

    def _structural(self, c: int) -> None:
        if c == 0x22:  # '"'
            self._open_string()
        elif c == 0x7B or c == 0x5B:  # "{" "["
            self._depth += 1
        elif c == 0x7D or c == 0x5D:  # "}" "]"
            self._depth -= 1
            if self._depth <= 0:
                self.done = True
        elif c == 0x2C:  # "," at depth 1: a key comes next
            self._expect_key = True
            self._key = None
        # ":" at depth 1: the value of ``self._key`` comes next (expect_key is already off)

    def _open_string(self) -> None:
        self._in_string = True
        self._escaped = False
        self._text.clear()
        self._too_long = False
        if self._depth != 1:
            self._capture = ""
        elif self._expect_key:
            self._capture = "key"
        elif (
            self._key is not None
            and self._key in self.wanted
            and self._key not in self.found
            and self._key not in self.too_long
        ):
            self._capture = "value"
        else:
            self._capture = ""

    def _string(self, chunk: bytes, pos: int) -> int:
        """Go through the open string from ``pos``; returns where scanning goes on."""
        start = pos
        if self._escaped:  # the byte after a backslash that ended the last chunk
            self._escaped = False
            pos += 1
        n = len(chunk)
        # The next quote by memchr (prose: one call a string); a quote a backslash escapes
        # sends the search on, and past a few of them (pasted code) the rest of the chunk goes
        # to a pattern that steps over escapes in C.
        escaped = 0
        end = chunk.find(b'"', pos)
        while end >= 0:
            back = end
            while back > pos and chunk[back - 1] == 0x5C:  # "\\"
                back -= 1
            if (end - back) % 2 == 0:
                break  # not escaped: the closing quote
            escaped += 1
            if escaped > _FIND_ESCAPES:
                end = -2
                break
            pos = end + 1
            end = chunk.find(b'"', pos)
        if end == -2:
            end = _IN_STRING.match(chunk, pos).end()  # type: ignore[union-attr]  # always matches
        elif end < 0:  # no quote left: the string goes on; an odd run of backslashes at the
            end = n - 1 if _trailing(chunk, pos) % 2 else n  # end escapes the next byte
        if end < n and chunk[end] == 0x22:  # the closing quote
            self._keep(chunk, start, end)
            self._close_string()
            return end + 1
        # The chunk ends inside the string, perhaps on a backslash escaping the next byte.
        self._keep(chunk, start, n)
        self._escaped = end < n  # stopped before a lone backslash: the chunk's last byte
        return n

    def _keep(self, chunk: bytes, start: int, end: int) -> None:
        if not self._capture or self._too_long:
            return
        most = MAX_KEY_BYTES if self._capture == "key" else MAX_VALUE_BYTES
        if len(self._text) + end - start > most:
            self._too_long = True
            self._text.clear()
            return
        self._text += chunk[start:end]

    def _close_string(self) -> None:
        self._in_string = False
        capture, self._capture = self._capture, ""
        if capture == "key":
            self._key = None if self._too_long else bytes(self._text)
            self._expect_key = False
        elif capture == "value":
            key = self._key
            assert key is not None
            if self._too_long:
                self.too_long.add(key)
            else:
                self.found[key] = bytes(self._text)
            if len(self.found) + len(self.too_long) == len(self.wanted):
                self.done = True
        self._text.clear()


def parse_whole(body: bytes) -> Any:
    """``json.loads(body)``, the same value or the same error, cheaper for the usual body: one
    that starts with ``{`` and a byte that is not NUL is UTF-8 to ``json.loads`` (no BOM, not
    UTF-16 or 32), so it is decoded as that and read with ``raw_decode``, without the two
    whitespace matches around it (nothing but JSON whitespace may follow)."""
    if body[:1] == b"{" and body[1:2] != b"\x00":
        text = body.decode("utf-8", "surrogatepass")
        doc, end = _DECODER.raw_decode(text)
        if end != len(text) and text[end:].strip(_JSON_SPACE):
            raise json.JSONDecodeError("Extra data", text, end)
        return doc
    return json.loads(body)


def _unescape(raw: bytes) -> str:
    """A JSON string's raw bytes as text (escapes resolved where there are any)."""
    if b"\\" in raw:
        try:
            text = json.loads(b'"' + raw + b'"')
            return text if isinstance(text, str) else ""
        except ValueError:
            pass
    return raw.decode("utf-8", "replace")


def _trailing(chunk: bytes, pos: int) -> int:
    """How many backslashes end ``chunk`` (after ``pos``)."""
    n = len(chunk)
    i = n
    while i > pos and chunk[i - 1] == 0x5C:
        i -= 1
    return n - i
