"""The real plugin on a real recorder thread, real time: 10,000 record() calls of real vLLM
IterationStats arrive within one second, paced as a busy serving loop would make them. The
recorder thread wakes a handful of times (its cadence and the high-water mark), never per
call, drops nothing, and the ledger holds every token.

A count of wakeups, not a timing: the bound holds on a slow or loaded machine too (a slower
loop only spreads the calls over more cadence ticks, which the count allows for).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from tests.faults.helpers import ledger_files, snapshot, total_sums, wait_for
from tests.faults.vllm_stats import iteration, plugin

CALLS = 10_000


def test_10000_record_calls_in_one_second_wake_the_recorder_a_handful_of_times(
    ledger_env: Path,
) -> None:
    p = plugin()
    rec = p.recorder
    assert rec is not None
    wait_for(lambda: rec._span.seq >= 1, what="first heartbeat")
    items = [
        iteration(0.0, prompt=3, cached=1, gen=1, finished=((2, 0.5),) if i % 100 == 0 else ())
        for i in range(CALLS)
    ]
    before = rec.wakeups_total
    t0 = time.monotonic()
    for i, it in enumerate(items):
        # Paced: call i no earlier than i/CALLS s after the start (a serving loop between
        # iterations lets the GIL go, as this sleep does every 100 calls).
        it.iteration_timestamp = time.time()
        p.record(None, it, engine_idx=0)
        if i % 100 == 99:
            ahead = t0 + (i + 1) / CALLS - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
    elapsed_s = time.monotonic() - t0
    wakeups = rec.wakeups_total - before
    by_reason = dict(rec.wakeups_by_reason)
    print(f"\n{CALLS} record() calls in {elapsed_s:.2f} s: {wakeups} wakeups, {by_reason}")
    # One cadence tick per started second of calls (plus one at the edge), and at most one
    # high-water wake per 3,073 calls: 2 + 3 = 5 when the calls take one second.
    bound = math.ceil(elapsed_s) + 1 + CALLS // (rec.high_water + 1)
    assert wakeups <= bound
    assert (p.faults_total, rec.dropped_total, rec.submitted_total) == (0, 0, CALLS)
    p.shutdown()
    assert rec.wakeups_by_reason["shutdown"] == 1
    (path,) = ledger_files(ledger_env)
    s = total_sums(snapshot(path))
    assert (s.input_tokens, s.cached_tokens, s.output_tokens, s.requests) == (
        3 * CALLS,
        CALLS,
        CALLS,
        CALLS // 100,
    )
