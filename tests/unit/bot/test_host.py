"""The week the bot's host answer sums (bot/host.py's ``week_edges``): from the local midnight
seven days before today's to today's, across a DST change."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from vllm_ledger.bot.host import week_edges


def test_the_week_is_seven_local_days_before_today() -> None:
    sh = ZoneInfo("Asia/Shanghai")
    at = datetime(2026, 12, 1, 15, 30, tzinfo=sh).timestamp()
    assert week_edges(at, sh) == (
        int(datetime(2026, 11, 24, tzinfo=sh).timestamp()),
        int(datetime(2026, 12, 1, tzinfo=sh).timestamp()),
    )


def test_a_week_across_a_dst_change_is_seven_local_days() -> None:
    ny = ZoneInfo("America/New_York")  # the clocks went back on 2026-11-01
    at = datetime(2026, 11, 5, 9, 0, tzinfo=ny).timestamp()
    start, end = week_edges(at, ny)
    assert (start, end) == (
        int(datetime(2026, 10, 29, tzinfo=ny).timestamp()),
        int(datetime(2026, 11, 5, tzinfo=ny).timestamp()),
    )
    assert end - start == 7 * 86400 + 3600
