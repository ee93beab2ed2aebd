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
from vllm_ledger.strictjson import whole_in

MAX_STATUS_KEYS = 5
MAX_KEYS_BYTES = 1536
MAX_COUNT = 10**15  # as formats/status_fields.py
# An operator's name (write/keys.py's names file), a keyed hash, ``other``, or none.
KEY_SHAPE = re.compile(r"|key:[0-9a-f]{8}|[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}", re.ASCII)
# Any label the document shows (a key, an adapter, a user, a tenant): a key's shape, or a
# name with ``/`` in it too (a served model's name: ``org/model``). Nothing a terminal or a
# chat could take for a control sequence, a mention's markup or a link's scheme (no ``:``
# but in ``key:``, no ``<``, no space).
VALUE_SHAPE = re.compile(r"|key:[0-9a-f]{8}|[A-Za-z0-9][A-Za-z0-9._@+/-]{0,63}", re.ASCII)
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


def rows_dict(
    window: WhoseWindow, max_rows: int = MAX_STATUS_KEYS, shape: re.Pattern[str] = KEY_SHAPE
) -> dict[str, Any]:
    """A window's rows by one label, the ``max_rows`` with most input first (as ``whose``
    orders them), only values of ``shape``; the rest counted in ``truncated``; and its
    not-attributed row and the values folded (``keys_today``, and each ``asked`` block)."""
    shaped = [r for r in window.rows if shape.fullmatch(r.value)]
    rows = shaped[:max_rows]
    na = window.not_attributed
    return {
        "rows": [
            {"key": r.value, **{k: int(getattr(r, name)) for k, name in _FIGURES}} for r in rows
        ],
        "truncated": len(window.rows) - len(rows),
        "not_attributed": {
            "input": int(na.input_tokens),
            "output": int(na.output_tokens),
            "requests_aborted": int(na.requests_aborted),
        },
        "folded": int(window.folded),
    }


def keys_dict(today: WhoseWindow) -> dict[str, Any]:
    """``keys_today`` of today's rows by key (most input first, as ``whose`` orders them)."""
    return rows_dict(today, MAX_STATUS_KEYS, KEY_SHAPE)


# ---- parsing (remote bytes) -----------------------------------------------------------


def _int(parent: Mapping[str, Any], key: str, lo: int, hi: int, where: str) -> int:
    v = parent.get(key)
    if not whole_in(v, lo, hi):
        raise StatusParseError(f"{where}: {key} not an integer in range")
    return v


def _obj(parent: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    v = parent.get(key)
    if not isinstance(v, dict):
        raise StatusParseError(f"{where}: {key} not an object")
    return v


def _row(item: object, shape: re.Pattern[str], where: str) -> StatusKey:
    if not isinstance(item, dict):
        raise StatusParseError(f"{where}: a row is not an object")
    key = item.get("key")
    if not isinstance(key, str) or not shape.fullmatch(key):
        raise StatusParseError(f"{where}: a key that is not a key's name")
    counts = {name: _int(item, k, 0, MAX_COUNT, where) for k, name in _FIGURES}
    if counts["cached_tokens"] > counts["input_tokens"]:
        raise StatusParseError(f"{where}: cached above input")
    return StatusKey(key=key, **counts)


def parse_rows(
    value: object,
    where: str,
    max_rows: int = MAX_STATUS_KEYS,
    shape: re.Pattern[str] = KEY_SHAPE,
) -> StatusKeys:
    """One block of rows (``rows_dict``'s form) from a remote, checked: at most ``max_rows``
    rows, each value of ``shape`` and given once, counts in range."""
    if not isinstance(value, dict):
        raise StatusParseError(f"{where}: not an object")
    rows_in = value.get("rows")
    if not isinstance(rows_in, list) or len(rows_in) > max_rows:
        raise StatusParseError(f"{where}: rows not a short list")
    rows = tuple(_row(item, shape, where) for item in rows_in)
    if len({r.key for r in rows}) != len(rows):
        raise StatusParseError(f"{where}: a key given twice")
    na = _obj(value, "not_attributed", where)
    return StatusKeys(
        rows=rows,
        truncated=_int(value, "truncated", 0, MAX_COUNT, where),
        not_attributed_input=_int(na, "input", -MAX_COUNT, MAX_COUNT, where),
        not_attributed_output=_int(na, "output", -MAX_COUNT, MAX_COUNT, where),
        requests_aborted=_int(na, "requests_aborted", 0, MAX_COUNT, where),
        folded=_int(value, "folded", 0, MAX_COUNT, where),
    )


def parse_keys(doc: Mapping[str, Any]) -> StatusKeys | None:
    """The document's ``keys_today``, checked; None when it has none."""
    if "keys_today" not in doc:
        return None
    return parse_rows(doc["keys_today"], "keys_today")


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
    "VALUE_SHAPE",
    "StatusKey",
    "StatusKeys",
    "keys_dict",
    "parse_keys",
    "parse_rows",
    "parsed_keys_dict",
    "rows_dict",
]
