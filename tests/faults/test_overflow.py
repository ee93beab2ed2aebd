"""A blocked writer with 10 000 events pushed through the real plugin: record() never blocks or
raises, and exactly 10 000 - 4096 events are dropped, counted in the seconds they fell in."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from tests.faults.helpers import ledger_files, snapshot, wait_for
from tests.faults.vllm_stats import iteration, plugin
from vllm_ledger.read.report import build_report
from vllm_ledger.write.recorder import QUEUE_SIZE, Recorder

PUSHED = 10_000
PER_SECOND = 2000


def _hang_commits(rec: Recorder) -> tuple[threading.Event, threading.Event]:
    """The next commit blocks (a hung disk) until released; the thread consumes nothing."""
    entered, release = threading.Event(), threading.Event()
    orig = rec._commit

    def hung(conn, now_ts, final):
        entered.set()
        release.wait()
        orig(conn, now_ts, final)

    rec._commit = hung  # type: ignore[method-assign]
    return entered, release


def _blocked_and_flooded(root: Path):
    p = plugin()
    rec = p.recorder
    assert rec is not None
    wait_for(lambda: rec._span.seq >= 1, what="first heartbeat")
    entered, release = _hang_commits(rec)
    s0 = int(time.time()) - 30
    p.record(None, iteration(s0 - 1 + 0.5, prompt=100, gen=1), engine_idx=0)  # starts a flush
    wait_for(entered.is_set, what="the writer to hang in its commit")
    assert rec.buffered == 0
    items = [iteration(s0 + i // PER_SECOND + 0.5, prompt=2, gen=1) for i in range(PUSHED)]
    times = []
    for it in items:
        t = time.perf_counter()
        p.record(None, it, engine_idx=0)
        times.append(time.perf_counter() - t)
    return p, rec, release, s0, times


def test_blocked_writer_drops_exactly_and_record_stays_fast(ledger_env: Path) -> None:
    p, rec, release, s0, times = _blocked_and_flooded(ledger_env)
    accepted = times[:QUEUE_SIZE]
    dropped = times[QUEUE_SIZE:]
    print(
        "\nrecord() while the writer is blocked: accepted"
        f" {1e6 * sum(accepted) / len(accepted):.2f} us/call,"
        f" dropped {1e6 * sum(dropped) / len(dropped):.2f} us/call,"
        f" max {1e6 * max(times):.1f} us"
    )
    assert p.faults_total == 0
    assert rec.dropped_total == PUSHED - QUEUE_SIZE
    assert rec.submitted_total == 1 + QUEUE_SIZE
    release.set()
    wait_for(lambda: rec.buffered == 0, what="the queue to drain")
    p.shutdown()
    (path,) = ledger_files(ledger_env)
    snap = snapshot(path)
    # 4096 = 2 x 2000 + 96: the third second lost 1904, the last two lost everything.
    assert sorted(snap.problem_seconds) == [
        (s0 + 2, PER_SECOND - (QUEUE_SIZE - 2 * PER_SECOND), 0, 0),
        (s0 + 3, PER_SECOND, 0, 0),
        (s0 + 4, PER_SECOND, 0, 0),
    ]
    at = time.time() + 1
    total = build_report([ledger_env], at_ts=at, clock=lambda: at).window("total")
    assert total.input_tokens == 100 + 2 * QUEUE_SIZE
    assert total.output_tokens == 1 + QUEUE_SIZE
    assert total.problems["queue_overflow"] == PUSHED - QUEUE_SIZE
    assert total.complete is False
    assert total.uncovered_seconds >= 3  # the three seconds with drops are not covered


def test_drops_still_counted_when_close_comes_while_the_queue_is_full(ledger_env: Path) -> None:
    """Regression: close() used to give up handing the drop counts over to a full queue."""
    _p, rec, release, _s0, _times = _blocked_and_flooded(ledger_env)
    done: list[bool] = []
    closer = threading.Thread(target=lambda: done.append(rec.close(timeout_s=20)))
    closer.start()
    wait_for(rec._stop.is_set, what="close() to begin")
    release.set()
    closer.join(30)
    assert done == [True]
    at = time.time() + 1
    total = build_report([ledger_env], at_ts=at, clock=lambda: at).window("total")
    assert total.input_tokens == 100 + 2 * QUEUE_SIZE
    assert total.problems.get("queue_overflow") == PUSHED - QUEUE_SIZE
