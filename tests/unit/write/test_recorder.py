"""The writer thread's own loop, run on a fake clock: what it waits for and what it commits.

``Recorder(clock=, monotonic=)`` takes the time from the test. The one place the loop lets real
time pass is its timed wait on its waker, so the waker here is one whose wait passes on the
same fake clock: ``wait(t)`` with nothing set moves the clock on by ``t`` and returns False,
as a real wait would ``t`` seconds later. The thread is real; no test sleeps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.read.open_ledger import read_ledger
from vllm_ledger.read.report import build_report
from vllm_ledger.write.recorder import Recorder

T0 = 1_800_000_000.0
REAL_DEADLINE_S = 30.0  # a safety net for a hung thread, never a measurement


class FakeTime:
    """The recorder's wall clock and monotonic clock, moved only by the waits it makes."""

    def __init__(self, wall0: float) -> None:
        self.wall0 = wall0
        self.elapsed = 0.0

    def monotonic(self) -> float:
        return self.elapsed

    def wall(self) -> float:
        return self.wall0 + self.elapsed


class WakeOnFakeTime:
    """The recorder's waker (``Recorder.wake``) whose timed waits pass on ``FakeTime``.

    ``script`` holds (elapsed, action) pairs: the outside world (vLLM's output loop) acting at
    a fake instant, run on the recorder's thread at that instant of a wait (or just before
    the wait, if it is already due), so every step is exact. A wait that finds the waker set
    (a high-water crossing, or ``close()``) returns True at once, as ``threading.Event.wait``
    does; an action that sets it ends the wait at that instant; otherwise the wait moves the
    clock on by its timeout and returns False, as a real wait would that many seconds later.
    At ``until`` the waker parks: its next wait blocks for real until ``close()`` sets it. A
    loop that stops waiting (spins) never moves the clock; after ``max_waits`` it parks too,
    and the waits it recorded show it.
    """

    def __init__(
        self,
        time: FakeTime,
        until: float,
        script: list[tuple[float, Callable[[], None]]] | None = None,
        max_waits: int = 1000,
    ) -> None:
        self.time = time
        self.until = until
        self.script = sorted(script or [], key=lambda x: x[0])
        self.max_waits = max_waits
        self.waits: list[float] = []
        self.parked = threading.Event()
        self._set = threading.Event()

    def set(self) -> None:
        self._set.set()

    def clear(self) -> None:
        self._set.clear()

    def wait(self, timeout: float | None = None) -> bool:
        while self.script and self.script[0][0] <= self.time.elapsed:
            self.script.pop(0)[1]()
        if self._set.is_set():
            return True
        if self.time.elapsed >= self.until or len(self.waits) >= self.max_waits:
            self.parked.set()
            return self._set.wait()  # until close() sets it
        assert timeout is not None, "the writer thread never waits without a limit"
        self.waits.append(timeout)
        end = self.time.elapsed + timeout
        # What the outside world does during the wait, each action at its own instant; one
        # that sets the waker (a high-water crossing) ends the wait then, as a real one would.
        while self.script and self.script[0][0] < end:
            self.time.elapsed = max(self.time.elapsed, self.script[0][0])
            self.script.pop(0)[1]()
            if self._set.is_set():
                return True
        self.time.elapsed = end
        return False


def _recorder(root: Path, time: FakeTime) -> Recorder:
    """A recorder with the production intervals (flush 1 s, heartbeat 5 s) on fake time."""
    ident = WriterIdentity(
        "run-a", 0, 1, pid=7, instance=InstanceInfo(("tiny",), 8000, "testhost", "0.32.0")
    )
    return Recorder(root, ident, clock=time.wall, monotonic=time.monotonic)


def _run_until_parked(rec: Recorder, q: WakeOnFakeTime) -> None:
    rec.wake = q  # before start(): the loop binds its waker once
    rec.start()
    assert q.parked.wait(REAL_DEADLINE_S), "the writer thread never reached the end of its script"


def test_an_idle_writer_waits_for_its_next_tick_and_commits_a_heartbeat_every_5_s(
    tmp_path: Path,
) -> None:
    t = FakeTime(T0)
    rec = _recorder(tmp_path, t)
    q = WakeOnFakeTime(t, until=12.0)
    _run_until_parked(rec, q)
    # The first heartbeat opens the span at once (no wait); then one whole flush interval per
    # wait. A loop that forgot to move an empty flush on would wait 0 s, and time would stop.
    assert q.waits == [0.0] + [1.0] * 12
    assert t.elapsed == 12.0
    assert rec.close() is True
    assert rec.path is not None
    snap = read_ledger(rec.path)
    # Heartbeats at 0, 5 and 10 s, and the clean close at 12 s: four commits, one span.
    assert (snap.status, snap.last_seq) == ("ok", 4)
    assert snap.spans == [(T0, T0 + 12)]
    assert snap.clean_close_ts == T0 + 12
    assert (snap.problem_seconds, snap.first_bucket_ts) == ([], None)


