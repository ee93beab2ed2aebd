"""Window maths on hand-built ledgers with a passed-in clock."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from tests.ledgers import ev, write_ledger
from vllm_ledger.read.report import build_report
from vllm_ledger.read.windows import local_midnight_ts, windows_at

SH = ZoneInfo("Asia/Shanghai")
# 2026-11-29 10:00:00 in Shanghai
AT = datetime(2026, 11, 29, 10, 0, 0, tzinfo=SH).timestamp()
MIDNIGHT = datetime(2026, 11, 29, 0, 0, 0, tzinfo=SH).timestamp()


def test_window_edges_are_exact_seconds() -> None:
    ws = {w.name: w for w in windows_at(AT + 0.75, SH, first_record_ts=int(AT) - 10)}
    assert ws["today"].start_ts == MIDNIGHT
    assert ws["today"].cutoff_ts == AT  # the unfinished second is left out
    assert ws["24h"].start_ts == AT - 86400
    assert ws["3d"].start_ts == AT - 3 * 86400
    assert ws["7d"].start_ts == AT - 7 * 86400
    assert ws["total"].start_ts == AT - 10
    assert local_midnight_ts(int(MIDNIGHT), SH) == MIDNIGHT
    assert local_midnight_ts(int(MIDNIGHT) - 1, SH) == MIDNIGHT - 86400


def test_midnight_follows_the_zone() -> None:
    utc = ZoneInfo("UTC")
    w = windows_at(AT, utc, None)[0]
    assert w.start_ts == datetime(2026, 11, 29, 0, 0, tzinfo=utc).timestamp()
    assert w.start_ts - MIDNIGHT == 8 * 3600


def _report(root: Path, at: float, tz: str = "Asia/Shanghai"):
    return build_report([root], at_ts=at, tz=tz, clock=lambda: at)


def test_boundaries_at_one_second(tmp_path: Path) -> None:
    start = AT - 8 * 86400
    events = [
        ev(AT - 86400 - 1, prompt=1),  # one second before 24h: in 3d, not 24h
        ev(AT - 86400, prompt=10),  # the first second of 24h
        ev(MIDNIGHT - 0.001, prompt=100),  # the last instant of yesterday
        ev(MIDNIGHT, prompt=1000),  # the first second of today
        ev(AT - 0.5, prompt=10000, gen=7, cached=5000),  # the last finished second
        ev(AT + 0.2, prompt=100000),  # the unfinished second: never counted
    ]
    write_ledger(
        tmp_path, "r1", start_ts=start, end_ts=AT + 0.9, events=events, heartbeat_every_s=29
    )
    r = _report(tmp_path, AT + 0.9)
    got = {w.name: w.input_tokens for w in r.windows}
    assert got == {"today": 11000, "24h": 11110, "3d": 11111, "7d": 11111, "total": 11111}
    today = r.window("today")
    assert today.output_tokens == 7
    assert today.cached_tokens == 5000
    assert today.hit_rate == 5000 / 11000
    assert today.avg_speed == 7 / (AT - MIDNIGHT)
    assert today.uncovered_seconds == 0
    assert today.complete is True
    # The ledger started 8 days ago: 7d is covered, total starts at the first record.
    assert r.window("7d").complete is True
    assert r.window("total").start_ts == int(start)
    # A second later, the second that was unfinished counts.
    r2 = _report(tmp_path, AT + 1.0)
    assert r2.window("today").input_tokens == 111000


def test_events_count_by_their_own_time_not_the_flush(tmp_path: Path) -> None:
    # Both events are committed in one flush at AT, but one happened before midnight.
    write_ledger(
        tmp_path,
        "r1",
        start_ts=MIDNIGHT - 600,
        end_ts=AT,
        events=[ev(MIDNIGHT - 300, gen=3), ev(MIDNIGHT + 300, gen=4)],
        heartbeat_every_s=None,
    )
    r = _report(tmp_path, AT)
    assert r.window("today").output_tokens == 4
    assert r.window("24h").output_tokens == 7


def test_request_across_midnight_counts_where_it_ended(tmp_path: Path) -> None:
    # Decoding ran from 23:59:50 to 00:00:10; the request finished after midnight.
    events = [
        ev(MIDNIGHT - 10, prompt=50, gen=1),
        ev(MIDNIGHT + 10, gen=20, finished=[(21, 20.0)]),
    ]
    write_ledger(tmp_path, "r1", start_ts=MIDNIGHT - 3600, end_ts=AT, events=events)
    r = _report(tmp_path, AT)
    today = r.window("today")
    assert today.requests == 1
    assert today.decode_tokens == 20
    assert today.gen_speed == 1.0
    assert today.input_tokens == 0
    y = build_report([tmp_path], at_ts=MIDNIGHT, clock=lambda: AT)
    assert y.window("today").requests == 0
    assert y.window("today").gen_speed is None  # no finished request: unknown, not 0


def test_zero_denominators_are_none(tmp_path: Path) -> None:
    write_ledger(tmp_path, "r1", start_ts=AT - 100, end_ts=AT)
    w = _report(tmp_path, AT).window("total")
    assert (w.input_tokens, w.hit_rate, w.gen_speed) == (0, None, None)
    assert w.avg_speed == 0.0
    assert w.complete is True


def test_uncovered_before_first_record_and_between_runs(tmp_path: Path) -> None:
    write_ledger(
        tmp_path, "r1", start_ts=AT - 3600, end_ts=AT - 1800, events=[ev(AT - 3000, gen=5)]
    )
    write_ledger(tmp_path, "r2", start_ts=AT - 1200, end_ts=AT, events=[ev(AT - 600, gen=6)])
    r = _report(tmp_path, AT)
    total = r.window("total")
    assert total.output_tokens == 11
    assert total.start_ts == AT - 3600
    assert total.uncovered_seconds == 600  # the restart gap
    assert total.complete is False
    today = r.window("today")
    assert today.uncovered_seconds == (AT - MIDNIGHT) - 3600 + 600
