"""The over-budget file: who is past a hard budget now, published for the middleware.

The enforcer (``enforcer.py``, on the rank-0 side, outside the serving loop) reads every ledger
of a root on its own cadence and writes ``ROOT/.vllm-ledger-over-budget.json`` whole
(a temporary file, then a rename); the attribution middleware in each API process looks at the
file's ``stat`` at most once a second and reads it again only when it changed
(``OverBudget.refresh``). Nothing of the read side is imported for it: this is the format both
sides share. Standard library only.

The document (JSON, at most ``MAX_FILE_BYTES``)::

    {"version": 1, "written_ts": 1796190000.0, "fresh_s": 30,
     "over": [{"kind": "key", "value": "team-a", "until_ts": 1796227200, "budget": "team-a"}]}

``kind`` is ``key``, ``adapter``, ``user`` or ``tenant``; ``until_ts`` the end of the budget's
period (a refusal's ``Retry-After``). A file older than ``fresh_s`` (the enforcer stopped) is
*stale*: nothing is refused (enforcement fails open) and the middleware counts it.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_ledger.bounds import instant_ok
from vllm_ledger.format.smallfiles import write_whole
from vllm_ledger.strictjson import is_number

OVER_BUDGET_FILE = ".vllm-ledger-over-budget.json"
MAX_FILE_BYTES = 1 << 20
MAX_ENTRIES = 10_000
MAX_VALUE_CHARS = 256
FRESH_S = 30.0  # the enforcer rewrites the file every few seconds; older than this is stale
KINDS = ("key", "adapter", "user", "tenant")
CHECK_EVERY_S = 1.0  # the middleware's look at the file's stat


@dataclass(frozen=True)
class Over:
    """One label past its hard budget until ``until_ts``."""

    kind: str
    value: str
    until_ts: float
    budget: str


def path_in(root: Path) -> Path:
    return root / OVER_BUDGET_FILE


def dumps(over: Iterable[Over], written_ts: float, fresh_s: float = FRESH_S) -> str:
    entries = [
        {"kind": o.kind, "value": o.value, "until_ts": o.until_ts, "budget": o.budget}
        for o in list(over)[:MAX_ENTRIES]
    ]
    doc = {"version": 1, "written_ts": written_ts, "fresh_s": fresh_s, "over": entries}
    return json.dumps(doc, ensure_ascii=True, separators=(",", ":")) + "\n"


def write(root: Path, over: Iterable[Over], written_ts: float, fresh_s: float = FRESH_S) -> Path:
    """Publish ``over`` whole: a temporary file in the root, then a rename over the old one."""
    path = path_in(root)
    tmp = root / f"{OVER_BUDGET_FILE}.{os.getpid()}.tmp"
    write_whole(path, dumps(over, written_ts, fresh_s).encode(), tmp=tmp, mode=0o644)
    return path


def parse(data: bytes) -> tuple[float, float, dict[tuple[str, str], Over]]:
    """``(written_ts, fresh_s, over by (kind, value))``; ``ValueError`` saying what is wrong."""
    doc: Any = json.loads(data)
    if not isinstance(doc, dict) or doc.get("version") != 1:
        raise ValueError("not a version 1 over-budget document")
    written: Any = doc.get("written_ts")
    fresh: Any = doc.get("fresh_s")
    if not instant_ok(written) or not is_number(fresh) or not 0 < fresh <= 3600:
        raise ValueError("written_ts or fresh_s out of range")
    entries = doc.get("over")
    if not isinstance(entries, list) or len(entries) > MAX_ENTRIES:
        raise ValueError("over is not a list of at most 10,000 entries")
    out: dict[tuple[str, str], Over] = {}
    for e in entries:
        if not isinstance(e, dict):
            raise ValueError("an entry is not an object")
        kind, value, budget = e.get("kind"), e.get("value"), e.get("budget")
        until: Any = e.get("until_ts")
        if kind not in KINDS or not isinstance(value, str) or len(value) > MAX_VALUE_CHARS:
            raise ValueError("an entry's kind or value is not one a budget names")
        if not instant_ok(until) or not isinstance(budget, str) or len(budget) > MAX_VALUE_CHARS:
            raise ValueError("an entry's until_ts or budget is out of range")
        out[(kind, value)] = Over(kind, value, float(until), budget)
    return float(written), float(fresh), out


class OverBudget:
    """The middleware's view of the file: refreshed at most every ``CHECK_EVERY_S``, re-read
    only when its ``stat`` changed, never raising (a file it cannot use refuses nothing)."""

    def __init__(
        self,
        root: Path,
        clock: Callable[[], float],
        monotonic: Callable[[], float],
    ) -> None:
        self.path = path_in(root)
        self.clock = clock
        self.monotonic = monotonic
        self._next_check = -math.inf
        self._stamp: tuple[int, int, int] | None = None
        self.written_ts: float | None = None
        self.fresh_s = FRESH_S
        self.over: dict[tuple[str, str], Over] = {}
        self.problem: str | None = None  # why nothing is refused now (None: enforcing)
        self.reads_total = 0
        self.bad_total = 0

    def refresh(self) -> None:
        now = self.monotonic()
        if now < self._next_check:
            return
        self._next_check = now + CHECK_EVERY_S
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._forget("no over-budget file: the enforcer has not published one")
            return
        except OSError as exc:
            self._forget(f"cannot look at {self.path.name}: {exc.strerror}")
            return
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        if stamp == self._stamp:
            return
        self._stamp = stamp
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            self._forget(f"{self.path.name} is not a regular file of at most 1 MiB")
            self.bad_total += 1
            return
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as f:
                data = f.read(MAX_FILE_BYTES + 1)
            self.written_ts, self.fresh_s, self.over = parse(data)
            self.reads_total += 1
        except (OSError, ValueError, RecursionError) as exc:  # deep nesting: not ours
            self._forget(f"{self.path.name} cannot be used: {str(exc)[:100]}")
            self.bad_total += 1

    def _forget(self, why: str) -> None:
        self.over = {}
        self.written_ts = None
        self.problem = why

    def refused(self, kind: str, value: str) -> Over | None:
        """The entry refusing ``(kind, value)`` now, or None (also while the file is stale:
        enforcement fails open)."""
        if not self.over:
            return None
        got = self.over.get((kind, value))
        if got is None:
            return None
        now = self.clock()
        written = self.written_ts
        if written is None or now - written > self.fresh_s:
            self.problem = "the over-budget file is stale: the enforcer stopped; nothing refused"
            return None
        self.problem = None
        return got if now < got.until_ts else None
