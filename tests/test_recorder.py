"""The writer thread's own loop, run on a fake clock: what it waits for and what it commits.

``Recorder(clock=, monotonic=)`` takes the time from the test. The one place the loop lets real
time pass is its timed wait on the queue, so the queue here is one whose wait passes on the
same fake clock: ``get(timeout=t)`` with nothing queued moves the clock on by ``t`` and says
Empty, as a real wait would ``t`` seconds later. The thread is real; no test sleeps.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vllm_ledger.read.report import build_report
from vllm_ledger.read.snapshot import read_ledger
from vllm_ledger.write.identity import InstanceInfo, WriterIdentity
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


class QueueOnFakeTime(queue.SimpleQueue[Any]):
    """A recorder's queue whose timed waits pass on ``FakeTime``.

    ``script`` holds (elapsed, action) pairs: the outside world (vLLM's output loop) acting at
    a fake instant, run on the recorder's thread just before its wait, so every step is exact.
    At ``until`` the queue parks: its next ``get`` blocks for real until ``close()`` wakes the
    thread. A loop that stops waiting (spins) never moves the clock; after ``max_waits`` it
    parks too, and the waits it recorded show it.
    """

    def __init__(
        self,
        time: FakeTime,
        until: float,
        script: list[tuple[float, Callable[[], None]]] | None = None,
        max_waits: int = 1000,
    ) -> None:
        super().__init__()
        self.time = time
        self.until = until
        self.script = sorted(script or [], key=lambda x: x[0])
        self.max_waits = max_waits
        self.waits: list[float] = []
        self.parked = threading.Event()

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        while self.script and self.script[0][0] <= self.time.elapsed:
            self.script.pop(0)[1]()
        if self.time.elapsed >= self.until or len(self.waits) >= self.max_waits:
            self.parked.set()
            return super().get()  # until close() puts its wake-up
        try:
            return super().get_nowait()
        except queue.Empty:
            pass
        assert timeout is not None, "the writer thread never waits without a limit"
        self.waits.append(timeout)
        self.time.elapsed += timeout
        raise queue.Empty


def _recorder(root: Path, time: FakeTime) -> Recorder:
    """A recorder with the production intervals (flush 1 s, heartbeat 5 s) on fake time."""
    ident = WriterIdentity(
        "run-a", 0, 1, pid=7, instance=InstanceInfo(("tiny",), 8000, "testhost", "0.32.0")
    )
    return Recorder(root, ident, clock=time.wall, monotonic=time.monotonic)


def _run_until_parked(rec: Recorder, q: QueueOnFakeTime) -> None:
    rec.queue = q  # before start(): the loop binds the queue's get once
    rec.start()
    assert q.parked.wait(REAL_DEADLINE_S), "the writer thread never reached the end of its script"


def test_an_idle_writer_waits_for_its_next_tick_and_commits_a_heartbeat_every_5_s(
    tmp_path: Path,
) -> None:
    t = FakeTime(T0)
    rec = _recorder(tmp_path, t)
    q = QueueOnFakeTime(t, until=12.0)
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

    q = QueueOnFakeTime(t, until=7.0, script=[(2.0, twenty_rejects)])
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
