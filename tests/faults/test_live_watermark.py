"""A live writer whose commits fail: the report never vouches for a second no proof covers.

The writer's disk fills (a real tmpfs) while events keep arriving. Its last proof is the last
commit that reached the disk; a report taken 6 s later (the writer still "alive": its proof is
younger than 30 s) is cut at the watermark, at or before that proof, and is exact up to it. It
is never complete with tokens missing, as it was when a live writer vouched up to the query.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.faults.helpers import fill_disk, identity, ledger_files, pumped_recorder, snapshot, tmpfs
from tests.ledgers import ev
from vllm_ledger.read.report import build_report
from vllm_ledger.write.recorder import Recorder

T0 = 1_800_000_000.0
REPO = Path(__file__).resolve().parents[2]


def test_a_full_disk_holds_a_live_report_back_at_the_last_proof() -> None:
    with tmpfs("512k") as mnt:
        root = mnt / "ledger"
        rec, clock = pumped_recorder(root, "run-1", T0)
        sent: list[tuple[float, int]] = []
        assert rec.pump()  # the first heartbeat, at T0
        for k in range(1, 11):  # healthy: one event and one commit a second, to T0+10
            clock.t = T0 + k
            rec.submit(ev(clock.t - 0.5, prompt=7, gen=1))
            sent.append((clock.t - 0.5, 7))
            assert rec.pump()
        filler = fill_disk(mnt)
        for k in range(11, 17):  # the disk is full: every commit fails, events keep coming
            clock.t = T0 + k
            rec.submit(ev(clock.t - 0.5, prompt=5, gen=1))
            sent.append((clock.t - 0.5, 5))
            assert rec.pump() is False
        assert rec.commit_failures_total == 6
        (path,) = ledger_files(root)
        assert snapshot(path).spans[-1][1] == T0 + 10  # the last proof

        # 6 s after the last proof the writer is still alive, and the report is cut at its
        # watermark: the second before the proof is not vouched for (an event stamped then
        # may still have been on its way), so the cutoff is T0+9, 7 s behind the query.
        at = T0 + 16
        report = build_report([root], at_ts=at, clock=lambda: at, tz="UTC")
        assert [w.state for w in report.writers] == ["alive"]
        assert (report.cutoff_ts, report.behind_s) == (int(T0) + 9, 7)
        total = report.window("total")
        want = sum(n for ts, n in sent if ts < report.cutoff_ts)
        assert (total.input_tokens, total.output_tokens) == (want, 9) == (63, 9)
        assert (total.complete, total.uncovered_seconds, total.problems) == (True, 0, {})
        # Whatever the design: complete means exact, and no figure exceeds what was sent.
        for w in report.windows:
            assert w.cutoff_ts <= T0 + 10
            assert w.input_tokens <= sum(n for ts, n in sent if w.start_ts <= ts < w.cutoff_ts)

        # Past 30 s the writer is stale: the report runs to the query and says so.
        at = T0 + 41
        late = build_report([root], at_ts=at, clock=lambda: at, tz="UTC")
        assert (late.cutoff_ts, late.behind_s) == (int(at), 0)
        total = late.window("total")
        assert total.input_tokens == 70  # the 10 healthy events, nothing after
        # (the lost counts cannot reach the full disk yet: the silence itself is the problem)
        assert total.problems == {"heartbeat_stale": 1}
        assert total.complete is False

        filler.unlink()
        clock.t = T0 + 42
        assert rec.pump(final=True)
        closed = build_report([root], at_ts=T0 + 43, clock=lambda: T0 + 43, tz="UTC")
        total = closed.window("total")
        # The six given-up events are counted as lost, in their seconds: never complete.
        assert (total.input_tokens, total.problems, total.complete) == (
            70,
            {"write_failed": 6},
            False,
        )


def _cli_report(root: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "vllm_ledger",
            "report",
            "--root",
            str(root),
            "--json",
            "--tz",
            "UTC",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=True,
    )
    return json.loads(out.stdout)


def test_real_time_disk_fills_under_traffic_and_a_report_6_s_later_is_not_complete_short() -> None:
    """The recorder's own thread on the real clock, events every 20 ms, the CLI as a user runs
    it: 6 s after the disk filled the report is either incomplete or exact to its cutoff."""
    with tmpfs("512k") as mnt:
        root = mnt / "ledger"
        rec = Recorder(root, identity("run-rt"))
        rec.start()
        sent: list[tuple[float, int]] = []
        stop = threading.Event()

        def traffic() -> None:
            while not stop.is_set():
                ts = time.time()
                if rec.submit(ev(ts, prompt=3, gen=1)):
                    sent.append((ts, 3))
                time.sleep(0.02)

        sender = threading.Thread(target=traffic, daemon=True)
        sender.start()
        try:
            time.sleep(3.0)
            fill_disk(mnt)
            full_at = time.time()
            time.sleep(6.0)
            doc = _cli_report(root)
        finally:
            stop.set()
            sender.join(10)
            rec.close(timeout_s=2.0)
        assert rec.commit_failures_total > 0  # the disk really was full
        total = doc["windows"]["total"]
        cutoff = doc["cutoff"]
        sent_before = sum(n for ts, n in sent if ts < cutoff)
        assert total["input"] <= sent_before
        if total["complete"]:
            assert total["input"] == sent_before  # complete is exact
        # It never vouches past what reached the disk: the cutoff is at or before the
        # writer's last proof (a second or so after the fill, while the WAL had room).
        (path,) = ledger_files(root)
        last_proof = max(e for _s, e in snapshot(path).spans)
        assert cutoff <= math.floor(last_proof)
        assert last_proof < full_at + 3.0
        assert doc["behind_s"] >= 3
