"""One period with a day nobody recorded, through `report --by day`, `export --by day` and
`timeline --by day`: the same rows, and that day's figures blank (CSV) or null (JSON), never 0,
with its coverage beside them; `--zeros` prints 0 where asked."""

from __future__ import annotations

import csv
import io
import json
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.ledgers import ev, write_ledger

DAY = 86400


@pytest.fixture(scope="module")
def gap_root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """Three whole UTC days before today: the first and the last recorded, the middle not.
    Relative to now, as `export` reads up to now (it has no --at)."""
    root = tmp_path_factory.mktemp("gap")
    today = int(time.time()) // DAY * DAY
    first = today - 3 * DAY
    for run, day, prompt in (("a", first, 100), ("b", first + 2 * DAY, 300)):
        write_ledger(
            root,
            run,
            start_ts=day,
            end_ts=day + DAY,
            events=[ev(day + 3600, prompt=prompt, gen=prompt // 10)],
            heartbeat_every_s=25.0,
        )
    return root, first


def _date(ts: int) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d")


def _rows(*argv: str) -> list[dict[str, str]]:
    code, out, err = run_cli(*argv)
    assert code == 0, err
    return list(csv.DictReader(io.StringIO(out)))


def _views(root: Path, first: int, *extra: str) -> dict[str, list[dict[str, str]]]:
    since, until = _date(first), _date(first + 3 * DAY)
    common = ("--root", str(root), "--tz", "UTC", *extra)
    report = _rows("report", "--by", "day", "--csv", "--since", since, "--until", until,
                   "--at", until, *common)  # fmt: skip
    export = _rows("export", "--by", "day", "--since", since, "--until", until, *common)
    timeline = _rows("timeline", "--by", "day", "--csv", "--window", "3d", "--at", until, *common)
    return {
        "report": [r for r in report if r["window"] != "total"],
        "export": export,
        "timeline": timeline,
    }


FIGURES = ("input", "output", "cached", "requests")


def test_the_three_views_give_the_same_rows_and_blanks_for_the_unknown_day(
    gap_root: tuple[Path, int],
) -> None:
    root, first = gap_root
    views = _views(root, first)
    starts = [str(first + i * DAY) for i in range(3)]
    for name, rows in views.items():
        assert [r["start_unix"] for r in rows] == starts, name
        assert [[r[f] for f in FIGURES] for r in rows] == [
            ["100", "10", "0", "0"],
            ["", "", "", ""],  # nothing known that day: blank, not 0
            ["300", "30", "0", "0"],
        ], name
        assert [r["uncovered_seconds"] for r in rows] == ["0", str(DAY), "0"], name
        assert [r["complete"] for r in rows] == ["true", "false", "true"], name
        assert [r["figures"] for r in rows] == ["exact", "unknown", "exact"], name


def test_zeros_prints_zero_where_asked_and_still_says_unknown(
    gap_root: tuple[Path, int],
) -> None:
    root, first = gap_root
    for name, rows in _views(root, first, "--zeros").items():
        middle = rows[1]
        assert [middle[f] for f in FIGURES] == ["0", "0", "0", "0"], name
        assert (middle["figures"], middle["uncovered_seconds"]) == ("unknown", str(DAY)), name


def test_json_says_null_for_the_unknown_day(gap_root: tuple[Path, int]) -> None:
    root, first = gap_root
    since, until = _date(first), _date(first + 3 * DAY)
    code, out, err = run_cli(
        "report", "--root", str(root), "--tz", "UTC", "--by", "day", "--json",
        "--since", since, "--until", until, "--at", until,
    )  # fmt: skip
    assert code == 0, err
    middle = json.loads(out)["windows"][_date(first + DAY)]
    assert [middle[f] for f in FIGURES] == [None, None, None, None]
    assert (middle["figures"], middle["uncovered_seconds"]) == ("unknown", DAY)
    code, out, err = run_cli(
        "timeline", "--root", str(root), "--tz", "UTC", "--by", "day", "--json",
        "--window", "3d", "--at", until,
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    steps = doc["steps"] if isinstance(doc, dict) else doc
    assert [s["input"] for s in steps] == [100, None, 300]
