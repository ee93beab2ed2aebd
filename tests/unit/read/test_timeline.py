"""The timeline: step edges on the local clock, the window's bounds, and steps, uncovered spans
and rows over three small instances (``tests/ledgers.py`` three_ports)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from tests.ledgers import three_ports
from vllm_ledger.errors import BadArgument
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.timeline import (
    build_timeline,
    parse_by,
    step_edges,
    step_windows,
    window_bounds,
)
from vllm_ledger.read.windows import Window

SH = ZoneInfo("Asia/Shanghai")
AT = int(datetime(2026, 11, 29, 10, 0, 0, tzinfo=SH).timestamp())  # on the hour
H = 3600
T = 1_800_000_000  # three_ports' instant; the live writer on :8002 holds the cutoff at T-1


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LedgerSet]:
    root = tmp_path_factory.mktemp("ledgers")
    three_ports(root, T)
    with LedgerSet.read([root], clock=lambda: T + 0.5) as ls:
        yield ls


def test_step_edges_follow_the_local_clock() -> None:
    # 1 h steps on the hour; in India (+05:30) that is half past in UTC.
    assert step_edges(100, 7300, 3600, 0) == [100, 3600, 7200, 7300]
    assert step_edges(0, 7200, 3600, 0) == [0, 3600, 7200]
    assert step_edges(0, 7200, 3600, 19800) == [0, 1800, 5400, 7200]
    # 1 d steps at local midnight in Shanghai (16:00 UTC).
    start = AT - 2 * 86400
    edges = step_edges(start, AT, 86400, 8 * H)
    assert [datetime.fromtimestamp(e, SH).strftime("%d %H:%M") for e in edges] == [
        "27 10:00",
        "28 00:00",
        "29 00:00",
        "29 10:00",
    ]
    assert step_edges(5, 5, 60, 0) == [5]  # an empty window has no steps


def test_step_windows_pair_the_edges() -> None:
    assert step_windows([0, 10, 25]) == [Window("step@0", 0, 10), Window("step@10", 10, 25)]
    assert step_windows([5]) == []


def test_by_is_a_step_a_key_or_one_of_each() -> None:
    assert parse_by(None) == (None, None)
    assert parse_by("day") == ("day", None)
    assert parse_by("model") == (None, "model")
    assert parse_by("month, run") == ("month", "run")
    for bad in ("user", "day,month", "model,run", "day,"):
        with pytest.raises(BadArgument, match="by "):
            parse_by(bad)


def test_window_bounds_by_name_or_duration() -> None:
    assert window_bounds("2h", T + 0.5, "UTC", None) == (T - 2 * H, T)
    assert window_bounds("total", T + 0.5, "UTC", T - 10_000) == (T - 10_000, T)
    assert window_bounds("today", T + 0.5, "Asia/Shanghai", None) == (T - 16 * H, T)
    with pytest.raises(BadArgument, match="is not a duration"):
        window_bounds("2x", T, "UTC", None)


def test_steps_tile_the_window_and_name_why_time_is_uncovered(ledgers: LedgerSet) -> None:
    tl = build_timeline(ledgers, window="1h", step="15m", at_ts=T + 0.5, tz="UTC")
    assert (tl.cutoff_ts, tl.step_seconds, tl.calendar) == (T - 1, 900, None)
    steps = [
        (s.start_ts - T, s.cutoff_ts - T, s.input_tokens, s.uncovered_seconds) for s in tl.steps
    ]
    assert steps == [
        (-3601, -3600, 0, 1),
        (-3600, -2700, 0, 900),
        (-2700, -1800, 7, 301),
        (-1800, -900, 0, 900),
        (-900, -1, 103, 899),
    ]
    assert (tl.window.input_tokens, tl.window.uncovered_seconds) == (110, 3001)
    assert [(u.start_ts - T, u.end_ts - T, u.cause) for u in tl.uncovered] == [
        (-3601, -2400, "not_recording"),
        (-1801, -1, "heartbeat_stale"),
    ]
    assert [w.state for w in tl.writers] == ["closed", "stale", "alive"]


def test_rows_by_key_share_the_steps_each_with_its_own_coverage(ledgers: LedgerSet) -> None:
    tl = build_timeline(ledgers, window="1h", step="30m", at_ts=T + 0.5, tz="UTC", by="model")
    rows = {
        r.key: (
            [s.input_tokens for s in r.steps],
            [(u.start_ts - T, u.end_ts - T, u.cause) for u in r.uncovered],
        )
        for r in tl.breakdown
    }
    assert rows == {
        "a": ([0, 0, 100], [(-3601, -600, "not_recording")]),
        "b": ([0, 7, 0], [(-3601, -2400, "not_recording"), (-1801, -1, "heartbeat_stale")]),
        "c": ([0, 0, 3], [(-3601, -60, "not_recording")]),
    }
    with pytest.raises(BadArgument, match="unknown breakdown 'user'"):
        build_timeline(ledgers, at_ts=T + 0.5, by="user")


def test_a_calendar_step_cuts_where_the_zones_clock_starts_one(ledgers: LedgerSet) -> None:
    tl = build_timeline(
        ledgers, window="today", step="hour", at_ts=T + 0.5, tz="Asia/Shanghai", model="a"
    )
    assert (tl.calendar, tl.step_seconds, len(tl.steps)) == ("hour", None, 16)
    assert (tl.steps[0].start_ts, tl.steps[-1].cutoff_ts) == (T - 16 * H, T)  # no live writer
    assert [s.input_tokens for s in tl.steps] == [0] * 15 + [100]
    assert (tl.model_filter, tl.window.input_tokens) == ("a", 100)
