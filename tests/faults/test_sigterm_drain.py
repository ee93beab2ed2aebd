"""SIGTERM with 4000 events queued: the real plugin in its own process, fed real vLLM
IterationStats, drains them all at exit (its atexit hook -> Recorder.close) and closes cleanly.

The writer is parked (its waker gated) while the 4000 events are recorded, so
they really are queued when the signal arrives; the SIGTERM handler opens the gate and exits
the way vLLM's handler does (SystemExit, so atexit runs)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from tests.faults.helpers import WriterProc, ledger_files, snapshot
from vllm_ledger.read.report import build_report

QUEUED = 4000


def test_sigterm_drains_4000_queued_events(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    w = WriterProc.start(
        "--root", str(root), "--run-id", "run-term", "--mode", "plugin", "--events", str(QUEUED)
    )
    line = w.wait_line("QUEUED", timeout_s=240)
    _, n, sums_json = line.split(" ", 2)
    assert int(n) == QUEUED
    sums = json.loads(sums_json)
    w.proc.send_signal(signal.SIGTERM)
    rc, err = w.finish(timeout_s=60)
    assert rc == 0, err[-3000:]
    closed = w.wait_line("CLOSED").split()
    assert closed[1] == "True"  # clean close written within the drain limit
    assert int(closed[2]) == QUEUED
    assert "Traceback" not in err

    (path,) = ledger_files(root)
    snap = snapshot(path)
    assert snap.clean_close_ts is not None
    at = snap.clean_close_ts
    r = build_report([root], at_ts=at, clock=lambda: at)
    total = r.window("total")
    assert (total.input_tokens, total.output_tokens, total.cached_tokens) == (
        sums["input"],
        sums["output"],
        sums["cached"],
    )
    assert (total.requests, total.decode_tokens) == (sums["requests"], sums["decode_tokens"])
    assert round(total.decode_seconds * 1e6) == sums["decode_us"]
    assert [w.state for w in r.writers] == ["closed"]
    assert total.problems == {}
    assert total.uncovered_seconds == 0
    assert total.complete is True
