"""Coverage (read/coverage.py): which seconds every expected writer vouches for, and why not."""

from __future__ import annotations

from pathlib import Path

from tests.ledgers import ev, write_ledger
from vllm_ledger.read.report import build_report, window_reports
from vllm_ledger.read.windows import Window

AT = 1_800_000_000


def _report(root: Path, at: float):
    return build_report([root], at_ts=at, clock=lambda: at, tz="UTC")


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
    (w,), _ = window_reports(
        [tmp_path], [Window("late", AT - 3000, AT)], at_ts=AT, clock=lambda: AT
    )
    assert (w.complete, w.uncovered_seconds, w.problems, w.input_tokens) == (True, 0, {}, 6)
