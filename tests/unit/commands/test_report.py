"""``report --by day|month`` through the real CLI on hand-built ledgers: a row per calendar day
(month) of the zone, exact to the token across a month boundary and a DST change, a total row
equal to the rows' sum and to ``report --since/--until`` over the same span, in text, JSON
and CSV."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.ledgers import ev, write_ledger
from vllm_ledger import cli

NY = ZoneInfo("America/New_York")  # leaves DST at 02:00 local on Sunday 2026-11-01


def ny(
    day: tuple[int, int], hour: int = 0, minute: int = 0, second: int = 0, fold: int = 0
) -> float:
    month, d = day
    return datetime(2026, month, d, hour, minute, second, tzinfo=NY, fold=fold).timestamp()


START = ny((10, 30), 12)
END = ny((11, 2), 12)
# (when, prompt tokens): each on one side of a midnight, and 01:30 twice on the night the
# clocks go back (the first and the second 01:30 are an hour apart, both on 2026-11-01).
TINY = [
    (ny((10, 30), 23, 59, 59), 1),
    (ny((10, 31), 0, 0, 0), 10),
    (ny((10, 31), 23, 59, 59), 100),
    (ny((11, 1), 0, 0, 0), 1_000),
    (ny((11, 1), 1, 30, fold=0), 10_000),
    (ny((11, 1), 1, 30, fold=1), 100_000),
    (ny((11, 1), 23, 59, 59), 1_000_000),
    (ny((11, 2), 0, 0, 0), 10_000_000),
]
OTHER_AT = ny((11, 1), 12)  # a second instance serving another model, that day only


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("calendar")
    write_ledger(
        path,
        "run-tiny",
        start_ts=START,
        end_ts=END,
        events=[ev(t + 0.25, prompt=p, gen=1) for t, p in TINY],
        heartbeat_every_s=20.0,
    )
    write_ledger(
        path,
        "run-other",
        start_ts=OTHER_AT - 3600,
        end_ts=OTHER_AT + 3600,
        events=[ev(OTHER_AT + 0.25, prompt=5, gen=2)],
        port=8001,
        model="other",
        heartbeat_every_s=20.0,
    )
    return path


def _json(root: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, Any]:
    argv = ["report", "--root", str(root), "--tz", "America/New_York", "--at", f"{END:.0f}"]
    assert cli.main([*argv, "--json", *flags]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def _inputs(windows: dict[str, Any]) -> dict[str, int]:
    return {name: w["input"] for name, w in windows.items()}


SPAN = ("--since", "2026-10-30T12:00", "--until", "2026-11-02T12:00")


def test_days_are_the_zones_calendar_days_exact_to_the_token(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _json(root, capsys, "--by", "day", *SPAN)
    assert doc["calendar"] == "day"
    assert _inputs(doc["windows"]) == {
        "2026-10-30": 1,
        "2026-10-31": 110,
        "2026-11-01": 1_111_005,
        "2026-11-02": 10_000_000,
        "total": 11_111_116,
    }
    w = doc["windows"]
    # the day the clocks go back is 25 hours long; the first and last days are the span's part
    assert w["2026-11-01"]["cutoff"] - w["2026-11-01"]["start"] == 25 * 3600
    assert w["2026-10-31"]["cutoff"] - w["2026-10-31"]["start"] == 24 * 3600
    assert w["2026-10-30"]["start"] == START and w["2026-10-30"]["cutoff"] == ny((10, 31))
    assert w["2026-11-02"]["start"] == ny((11, 2)) and w["2026-11-02"]["cutoff"] == END
    assert all(x["complete"] for x in w.values()), w
    rows = [x for name, x in w.items() if name != "total"]
    for key in ("input", "output", "requests", "wall_seconds", "uncovered_seconds"):
        assert sum(x[key] for x in rows) == w["total"][key], key


def test_months_cut_at_the_first_local_midnight(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _json(root, capsys, "--by", "month", *SPAN)
    assert _inputs(doc["windows"]) == {"2026-10": 111, "2026-11": 11_111_005, "total": 11_111_116}
    assert doc["windows"]["2026-11"]["start"] == ny((11, 1))


@pytest.mark.parametrize("by", ["day", "month"])
def test_the_total_row_is_the_period_report_for_the_same_span(
    root: Path, capsys: pytest.CaptureFixture[str], by: str
) -> None:
    total = _json(root, capsys, "--by", by, *SPAN)["windows"]["total"]
    period = _json(root, capsys, *SPAN)["windows"]["period"]
    assert total == period


def test_all_recorded_time_by_default_and_one_window_when_asked(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = _json(root, capsys, "--by", "day")["windows"]
    assert list(whole) == ["2026-10-30", "2026-10-31", "2026-11-01", "2026-11-02", "total"]
    assert whole["total"] == _json(root, capsys)["windows"]["total"]
    assert _inputs(_json(root, capsys, "--by", "day", "--window", "today")["windows"]) == {
        "2026-11-02": 10_000_000,
        "total": 10_000_000,
    }


def test_day_by_model_breaks_each_day_down(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(root, capsys, "--by", "day,model", *SPAN)
    assert doc["breakdown"]["by"] == "model"
    rows = {r["key"]: _inputs(r["windows"]) for r in doc["breakdown"]["rows"]}
    assert rows["other"]["2026-11-01"] == 5 and rows["other"]["total"] == 5
    assert rows["tiny"]["2026-11-01"] == 1_111_000 and rows["tiny"]["total"] == 11_111_111
    only = _json(root, capsys, "--by", "day", "--model", "other", *SPAN)["windows"]
    # "other" ran on the 1st only: the 31st, no second of it vouched for by that model, is
    # unknown (null), never 0
    assert only["2026-11-01"]["input"] == 5 and only["2026-10-31"]["input"] is None
    assert only["2026-10-31"]["figures"] == "unknown"


def test_the_text_reads_like_a_ledger_one_line_a_day_and_a_total(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["report", "--root", str(root), "--tz", "America/New_York", "--at", f"{END:.0f}"]
    assert cli.main([*argv, "--by", "day", *SPAN]) == 0
    lines = capsys.readouterr().out.splitlines()
    table = lines[lines.index("") + 1 :]
    assert table[0].split()[:3] == ["day", "input", "output"]
    assert [r.split()[:2] for r in table[1:6]] == [
        ["2026-10-30", "1"],
        ["2026-10-31", "110"],
        ["2026-11-01", "1,111,005"],
        ["2026-11-02", "10,000,000"],
        ["total", "11,111,116"],
    ]
    # times carry their offset: the span runs from EDT into EST
    assert any("2026-10-30 12:00:00 -04:00 -> 2026-11-02 12:00:00 -05:00" in x for x in lines)


def test_csv_has_a_row_a_day_and_the_total(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["report", "--root", str(root), "--tz", "America/New_York", "--at", f"{END:.0f}"]
    assert cli.main([*argv, "--by", "day", "--csv", *SPAN]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["window"], int(r["input"])) for r in rows] == [
        ("2026-10-30", 1),
        ("2026-10-31", 110),
        ("2026-11-01", 1_111_005),
        ("2026-11-02", 10_000_000),
        ("total", 11_111_116),
    ]
    assert rows[2]["start"] == "2026-11-01T00:00:00-04:00"
    assert rows[2]["cutoff"] == "2026-11-02T00:00:00-05:00"


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--by", "week"], "--by 'week'"),
        (["--by", "day,month"], "--by 'day,month'"),
        (["--by", "day,model,instance"], "--by 'day,model,instance'"),
        (["--by", "day", "--window", "today", "--window", "7d"], "cuts one period into days"),
    ],
)
def test_a_bad_by_is_one_line_and_exit_2(
    root: Path, capsys: pytest.CaptureFixture[str], flags: list[str], says: str
) -> None:
    assert cli.main(["report", "--root", str(root), *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err


def test_export_by_month_gives_the_same_months(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["export", "--root", str(root), "--tz", "America/New_York"]  # the span is past
    assert cli.main([*argv, *SPAN, "--by", "month", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    months = _json(root, capsys, "--by", "month", *SPAN)["windows"]
    assert [(r["start_unix"], int(r["input"])) for r in rows] == [
        (str(months[m]["start"]), months[m]["input"]) for m in ("2026-10", "2026-11")
    ]
