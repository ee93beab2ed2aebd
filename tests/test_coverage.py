"""Coverage and recorder behaviours found in review: each pinned by a test that can fail."""

from __future__ import annotations

import time
from pathlib import Path

from tests.ledgers import ev, write_ledger
from vllm_ledger.read.report import build_report
from vllm_ledger.write.identity import InstanceInfo, WriterIdentity
from vllm_ledger.write.recorder import Recorder

AT = 1_800_000_000


def _report(root: Path, at: float):
    return build_report([root], at_ts=at, clock=lambda: at, tz="UTC")


def test_idle_recorder_waits_instead_of_spinning(tmp_path: Path) -> None:
    calls = 0

    def counting_monotonic() -> float:
        nonlocal calls
        calls += 1
        return time.monotonic()

    rec = Recorder(
        tmp_path,
        WriterIdentity("idle", 0, 1),
        flush_interval_s=0.05,
        heartbeat_interval_s=0.2,
        monotonic=counting_monotonic,
    )
    rec.start()
    time.sleep(1.0)
    rec.close()
    # About 20 flush ticks and 5 heartbeats in a second; a spinning loop makes 100 000s.
    assert calls < 500, calls


def test_rejected_input_reaches_the_ledger_while_running(tmp_path: Path) -> None:
    rec = Recorder(
        tmp_path, WriterIdentity("rej", 0, 1), flush_interval_s=0.05, heartbeat_interval_s=0.1
    )
    rec.start()
    now = time.time()
    for _ in range(20):
        rec.reject(now - 2)  # nothing good ever arrives: the counts must still be written
    deadline = time.monotonic() + 10
    problems: dict[str, int] = {}
    while time.monotonic() < deadline:
        problems = build_report([tmp_path], at_ts=time.time()).window("total").problems
        if problems.get("rejected_input") == 20:
            break
        time.sleep(0.1)
    alive = [w.state for w in build_report([tmp_path]).writers]
    rec.close()
    assert problems.get("rejected_input") == 20
    assert alive == ["alive"]


def test_compaction_that_deletes_nothing_keeps_the_first_second(tmp_path: Path) -> None:
    rec = write_ledger(
        tmp_path,
        "r1",
        start_ts=AT - 1800,
        end_ts=AT - 10,
        events=[ev(AT - 1700, prompt=7)],
        clean=False,
    )
    before = _report(tmp_path, AT)
    rec.pump()  # reopen, then compact as the writer does a minute after start
    assert rec.compact() == 0
    rec.pump(final=True)
    after = _report(tmp_path, AT)
    assert after.window("total").start_ts == before.window("total").start_ts == AT - 1800
    assert after.window("total").input_tokens == 7


def _inst(root: Path, run: str, port: int, start: float, end: float, **kw) -> None:
    write_ledger(root, run, start_ts=start, end_ts=end, port=port, **kw)


def test_a_replaced_instance_does_not_uncover_the_other(tmp_path: Path) -> None:
    # Container A served on :8000 and stopped cleanly; container B took over on :8001.
    _inst(tmp_path, "a", 8000, AT - 1000, AT - 500, events=[ev(AT - 900, gen=5)])
    _inst(tmp_path, "b", 8001, AT - 490, AT, events=[ev(AT - 100, gen=6)])
    total = _report(tmp_path, AT).window("total")
    assert total.output_tokens == 11
    assert total.uncovered_seconds == 10  # only the changeover
    # While both run at once, both must vouch.
    _inst(tmp_path, "c", 8002, AT - 300, AT - 200, clean=False)
    later = _report(tmp_path, AT)
    # c went silent at AT-200 and its last second is not vouched for either.
    assert later.window("total").uncovered_seconds == 10 + 200 + 1
    assert later.window("total").problems == {"heartbeat_stale": 1}


def test_a_writer_missing_in_an_old_run_does_not_taint_later_windows(tmp_path: Path) -> None:
    # Run 1 expected 2 writers; only one came up. Run 2 had both.
    write_ledger(tmp_path, "r1", start_ts=AT - 7200, end_ts=AT - 3600, rank=0, expected=2)
    for rank in (0, 1):
        write_ledger(
            tmp_path,
            "r2",
            start_ts=AT - 3500,
            end_ts=AT,
            rank=rank,
            expected=2,
            events=[ev(AT - 1000, prompt=3)],
        )
    r = build_report([tmp_path], at_ts=AT, clock=lambda: AT, tz="UTC")
    total = r.window("total")
    assert total.problems == {"writer_missing": 1}
    assert total.uncovered_seconds == 3600 + 100
    recent = build_report([tmp_path], at_ts=AT, clock=lambda: AT, tz="UTC", instance=8000).window(
        "today"
    )
    assert recent.start_ts == AT - AT % 86400
    # A window inside run 2 only: complete.
    from vllm_ledger.read.report import window_reports
    from vllm_ledger.read.windows import Window

    (w,), _ = window_reports(
        [tmp_path], [Window("late", AT - 3000, AT)], at_ts=AT, clock=lambda: AT
    )
    assert (w.complete, w.uncovered_seconds, w.problems, w.input_tokens) == (True, 0, {}, 6)


def test_instance_key_comes_from_port_and_host(tmp_path: Path) -> None:
    info = InstanceInfo(("m",), 8000, "gpu1", "0.32.0")
    assert info.key == "gpu1:8000"
