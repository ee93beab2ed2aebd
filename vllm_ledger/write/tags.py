"""Whose request is this: the tags the attribution middleware puts on requests, and the join
of vLLM's finished requests to them, in one API process.

The middleware (``write/middleware.py``) and the stat logger (``write/plugin.py``) run in the
same API process, so they share one ``TagBook`` (``BOOK``). The middleware opens and ends
entries on the asyncio loop; ``record()`` only counts its calls (``tick``) and hands each
finished request's id and counts to the recorder, whose thread joins them (``credit``) and
forgets ended entries (``settle``): the join costs the serving loop nothing. A lock, held for
a few dictionary operations, keeps the two threads' view of an entry whole.

* ``begin``: a request arrives; its id (the ``X-Request-Id`` vLLM builds its request id from)
  gets an ``Entry``. An id another request in flight already holds makes both ``ambiguous``:
  neither is ever credited.
* ``named``: the entry learns whose it is: (key, adapter, user, tenant), the labels the
  middleware found (``Labels``).
* ``end``: the HTTP exchange is over. vLLM hands the request's finished stats to ``record()``
  before its next output batch, so an ended entry stays findable until the recorder has taken
  in the events of two more ``record()`` calls (``settle``); then it is gone, and, when no
  finished request was joined to it, a generation request whose response started with 200 (or
  never started) is counted as aborted, under its labels.
* ``credit``: ``record()`` joins each ``FinishedRequestStats`` by its ``request_id`` (vLLM's
  ``cmpl-<id>-0``, ``chatcmpl-<id>``, ...) and gets the credits to count: the request's
  prompt, generated and cached tokens for its labels; a copy of ``n > 1`` sampling (the same
  request id again) adds its generated tokens and its request there, its prompt (the same
  prompt again) under ``copies``; an id no entry holds is ``untagged``, an ambiguous one
  ``ambiguous``.

A credit is ``(dims, prompt, generation, cached, requests, events)`` where ``dims`` is
``(key, adapter, user, tenant, reason)`` (``""`` for none) and ``reason`` is ``""`` for a
credited request or one of ``REASONS``. Standard library only: this runs inside vLLM.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Final

Dims = tuple[str, str, str, str, str]
Credit = tuple[Dims, int, int, int, int, int]

# Why tokens or requests are not credited to anyone (docs/attribution.md).
UNTAGGED: Final = "untagged"  # a finished request no tag matched (no middleware on its route)
AMBIGUOUS: Final = "ambiguous"  # its id was held by two requests in flight at once
COPIES: Final = "copies"  # the prompt of an n > 1 sampling copy: the same prompt again
ABORTED: Final = "aborted"  # a request that ended with no finished stats (events: requests)
FAULT: Final = "fault"  # a fault in the middleware: the request went through untagged
REFUSED: Final = "refused"  # answered 429 over a hard budget, never reached the engine (events)
REASONS: Final = (UNTAGGED, AMBIGUOUS, COPIES, ABORTED, FAULT, REFUSED)

UNTAGGED_DIMS: Final[Dims] = ("", "", "", "", UNTAGGED)
AMBIGUOUS_DIMS: Final[Dims] = ("", "", "", "", AMBIGUOUS)
FAULT_DIMS: Final[Dims] = ("", "", "", "", FAULT)

MAX_ENTRIES = 65_536  # requests in flight or just ended: past this, new ones go untagged
MAX_ID_CHARS = 256  # an id longer than this is not tagged (the join tries a few cuts of it)
MAX_RIDS_PER_ENTRY = 64  # finished request ids remembered per entry (n > 1 copies)
SETTLE_RECORDS = 2  # record() calls an ended entry stays findable for
# Or, once every record() call so far has been taken in, this long after its end: vLLM would
# have handed over a finished request by then (an idle engine makes no more calls).
SETTLE_S = 2.0
_NO_RIDS: frozenset[str] = frozenset()
_CUTS = 4  # prefixes tried when joining (``cmpl-``, ``chatcmpl-``, ``generate-tokens-``, ...)


class Entry:
    """One request id in flight (or just ended) and whose it is."""

    __slots__ = (
        "ambiguous",
        "dims",
        "ended_mono",
        "finished",
        "judge_abort",
        "live",
        "rids",
        "settle_at",
        "x",
    )

    def __init__(self, x: str, judge_abort: bool) -> None:
        self.x = x
        self.dims: tuple[str, str, str, str] = ("", "", "", "")
        self.live = 1  # HTTP exchanges holding this id now
        self.ambiguous = False
        self.finished = 0  # finished requests joined to it
        self.rids: set[str] | frozenset[str] = _NO_RIDS  # a set of its own from the first
        self.judge_abort = judge_abort
        self.settle_at = 0
        self.ended_mono = 0.0


class TagBook:
    """The tags of one API process and the join to its finished requests."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.monotonic = monotonic
        self.entries: dict[str, Entry] = {}
        self.ended: deque[tuple[Entry, int | None]] = deque()
        self.records = 0  # record() calls so far (``tick``): ended entries settle by it
        self.consumer = False  # a ledger plugin records in this process: tags are joined
        self.pending: list[Credit] = []  # aborted and fault counts the recorder takes
        self.lock = threading.Lock()
        # For doctor and tests: plain ints, written on the loop's thread only.
        self.begun_total = 0
        self.faults_total = 0
        self.full_total = 0

    # ---- the middleware's side ----------------------------------------------------------

    def begin(self, x: str, *, judge_abort: bool) -> Entry | None:
        """A request with id ``x`` arrives; its entry, or None when it cannot be tagged."""
        if len(x) > MAX_ID_CHARS:
            return None
        with self.lock:
            entries = self.entries
            got = entries.get(x)
            if got is not None and (got.live or got.settle_at > self.records):
                # Another request holds the id now (or just did): neither can be told apart.
                got.live += 1
                got.ambiguous = True
                self.begun_total += 1
                return got
            if len(entries) >= MAX_ENTRIES:
                self._settle(self.records, force=True)
                if len(entries) >= MAX_ENTRIES:
                    self.full_total += 1
                    return None
            entry = entries[x] = Entry(x, judge_abort)
            self.begun_total += 1
            return entry

    @staticmethod
    def named(entry: Entry, key: str, adapter: str, user: str, tenant: str) -> None:
        entry.dims = (key, adapter, user, tenant)

    def end(self, entry: Entry, status: int | None) -> None:
        """The HTTP exchange of ``entry`` is over (``status``: the response's, None if it
        never started)."""
        with self.lock:
            entry.live -= 1
            if entry.live <= 0:
                entry.settle_at = self.records + SETTLE_RECORDS
                entry.ended_mono = self.monotonic()
                self.ended.append((entry, status))

    def fault(self) -> None:
        """A fault in the middleware: counted, here and in the ledger."""
        with self.lock:
            self.faults_total += 1
            self.pending.append((FAULT_DIMS, 0, 0, 0, 0, 1))

    def refused(self, labels: tuple[str, str, str, str]) -> None:
        """A request answered 429 over a hard budget: counted under its labels."""
        with self.lock:
            self.pending.append(((*labels, REFUSED), 0, 0, 0, 0, 1))

    # ---- the stat logger's side ---------------------------------------------------------

    def tick(self) -> int:
        """One more ``record()`` call (on vLLM's loop); its number, for the recorder."""
        self.records += 1
        return self.records

    def settle(self, taken: int, *, final: bool = False) -> list[Credit]:
        """On the recorder's thread, once it has joined the events of every ``record()`` call
        up to number ``taken``: forget the entries that ended long enough before (``final``:
        every ended one, at close), and return what is waiting to be counted (aborted
        requests, middleware faults)."""
        with self.lock:
            if self.ended:
                all_taken = taken >= self.records
                quiet = self.monotonic() - SETTLE_S if all_taken else -1.0
                self._settle(taken, quiet_mono=float("inf") if final and all_taken else quiet)
            if not self.pending:
                return []
            out, self.pending = self.pending, []
            return out

    def _settle(self, taken: int, force: bool = False, quiet_mono: float = -1.0) -> None:
        ended = self.ended
        while ended and (
            force or ended[0][0].settle_at <= taken or ended[0][0].ended_mono <= quiet_mono
        ):
            entry, status = ended.popleft()
            if entry.live > 0:
                continue  # taken again by another request since: it settles later
            if self.entries.get(entry.x) is entry:
                del self.entries[entry.x]
            if (
                entry.judge_abort
                and not entry.finished
                and not entry.ambiguous
                and (status is None or status == 200)
            ):
                self.pending.append(((*entry.dims, ABORTED), 0, 0, 0, 0, 1))
            if force and len(self.entries) < MAX_ENTRIES // 2:
                return

    def find(self, rid: object) -> Entry | None:
        """The entry a finished request's id names: its whole id, or what follows one of its
        first dashes, with or without a last ``-N`` / ``_N``."""
        if type(rid) is not str or len(rid) > MAX_ID_CHARS + 64:
            return None
        entries = self.entries
        got = entries.get(rid)
        if got is not None:
            return got
        at = rid.find("-")
        for _ in range(_CUTS):
            if at < 0:
                return None
            rest = rid[at + 1 :]
            got = entries.get(rest)
            if got is not None:
                return got
            cut = max(rest.rfind("-"), rest.rfind("_"))
            if cut > 0 and rest[cut + 1 :].isdigit():
                got = entries.get(rest[:cut])
                if got is not None:
                    return got
            at = rid.find("-", at + 1)
        return None

    def credit(self, rid: object, prompt: int, generation: int, cached: int) -> list[Credit]:
        """What one finished request counts, and for whom (on the recorder's thread)."""
        if not self.entries and not self.ended:  # no middleware tags in this process
            return [(UNTAGGED_DIMS, prompt, generation, cached, 1, 0)]
        with self.lock:
            return self._credit(rid, prompt, generation, cached)

    def _credit(self, rid: object, prompt: int, generation: int, cached: int) -> list[Credit]:
        entry = self.find(rid)
        if entry is None:
            return [(UNTAGGED_DIMS, prompt, generation, cached, 1, 0)]
        entry.finished += 1
        if entry.ambiguous:
            return [(AMBIGUOUS_DIMS, prompt, generation, cached, 1, 0)]
        key, adapter, user, tenant = entry.dims
        assert isinstance(rid, str)
        rids = entry.rids
        if rid in rids:  # an n > 1 copy: the same prompt again
            return [
                ((key, adapter, user, tenant, ""), 0, generation, 0, 1, 0),
                ((key, adapter, user, tenant, COPIES), prompt, 0, cached, 0, 0),
            ]
        if not rids:
            entry.rids = {rid}
        elif len(rids) < MAX_RIDS_PER_ENTRY and isinstance(rids, set):
            rids.add(rid)
        return [((key, adapter, user, tenant, ""), prompt, generation, cached, 1, 0)]


BOOK = TagBook()  # the one book of this process
