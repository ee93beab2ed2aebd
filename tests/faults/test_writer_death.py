"""The writer thread dies (an injected SystemExit: any Exception it survives, counted): record()
stays cheap and never raises;
the report calls the writer stale once its last heartbeat is over 30 s old (report's clock)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.faults.helpers import ledger_files, pumped_recorder, snapshot, wait_for
from tests.faults.vllm_stats import iteration, plugin
from vllm_ledger.read.report import build_report
from vllm_ledger.write.recorder import QUEUE_SIZE

T0 = 1_800_000_000.0


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_writer_thread_dies(ledger_env: Path) -> None:
    p = plugin()
    rec = p.recorder
    assert rec is not None
    wait_for(lambda: rec._span.seq >= 1, what="first heartbeat")
    p.record(None, iteration(time.time(), prompt=1, gen=1), engine_idx=0)
    wait_for(lambda: rec._span.seq >= 2, what="a second commit")  # a span of non-zero length

    def boom(final: bool = False) -> bool:
        raise SystemExit("injected: the writer thread dies")  # past what the thread survives

    rec._flush = boom  # type: ignore[method-assign]
    now = time.time()
    p.record(None, iteration(now, prompt=1, gen=1), engine_idx=0)  # the next flush raises
    wait_for(lambda: not rec.alive, what="the writer thread to die")
    assert rec.last_error is not None and "injected" in rec.last_error

    items = [iteration(now + i / 10_000, prompt=2, gen=1) for i in range(10_000)]
    queued_before = rec.buffered
    t = time.perf_counter()
    for it in items:
        p.record(None, it, engine_idx=0)
    per_call_us = 1e6 * (time.perf_counter() - t) / len(items)
    print(f"\nrecord() with a dead writer thread: {per_call_us:.2f} us/call")
    assert p.faults_total == 0
    assert rec.dropped_total == len(items) - (QUEUE_SIZE - queued_before)
    assert rec.close(timeout_s=1.0) is False  # no clean close: the thread is gone
    p.shutdown()  # never raises, never hangs

    (path,) = ledger_files(ledger_env)
    last = max(e for _, e in snapshot(path).spans)
    fresh = build_report([ledger_env], at_ts=last + 29, clock=lambda: last + 29)
    assert [w.state for w in fresh.writers] == ["alive"]  # within 30 s: not yet known dead
    at = last + 31
    r = build_report([ledger_env], at_ts=at, clock=lambda: at)
    assert [w.state for w in r.writers] == ["stale"]
    total = r.window("total")
    assert total.problems["heartbeat_stale"] == 1
    assert total.complete is False
    assert total.uncovered_seconds >= int(at) - int(last) - 1


def test_a_writer_with_one_fresh_heartbeat_is_alive(tmp_path: Path) -> None:
    """Regression: a zero-length span (one heartbeat) used to leave no first/last time."""
    rec, _clock = pumped_recorder(tmp_path, "run-1", T0)
    assert rec.pump()
    r = build_report([tmp_path], at_ts=T0 + 1, clock=lambda: T0 + 1)
    assert [(w.state, w.last_ts) for w in r.writers] == [("alive", T0)]
    rec.abandon()
