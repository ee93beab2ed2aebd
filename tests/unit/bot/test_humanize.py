"""Numbers and labels as the bot's replies write them: human-sized counts, rates and speeds,
the last part of an address, a host's offset from UTC."""

from __future__ import annotations

from datetime import timedelta, timezone

import pytest

from vllm_ledger.bot.humanize import (
    human_count,
    human_rate,
    human_speed,
    ip_last_part,
    signed_count,
    utc_offset,
)
from vllm_ledger.formats.table import display_width
from vllm_ledger.units import format_duration, format_instant


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0"),
        (999, "999"),
        (1000, "1.0K"),
        (1234, "1.2K"),
        (99_949, "99.9K"),
        (99_950, "100K"),
        (123_456, "123K"),
        (999_499, "999K"),
        (999_500, "1.0M"),
        (1_234_567, "1.2M"),
        (12_345_678_901, "12.3B"),
        (10**15, "1000T"),
    ],
)
def test_human_count(n: int, text: str) -> None:
    assert human_count(n) == text


def test_human_other_numbers() -> None:
    assert human_rate(None) == "-" and human_rate(0.6667) == "66.7%" and human_rate(1.0) == "100.0%"
    assert human_speed(None) == "-" and human_speed(0.0) == "0.0" and human_speed(0.012) == "0.01"
    assert human_speed(0.0027) == "<0.01"
    assert human_speed(25.14) == "25.1" and human_speed(1234.5) == "1.2K"
    assert format_duration(59, "rounded", units="smhd") == "59s"
    assert format_duration(7200, "rounded", units="smhd") == "2h"
    assert format_duration(3 * 86400, "rounded", units=("秒", "分", "时", "天")) == "3天"
    assert display_width("24小时") == 6


def test_only_the_last_part_of_an_ip_is_shown() -> None:
    assert ip_last_part("10.0.0.12") == ".12"
    assert ip_last_part("2001:db8::1") == ":1"
    assert ip_last_part("example-primary") is None
    assert ip_last_part(None) is None


def test_a_signed_count_keeps_its_sign() -> None:
    assert (signed_count(-1234), signed_count(0), signed_count(1234)) == ("-1.2K", "0", "1.2K")


@pytest.mark.parametrize(
    ("offset_s", "written"),
    [(28800, "+08:00"), (0, "+00:00"), (-12600, "-03:30"), (20700, "+05:45")],
)
def test_a_host_offset_is_written_as_every_other_printed_time(offset_s: int, written: str) -> None:
    """The chat's times carry the offset as report, status and the logs print it (+08:00), not
    a form of its own (UTC+8)."""
    assert utc_offset(offset_s) == written
    ts = 1_796_000_000  # 2026-11-30T01:33:20Z
    at = format_instant(ts, timezone(timedelta(seconds=offset_s)))
    assert at.endswith(" " + written)
