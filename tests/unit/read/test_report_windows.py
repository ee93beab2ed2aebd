"""The windows a report shows: the five, named periods, --since/--until, or calendar steps."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from vllm_ledger.read.periods import period
from vllm_ledger.read.report_windows import TOTAL_ROW, ChosenWindows, time_spec
from vllm_ledger.read.windows import windows_at

UTC = ZoneInfo("UTC")
CUTOFF = 1_796_000_000
FIRST = CUTOFF - 10 * 86400


def test_nothing_chosen_is_the_five() -> None:
    assert ChosenWindows().windows(CUTOFF, UTC, FIRST) == windows_at(CUTOFF, UTC, FIRST)
    assert ChosenWindows().between(CUTOFF, UTC) == (None, None)


def test_named_periods_then_the_since_until_one() -> None:
    chosen = ChosenWindows(("yesterday",), time_spec(FIRST), time_spec(FIRST + 3600))
    got = chosen.windows(CUTOFF, UTC, FIRST)
    assert got[0] == period("yesterday", CUTOFF, UTC, FIRST)
    assert (got[1].start_ts, got[1].cutoff_ts) == (FIRST, FIRST + 3600)
    assert chosen.between(CUTOFF, UTC) == (FIRST, FIRST + 3600)


def test_a_grain_cuts_the_one_period_into_steps_and_a_total_row() -> None:
    since = FIRST - FIRST % 86400  # midnight UTC
    chosen = ChosenWindows(since=time_spec(since), until=time_spec(since + 3 * 86400), grain="day")
    *days, total = chosen.windows(CUTOFF, UTC, FIRST)
    assert len(days) == 3
    assert [d.start_ts for d in days] == [since, since + 86400, since + 2 * 86400]
    assert (total.name, total.start_ts, total.cutoff_ts) == (TOTAL_ROW, since, since + 3 * 86400)


def test_a_time_spec_keeps_a_spec_and_makes_seconds_an_instant() -> None:
    assert time_spec(None) is None
    spec = time_spec(1_796_000_000.4)
    assert spec is not None
    assert spec.ts == 1_796_000_000.4
    assert time_spec(spec) is spec
