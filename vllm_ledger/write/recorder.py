"""The writer thread: per-second buckets, one transaction per flush, heartbeats, drain on exit.

``Recorder.submit()`` is the only call made on vLLM's output loop: an append to a bounded
buffer (a ``deque``; one producer, one consumer) that wakes nobody. A full buffer counts the
event as dropped, never blocks. Everything else happens on the recorder's own daemon thread,
which wakes on its own cadence (``write/schedule.py``: at most every flush interval), when the
buffer crosses its high-water mark, or on ``close()``:

* events are taken in, in slices that each hold the GIL briefly, and summed into buckets
  keyed by (event wall second, DP rank) (the batch, ``write/batch.py``);
* about every second the buckets are committed in one transaction that *adds* to the
  stored rows (``ON CONFLICT DO UPDATE SET x = x + excluded.x``), never overwrites them;
* the writer's vouched span is extended on every commit and at least every 5 s
  (the heartbeat; 2 s after a commit that held events), so readers can tell a live writer
  from a stale or crashed one, and a live report's watermark soon passes the last event
  (``write/span.py``);
* a commit that fails is retried with the same batch; after ``max_retries`` the batch is
  counted as ``lost_events`` per second and the span is broken, so that stretch reads as
  uncovered;
* a ledger file SQLite calls damaged is left byte-for-byte as it is, and a new file of the
  next generation is opened for the same writer (``write/ledgerfile.py``);
* on ``close()`` the buffer is drained within a time limit and a clean-close marker written;
* a fault of its own is counted and logged at most once a minute (``write/faultlog.py``).

Standard library only: this runs inside vLLM.
"""

from __future__ import annotations

import contextlib
import logging
import math
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vllm_ledger import bounds
from vllm_ledger.format.identity import WriterIdentity
from vllm_ledger.write import compaction, faults, schedule
from vllm_ledger.write.batch import Batch
from vllm_ledger.write.buckets import DROPPED, REJECTED
from vllm_ledger.write.faultlog import FaultLog
from vllm_ledger.write.iteration import IterationEvent
from vllm_ledger.write.ledgerfile import LedgerFile, is_damage
from vllm_ledger.write.span import SPAN_BREAK_S, Span
from vllm_ledger.write.tags import BOOK, TagBook

logger = logging.getLogger("vllm.ledger.recorder")

QUEUE_SIZE = 4096  # the buffer's bound: events past it are counted as dropped
FLUSH_INTERVAL_S = 1.0
HEARTBEAT_INTERVAL_S = 5.0
# The next heartbeat after a commit that held events (see write/schedule.py).
PROVE_AFTER_EVENTS_S = schedule.Cadence.prove_after_events_s
# Events taken in per slice before the recorder lets other threads have the GIL: a slice of
# 256 events holds it for about 0.3 ms.
TAKE_IN_SLICE = 256
DRAIN_TIMEOUT_S = 5.0
MAX_RETRIES = 3
INTEGRITY_CHECK_INTERVAL_S = 60.0  # PRAGMA quick_check on a fresh read-only connection
COMPACTION_INTERVAL_S = 3600.0


