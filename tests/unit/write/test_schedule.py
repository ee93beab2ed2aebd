"""The recorder's schedule (write/schedule.py): pure functions on a fake monotonic clock.

The recorder wakes on its cadence, at a high-water crossing or at shutdown, never per call;
what a wake does is decided by the deadlines alone.
"""

from __future__ import annotations

from vllm_ledger.write import schedule
from vllm_ledger.write.recorder import QUEUE_SIZE

C = schedule.Cadence()  # 1 s flush, 5 s heartbeat, proof 2 s after events, hourly compaction


def test_the_first_wake_is_at_once_and_commits_the_opening_heartbeat() -> None:
    d = schedule.first_deadlines(100.0, C)
    assert schedule.wait_s(d, 100.0) == 0.0
    todo, d = schedule.step(d, 100.0, pending_events=0, cadence=C)
    assert todo == schedule.Step(commit=True, check_file=False, compact=False)
    assert (d.flush_mono, d.heartbeat_mono, d.check_mono) == (101.0, 105.0, 105.0)
    assert d.compaction_mono == 100.0 + schedule.FIRST_COMPACTION_DELAY_S


def test_an_idle_recorder_wakes_once_per_flush_interval_and_commits_every_5_s() -> None:
    now = 0.0
    d = schedule.first_deadlines(now, C)
    commits = []
    waits = []
    for _ in range(12):
        todo, d = schedule.step(d, now, pending_events=0, cadence=C)
        if todo.commit:
            commits.append(now)
        w = schedule.wait_s(d, now)
        waits.append(w)
        now += w
    assert commits == [0.0, 5.0, 10.0]
    assert waits == [1.0] * 12  # never longer than the flush interval, never 0 (no spin)


def test_pending_events_commit_at_the_flush_deadline_then_prove_2_s_later() -> None:
    d = schedule.first_deadlines(0.0, C)
    _, d = schedule.step(d, 0.0, pending_events=0, cadence=C)
    todo, d = schedule.step(d, 0.5, pending_events=7, cadence=C)  # early (high-water) wake
    assert todo.commit is False and d.flush_mono == 1.0  # takes in, commits nothing early
    todo, d = schedule.step(d, 1.0, pending_events=7, cadence=C)
    assert todo.commit is True
    assert (d.flush_mono, d.heartbeat_mono) == (2.0, 3.0)
    todo, d = schedule.step(d, 2.0, pending_events=0, cadence=C)
    assert todo.commit is False
    todo, d = schedule.step(d, 3.0, pending_events=0, cadence=C)
    assert todo.commit is True  # the proof after events, with nothing in it
    assert d.heartbeat_mono == 8.0


def test_file_checks_and_compaction_keep_their_own_clocks() -> None:
    d = schedule.first_deadlines(0.0, C)
    checks, compactions = [], []
    now = 0.0
    while now <= 3700.0:
        todo, d = schedule.step(d, now, pending_events=1, cadence=C)  # busy all the way
        if todo.check_file:
            checks.append(now)
        if todo.compact:
            compactions.append(now)
        now += schedule.wait_s(d, now)
    assert checks[:3] == [5.0, 10.0, 15.0]  # every 5 s although a commit falls every second
    assert compactions == [60.0, 3660.0]


def test_a_late_wake_catches_up_without_a_burst_of_commits() -> None:
    d = schedule.first_deadlines(0.0, C)
    _, d = schedule.step(d, 0.0, pending_events=0, cadence=C)
    todo, d = schedule.step(d, 30.0, pending_events=5, cadence=C)  # the thread was starved
    assert todo.commit is True
    assert (d.flush_mono, d.heartbeat_mono) == (31.0, 32.0)
    assert schedule.wait_s(d, 30.0) == 1.0


def test_the_high_water_mark_wakes_once_per_crossing_never_per_call() -> None:
    mark = schedule.high_water_mark(QUEUE_SIZE)
    assert mark == 3072
    # A producer appending 10,000 events into a buffer nobody drains: one wake, at the
    # append that finds exactly `mark` items (crossing to mark + 1).
    wakes = [n for n in range(10_000) if schedule.crosses_high_water(n, mark)]
    assert wakes == [mark]
    # Drained after each wake: one wake per `mark + 1` appends.
    buffered, wakes_n = 0, 0
    for _ in range(10_000):
        if schedule.crosses_high_water(buffered, mark):
            wakes_n += 1
            buffered = 0
        buffered += 1
    assert wakes_n == 10_000 // (mark + 1)


def test_why_a_wait_returned() -> None:
    assert schedule.wake_reason(woken=False, stopping=False) == "cadence"
    assert schedule.wake_reason(woken=True, stopping=False) == "high_water"
    assert schedule.wake_reason(woken=True, stopping=True) == "shutdown"
    assert schedule.wake_reason(woken=False, stopping=True) == "shutdown"
