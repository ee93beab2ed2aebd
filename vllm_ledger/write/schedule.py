"""When the recorder thread wakes, and what it does when it does: pure functions, no clock.

The serving loop never wakes the recorder per call: ``record()`` appends to a buffer and
returns. The recorder wakes for one of three reasons only:

* ``cadence``: its own timer, at the next deadline below (never later than one flush
  interval, at most 1 s, so buffered events are taken in and committed within a second);
* ``high_water``: the buffer crossed its high-water mark (one wake per crossing, set by the
  append that crossed it), so a burst is taken in before the buffer is full;
* ``shutdown``: ``close()``.

Every wake takes in what is buffered; whether it also commits, checks the file or compacts is
decided by the deadlines alone (``step``), all on the monotonic clock. An idle writer still
commits a heartbeat every ``heartbeat_interval_s``, and proves once more
``prove_after_events_s`` after a commit that held events, so a live report's watermark soon
passes them.

Standard library only: this runs inside vLLM.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, Protocol

WakeReason = Literal["cadence", "high_water", "shutdown"]
WAKE_REASONS: tuple[WakeReason, ...] = ("cadence", "high_water", "shutdown")

FIRST_COMPACTION_DELAY_S = 60.0


@dataclass(frozen=True)
class Cadence:
    """The recorder's intervals, in seconds of the monotonic clock."""

    flush_interval_s: float = 1.0
    heartbeat_interval_s: float = 5.0
    # The reader trims the second before a proof (an event stamped then may still be on its
    # way), so a proof 2 s after the last event lets a live report include it.
    prove_after_events_s: float = 2.0
    compaction_interval_s: float = 3600.0


@dataclass(frozen=True)
class Deadlines:
    """The next instant (monotonic seconds) of each periodic duty."""

    flush_mono: float
    heartbeat_mono: float
    check_mono: float
    compaction_mono: float


@dataclass(frozen=True)
class Step:
    """What one wake does beyond taking in the buffer."""

    commit: bool
    check_file: bool
    compact: bool


def first_deadlines(now_mono: float, cadence: Cadence) -> Deadlines:
    """At start: the first heartbeat at once (it opens the span), the rest one interval on."""
    return Deadlines(
        flush_mono=now_mono + cadence.flush_interval_s,
        heartbeat_mono=now_mono,
        check_mono=now_mono + cadence.heartbeat_interval_s,
        compaction_mono=now_mono + FIRST_COMPACTION_DELAY_S,
    )


def wait_s(deadlines: Deadlines, now_mono: float) -> float:
    """How long to sleep before the next duty falls due (0 when one is already due).

    The flush deadline is always at most one flush interval ahead (``step`` moves it on at
    every wake that reaches it), so the recorder never sleeps longer than that.
    """
    nearest = min(
        deadlines.flush_mono,
        deadlines.heartbeat_mono,
        deadlines.check_mono,
        deadlines.compaction_mono,
    )
    return max(0.0, nearest - now_mono)


def step(
    deadlines: Deadlines, now_mono: float, *, pending_events: int, cadence: Cadence
) -> tuple[Step, Deadlines]:
    """What this wake does, and the deadlines after it.

    It commits when the flush interval has passed with events pending, or when a heartbeat is
    due (a commit with nothing in it still proves the writer alive). A high-water wake before
    the flush deadline only takes the buffer in: nothing is committed early.
    """
    commit = (now_mono >= deadlines.flush_mono and pending_events > 0) or (
        now_mono >= deadlines.heartbeat_mono
    )
    check_file = now_mono >= deadlines.check_mono
    compact = now_mono >= deadlines.compaction_mono
    new = deadlines
    if commit:
        after = (
            min(cadence.heartbeat_interval_s, cadence.prove_after_events_s)
            if pending_events > 0
            else cadence.heartbeat_interval_s
        )
        new = replace(
            new,
            flush_mono=now_mono + cadence.flush_interval_s,
            heartbeat_mono=now_mono + after,
        )
    elif now_mono >= deadlines.flush_mono:
        # Nothing to commit: wait a whole interval again, don't spin.
        new = replace(new, flush_mono=now_mono + cadence.flush_interval_s)
    if check_file:
        new = replace(new, check_mono=now_mono + cadence.heartbeat_interval_s)
    if compact:
        new = replace(new, compaction_mono=now_mono + cadence.compaction_interval_s)
    return Step(commit=commit, check_file=check_file, compact=compact), new


class Waker(Protocol):
    """What the recorder thread sleeps on: ``threading.Event`` (tests pass one on fake time)."""

    def wait(self, timeout: float | None = None) -> bool: ...

    def set(self) -> None: ...

    def clear(self) -> None: ...


def high_water_mark(capacity: int) -> int:
    """Three quarters of the buffer: room left for a burst while the recorder wakes."""
    return max(1, capacity * 3 // 4)


def crosses_high_water(buffered_before_append: int, high_water: int) -> bool:
    """Whether the append that finds ``buffered_before_append`` items should wake the recorder.

    True exactly once per crossing of the mark (the buffer grows by one per append), so a
    steady stream wakes the recorder once per ``high_water`` events at most, never per call.
    """
    return buffered_before_append == high_water


def wake_reason(*, woken: bool, stopping: bool) -> WakeReason:
    """Why the recorder's wait returned: its own timer, the high-water mark, or close()."""
    if stopping:
        return "shutdown"
    return "high_water" if woken else "cadence"
