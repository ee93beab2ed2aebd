"""Compaction of one ledger: per-second rows past the hour-aligned horizon go, and only from a
sound file."""

from __future__ import annotations

from pathlib import Path

from tests.ledgers import ev, second_rows, write_ledger
from vllm_ledger.format import connect
from vllm_ledger.read.discovery import discover_paths
from vllm_ledger.units import SECONDS_PER_DAY as DAY
from vllm_ledger.write.compaction import HORIZON_S, compact_file, horizon_ts

NOW = 1_800_000_000  # 2027-01-15 08:00:00 UTC, on the hour


def test_the_horizon_is_eight_days_and_an_hour_back_on_the_hour() -> None:
    assert HORIZON_S == 8 * DAY + 3600
    assert horizon_ts(NOW) == NOW - HORIZON_S
    assert horizon_ts(NOW + 3599.9) == NOW - HORIZON_S
    assert horizon_ts(NOW + 3600) == NOW - HORIZON_S + 3600


def _ledger(root: Path, start: float) -> Path:
    write_ledger(root, "run-a", start_ts=start, end_ts=start + 20, events=[ev(start + 1, prompt=5)])
    (path,) = discover_paths([root])
    return path


def test_an_old_ledger_loses_its_second_rows_and_only_once(tmp_path: Path) -> None:
    path = _ledger(tmp_path, NOW - 10 * DAY)
    rows = second_rows(tmp_path)
    assert rows > 0
    first = compact_file(path, NOW)
    assert (first.path, first.status, first.rows_deleted, first.detail) == (
        path,
        "compacted",
        rows,
        "",
    )
    assert second_rows(tmp_path) == 0
    with connect.open_read_only(path) as conn:
        assert conn.execute("SELECT sum(prompt_tokens) FROM hourly").fetchone()[0] == 5
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    assert meta["compacted_before_ts"] == str(horizon_ts(NOW))
    again = compact_file(path, NOW)
    assert (again.status, again.rows_deleted) == ("unchanged", 0)


def test_rows_inside_the_horizon_stay(tmp_path: Path) -> None:
    path = _ledger(tmp_path, NOW - DAY)
    rows = second_rows(tmp_path)
    assert compact_file(path, NOW).status == "unchanged"
    assert second_rows(tmp_path) == rows


def test_a_file_that_is_not_sound_is_skipped_untouched(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    result = compact_file(path, NOW)
    assert result.status == "skipped" and result.rows_deleted == 0
    assert result.detail.startswith("quick_check: ")
    assert path.read_bytes() == b"not a database at all" * 100
