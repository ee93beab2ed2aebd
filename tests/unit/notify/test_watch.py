"""Health observation and the notifier's loops: flap damping, one loop's errors and state,
and the schedule that observes each target in turn (on a fake clock, no sleeps)."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.ledgers import FakeClock
from vllm_ledger.bot.health import Health
from vllm_ledger.bot.validate import Target
from vllm_ledger.notify.watch import Damper, HealthWatch, Loop, up_or_down


def test_damping_one_transition_per_confirmed_change_and_no_storm() -> None:
    d = Damper(30.0)
    up, down, unknown = Health(1, "healthy", 200), Health(1, "down"), Health(1, "unknown")
    assert d.observe(1, up, 0) == (None, "up")  # the baseline
    assert d.observe(1, down, 10) is None
    assert d.observe(1, down, 39) is None
    assert d.observe(1, unknown, 45) is None  # a ledger-side fault: neither way
    assert d.observe(1, down, 40) == ("up", "down")
    assert d.observe(1, down, 50) is None  # once
    for t in range(60, 300, 10):  # flapping every 10 s: never 30 s the same
        assert d.observe(1, up if t % 20 else Health(1, "unhealthy", 503), t) is None
    assert d.observe(1, up, 300) is None
    assert d.observe(1, up, 330) == ("down", "up")
    # only unknown, for ever: nothing is reported
    d2 = Damper(0.0, {7: "up"})
    assert all(d2.observe(7, Health(7, "unknown"), t) is None for t in range(100))


def test_health_is_up_down_or_not_known() -> None:
    assert [up_or_down(Health(1, s)) for s in ("healthy", "unhealthy", "down", "unknown")] == [
        "up",
        "down",
        "down",
        None,
    ]


def test_an_uncommitted_change_is_proposed_until_confirmed() -> None:
    d = Damper(0.0, {1: "up"})
    down = Health(1, "down")
    assert d.observe(1, down, 0, commit=False) == ("up", "down")
    assert d.observe(1, down, 1, commit=False) == ("up", "down")  # not stored yet: again
    d.confirm(1, "down")
    assert d.observe(1, down, 2) is None and d.reported == {1: "down"}
    fresh = Damper(30.0)
    assert fresh.observe(2, Health(2, "healthy"), 0, commit=False) == (None, "up")
    assert fresh.reported == {}


def test_a_loop_counts_logs_once_a_minute_and_backs_off(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock(0.0)
    loop = Loop("poll", stall_s=30.0, monotonic=clock)
    assert loop.report() == {
        "state": "ok",
        "last_progress_s_ago": 0.0,
        "errors_total": 0,
        "error": None,
    }
    with caplog.at_level(logging.WARNING, logger="vllm_ledger.notify"):
        waits = [loop.failed(OSError("locked")) for _ in range(8)]
        assert waits == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]
        clock.t = 61.0
        loop.failed(ValueError("full"))
        assert loop.state() == "failing" and loop.errors_total == 9
        loop.progressed()
    assert [r.getMessage() for r in caplog.records] == [
        "poll: 1 error(s) since the last report, retrying; the last: OSError: locked",
        "poll: 8 error(s) since the last report, retrying; the last: ValueError: full",
        "poll: recovered after 0 error(s)",
    ]
    assert loop.state() == "ok" and loop.failed(OSError("x")) == 0.1
    loop.progressed()
    clock.t = 92.0
    assert loop.state() == "stuck"


def test_a_loop_runs_its_step_until_stopped_and_survives_errors() -> None:
    stop = threading.Event()
    calls: list[int] = []

    def step() -> float:
        calls.append(len(calls))
        if len(calls) == 1:
            raise RuntimeError("first")
        if len(calls) == 3:
            stop.set()
        return 0.0

    loop = Loop("digest", stall_s=60.0)
    loop.run(step, stop)
    assert calls == [0, 1, 2] and loop.errors_total == 1 and loop.failing is None
    loop.start(step, stop)
    assert loop.thread is not None
    loop.thread.join(5)
    assert loop.state() == "gone"


def test_each_target_is_observed_when_due_and_a_fault_is_unknown() -> None:
    clock = FakeClock(0.0)
    seen: list[tuple[int, str]] = []

    def observe(t: Target) -> Health:
        if t.port == 19002:
            raise OSError("ssh failed")
        return Health(t.port, "healthy", 200)

    targets = [Target(19001, "a", "/c", "/d"), Target(19002, "b", "/c", "/d")]
    watch = HealthWatch(
        targets,
        observe,
        lambda port, h: seen.append((port, h.state)),
        interval_s=10.0,
        monotonic=clock,
    )
    with ThreadPoolExecutor(max_workers=1) as pool:
        watch.tick(pool)
    assert sorted(seen) == [(19001, "healthy"), (19002, "unknown")]
    assert watch.health() == {19001: Health(19001, "healthy", 200), 19002: Health(19002, "unknown")}
    clock.t = 9.9
    with ThreadPoolExecutor(max_workers=1) as pool:
        watch.tick(pool)  # not due yet
    clock.t = 10.0
    with ThreadPoolExecutor(max_workers=1) as pool:
        watch.tick(pool)
    assert len(seen) == 4
    assert watch.loop.stall_s == 60.0