def test_rejected_input_reaches_the_ledger_at_the_next_heartbeat_with_nothing_else_arriving(
    tmp_path: Path,
) -> None:
    t = FakeTime(T0)
    rec = _recorder(tmp_path, t)

    def twenty_rejects() -> None:  # vLLM handed over stats the plugin could not read
        for _ in range(20):
            rec.reject(t.wall())

    q = WakeOnFakeTime(t, until=7.0, script=[(2.0, twenty_rejects)])
    _run_until_parked(rec, q)
    # The writer is still running (parked in its wait at 7 s): no event ever made a flush
    # due, so the counts went out with the 5 s heartbeat.
    assert rec.path is not None
    snap = read_ledger(rec.path)
    assert snap.problem_seconds == [(int(T0) + 2, 0, 20, 0)]
    assert (snap.last_seq, snap.spans, snap.clean_close_ts) == (2, [(T0, T0 + 5)], None)
    at = T0 + 7
    report = build_report([tmp_path], at_ts=at, clock=lambda: at, tz="UTC")
    assert [w.state for w in report.writers] == ["alive"]
    total = report.window("total")
    assert (total.problems, total.input_tokens, total.complete) == (
        {"rejected_input": 20},
        0,
        False,
    )
    assert rec.close() is True
    assert rec.rejected_total == 20


def test_10000_calls_in_one_second_wake_the_recorder_5_times_never_per_call(
    tmp_path: Path,
) -> None:
    """10,000 record() calls spread over one second (0.5 s to 1.5 s): the recorder wakes on
    its 1 s cadence and at each high-water crossing (3,072 buffered), never per call, drops
    nothing and commits every event to the token."""
    t = FakeTime(T0)
    rec = _recorder(tmp_path, t)
    calls = 10_000

    def one(i: int) -> Callable[[], None]:
        def call() -> None:
            assert rec.submit((t.wall(), 0, 3, 1, 1, ((2, 0.5),) if i % 100 == 0 else ()))

        return call

    q = WakeOnFakeTime(
        t, until=2.0, script=[(0.5 + i / calls, one(i)) for i in range(calls)], max_waits=100
    )
    _run_until_parked(rec, q)
    # Cadence wakes at 0 s (the first heartbeat), 1 s and 2 s; high-water wakes when the
    # 3,073rd event since the last take-in arrives: at 0.8072 s and again at 1.3072 s.
    assert rec.wakeups_by_reason == {"cadence": 3, "high_water": 2, "shutdown": 0}
    assert rec.wakeups_total == 5
    assert rec.high_water == 3072
    assert (rec.submitted_total, rec.dropped_total) == (calls, 0)
    assert rec.close() is True
    assert rec.wakeups_by_reason["shutdown"] == 1
    at = T0 + 3
    total = build_report([tmp_path], at_ts=at, clock=lambda: at, tz="UTC").window("total")
    assert (total.input_tokens, total.output_tokens, total.cached_tokens) == (
        3 * calls,
        calls,
        calls,
    )
    assert (total.requests, total.problems) == (calls // 100, {})


def test_a_burst_past_the_high_water_mark_is_taken_in_before_the_buffer_fills(
    tmp_path: Path,
) -> None:
    """3,500 events in one instant, then nothing: the append that crosses 3,072 wakes the
    recorder at that instant (not at its next tick), and nothing is dropped."""
    t = FakeTime(T0)
    rec = _recorder(tmp_path, t)

    def burst() -> None:
        for _ in range(3_500):
            rec.submit((t.wall(), 0, 1, 1, 0, ()))

    q = WakeOnFakeTime(t, until=1.0, script=[(0.25, burst)])
    _run_until_parked(rec, q)
    assert rec.wakeups_by_reason["high_water"] == 1
    assert q.waits[:2] == [0.0, 1.0]  # the second wait ended early, at 0.25 s
    assert (rec.dropped_total, rec.buffered) == (0, 0)
    assert rec.close() is True
    assert rec.committed_events_total == 3_500
