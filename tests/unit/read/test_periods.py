"""Billing periods: month and day edges in the zone, exact to the second and to the token, across
a month boundary and a DST change."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.ledgers import ev, write_ledger
from vllm_ledger.errors import BadArgument
from vllm_ledger.read.periods import PERIOD_NAMES, month_start_ts, period, since_until
from vllm_ledger.read.report import window_reports
from vllm_ledger.read.windows import Window

SH = ZoneInfo("Asia/Shanghai")
NY = ZoneInfo("America/New_York")  # DST ends 2026-11-01 02:00 EDT -> 01:00 EST


def ts(
    tz: ZoneInfo, year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> int:
    return int(datetime(year, month, day, hour, minute, second, tzinfo=tz).timestamp())


def test_month_and_day_edges_in_shanghai() -> None:
    cutoff = ts(SH, 2026, 12, 1, 0, 0, 5)  # five seconds into December
    assert period("this-month", cutoff, SH, None) == Window(
        "this-month", ts(SH, 2026, 12, 1), cutoff
    )
    assert period("last-month", cutoff, SH, None) == Window(
        "last-month", ts(SH, 2026, 11, 1), ts(SH, 2026, 12, 1)
    )
    assert period("yesterday", cutoff, SH, None) == Window(
        "yesterday", ts(SH, 2026, 11, 30), ts(SH, 2026, 12, 1)
    )
    assert period("30d", cutoff, SH, None) == Window("30d", cutoff - 30 * 86400, cutoff)
    # January looks back to December of the year before.
    assert month_start_ts(ts(SH, 2027, 1, 15), SH, 1) == ts(SH, 2026, 12, 1)


def test_a_day_and_a_month_across_the_dst_change_are_exact() -> None:
    cutoff = ts(NY, 2026, 11, 2, 9, 0)
    y = period("yesterday", cutoff, NY, None)
    assert (y.start_ts, y.cutoff_ts) == (ts(NY, 2026, 11, 1), ts(NY, 2026, 11, 2))
    assert y.seconds == 25 * 3600  # the clocks went back an hour
    march = ts(NY, 2026, 3, 20)
    assert period("last-month", march, NY, None).seconds == 28 * 86400
    this = period("this-month", march, NY, None)
    assert this.seconds == march - ts(NY, 2026, 3, 1) == 19 * 86400 - 3600  # spring forward


def test_a_period_never_reaches_past_the_cutoff() -> None:
    # A watermark a few seconds before midnight: "yesterday" is the day before, whole, and
    # today ends at the cutoff.
    midnight = ts(SH, 2026, 12, 1)
    assert period("yesterday", midnight - 3, SH, None) == Window(
        "yesterday", ts(SH, 2026, 11, 29), ts(SH, 2026, 11, 30)
    )
    assert period("today", midnight - 3, SH, None).cutoff_ts == midnight - 3
    assert period("last-month", midnight - 3, SH, None) == Window(
        "last-month", ts(SH, 2026, 10, 1), ts(SH, 2026, 11, 1)
    )
    assert since_until(midnight - 100, midnight + 100, midnight) == Window(
        "period", midnight - 100, midnight
    )
    with pytest.raises(BadArgument) as e:
        since_until(midnight, midnight - 1, midnight, SH)
    assert str(e.value) == (  # in the zone's words, never Unix seconds
        "until 2026-11-30 23:59:59 +08:00 is not after since 2026-12-01 00:00:00 +08:00: "
        "give an until later than since, e.g. since 2026-11-01 until 2026-12-01"
    )
    assert e.value.argument == "until"
    with pytest.raises(BadArgument, match="unknown window 'fortnight'"):
        period("fortnight", midnight, SH, None)
    assert PERIOD_NAMES[0] == "today" and PERIOD_NAMES[-1] == "total"


def test_month_windows_are_exact_to_the_token_on_a_ledger_across_the_boundary(
    tmp_path: Path,
) -> None:
    start = ts(SH, 2026, 10, 31, 23, 59, 50)
    edge = ts(SH, 2026, 11, 1)
    # One event in each of the last three seconds of October and the first three of November.
    events = [ev(edge + k + 0.5, prompt=10 + k, gen=1) for k in (-3, -2, -1, 0, 1, 2)]
    write_ledger(tmp_path, "run-1", start_ts=start, end_ts=edge + 20, events=events)
    at = edge + 20  # the writer closed then
    windows = [
        period("this-month", at, SH, None),
        period("last-month", at, SH, None),
        since_until(edge - 2, edge + 2, at),
    ]
    reports, _model = window_reports([tmp_path], windows, at_ts=at, clock=lambda: at)
    this, last, around = reports
    assert (this.input_tokens, this.output_tokens) == (10 + 11 + 12, 3)
    assert (last.input_tokens, last.output_tokens) == (7 + 8 + 9, 3)
    assert (around.input_tokens, around.output_tokens) == (8 + 9 + 10 + 11, 4)
    # October holds seconds before the writer started: not complete; November is whole.
    assert this.complete is True and this.uncovered_seconds == 0
    assert last.complete is False and last.uncovered_seconds == (start - ts(SH, 2026, 10, 1))
    assert around.complete is True


def test_report_takes_named_periods_and_since_until_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vllm_ledger import cli

    start = ts(SH, 2026, 10, 31, 23, 59, 50)
    edge = ts(SH, 2026, 11, 1)
    events = [ev(edge + k + 0.5, prompt=10 + k, gen=1) for k in (-3, -2, -1, 0, 1, 2)]
    write_ledger(tmp_path, "run-1", start_ts=start, end_ts=edge + 20, events=events)
    at = str(edge + 20)
    base = ["report", "--root", str(tmp_path), "--at", at, "--tz", "Asia/Shanghai"]
    assert cli.main([*base, "--window", "this-month", "--window", "last-month", "--csv"]) == 0
    out, _ = capsys.readouterr()
    rows = [line.split(",") for line in out.splitlines()]
    assert rows[0][:7] == ["key", "window", "start", "start_unix", "cutoff", "cutoff_unix", "input"]
    assert [(r[1], r[2], r[6], r[15]) for r in rows[1:]] == [
        ("this-month", "2026-11-01T00:00:00+08:00", "33", "true"),
        ("last-month", "2026-10-01T00:00:00+08:00", "24", "false"),
    ]
    assert cli.main([*base, "--since", str(edge - 2), "--until", str(edge + 2), "--json"]) == 0
    out, _ = capsys.readouterr()
    period_doc = __import__("json").loads(out)["windows"]
    assert list(period_doc) == ["period"]
    assert (period_doc["period"]["input"], period_doc["period"]["complete"]) == (38, True)
    assert cli.main([*base, "--until", str(edge)]) == 2
    assert "--until needs --since" in capsys.readouterr().err
