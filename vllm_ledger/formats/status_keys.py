"""The status document's top keys today (``keys_today``): what the bot shows of whose tokens.
Standard library.

``keys_dict(today)`` makes it from today's rows by key (``read/whose.py``): the
``MAX_STATUS_KEYS`` keys with most input tokens, each with its input, output, cached tokens and
finished requests; ``truncated`` counts the keys left out; ``not_attributed`` is today's
not-attributed row (input and output, which may be negative: a request begun before midnight
and credited today) and its requests that ended without finishing; ``folded`` the keys the
ledger folded into ``other``. A key is written only if it has the shape the ledger gives keys
(``KEY_SHAPE``: an operator's name, ``key:`` and 8 hex digits, ``other``, or "" for requests
without a key); any other is left out and counted in ``truncated``. Its size is bounded by
construction: at most ``MAX_KEYS_BYTES`` (tested with every count at its largest).

``parse_keys(doc)`` is the bot's side, on bytes from a host that may be hostile: ``None`` when
the document has no ``keys_today`` (a host from before it, or no ledger with attribution), a
``StatusKeys`` of range-checked numbers and shape-checked keys, or ``StatusParseError``. A key is
the only text of the remote's the bot shows: at most 64 of ``[A-Za-z0-9._@+-:]``, nothing a
terminal or a chat could take for a control sequence.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_ledger.errors import StatusParseError
from vllm_ledger.read.whose import WhoseWindow

MAX_STATUS_KEYS = 5
MAX_KEYS_BYTES = 1536
MAX_COUNT = 10**15  # as formats/status.py
# An operator's name (write/keys.py's names file), a keyed hash, ``other``, or none.
KEY_SHAPE = re.compile(r"|key:[0-9a-f]{8}|[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}", re.ASCII)
_FIGURES = (("input", "input_tokens"), ("output", "output_tokens"), ("cached", "cached_tokens"),
            ("requests", "requests"))  # fmt: skip


@dataclass(frozen=True)
class StatusKey:
    key: str  # shape-checked (``KEY_SHAPE``); "" for requests without a key
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    requests: int


@dataclass(frozen=True)
class StatusKeys:
    """Today's top keys as a remote host sent them (validated)."""

    rows: tuple[StatusKey, ...]
    truncated: int
    not_attributed_input: int
    not_attributed_output: int
    requests_aborted: int
    folded: int


# ---- producing -------------------------------------------------------------------------


def keys_dict(today: WhoseWindow) -> dict[str, Any]:
    """``keys_today`` of today's rows by key (most input first, as ``whose`` orders them)."""
    shaped = [r for r in today.rows if KEY_SHAPE.fullmatch(r.value)]
    rows = shaped[:MAX_STATUS_KEYS]
    na = today.not_attributed
    return {
        "rows": [
            {"key": r.value, **{k: int(getattr(r, name)) for k, name in _FIGURES}} for r in rows
        ],
        "truncated": len(today.rows) - len(rows),
        "not_attributed": {
            "input": int(na.input_tokens),
            "output": int(na.output_tokens),
            "requests_aborted": int(na.requests_aborted),
        },
        "folded": int(today.folded),
    }


# ---- parsing (remote bytes) -----------------------------------------------------------


def _int(parent: Mapping[str, Any], key: str, lo: int, hi: int) -> int:
    v = parent.get(key)
    if type(v) is not int or not lo <= v <= hi:
        raise StatusParseError(f"keys_today: {key} not an integer in range")
    return v


def _obj(parent: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    v = parent.get(key)
    if not isinstance(v, dict):
        raise StatusParseError(f"keys_today: {key} not an object")
    return v


def _row(item: object) -> StatusKey:
    if not isinstance(item, dict):
        raise StatusParseError("keys_today: a row is not an object")
    key = item.get("key")
    if not isinstance(key, str) or not KEY_SHAPE.fullmatch(key):
        raise StatusParseError("keys_today: a key that is not a key's name")
    counts = {name: _int(item, k, 0, MAX_COUNT) for k, name in _FIGURES}
    if counts["cached_tokens"] > counts["input_tokens"]:
        raise StatusParseError("keys_today: cached above input")
    return StatusKey(key=key, **counts)


def parse_keys(doc: Mapping[str, Any]) -> StatusKeys | None:
    """The document's ``keys_today``, checked; None when it has none."""
    if "keys_today" not in doc:
        return None
    got = _obj(doc, "keys_today")
    rows_in = got.get("rows")
    if not isinstance(rows_in, list) or len(rows_in) > MAX_STATUS_KEYS:
        raise StatusParseError("keys_today: rows not a short list")
    rows = tuple(_row(item) for item in rows_in)
    if len({r.key for r in rows}) != len(rows):
        raise StatusParseError("keys_today: a key given twice")
    na = _obj(got, "not_attributed")
    return StatusKeys(
        rows=rows,
        truncated=_int(got, "truncated", 0, MAX_COUNT),
        not_attributed_input=_int(na, "input", -MAX_COUNT, MAX_COUNT),
        not_attributed_output=_int(na, "output", -MAX_COUNT, MAX_COUNT),
        requests_aborted=_int(na, "requests_aborted", 0, MAX_COUNT),
        folded=_int(got, "folded", 0, MAX_COUNT),
    )


def parsed_keys_dict(keys: StatusKeys) -> dict[str, Any]:
    """A parsed ``keys_today`` back in the document's form."""
    return {
        "rows": [
            {"key": r.key, **{k: getattr(r, name) for k, name in _FIGURES}} for r in keys.rows
        ],
        "truncated": keys.truncated,
        "not_attributed": {
            "input": keys.not_attributed_input,
            "output": keys.not_attributed_output,
            "requests_aborted": keys.requests_aborted,
        },
        "folded": keys.folded,
    }


__all__ = [
    "KEY_SHAPE",
    "MAX_KEYS_BYTES",
    "MAX_STATUS_KEYS",
    "StatusKey",
    "StatusKeys",
    "keys_dict",
    "parse_keys",
    "parsed_keys_dict",
]
