"""Strict reading of a status document a remote host sent: the bytes (ASCII JSON, numerals
and nesting bounded, through ``strictjson``) and each field type- and range-checked. Every
refusal is a ``StatusParseError``; what is kept is a checked number or one of the caller's own
constant strings, never the remote's."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeVar

from vllm_ledger import strictjson
from vllm_ledger.errors import ConfigError, StatusParseError

_W = TypeVar("_W", bound=str)

MAX_COUNT = 10**15  # tokens, requests, files: ~30 years at 1M tokens/s
MAX_NUMBER_CHARS = 32  # no numeral in a valid document is longer
STATUS_MAX_DEPTH = 8  # a valid document nests seven deep (breakdown -> rows -> windows ...)


def _parse_float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise StatusParseError("number too long")
    x = float(text)
    if not math.isfinite(x):
        raise StatusParseError("non-finite number")
    return x


def _parse_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise StatusParseError("number too long")
    return int(text)


def field_obj(parent: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    v = parent.get(key)
    if not isinstance(v, dict):
        raise StatusParseError(f"{key}: not an object")
    return v


def field_int(parent: Mapping[str, Any], key: str, lo: int, hi: int) -> int:
    v = parent.get(key)
    if not strictjson.whole_in(v, lo, hi):
        raise StatusParseError(f"{key}: not an integer in range")
    return v


def field_float(
    parent: Mapping[str, Any], key: str, lo: float, hi: float, nullable: bool = False
) -> float | None:
    v = parent.get(key)
    if v is None and nullable and key in parent:
        return None
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise StatusParseError(f"{key}: not a number")
    if not strictjson.number_in(v, lo, hi):  # an infinity is a number here, out of range
        raise StatusParseError(f"{key}: not a number in range")
    return float(v)


def field_bool(parent: Mapping[str, Any], key: str) -> bool:
    v = parent.get(key)
    if type(v) is not bool:
        raise StatusParseError(f"{key}: not a boolean")
    return v


def field_word(parent: Mapping[str, Any], key: str, words: tuple[_W, ...]) -> _W:
    """One of ``words``: the module's own constant, never the remote's string."""
    v = parent.get(key)
    for word in words:
        if v == word and type(v) is str:
            return word
    raise StatusParseError(f"{key}: not one of {', '.join(map(str, words))}")


def field_codes(
    parent: Mapping[str, Any], key: str, allowed: tuple[str, ...], require_all: bool
) -> tuple[tuple[str, int], ...]:
    obj = field_obj(parent, key)
    if any(k not in allowed for k in obj):
        raise StatusParseError(f"{key}: unknown code")
    # The names kept are this module's own constants, never the remote's strings.
    out = tuple(
        (code, field_int(obj, code, 0, MAX_COUNT)) for code in allowed if require_all or code in obj
    )
    return out


def loads(data: bytes) -> Any:
    """The JSON value of ``data``: ASCII, no control character, numerals and depth bounded."""
    try:
        text = data.decode("ascii")  # render() writes ASCII only; anything else is foreign
    except UnicodeDecodeError as exc:
        raise StatusParseError("not ASCII") from exc
    if any(c < " " and c not in "\n\r\t" for c in text):
        raise StatusParseError("control character")
    try:
        return strictjson.loads(
            text,
            max_bytes=len(data),  # the caller has bounded the bytes
            what="status",
            max_depth=STATUS_MAX_DEPTH,
            parse_float=_parse_float,
            parse_int=_parse_int,
        )
    except ConfigError as exc:
        raise StatusParseError(exc.what) from exc
