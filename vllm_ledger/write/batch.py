"""The batch: what the recorder's thread has taken in since its last commit.

Each event taken from the buffer is checked (``write/iteration.py``) and summed into the
bucket of its wall second and DP engine (``write/buckets.py``); the credits of its finished
requests go to the credit sums (``write/credits.py``); what it cannot take is counted as
rejected in a fault second (``write/faults.py``). A commit writes the batch and empties it; a
batch given up after failed commits is counted as lost, per second.

Owned by the recorder's thread alone. Standard library only: this runs inside vLLM.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vllm_ledger import bounds
from vllm_ledger.write.buckets import (
    CACHED,
    DECODE_TOKENS,
    DECODE_US,
    DROPPED,
    GENERATION,
    LOST,
    MOST_CACHED,
    MOST_GENERATION,
    MOST_PROMPT,
    MOST_REQUESTS,
    N_COUNTS,
    PROMPT,
    REJECTED,
    REQUESTS,
    Buckets,
    fits,
)
from vllm_ledger.write.credits import CreditSums, credit_ok
from vllm_ledger.write.faults import FaultSeconds
from vllm_ledger.write.iteration import fields_of, well_formed
from vllm_ledger.write.tags import TagBook

OnFault = Callable[[Any, Exception], None]  # an item ``take`` could not take, and why


def _reraise(_event: Any, exc: Exception) -> None:
    raise exc


# The bounds an event's own values keep (``bounds.py``), as ``iteration.well_formed`` checks
# them: found once for the plain event's inline check.
_EARLIEST, _LATEST = bounds.EARLIEST_AT, bounds.LATEST_AT
_MOST_ENGINE = bounds.MAX_ENGINE
_MOST_EVENT_TOKENS = bounds.TOKENS_PER_ENGINE_SECOND


class Batch:
    """Per-second buckets, fault seconds and credit sums until the next commit."""

    __slots__ = (
        "book",
        "buckets",
        "clock",
        "credits",
        "events_per_second",
        "fault_seconds",
        "pending_events",
        "rejected",
        "taken_record",
    )

    def __init__(self, book: TagBook, clock: Callable[[], float]) -> None:
        # Whose tokens: the join of finished requests to the middleware's tags, and the sums
        # of what it credits until the next commit (``write/tags.py``, ``write/credits.py``).
        self.book = book
        self.credits = CreditSums()
        self.taken_record = 0  # the newest record() whose event was taken in
        self.clock = clock
        # Per (event second, DP engine): the figures (and zeros in the fault columns).
        self.buckets: Buckets = {}
        # Per wall second: dropped, rejected and lost events, kept apart from every engine's
        # counts (they become ``problem_seconds`` rows) and across failed commits.
        self.fault_seconds: FaultSeconds = {}
        self.pending_events = 0
        self.events_per_second: dict[int, int] = {}
        self.rejected = 0  # events this thread could not take (the submitter counts its own)

    def accumulate(self, event: Any) -> None:
        """Take one buffered item in (``take`` of one; what it cannot take raises)."""
        self.take(iter((event,)).__next__, 1, _reraise)

    def take(self, pop: Callable[[], Any], count: int, on_fault: OnFault) -> None:
        """Take ``count`` items from ``pop`` (the buffer's ``popleft``) in; an item that raises
        goes to ``on_fault`` with its exception. Most are the plugin's events with no finished
        request: their checks and sums are written out here, in the loop (the same as
        ``well_formed`` and ``fits`` with nothing finished, in the same order of effects);
        anything else, or a value out of bounds, goes the general way (``_accumulate_any``),
        which decides it alike."""
        buckets = self.buckets
        eps = self.events_per_second
        for _ in range(count):
            event = pop()
            try:
                if type(event) is tuple and len(event) == 7:
                    ts, engine, prompt, generation, cached, finished, record_no = event
                    if (
                        type(finished) is tuple
                        and not finished
                        and type(record_no) is int
                        and type(ts) is float
                        and _EARLIEST <= ts < _LATEST
                        and type(engine) is int
                        and 0 <= engine <= _MOST_ENGINE
                        and type(prompt) is int
                        and 0 <= prompt <= _MOST_EVENT_TOKENS
                        and type(generation) is int
                        and 0 <= generation <= _MOST_EVENT_TOKENS
                        and type(cached) is int
                        and 0 <= cached <= _MOST_EVENT_TOKENS
                    ):
                        if record_no > self.taken_record:
                            self.taken_record = record_no
                        second = int(ts)
                        b = buckets.get((second, engine))
                        if b is None:
                            b = buckets[(second, engine)] = [0] * N_COUNTS
                        eps[second] = eps.get(second, 0) + 1
                        self.pending_events += 1
                        p, g = b[PROMPT] + prompt, b[GENERATION] + generation
                        c = b[CACHED] + cached
                        if (
                            cached > prompt
                            or p > MOST_PROMPT
                            or g > MOST_GENERATION
                            or c > MOST_CACHED
                            or b[REQUESTS] > MOST_REQUESTS
                        ):
                            self.rejected += 1
                            self.fault_second(second)[REJECTED - DROPPED] += 1
                        else:
                            b[PROMPT], b[GENERATION], b[CACHED] = p, g, c
                        continue
                self._accumulate_any(event)
            except Exception as exc:
                on_fault(event, exc)

    def _accumulate_any(self, event: Any) -> None:
        if isinstance(event[0], str):
            for (second, kind), n in event[1].items():
                self.fault_second(second)[kind - DROPPED] += n
            return
        ts, engine, prompt, generation, cached, finished = event[:6]
        if len(event) == 7 and type(event[6]) is int:
            self.taken_record = max(self.taken_record, event[6])
        if finished and type(finished) is tuple and type(finished[0]) is not tuple:
            try:
                finished = fields_of(finished)  # vLLM's FinishedRequestStats, read here
            except Exception:
                finished = None  # an object without those fields: rejected just below
        if not well_formed(ts, engine, prompt, generation, cached, finished):
            # A value outside the one table of bounds (bounds.py): a reader would refuse the
            # whole file for it. Counted as input we could not read, in the second it was taken.
            self.reject_taken(event)
            return
        second = int(ts)
        b = self.bucket(second, engine)
        eps = self.events_per_second
        eps[second] = eps.get(second, 0) + 1
        if not fits(b, prompt, generation, cached, finished):
            # Past what one second of one engine can hold, or more cached than input: a
            # reader would refuse the whole file for it. Counted as input we could not read.
            self.rejected += 1
            self.fault_second(second)[REJECTED - DROPPED] += 1
            self.pending_events += 1
            return
        b[PROMPT] += prompt
        b[GENERATION] += generation
        b[CACHED] += cached
        book = self.book
        for request in finished:
            gen_tokens, decode_s = request[0], request[1]
            b[REQUESTS] += 1
            if gen_tokens > 1:
                b[DECODE_TOKENS] += gen_tokens - 1
            b[DECODE_US] += round(decode_s * 1e6)
            if len(request) == 5:
                self.credits.add(
                    second, book.credit(request[2], request[3], gen_tokens, request[4])
                )
        self.pending_events += 1

    def reject_taken(self, event: Any) -> None:
        """Count an event the recorder cannot take as rejected input, in its own second when
        that is a time a reader takes, else in the second it was taken in."""
        ts: Any = event[0] if isinstance(event, tuple) and event else None
        second = int(ts) if bounds.instant_ok(ts) else int(self.clock())
        self.rejected += 1
        self.fault_second(second)[REJECTED - DROPPED] += 1

    def fault_second(self, second: int) -> list[int]:
        counts = self.fault_seconds.get(second)
        if counts is None:
            counts = self.fault_seconds[second] = [0, 0, 0]
        return counts

    def bucket(self, second: int, engine: int) -> list[int]:
        key = (second, engine)
        b = self.buckets.get(key)
        if b is None:
            b = self.buckets[key] = [0] * N_COUNTS
        return b

    def settle_tags(self, final: bool = False) -> None:
        """Forget the tags every event that could join them has passed; count what the book
        holds (aborted requests, middleware faults) in this second."""
        pending = self.book.settle(self.taken_record, final=final)
        if pending:
            self.credits.add(int(self.clock()), [c for c in pending if credit_ok(c)])

    def committed(self) -> int:
        """Empty the batch after a commit wrote it; returns the events it held."""
        n = self.pending_events
        self.pending_events = 0
        self.events_per_second = {}
        self.buckets = {}
        self.fault_seconds = {}
        self.credits.clear()
        return n

    def give_up(self) -> int:
        """Count the batch's events as lost in the seconds they fell in and drop its sums (the
        fault counts already kept per second stay for the next commit); returns the events."""
        for second, n in self.events_per_second.items():
            self.fault_second(second)[LOST - DROPPED] += n
        n = self.pending_events
        self.pending_events = 0
        self.events_per_second = {}
        self.buckets = {}
        self.credits.clear()
        return n
