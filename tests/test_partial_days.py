"""``--by day --since 7d`` gives 8 rows: the period starts and ends inside a day, so its first
and last rows are partial days. ``report`` and ``timeline`` say so in one line under the text
table; in CSV the same rows carry the start and cutoff that show where (off the zone's
midnight). A period from midnight to midnight says nothing. Real ledgers in ``tmp_path``,
through the real CLI."""

from __future__ import annotations

import csv
import io
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.ledgers import ev, write_ledger
from vllm_ledger import cli

TZ = "Asia/Shanghai"
AT = 1_796_000_000  # 2026-11-30 08:53:20 +08:00
LINE = (
    "The first and last rows are partial days: the period starts at 2026-11-23 08:53:20 +08:00"
    " and ends at 2026-11-30 08:53:20 +08:00."
)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("partial")
    write_ledger(
        path,
        "run-a",
        start_ts=AT - 9 * 86400,
        end_ts=AT,
        events=[ev(AT - 3 * 86400, prompt=5, gen=1)],
        heartbeat_every_s=60.0,
    )
    return path


def _out(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert cli.main(argv) == 0
    return capsys.readouterr().out


def _midnight(text: str) -> bool:
    return datetime.fromisoformat(text).astimezone(ZoneInfo(TZ)).strftime("%H:%M:%S") == "00:00:00"


@pytest.mark.parametrize(
    "argv",
    [["report", "--since", "7d"], ["timeline", "--window", "7d"]],
    ids=["report", "timeline"],
)
def test_seven_days_by_day_is_eight_rows_and_says_why(
    root: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--root", str(root), "--by", "day", "--at", str(AT), "--tz", TZ]
    text = _out(capsys, [*argv, *common])
    assert text.count(LINE) == 1
    rows = list(csv.DictReader(io.StringIO(_out(capsys, [*argv, *common, "--csv"]))))
    steps = [r for r in rows if r.get("window") != "total"]
    assert len(steps) == 8
    assert not _midnight(steps[0]["start"]) and _midnight(steps[0]["cutoff"])
    assert _midnight(steps[-1]["start"]) and not _midnight(steps[-1]["cutoff"])
    assert all(_midnight(r["start"]) and _midnight(r["cutoff"]) for r in steps[1:-1])


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "--since", "2026-11-23", "--until", "2026-11-30"],
        ["timeline", "--window", "yesterday"],
    ],
    ids=["report", "timeline"],
)
def test_whole_days_say_nothing_of_partial_rows(
    root: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    text = _out(capsys, [*argv, "--root", str(root), "--by", "day", "--at", str(AT), "--tz", TZ])
    assert "partial" not in text
