"""SIGKILL of a writer process at random points, 24 times: what was acknowledged is on disk
(plus at most the one batch announced before the kill), the file is sound, the gap is shown."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

from tests.faults.helpers import WriterProc, ledger_files, quick_check, snapshot, total_sums
from tests.faults.writer_proc import GEN_PER_EVENT, PROMPT_PER_EVENT
from vllm_ledger.read.check import check_file
from vllm_ledger.read.report import build_report

KILLS = 24


def test_sigkill_at_random_points(tmp_path: Path) -> None:
    rng = random.Random(20261129)
    root = tmp_path / "ledger"
    expected_events = 0
    outcomes = {"acked": 0, "one_more": 0, "before_first_commit": 0}
    for i in range(KILLS):
        run_id = f"run-{i:02d}"
        w = WriterProc.start("--root", str(root), "--run-id", run_id)
        w.wait_line("READY")
        if i % 6:  # five kills in six land after the first commit, at a random moment
            w.wait_line("ACK")
            time.sleep(rng.uniform(0.0, 0.5))
        w.proc.send_signal(signal.SIGKILL)
        rc, _err = w.finish()
        assert rc == -signal.SIGKILL
        acks, pres = w.acks(), w.pres()
        acked_seq = max(acks, default=0)
        files = [p for p in ledger_files(root) if p.parent.name == run_id]
        assert len(files) <= 1
        if not files or (not acks and not pres):
            outcomes["before_first_commit"] += 1
            continue
        path = files[0]
        assert quick_check(path) == "ok"
        snap = snapshot(path)
        assert snap.status == "ok", snap.detail
        # The file holds exactly the acknowledged commits, or one more that was announced.
        assert snap.last_seq in (acked_seq, acked_seq + 1)
        if snap.last_seq == 0:  # killed after the first commit was announced, before it landed
            assert total_sums(snap).input_tokens == 0
            outcomes["before_first_commit"] += 1
            continue
        events = acks.get(snap.last_seq, pres.get(snap.last_seq))
        assert events is not None, (snap.last_seq, w.lines)
        sums = total_sums(snap)
        assert sums.input_tokens == PROMPT_PER_EVENT * events
        assert sums.output_tokens == GEN_PER_EVENT * events
        assert snap.problem_seconds == []  # nothing dropped: the kill lost only an unflushed tail
        outcomes["acked" if snap.last_seq == acked_seq else "one_more"] += 1
        expected_events += events
        # `check` calls the writer stale once its heartbeat is 30 s old, its exit unclean
        # once it has been silent an hour.
        last = max(e for _, e in snap.spans)
        v = check_file(path, now_ts=last + 31)
        assert (v.ok, v.verdict) == (False, "stale")
        v = check_file(path, now_ts=last + 3601)
        assert (v.ok, v.verdict) == (False, "unclean_exit")

    assert outcomes["acked"] + outcomes["one_more"] >= KILLS * 5 // 6, outcomes
    at = time.time() + 40
    r = build_report([root], at_ts=at, clock=lambda: at)
    total = r.window("total")
    assert total.input_tokens == PROMPT_PER_EVENT * expected_events
    assert total.output_tokens == GEN_PER_EVENT * expected_events
    states = [w.state for w in r.writers]
    # The latest run is stale; the earlier ones crashed (no clean close, a later run exists).
    assert sorted(set(states)) == ["crashed", "stale"]
    assert states.count("stale") == 1
    assert total.complete is False
    assert total.problems["heartbeat_stale"] == 1
    assert total.problems["unclean_exit"] >= 1
    last_heartbeat = max(w.last_ts or 0 for w in r.writers)
    assert total.uncovered_seconds >= int(at) - int(last_heartbeat) - 1 > 0
    print(f"\nSIGKILL outcomes over {KILLS} kills: {outcomes}")
