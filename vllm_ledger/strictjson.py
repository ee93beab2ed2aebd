"""Strict JSON for what a user or a remote supplies: whatever a lenient parser would guess at is
refused with one line. Standard library only.

``loads(data, max_bytes=..., what="host file x.json")`` refuses, each as one ``ConfigError``
line that starts with ``what``:

* more than ``max_bytes`` (each caller states its own limit), or bytes that are not UTF-8;
* nesting deeper than ``max_depth`` (``MAX_DEPTH``), found before the parser runs by a few
  linear passes over the text (``within_depth``, no recursion): Python's parser recurses, so a
  100000-deep ``[[[[...`` would be a ``RecursionError`` there;
* a key given twice in one object (``.key`` names it): which value wins would be a guess;
* ``NaN``, ``Infinity``, ``-Infinity``, a number that overflows to infinity (``1e400``), and a
  numeral longer than ``MAX_NUMBER_CHARS``;
* anything else ``json`` refuses, with its line and column.

``load_file(path, ...)`` reads a regular file only (a FIFO, device or directory is refused
without blocking) and at most ``max_bytes + 1`` bytes of it; ``OSError`` is the caller's.

``is_number(v)`` and ``number_in(v, lo, hi)`` are the one check of a decoded value that must
be a number (each caller words its own refusal): an ``int`` or ``float``, never a ``bool``
(JSON's ``true`` decodes to one), finite; ``whole_in(v, lo, hi)`` of one that must be an
``int`` (not a ``bool``) from ``lo`` to ``hi``.
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Callable
from itertools import accumulate, count
from pathlib import Path
from typing import Any, TypeGuard

from vllm_ledger.errors import ConfigError, DuplicateKey, NotARegularFile
from vllm_ledger.infile import open_regular, read_up_to

MAX_DEPTH = 32
MAX_NUMBER_CHARS = 100  # no number a config or a remote answer needs is longer

# Every byte but a quote or a bracket (deleted to leave the text's structure), and the
# brackets as a depth step (``depth``) or as one kind of pair (``within_depth``).
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')
_STEPS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")  # opening 2, closing 0
_PAIRS = bytes.maketrans(b"[{]}", b"(())")


def shown_key(key: str) -> str:
    """A key as one safe line: printable names as they are, anything else (a newline, an
    escape, a bidi override) as a short ASCII repr."""
    if key and key.isprintable() and len(key) <= 60:
        return key
    text = ascii(key)
    return text if len(text) <= 60 else text[:57] + "..."


def _brackets(text: str | bytes) -> bytes:
    """The brackets of ``text`` outside strings, in order. Only strings hold backslashes, so
    once escaped backslashes and then escaped quotes are taken out every quote left opens or
    closes a string; what lies between an opening and a closing quote goes. Each step is one
    pass in C over the bytes: no Python loop per character, no recursion."""
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    marks = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_STRUCTURE)
    return b"".join(marks.split(b'"')[::2])


def depth(text: str | bytes) -> int:
    """The deepest nesting of arrays and objects in ``text``, brackets inside strings not
    counted. Linear, no recursion; on text that is not JSON the figure is only an estimate."""
    steps = _brackets(text).translate(_STEPS)
    # After the i-th bracket the depth is the steps' running sum less i.
    return max(map(operator.sub, accumulate(steps), count(1)), default=0)


def within_depth(text: str | bytes, max_depth: int) -> bool:
    """Whether ``text`` nests at most ``max_depth`` deep (``depth``), in at most ``max_depth``
    passes that each take out the innermost pairs of brackets: as cheap however deep the text
    nests, and cheaper than ``depth`` on a large document. A bracket left unclosed counts as too
    deep (a parser would fail there, after recursing as deep as it goes)."""
    pairs = _brackets(text).translate(_PAIRS)
    for _ in range(max_depth):
        inner = pairs.replace(b"()", b"")
        if len(inner) == len(pairs):
            break
        pairs = inner
    return b"(" not in pairs


def loads(
    data: str | bytes,
    *,
    max_bytes: int,
    what: str = "JSON",
    hint: str = "",
    max_depth: int = MAX_DEPTH,
    parse_float: Callable[[str], Any] | None = None,
    parse_int: Callable[[str], Any] | None = None,
) -> Any:
    """The decoded document, or one ``ConfigError`` line saying why it is refused (``hint``,
    if given, is every refusal's what-to-do)."""
    try:
        return _loads(data, max_bytes, what, max_depth, parse_float, parse_int)
    except ConfigError as exc:
        if hint and not exc.hint:
            exc.hint = hint
        raise


def _loads(
    data: str | bytes,
    max_bytes: int,
    what: str,
    max_depth: int,
    parse_float: Callable[[str], Any] | None,
    parse_int: Callable[[str], Any] | None,
) -> Any:
    size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise ConfigError(f"{what} is larger than {_size(max_bytes)}")
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{what} is not UTF-8 text (byte {exc.start})") from exc
    else:
        text = data
    if not within_depth(text, max_depth):
        deepest = depth(text)
        if deepest > max_depth:
            raise ConfigError(f"{what} is nested {deepest} levels deep; the limit is {max_depth}")
    try:
        return json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
            parse_float=parse_float or _finite_float,
            parse_int=parse_int or _bounded_int,
        )
    except DuplicateKey as exc:
        raise ConfigError(f"{what}: {shown_key(exc.key)}: key given twice", key=exc.key) from exc
    except ConfigError as exc:  # from our hooks: NaN, an overflow, a long numeral
        raise ConfigError(f"{what} {exc.what}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{what} is not JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc
    except (ValueError, RecursionError) as exc:  # a caller's hook; the depth scan's backstop
        raise ConfigError(f"{what} is not JSON: {ascii(str(exc))[1:-1][:120]}") from exc


def load_file(
    path: Path | str,
    *,
    max_bytes: int,
    what: str | None = None,
    hint: str = "",
    max_depth: int = MAX_DEPTH,
) -> Any:
    """``loads`` of a regular file's bytes; a FIFO, socket, device or directory is refused at
    once (opened non-blocking, checked with ``fstat``). ``OSError`` is left to the caller."""
    label = what or str(path)
    try:
        with open_regular(path) as (fd, _st):
            data = read_up_to(fd, max_bytes + 1)  # one byte over: ``loads`` says it is too long
    except NotARegularFile:
        raise ConfigError(f"{label} is not a regular file", hint=hint) from None
    return loads(data, max_bytes=max_bytes, what=label, hint=hint, max_depth=max_depth)


def _size(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} bytes"


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise DuplicateKey(k)
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise ConfigError(f"holds {name}, which JSON does not allow")


def _finite_float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise ConfigError(f"holds a number longer than {MAX_NUMBER_CHARS} characters")
    x = float(text)
    if not math.isfinite(x):
        raise ConfigError(f"holds {text[:24]}, a number too large for a float")
    return x


def _bounded_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise ConfigError(f"holds a number longer than {MAX_NUMBER_CHARS} characters")
    return int(text)


def is_number(value: object) -> TypeGuard[int | float]:
    """Whether a decoded ``value`` is a number: ``int`` or ``float``, not ``bool``, finite."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def number_in(value: object, lo: float, hi: float) -> bool:
    """Whether a decoded ``value`` is a number (``is_number``) from ``lo`` to ``hi``."""
    return is_number(value) and lo <= value <= hi


def whole_in(value: object, lo: float, hi: float) -> TypeGuard[int]:
    """Whether a decoded ``value`` is an ``int`` (not a ``bool``) from ``lo`` to ``hi``."""
    return type(value) is int and lo <= value <= hi


__all__ = [
    "MAX_DEPTH",
    "MAX_NUMBER_CHARS",
    "depth",
    "is_number",
    "load_file",
    "loads",
    "number_in",
    "shown_key",
    "whole_in",
    "within_depth",
]
