"""The wall clock stepped back and forward an hour under a running recorder (a passed-in
clock): buckets add and never overwrite, nothing is lost, nothing reads negative."""

from __future__ import annotations

from pathlib import Path

from tests.faults.helpers import ledger_files, pumped_recorder, snapshot
from tests.ledgers import ev
from vllm_ledger.read.report import build_report

T0 = 1_800_000_000.0
HOUR = 3600.0


def test_clock_steps_back_and_forward_an_hour(tmp_path: Path) -> None:
    rec, clock = pumped_recorder(tmp_path, "run-1", T0)
    expected = 0
    # Real time T0..T0+20 s; then the clock is stepped back an hour, runs 20 s; then it is
    # stepped forward two hours and runs 20 s. Events carry the (stepped) clock's time.
    steps = [T0 + 5 * k for k in range(5)]
    steps += [T0 - HOUR + 5 * k for k in range(5)]
    steps += [T0 + HOUR + 5 * k for k in range(5)]
    for t in steps:
        clock.t = t
        for prompt in (1, 10):
            rec.submit(ev(t - 0.5, prompt=prompt))
            expected += prompt
        assert rec.pump()
    # The same wall second seen twice (before and after the step back) adds up, not overwrites.
    clock.t = T0 + HOUR + 25
    rec.submit(ev(T0 + 4.5, prompt=1000))
    rec.submit(ev(T0 - HOUR + 4.5, prompt=1000))
    expected += 2000
    assert rec.pump(final=True)
    (path,) = ledger_files(tmp_path)
    snap = snapshot(path)
    assert all(e >= s for s, e in snap.spans)
    at = T0 + HOUR + 25
    r = build_report([tmp_path], at_ts=at, clock=lambda: at, tz="UTC")
    total = r.window("total")
    assert total.input_tokens == expected
    for w in r.windows:
        assert w.input_tokens >= 0 and w.uncovered_seconds >= 0
        assert 0 <= w.uncovered_seconds <= w.cutoff_ts - w.start_ts
    # Covered: the three 20 s stretches the writer vouched for; the rest of the 2 h is not.
    assert total.start_ts == int(T0 - HOUR) - 1
    assert total.uncovered_seconds == (total.cutoff_ts - total.start_ts) - 3 * 20 - 5
    assert total.complete is False
