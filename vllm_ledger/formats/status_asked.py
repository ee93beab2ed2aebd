"""What the status document answers when asked (``asked``): the digest's day or week, or the
usage by key, adapter or user over today, 7 days or this month. Standard library.

The forced command never changes: the poller asks by ending the command it sends with
``--ask WHAT``, and the status command reads that word from the command line or, under a
forced command, from the last two words of ``SSH_ORIGINAL_COMMAND`` (sshd's copy of what
the client asked for): nothing else of it is read, and only a word of ``ASKS`` counts. A host
from before asks answers its plain document (no ``asked``), and the notifier says so.

``ASKS`` is the closed vocabulary:

- ``digest``: yesterday (local days in the host's zone), the top 5 keys and adapters;
- ``digest-week``: the 7 local days before today, the same;
- ``usage:BY:WINDOW``: BY ``key``, ``adapter`` or ``user``; WINDOW ``today``, ``7d``
  (the last 168 hours) or ``month`` (this calendar month so far); the top 10 rows.

The block is ``{ask, window, by: {BY: rows}, files_without}``: the window's own figures and
coverage as every window of the document (``report --window`` of the same period), each BY's
rows as ``keys_today``'s (``status_keys.rows_dict``: values of ``VALUE_SHAPE`` only, the rest
counted, what is not attributed, values folded), and how many files read keep no attribution.
At most ``MAX_ASKED_BYTES`` (tested at its longest). ``parse_asked`` keeps our own constants
for the ask and the window, and shape-checked values only.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_ledger.errors import StatusParseError
from vllm_ledger.formats.status_keys import VALUE_SHAPE, StatusKeys, parse_rows, rows_dict
from vllm_ledger.read.report import WindowReport
from vllm_ledger.read.whose import By, WhoseWindow

MAX_ASKED_BYTES = 6 * 1024
DIGEST_ROWS = 5
USAGE_ROWS = 10
MAX_COUNT = 10**15
USAGE_BYS: tuple[By, ...] = ("key", "adapter", "user")
USAGE_WINDOWS: tuple[str, ...] = ("today", "7d", "month")
# the report's period of each usage window (``read/periods.py``)
USAGE_PERIODS: dict[str, str] = {"today": "today", "7d": "7d", "month": "this-month"}
WEEK = "last-7-days"  # the digest-week's window: the 7 local days before today
MAX_ORIGINAL_CHARS = 4096  # an SSH_ORIGINAL_COMMAND longer than this is not read at all


@dataclass(frozen=True)
class Ask:
    """One word of the vocabulary: the window it names and the labels it breaks it down by."""

    word: str
    window: str  # a period name (read/periods.py) or WEEK
    bys: tuple[By, ...]
    rows: int

    @property
    def digest(self) -> bool:
        return self.word.startswith("digest")


def _asks() -> dict[str, Ask]:
    out = {
        "digest": Ask("digest", "yesterday", ("key", "adapter"), DIGEST_ROWS),
        "digest-week": Ask("digest-week", WEEK, ("key", "adapter"), DIGEST_ROWS),
    }
    for by in USAGE_BYS:
        for w in USAGE_WINDOWS:
            word = f"usage:{by}:{w}"
            out[word] = Ask(word, USAGE_PERIODS[w], (by,), USAGE_ROWS)
    return out


ASKS: dict[str, Ask] = _asks()


def usage_ask(by: str, window: str) -> Ask:
    return ASKS[f"usage:{by}:{window}"]


def ask_of_original(original: str | None) -> Ask | None:
    """The ask at the end of the command a client sent over SSH (``--ask WORD``), or None:
    the words are only split and compared, never run."""
    if not original or len(original) > MAX_ORIGINAL_CHARS:
        return None
    try:
        words = shlex.split(original)
    except ValueError:
        return None
    if len(words) >= 2 and words[-2] == "--ask":
        return ASKS.get(words[-1])
    return None


# ---- producing -------------------------------------------------------------------------


@dataclass(frozen=True)
class Asked:
    """What the host found for an ask: the window's report and its rows by each label."""

    ask: Ask
    window: WindowReport
    whose: Mapping[By, WhoseWindow]


def asked_dict(asked: Asked, window: dict[str, Any]) -> dict[str, Any]:
    """The ``asked`` block: ``window`` is ``asked.window`` in the document's window form."""
    files_without = max((w.files_without for w in asked.whose.values()), default=0)
    return {
        "ask": asked.ask.word,
        "window": window,
        "by": {by: rows_dict(asked.whose[by], asked.ask.rows, VALUE_SHAPE) for by in asked.ask.bys},
        "files_without": int(files_without),
    }


def drop_last(block: dict[str, Any]) -> bool:
    """Drop the last row of the longest breakdown, counted; False when none is left."""
    longest = max(block["by"].values(), key=lambda b: len(b["rows"]), default=None)
    if longest is None or not longest["rows"]:
        return False
    longest["rows"].pop()
    longest["truncated"] += 1
    return True


# ---- parsing (remote bytes) -----------------------------------------------------------


@dataclass(frozen=True)
class AskedParts:
    """An ``asked`` block as a remote host sent it, less its window (``formats/status.py``
    parses that as every window)."""

    ask: Ask
    by: tuple[tuple[By, StatusKeys], ...]
    files_without: int

    def rows(self, by: str) -> StatusKeys | None:
        return next((k for b, k in self.by if b == by), None)


def parse_asked_parts(value: object) -> tuple[AskedParts, Mapping[str, Any]]:
    """The block's ask and breakdowns, checked, and its window object (to parse)."""
    if not isinstance(value, dict):
        raise StatusParseError("asked: not an object")
    word = value.get("ask")
    ask = ASKS.get(word) if isinstance(word, str) else None
    if ask is None:
        raise StatusParseError("asked: not a known ask")
    window = value.get("window")
    by = value.get("by")
    if not isinstance(window, dict) or not isinstance(by, dict):
        raise StatusParseError("asked: window or by not an object")
    if set(by) != set(ask.bys):
        raise StatusParseError("asked: not the breakdowns asked for")
    parts = tuple((b, parse_rows(by[b], f"asked.{b}", ask.rows, VALUE_SHAPE)) for b in ask.bys)
    files_without = value.get("files_without")
    if type(files_without) is not int or not 0 <= files_without <= MAX_COUNT:
        raise StatusParseError("asked: files_without not an integer in range")
    return AskedParts(ask, parts, files_without), window


__all__ = [
    "ASKS",
    "MAX_ASKED_BYTES",
    "USAGE_BYS",
    "USAGE_WINDOWS",
    "WEEK",
    "Ask",
    "Asked",
    "AskedParts",
    "ask_of_original",
    "asked_dict",
    "drop_last",
    "parse_asked_parts",
    "usage_ask",
]
