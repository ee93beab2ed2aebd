"""Day rows: a long window reads whole UTC days between its edges, with the same figures."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.generate import generate
from vllm_ledger.format import connect
from vllm_ledger.read.discovery import discover_paths
from vllm_ledger.read.snapshot import window_parts

NOW = 1_795_000_000
# Instants whose windows start mid-hour, mid-day, on a day edge and before any record.
AT_CASES = [NOW, NOW - 5 * 3600 + 17, NOW - 86400 + 1234, NOW - NOW % 86400, NOW - 20 * 86400]


@pytest.fixture(scope="module")
def long_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two writers, three runs over 12 days, written by today's recorder (with day rows)."""
    root = tmp_path_factory.mktemp("long") / "ledger"
    generate(root, writers=2, days=12, runs=3, now=NOW)
    return root


def _report(root: Path, at: float) -> dict:
    code, out, err = run_cli(
        "report", "--root", str(root), "--json", "--at", str(at), "--by", "engine", "--tz", "UTC"
    )
    assert code == 0, err
    doc = json.loads(out)
    doc.pop("generated_at")
    doc.pop("roots")
    return doc


def _without_days(root: Path) -> None:
    """Make every file as a writer before migration 0003 left it: no day rows."""
    for p in discover_paths([root]):
        with sqlite3.connect(p) as conn:
            conn.execute("DROP TABLE daily")
            conn.execute("DELETE FROM migrations WHERE name = '0003_daily'")


def test_day_rows_sum_exactly_the_hours(long_ledger: Path) -> None:
    for p in discover_paths([long_ledger]):
        with connect.open_read_only(p) as conn:
            hours = conn.execute(
                "SELECT ts - ts % 86400, engine, sum(prompt_tokens), sum(generation_tokens),"
                " sum(requests) FROM hourly GROUP BY 1, 2 ORDER BY 1, 2"
            ).fetchall()
            days = conn.execute(
                "SELECT ts, engine, prompt_tokens, generation_tokens, requests FROM daily"
                " ORDER BY 1, 2"
            ).fetchall()
        assert days == hours and len(days) >= 4


def test_reports_with_and_without_day_rows_are_identical(long_ledger: Path, tmp_path: Path) -> None:
    hourly_only = tmp_path / "hourly-only"
    shutil.copytree(long_ledger, hourly_only)
    _without_days(hourly_only)
    for at in AT_CASES:
        assert _report(long_ledger, at) == _report(hourly_only, at), at
    assert _report(long_ledger, NOW)["windows"]["total"]["input"] > 0


def test_the_migration_back_fills_day_rows_for_an_old_file(
    long_ledger: Path, tmp_path: Path
) -> None:
    root = tmp_path / "ledger"
    shutil.copytree(long_ledger, root)
    want = {at: _report(root, at) for at in AT_CASES}
    _without_days(root)
    for p in discover_paths([root]):  # a new writer opening the file applies the migration
        connect.open_for_write(p, NOW).close()
    for p in discover_paths([root]):
        with connect.open_read_only(p) as conn:
            names = [r[0] for r in conn.execute("SELECT name FROM migrations ORDER BY name")]
            assert names[:3] == ["0001_initial", "0002_problem_seconds", "0003_daily"]
    for at in AT_CASES:
        assert _report(root, at) == want[at], at


def test_window_parts_tile_the_window_exactly() -> None:
    day = 86400
    for start, cutoff in [(17, 5 * day + 3601), (day, 3 * day), (100, 3599), (3600, 7200), (5, 5)]:
        for daily in (False, True):
            seconds, hours, days = window_parts(start, cutoff, daily=daily)
            pieces = sorted([*seconds, *hours, *([days] if days else [])])
            covered = [x for a, b in pieces for x in (a, b)]
            if start < cutoff:
                assert covered[0] == start and covered[-1] == cutoff
                assert all(covered[i] == covered[i + 1] for i in range(1, len(covered) - 1, 2))
            assert all(a % 3600 == 0 and b % 3600 == 0 for a, b in hours)
            if days:
                assert days[0] % day == 0 and days[1] % day == 0 and daily
    assert window_parts(17, 5 * day + 3601, daily=True)[2] == (day, 5 * day)