class Recorder:
    """Owns one writer's ledger files and the thread that writes them."""

    def __init__(
        self,
        root: Path,
        identity: WriterIdentity,
        *,
        queue_size: int = QUEUE_SIZE,
        flush_interval_s: float = FLUSH_INTERVAL_S,
        heartbeat_interval_s: float = HEARTBEAT_INTERVAL_S,
        max_retries: int = MAX_RETRIES,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        integrity_check_interval_s: float = INTEGRITY_CHECK_INTERVAL_S,
        span_break_s: float = SPAN_BREAK_S,
        book: TagBook = BOOK,
    ) -> None:
        self.root = Path(root)
        self.identity = identity
        # A deque bounded by a size check: one producer (vLLM's output loop) appends, one
        # consumer (the recorder thread) pops from the other end; both are atomic in CPython,
        # and neither notifies anyone. The check can only err towards room, never overfill.
        self.buffer: deque[Any] = deque()
        self.queue_size = queue_size
        self.high_water = schedule.high_water_mark(queue_size)
        # Set only by the append that crosses the high-water mark, and by close().
        self.wake: schedule.Waker = threading.Event()
        self.flush_interval_s = flush_interval_s
        self.heartbeat_interval_s = heartbeat_interval_s
        self.cadence = schedule.Cadence(
            flush_interval_s=flush_interval_s,
            heartbeat_interval_s=heartbeat_interval_s,
            prove_after_events_s=PROVE_AFTER_EVENTS_S,
            compaction_interval_s=COMPACTION_INTERVAL_S,
        )
        self.max_retries = max_retries
        self.clock = clock
        self.monotonic = monotonic

        # Touched only by the submitting thread (vLLM's output loop).
        self._faults = faults.SubmitFaults()
        # Counters for humans and tests; plain ints, written by one thread each.
        self.submitted_total = 0
        self.dropped_total = 0
        self._rejected_submitted = 0  # and the batch's own: ``rejected_total``
        self.committed_events_total = 0
        self.commit_failures_total = 0
        self.lost_events_total = 0
        self.files_rotated_total = 0
        # Written by the recorder thread only: every return from its wait, and why.
        self.wakeups_total = 0
        self.wakeups_by_reason: dict[str, int] = dict.fromkeys(schedule.WAKE_REASONS, 0)
        self.last_error: str | None = None

        # What the recorder thread has taken in since its last commit, and the file it goes to.
        self._batch = Batch(book, clock)
        self._file = LedgerFile(
            self.root,
            identity,
            integrity_check_interval_s=integrity_check_interval_s,
            first_check_mono=monotonic() + integrity_check_interval_s,
        )
        # Faults inside the recorder itself (a bad event, an unexpected error in a flush):
        # counted, logged at most once a minute with the count, never the end of the thread.
        self.internal_faults_total = 0
        self._log = FaultLog()
        self._span = Span(span_break_s)
        self._failed_attempts = 0
        self._stop = threading.Event()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    # ---- the hot path (vLLM's output loop) -------------------------------------------

    def submit(self, event: IterationEvent) -> bool:
        """Buffer one event without blocking or waking anyone. A full buffer counts it as
        dropped. Only the append that crosses the high-water mark wakes the recorder."""
        buf = self.buffer
        n = len(buf)
        if n >= self.queue_size:
            self.dropped_total += 1
            self._faults.add(int(event[0]), DROPPED)
            return False
        if self._faults.by_second:
            self._hand_over_faults()
        buf.append(event)
        self.submitted_total += 1
        if n == self.high_water:  # schedule.crosses_high_water, inlined: once per crossing
            self.wake.set()
        return True

    def reject(self, event_ts: float) -> None:
        """Count input the plugin could not read, in the second it arrived."""
        self._rejected_submitted += 1
        self._faults.add(int(event_ts), REJECTED)
        self._hand_over_faults()  # now, not at the next good event: there may be none

    def _hand_over_faults(self, force: bool = False) -> None:
        held = self._faults
        if not force and len(self.buffer) >= self.queue_size:
            return
        self.buffer.append(("faults", held.by_second))
        held.by_second = {}

    @property
    def buffered(self) -> int:
        """Items waiting in the buffer (events and fault hand-overs)."""
        return len(self.buffer)

    @property
    def rejected_total(self) -> int:
        """Input that could not be read: what the plugin rejected and what the recorder
        could not take in."""
        return self._rejected_submitted + self._batch.rejected

    @property
    def path(self) -> Path | None:
        """The ledger file written now (or last), None before the first commit."""
        return self._file.path

    # ---- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="vllm-ledger-recorder", daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def close(self, timeout_s: float = DRAIN_TIMEOUT_S) -> bool:
        """Drain the buffer and mark a clean close, giving up after ``timeout_s``.

        Returns True when the clean close was written in time. Never raises.
        """
        with contextlib.suppress(Exception):
            if self._faults.by_second:
                self._hand_over_faults(force=True)  # one item past the bound, at exit only
        self._drain_deadline = self.monotonic() + timeout_s
        self._stop.set()
        self.wake.set()  # end the thread's wait at once
        if self._thread is None:
            return False
        self._closed.wait(timeout_s)
        return self._closed.is_set() and self._clean

    def pump(self, final: bool = False) -> bool:
        """Take the buffer in and commit on the caller's thread; ``final`` closes cleanly.

        The same code the writer thread runs, for generators and tests that drive time
        themselves. Not to be mixed with ``start()``.
        """
        self._take_in()
        ok = self._flush(final=final)
        if final:
            self._file.close()
        return ok

    def abandon(self) -> None:
        """Drop the connection without a clean close, as a killed process would."""
        self._file.close()

    # ---- the writer thread -------------------------------------------------------------

    _drain_deadline = float("inf")
    _clean = False

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # the thread must not die silently
            self.last_error = f"recorder thread died: {exc!r}"
            logger.error("vllm-ledger: %s", self.last_error)
            raise
        finally:
            self._closed.set()

    def _loop(self) -> None:
        mono = self.monotonic
        wake = self.wake
        cadence = self.cadence
        deadlines = schedule.first_deadlines(mono(), cadence)
        while not self._stop.is_set():
            woken = wake.wait(schedule.wait_s(deadlines, mono()))
            if woken:
                wake.clear()
            reason = schedule.wake_reason(woken=woken, stopping=self._stop.is_set())
            self.wakeups_total += 1
            self.wakeups_by_reason[reason] += 1
            if reason == "shutdown":
                break
            try:
                self._take_in()
                now = mono()
                todo, deadlines = schedule.step(
                    deadlines, now, pending_events=self._batch.pending_events, cadence=cadence
                )
                if todo.check_file:
                    self._check_file(now)
                if todo.commit:
                    self._flush()
                if todo.compact:
                    self.compact()
            except Exception as exc:  # a fault of ours: counted, and the thread goes on
                self._internal_fault(exc)
                deadlines = schedule.first_deadlines(mono(), cadence)
        # Drain what is buffered, within the deadline, then close cleanly.
        try:
            self._take_in(deadline_mono=self._drain_deadline)
            if mono() < self._drain_deadline and self._flush(final=True):
                self._clean = True
        except Exception as exc:
            self._internal_fault(exc)
        self._file.close()

    def _take_in(self, deadline_mono: float = math.inf) -> int:
        """Sum what is buffered into the buckets, ``TAKE_IN_SLICE`` items at a time with the
        GIL let go between slices, so the serving loop never waits long for it. Items appended
        meanwhile are left for the next wake. Returns the number taken in."""
        buf = self.buffer
        todo = len(buf)
        done = 0
        while done < todo:
            n = min(TAKE_IN_SLICE, todo - done)
            self._batch.take(buf.popleft, n, self._reject_taken)
            done += n
            if done < todo:
                if self.monotonic() >= deadline_mono:
                    break
                time.sleep(0)  # let another thread (vLLM's loop) have the GIL
        self._settle_tags(final=math.isfinite(deadline_mono))
        return done

    def _reject_taken(self, item: Any, exc: Exception) -> None:
        """An item no check foresaw: counted as rejected and as a fault, never fatal."""
        self._batch.reject_taken(item)
        self._internal_fault(exc)

    def _settle_tags(self, final: bool = False) -> None:
        """Forget the tags every event that could join them has passed; count what the book
        holds (aborted requests, middleware faults) in this second."""
        try:
            self._batch.settle_tags(final=final)
        except Exception as exc:
            self._internal_fault(exc)

    def _internal_fault(self, exc: BaseException) -> None:
        """A fault inside the recorder: counted, logged at most once a minute with a count."""
        self.internal_faults_total += 1
        self.last_error = f"{type(exc).__name__}: {exc}"
        self._log.internal_fault(self.last_error, self.monotonic())

    def compact(self) -> int:
        """Drop this writer's per-second rows older than the horizon (on its own thread)."""
        conn = self._file.conn
        if conn is None:
            return 0
        try:
            return compaction.compact_connection(conn, compaction.horizon_ts(self.clock()))
        except sqlite3.Error as exc:
            self._log.once(f"compact:{exc}", "vllm-ledger: compaction failed: %s", exc)
            return 0

    # ---- watching the file --------------------------------------------------------------

    def _check_file(self, now_mono: float) -> None:
        """Look for damage done to the file from outside; on damage, move to a new file."""
        problem = self._file.damage(now_mono)
        if problem is not None:
            self.last_error = f"ledger damaged: {problem}"
            self._rotate()

    # ---- committing ----------------------------------------------------------------------

    def _flush(self, final: bool = False) -> bool:
        """Commit the pending buckets and extend the span in one transaction."""
        now_ts = self.clock()
        try:
            if not bounds.instant_ok(now_ts):
                # Spans and fault seconds are stamped with the wall clock: a reader refuses
                # a file whose times fall outside 2000-2100, so nothing is committed.
                raise OSError(f"the wall clock reads {now_ts!r}, outside 2000-2100")
            conn = self._file.connection(now_ts)
            self._commit(conn, now_ts, final)
        except (sqlite3.Error, OSError) as exc:
            self._on_commit_failure(exc)
            return False
        except Exception as exc:  # not SQLite's and not the disk's: a fault of ours
            self._internal_fault(exc)
            self._on_commit_failure(exc)
            return False
        self._failed_attempts = 0
        self.committed_events_total += self._batch.committed()
        return True

    def _commit(self, conn: sqlite3.Connection, now_ts: float, final: bool) -> None:
        """One transaction: the batch into the file, the span extended (``write/span.py``)."""
        self._span.commit(conn, self._batch, self._file, now_ts, final)

    def _on_commit_failure(self, exc: BaseException) -> None:
        self._file.dim_ids = {}  # ids named in the rolled-back transaction are gone
        self.commit_failures_total += 1
        self._failed_attempts += 1
        self.last_error = f"{type(exc).__name__}: {exc}"
        self._log.write_failed(self.last_error, self.monotonic())
        if is_damage(exc):
            self._rotate()
            return
        if self._failed_attempts >= self.max_retries:
            # Give the batch up: count its events as lost in the seconds they fell in (the
            # fault counts already kept per second stay for the next commit).
            self.lost_events_total += self._batch.give_up()
            self._failed_attempts = 0
            self._span.broken()  # the given-up stretch is not vouched for
            self._file.close()

    def _rotate(self) -> None:
        """Leave a damaged file as it is and continue in a new one."""
        self.files_rotated_total += 1
        logger.warning(
            "vllm-ledger: ledger %s is damaged (%s); left untouched, opening a new one",
            self.path,
            self.last_error,
        )
        self._file.leave()
        self._span.new_file()
