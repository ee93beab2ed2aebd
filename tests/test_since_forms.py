"""``--since``/``--until`` as people type them, through the real CLI on a real ledger root:
each form gives the same instant as its ISO 8601 spelling, in the report's zone."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.ledgers import ev, write_ledger
from vllm_ledger import cli

# The writer runs through 2026-11-01 (New York leaves DST at 02:00 local that morning).
END_TS = datetime(2026, 11, 3, 12, tzinfo=ZoneInfo("UTC")).timestamp()
START_TS = END_TS - 9 * 86400


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("since")
    events = [ev(START_TS + k * 3600 + 0.5, prompt=1, gen=1) for k in range(9 * 24)]
    write_ledger(
        path, "run-1", start_ts=START_TS, end_ts=END_TS, events=events, heartbeat_every_s=3600
    )
    return path


def _since_ts(root: Path, capsys: pytest.CaptureFixture[str], tz: str, *flags: str) -> int:
    argv = ["report", "--root", str(root), "--tz", tz, "--at", f"{END_TS:.0f}", "--json"]
    assert cli.main([*argv, *flags]) == 0
    window = json.loads(capsys.readouterr().out)["windows"]["period"]
    return int(window["start"])


def _iso(tz: str, year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> str:
    return datetime(year, month, day, hour, minute, tzinfo=ZoneInfo(tz)).isoformat()


@pytest.mark.parametrize("tz", ["Asia/Shanghai", "America/New_York"])
def test_each_form_is_its_iso_instant(
    root: Path, capsys: pytest.CaptureFixture[str], tz: str
) -> None:
    cutoff = _since_ts(root, capsys, tz, "--since", "1d") + 86400
    today = datetime.fromtimestamp(cutoff, ZoneInfo(tz)).date()
    forms = {
        "2026-11-01": _iso(tz, 2026, 11, 1),
        "2026-11-01T08:00": _iso(tz, 2026, 11, 1, 8),
        "2026-11-01 08:00": _iso(tz, 2026, 11, 1, 8),
        "2026-10-31T23:30": _iso(tz, 2026, 10, 31, 23, 30),
        "today": _iso(tz, today.year, today.month, today.day),
        "yesterday": _iso(tz, 2026, 11, 2),
        "36h": str(cutoff - 36 * 3600),
        "90m": str(cutoff - 5400),
    }
    for form, iso in forms.items():
        got = _since_ts(root, capsys, tz, "--since", form)
        assert got == _since_ts(root, capsys, tz, "--since", iso), form


def test_a_repeated_local_time_is_the_earlier(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tz = "America/New_York"
    got = _since_ts(root, capsys, tz, "--since", "2026-11-01T01:30")
    assert got == _since_ts(root, capsys, tz, "--since", "2026-11-01T01:30:00-04:00")
    # across the change the day is 25 hours long
    assert (
        cli.main(
            [
                "report",
                "--root",
                str(root),
                "--tz",
                tz,
                "--at",
                f"{END_TS:.0f}",
                "--csv",
                "--since",
                "2026-11-01",
                "--until",
                "2026-11-02",
            ]
        )
        == 0
    )
    row = capsys.readouterr().out.splitlines()[1].split(",")
    assert int(row[5]) - int(row[3]) == 25 * 3600


def test_a_skipped_local_time_is_one_line(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "report",
        "--root",
        str(root),
        "--tz",
        "America/New_York",
        "--since",
        "2026-03-08T02:30",
    ]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--since '2026-03-08T02:30' does not exist in America/New_York" in err


def test_the_report_names_the_zone(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["report", "--root", str(root), "--tz", "America/New_York", "--at", f"{END_TS:.0f}"]
    assert cli.main([*argv, "--since", "yesterday"]) == 0
    assert "(America/New_York)" in capsys.readouterr().out.splitlines()[0]


@pytest.mark.parametrize("tz", ["Asia/Shanghai", "America/New_York"])
def test_export_takes_the_forms_and_a_window(
    root: Path, capsys: pytest.CaptureFixture[str], tz: str
) -> None:
    base = ["export", "--root", str(root), "--tz", tz, "--by", "day"]

    def rows(*flags: str) -> tuple[list[str], str]:
        assert cli.main([*base, *flags]) == 0
        out, err = capsys.readouterr()
        return out.splitlines()[1:], err

    by_date, err = rows("--since", "2026-10-30", "--until", "2026-11-02")
    assert err == f"vllm-ledger: export: period read in {tz}\n"
    by_iso, err = rows("--since", _iso(tz, 2026, 10, 30), "--until", _iso(tz, 2026, 11, 2))
    assert (by_date, err) == (by_iso, "")
    assert [r.split(",")[0] for r in by_date] == [
        _iso(tz, 2026, 10, 30),
        _iso(tz, 2026, 10, 31),
        _iso(tz, 2026, 11, 1),
    ]
    total, err = rows("--window", "total")
    assert err.endswith(f"in {tz}\n") and total[0].split(",")[0] <= by_date[0].split(",")[0]
