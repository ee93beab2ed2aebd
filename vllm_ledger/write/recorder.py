"""The writer thread: per-second buckets, one transaction per flush, heartbeats, drain on exit.

``Recorder.submit()`` is the only call made on vLLM's output loop: an append to a bounded
buffer (a ``deque``; one producer, one consumer) that wakes nobody. A full buffer counts the
event as dropped, never blocks. Everything else happens on the recorder's own daemon thread,
which wakes on its own cadence (``write/schedule.py``: at most every flush interval), when the
buffer crosses its high-water mark, or on ``close()``:

* events are taken in, in slices that each hold the GIL briefly, and summed into buckets
  keyed by (event wall second, DP rank);
* about every second the buckets are committed in one transaction that *adds* to the
  stored rows (``ON CONFLICT DO UPDATE SET x = x + excluded.x``), never overwrites them;
* the writer's vouched span is extended on every commit and at least every 5 s
  (the heartbeat; 2 s after a commit that held events), so readers can tell a live writer
  from a stale or crashed one, and a live report's watermark soon passes the last event;
* a commit that fails is retried with the same batch; after ``max_retries`` the batch is
  counted as ``lost_events`` per second and the span is broken, so that stretch reads as
  uncovered;
* a ledger file SQLite calls damaged is left byte-for-byte as it is, and a new file of the
  next generation is opened for the same writer;
* on ``close()`` the buffer is drained within a time limit and a clean-close marker written.

Standard library only: this runs inside vLLM.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from vllm_ledger import bounds, figures
from vllm_ledger.format import connect, paths, schema, smallfiles, writes
from vllm_ledger.format.identity import WriterIdentity
from vllm_ledger.write import compaction, schedule
from vllm_ledger.write.credits import CreditSums, credit_ok
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
MAX_PENDING_FAULT_SECONDS = 86_400
SPAN_BREAK_S = 30.0  # a gap between commits longer than this starts a new span
FAILURE_LOG_INTERVAL_S = 60.0  # a failing writer (or a fault inside it) logs at most this often
INTEGRITY_CHECK_INTERVAL_S = 60.0  # PRAGMA quick_check on a fresh read-only connection
COMPACTION_INTERVAL_S = 3600.0

# Indexes into a bucket's list of counts (the order of ``schema.COUNT_COLUMNS``), found once.
PROMPT = schema.COUNT_COLUMNS.index(figures.INPUT_TOKENS.column)
GENERATION = schema.COUNT_COLUMNS.index(figures.OUTPUT_TOKENS.column)
CACHED = schema.COUNT_COLUMNS.index(figures.CACHED_TOKENS.column)
REQUESTS = schema.COUNT_COLUMNS.index(figures.REQUESTS.column)
DECODE_TOKENS = schema.COUNT_COLUMNS.index(figures.DECODE_TOKENS.column)
DECODE_US = schema.COUNT_COLUMNS.index(figures.DECODE_US.column)
DROPPED, REJECTED, LOST = (schema.COUNT_COLUMNS.index(c) for c in schema.FAULT_COLUMNS)
N_FIGURES = len(schema.SUM_COLUMNS)  # the figures come first; the fault counts after them
N_COUNTS = len(schema.COUNT_COLUMNS)
# The most one second of one DP engine holds of each (``figures.py``), found once.
_MOST_PROMPT = schema.PER_ENGINE_SECOND[figures.INPUT_TOKENS.column]
_MOST_GENERATION = schema.PER_ENGINE_SECOND[figures.OUTPUT_TOKENS.column]
_MOST_CACHED = schema.PER_ENGINE_SECOND[figures.CACHED_TOKENS.column]
_MOST_REQUESTS = schema.PER_ENGINE_SECOND[figures.REQUESTS.column]
_MOST_DECODE_TOKENS = schema.PER_ENGINE_SECOND[figures.DECODE_TOKENS.column]
_MOST_DECODE_US = schema.PER_ENGINE_SECOND[figures.DECODE_US.column]
_MOST_EVENT_TOKENS = bounds.TOKENS_PER_ENGINE_SECOND
_MOST_ENGINE = bounds.MAX_ENGINE
_EARLIEST, _LATEST = bounds.EARLIEST_AT, bounds.LATEST_AT
_MOST_DECODE_S = bounds.MAX_DECODE_SECONDS

# An iteration event, as the plugin builds it:
#   (event_ts, engine, prompt_tokens, generation_tokens, cached_tokens, finished[, record_no])
# where ``finished`` holds per finished request (generation_tokens, decode_seconds) and, where
# the attribution join is on, its (request_id, prompt_tokens, cached_tokens) after them;
# ``record_no`` is the ``TagBook.tick`` of the ``record()`` call (``write/tags.py``).
IterationEvent = tuple[Any, ...]

_DAMAGE_MARKERS = ("malformed", "not a database", "file is encrypted", "disk image")


class _Faults:
    """Fault counts per wall second, owned by the thread that calls ``submit()``."""

    __slots__ = ("by_second", "uncounted")

    def __init__(self) -> None:
        self.by_second: dict[tuple[int, int], int] = {}
        self.uncounted = 0

    def add(self, second: int, kind: int, n: int = 1) -> None:
        key = (second, kind)
        if key in self.by_second:
            self.by_second[key] += n
        elif len(self.by_second) < MAX_PENDING_FAULT_SECONDS:
            self.by_second[key] = n
        else:
            self.uncounted += n


class Waker(Protocol):
    """What the recorder thread sleeps on: ``threading.Event`` (tests pass one on fake time)."""

    def wait(self, timeout: float | None = None) -> bool: ...

    def set(self) -> None: ...

    def clear(self) -> None: ...


def high_water_mark(capacity: int) -> int:
    """Three quarters of the buffer: room left for a burst while the recorder wakes."""
    return max(1, capacity * 3 // 4)


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
        # Whose tokens: finished requests joined to the middleware's tags (``write/tags.py``).
        self.book = book
        self._credits = CreditSums()  # what they credit until the next commit
        self._marker = smallfiles.MarkerWriter()  # the open file's .seq, kept open
        self._dim_ids: dict[tuple[str, ...], int] = {}  # attr_dims ids in the open file
        self._taken_record = 0  # the newest record() whose event was taken in
        self.identity = identity
        # A deque bounded by a size check: one producer (vLLM's output loop) appends, one
        # consumer (the recorder thread) pops from the other end; both are atomic in CPython,
        # and neither notifies anyone. The check can only err towards room, never overfill.
        self.buffer: deque[Any] = deque()
        self.queue_size = queue_size
        self.high_water = high_water_mark(queue_size)
        # Set only by the append that crosses the high-water mark, and by close().
        self.wake: Waker = threading.Event()
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
        self.integrity_check_interval_s = integrity_check_interval_s
        self.span_break_s = span_break_s
        self._next_integrity_check = monotonic() + integrity_check_interval_s

        # Touched only by the submitting thread (vLLM's output loop).
        self._faults = _Faults()
        # Counters for humans and tests; plain ints, written by one thread each.
        self.submitted_total = 0
        self.dropped_total = 0
        self.rejected_total = 0
        self.committed_events_total = 0
        self.commit_failures_total = 0
        self.lost_events_total = 0
        self.files_rotated_total = 0
        # Written by the recorder thread only: every return from its wait, and why.
        self.wakeups_total = 0
        self.wakeups_by_reason: dict[str, int] = dict.fromkeys(schedule.WAKE_REASONS, 0)
        self.last_error: str | None = None

        # Per (event second, DP engine): the figures (and zeros in the fault columns).
        self._buckets: dict[tuple[int, int], list[int]] = {}
        # Per wall second: dropped, rejected and lost events, kept apart from every engine's
        # counts (they become ``problem_seconds`` rows) and across failed commits.
        self._fault_seconds: dict[int, list[int]] = {}
        # Faults inside the recorder itself (a bad event, an unexpected error in a flush):
        # counted, logged at most once a minute with the count, never the end of the thread.
        self.internal_faults_total = 0
        self._internal_faults_unlogged = 0
        self._next_internal_log = -math.inf
        self._pending_events = 0
        self._events_per_second: dict[int, int] = {}
        self._conn: sqlite3.Connection | None = None
        self._need_new_file = True
        self._need_meta = True
        self.path: Path | None = None
        self._generation = -1
        self._seq = 0
        self._span_id: int | None = None
        self._span_end_ts = 0.0
        self._failed_attempts = 0
        self._stop = threading.Event()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self._logged: set[str] = set()
        self._next_failure_log = -math.inf
        self._failures_unlogged = 0

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
        self.rejected_total += 1
        self._faults.add(int(event_ts), REJECTED)
        self._hand_over_faults()  # now, not at the next good event: there may be none

    def _hand_over_faults(self, force: bool = False) -> None:
        faults = self._faults
        if not force and len(self.buffer) >= self.queue_size:
            return
        self.buffer.append(("faults", faults.by_second))
        faults.by_second = {}

    @property
    def buffered(self) -> int:
        """Items waiting in the buffer (events and fault hand-overs)."""
        return len(self.buffer)

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
            self._close_connection()
        return ok

    def abandon(self) -> None:
        """Drop the connection without a clean close, as a killed process would."""
        self._close_connection()

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
                    deadlines, now, pending_events=self._pending_events, cadence=cadence
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
        self._close_connection()

    def _take_in(self, deadline_mono: float = math.inf) -> int:
        """Sum what is buffered into the buckets, ``TAKE_IN_SLICE`` items at a time with the
        GIL let go between slices, so the serving loop never waits long for it. Items appended
        meanwhile are left for the next wake. Returns the number taken in."""
        buf = self.buffer
        popleft = buf.popleft
        accumulate = self._accumulate
        todo = len(buf)
        done = 0
        while done < todo:
            for _ in range(min(TAKE_IN_SLICE, todo - done)):
                item = popleft()
                try:
                    accumulate(item)
                except Exception as exc:  # an event no check foresaw: counted, never fatal
                    self._reject_taken(item)
                    self._internal_fault(exc)
            done += min(TAKE_IN_SLICE, todo - done)
            if done < todo:
                if self.monotonic() >= deadline_mono:
                    break
                time.sleep(0)  # let another thread (vLLM's loop) have the GIL
        self._settle_tags(final=math.isfinite(deadline_mono))
        return done

    def _settle_tags(self, final: bool = False) -> None:
        """Forget the tags every event that could join them has passed; count what the book
        holds (aborted requests, middleware faults) in this second."""
        try:
            pending = self.book.settle(self._taken_record, final=final)
            if pending:
                self._credits.add(int(self.clock()), [c for c in pending if credit_ok(c)])
        except Exception as exc:
            self._internal_fault(exc)

    def _accumulate(self, event: Any) -> None:
        if isinstance(event[0], str):
            for (second, kind), n in event[1].items():
                self._fault_second(second)[kind - DROPPED] += n
            return
        ts, engine, prompt, generation, cached, finished = event[:6]
        if len(event) == 7 and type(event[6]) is int:
            self._taken_record = max(self._taken_record, event[6])
        if finished and type(finished) is tuple and type(finished[0]) is not tuple:
            try:
                finished = _fields_of(finished)  # vLLM's FinishedRequestStats, read here
            except Exception:
                finished = None  # an object without those fields: rejected just below
        if not _well_formed(ts, engine, prompt, generation, cached, finished):
            # A value outside the one table of bounds (bounds.py): a reader would refuse the
            # whole file for it. Counted as input we could not read, in the second it was taken.
            self._reject_taken(event)
            return
        second = int(ts)
        b = self._bucket(second, engine)
        eps = self._events_per_second
        eps[second] = eps.get(second, 0) + 1
        if not _fits(b, prompt, generation, cached, finished):
            # Past what one second of one engine can hold, or more cached than input: a
            # reader would refuse the whole file for it. Counted as input we could not read.
            self.rejected_total += 1
            self._fault_second(second)[REJECTED - DROPPED] += 1
            self._pending_events += 1
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
                self._credits.add(
                    second, book.credit(request[2], request[3], gen_tokens, request[4])
                )
        self._pending_events += 1

    def _reject_taken(self, event: Any) -> None:
        """Count an event the recorder cannot take as rejected input, in its own second when
        that is a time a reader takes, else in the second it was taken in."""
        ts: Any = event[0] if isinstance(event, tuple) and event else None
        second = int(ts) if bounds.instant_ok(ts) else int(self.clock())
        self.rejected_total += 1
        self._fault_second(second)[REJECTED - DROPPED] += 1

    def _fault_second(self, second: int) -> list[int]:
        counts = self._fault_seconds.get(second)
        if counts is None:
            counts = self._fault_seconds[second] = [0, 0, 0]
        return counts

    def _internal_fault(self, exc: BaseException) -> None:
        """A fault inside the recorder: counted, logged at most once a minute with a count."""
        self.internal_faults_total += 1
        self._internal_faults_unlogged += 1
        self.last_error = f"{type(exc).__name__}: {exc}"
        now = self.monotonic()
        if now < self._next_internal_log:
            return
        self._next_internal_log = now + FAILURE_LOG_INTERVAL_S
        logger.error(
            "vllm-ledger: recorder fault (%d time(s) since the last such message): %s; the "
            "recorder goes on, the event or batch concerned is counted as rejected or lost",
            self._internal_faults_unlogged,
            self.last_error,
        )
        self._internal_faults_unlogged = 0

    def _bucket(self, second: int, engine: int) -> list[int]:
        key = (second, engine)
        b = self._buckets.get(key)
        if b is None:
            b = self._buckets[key] = [0] * N_COUNTS
        return b

    def compact(self) -> int:
        """Drop this writer's per-second rows older than the horizon (on its own thread)."""
        if self._conn is None:
            return 0
        try:
            return compaction.compact_connection(self._conn, compaction.horizon_ts(self.clock()))
        except sqlite3.Error as exc:
            self._log_once(f"compact:{exc}", "vllm-ledger: compaction failed: %s", exc)
            return 0

    # ---- watching the file --------------------------------------------------------------

    def _check_file(self, now_mono: float) -> None:
        """Look for damage done to the file from outside; on damage, move to a new file."""
        if self._conn is None or self.path is None:
            return
        problem = connect.file_damage(self.path, expect_wal=True)
        if problem is None and now_mono >= self._next_integrity_check:
            self._next_integrity_check = now_mono + self.integrity_check_interval_s
            result = connect.quick_check(self.path)
            if result != "ok" and "locked" not in result:
                problem = f"quick_check: {result}"
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
            conn = self._connection(now_ts)
            self._commit(conn, now_ts, final)
        except (sqlite3.Error, OSError) as exc:
            self._on_commit_failure(exc)
            return False
        except Exception as exc:  # not SQLite's and not the disk's: a fault of ours
            self._internal_fault(exc)
            self._on_commit_failure(exc)
            return False
        self._failed_attempts = 0
        self.committed_events_total += self._pending_events
        self._pending_events = 0
        self._events_per_second = {}
        self._buckets = {}
        self._fault_seconds = {}
        self._credits.clear()
        return True

    def _commit(self, conn: sqlite3.Connection, now_ts: float, final: bool) -> None:
        rows = []
        problem_rows = []
        hours: dict[tuple[int, int], list[int]] = {}
        for (second, engine), b in self._buckets.items():
            if any(b[:N_FIGURES]):
                rows.append((second, engine, *b))
                h = hours.get((second - second % 3600, engine))
                if h is None:
                    hours[(second - second % 3600, engine)] = list(b)
                else:
                    for i in range(N_COUNTS):
                        h[i] += b[i]
        faults: dict[int, list[int]] = {}
        for second, counts in self._fault_seconds.items():
            # A fault taken while the wall clock read outside 2000-2100 lands in this commit's
            # second: a reader would refuse the whole file for its own.
            at = second if bounds.instant_ok(second) else int(now_ts)
            into = faults.setdefault(at, [0, 0, 0])
            for i, n in enumerate(counts):
                into[i] += n
        for second, (dropped, rejected, lost) in sorted(faults.items()):
            if dropped or rejected or lost:
                problem_rows.append((second, dropped, rejected, lost))
        seq = self._seq + 1
        # A new span starts after a failure, a clock step back, or a long silence.
        new_span = (
            self._span_id is None
            or now_ts < self._span_end_ts - 1.0
            or now_ts - self._span_end_ts > self.span_break_s
        )
        span_id = writes.commit_batch(
            conn,
            seconds=rows,
            hours=[(t, e, *c) for (t, e), c in hours.items()],
            days=[(t, e, *c) for (t, e), c in _fold(hours, 86400).items()],
            problems=problem_rows,
            span_id=None if new_span else self._span_id,
            now_ts=now_ts,
            seq=seq,
            final=final,
            attribution=self._credits.rows(),
            folded=self._credits.folded_rows(),
            dim_ids=self._dim_ids,
        )
        self._seq = seq
        self._span_id = span_id
        self._span_end_ts = now_ts
        if self.path is not None:
            with contextlib.suppress(OSError):
                self._marker.write(self.path, seq, now_ts)

    def _on_commit_failure(self, exc: BaseException) -> None:
        self._dim_ids = {}  # ids named in the rolled-back transaction are gone
        self.commit_failures_total += 1
        self._failed_attempts += 1
        self.last_error = f"{type(exc).__name__}: {exc}"
        self._log_failure()
        if self._is_damage(exc):
            self._rotate()
            return
        if self._failed_attempts >= self.max_retries:
            # Give the batch up: count its events as lost in the seconds they fell in (the
            # fault counts already kept per second stay for the next commit).
            for second, n in self._events_per_second.items():
                self._fault_second(second)[LOST - DROPPED] += n
            self.lost_events_total += self._pending_events
            self._pending_events = 0
            self._events_per_second = {}
            self._buckets = {}
            self._credits.clear()
            self._failed_attempts = 0
            self._span_id = None  # the given-up stretch is not vouched for
            self._close_connection()

    @staticmethod
    def _is_damage(exc: BaseException) -> bool:
        text = str(exc).lower()
        return isinstance(exc, sqlite3.DatabaseError) and any(m in text for m in _DAMAGE_MARKERS)

    def _rotate(self) -> None:
        """Leave a damaged file as it is and continue in a new one."""
        self.files_rotated_total += 1
        logger.warning(
            "vllm-ledger: ledger %s is damaged (%s); left untouched, opening a new one",
            self.path,
            self.last_error,
        )
        if self._conn is not None:
            connect.close_without_checkpoint(self._conn)
            self._conn = None
        self._dim_ids = {}
        self._span_id = None
        self._need_new_file = True
        self._need_meta = True
        self._seq = 0

    def _close_connection(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
        self._conn = None
        self._marker.close()

    def _connection(self, now_ts: float) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        ident = self.identity
        run_dir = paths.run_dir(self.root, ident.run_id)
        run_dir.mkdir(parents=True, exist_ok=True)
        if self._need_new_file or self.path is None:
            # A fresh file: never append to a file another process (or a damaged one) has.
            self._generation, self.path = paths.claim_new_ledger(run_dir, ident.writer_rank)
            self._need_new_file = False
        conn = connect.open_for_write(self.path, now_ts)
        if self._need_meta:
            meta = {
                "run_id": ident.run_id,
                "writer_rank": str(ident.writer_rank),
                "expected_writers": str(ident.expected_writers),
                "engine_indexes": ",".join(map(str, ident.engine_indexes)),
                "pid": str(ident.pid or os.getpid()),
                "generation": str(self._generation),
                "created_ts": repr(now_ts),
                **ident.instance.to_meta(),
            }
            try:
                writes.write_meta(conn, meta)
            except BaseException:
                conn.close()
                raise
            self._need_meta = False
            connect.fsync_dir(run_dir)
            logger.info(
                "vllm-ledger: writing %s (run %s, writer %d of %d)",
                self.path,
                ident.run_id,
                ident.writer_rank,
                ident.expected_writers,
            )
        self._conn = conn
        return conn

    def _log_failure(self) -> None:
        """An error in vLLM's log at most once a minute while commits keep failing."""
        self._failures_unlogged += 1
        now = self.monotonic()
        if now < self._next_failure_log:
            return
        self._next_failure_log = now + FAILURE_LOG_INTERVAL_S
        logger.error(
            "vllm-ledger: write failed (%d time(s) since the last such message): %s; "
            "the events are kept for a retry, then counted as lost (write_failed)",
            self._failures_unlogged,
            self.last_error,
        )
        self._failures_unlogged = 0

    def _log_once(self, key: str, msg: str, *args: object) -> None:
        if key not in self._logged and len(self._logged) < 100:
            self._logged.add(key)
            logger.warning(msg, *args)


def _fold(rows: dict[tuple[int, int], list[int]], size: int) -> dict[tuple[int, int], list[int]]:
    """Sum ``(ts, engine) -> counts`` rows into buckets of ``size`` seconds."""
    out: dict[tuple[int, int], list[int]] = {}
    for (ts, engine), counts in rows.items():
        key = (ts - ts % size, engine)
        acc = out.get(key)
        if acc is None:
            out[key] = list(counts)
        else:
            for i, c in enumerate(counts):
                acc[i] += c
    return out


def _fields_of(stats: tuple[Any, ...]) -> tuple[tuple[Any, ...], ...]:
    """The numbers of vLLM's finished-request stats (0.30-0.33 layout) the join needs; an
    object without them raises (the event is then rejected input)."""
    return tuple(
        [
            (
                f.num_generation_tokens,
                f.decode_time,
                f.request_id,
                f.num_prompt_tokens,
                f.num_cached_tokens,
            )
            for f in stats
        ]
    )


def _well_formed(
    ts: Any, engine: Any, prompt: Any, generation: Any, cached: Any, finished: Any
) -> bool:
    """Whether an event's values are what the one table of bounds allows (``bounds.py``): the
    plugin checks the same before it submits; this guards every other caller of ``submit``."""
    if not (
        type(ts) is float
        and _EARLIEST <= ts < _LATEST
        and type(engine) is int
        and 0 <= engine <= _MOST_ENGINE
        and type(prompt) is int
        and 0 <= prompt <= _MOST_EVENT_TOKENS
        and type(generation) is int
        and 0 <= generation <= _MOST_EVENT_TOKENS
        and type(cached) is int
        and 0 <= cached <= _MOST_EVENT_TOKENS
        and type(finished) is tuple
    ):
        return False
    for request in finished:
        if type(request) is not tuple or (len(request) != 2 and len(request) != 5):
            return False
        g, d = request[0], request[1]
        if not (
            type(g) is int
            and 0 <= g <= _MOST_EVENT_TOKENS
            and (type(d) is float or type(d) is int)
            and 0.0 <= d < _MOST_DECODE_S
        ):
            return False
        if len(request) == 5:
            p, c = request[3], request[4]
            if not (
                type(p) is int and 0 <= p <= _MOST_EVENT_TOKENS and type(c) is int and 0 <= c <= p
            ):
                return False
    return True


def _fits(b: list[int], prompt: int, generation: int, cached: int, finished: Any) -> bool:
    """Whether an event fits its second's bucket within the per-second bounds (``figures.py``)."""
    if (
        cached > prompt
        or b[PROMPT] + prompt > _MOST_PROMPT
        or b[GENERATION] + generation > _MOST_GENERATION
        or b[CACHED] + cached > _MOST_CACHED
        or b[REQUESTS] + len(finished) > _MOST_REQUESTS
    ):
        return False
    if finished:
        decode_tokens = sum(r[0] - 1 for r in finished if r[0] > 1)
        decode_us = sum(round(r[1] * 1e6) for r in finished)
        if (
            b[DECODE_TOKENS] + decode_tokens > _MOST_DECODE_TOKENS
            or b[DECODE_US] + decode_us > _MOST_DECODE_US
        ):
            return False
    return True
