"""A day no run recorded in says so the same way in ``report --by day`` (its row) and in
``report --since D --until D+1`` (its one window, after the "nothing matched" line and exit 3):
``INCOMPLETE (nothing recorded; 1 d uncovered)``, ``nothing_recorded`` in the JSON. A day an
unreadable file may hold is never "nothing recorded"."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.ledgers import ev, write_ledger
from vllm_ledger import cli
from vllm_ledger.commands.report import EXIT_NOTHING_MATCHED

UTC = ZoneInfo("UTC")


def day(d: int, hour: int = 0) -> float:
    return datetime(2026, 11, d, hour, tzinfo=UTC).timestamp()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run on 2026-11-10 and one on 2026-11-12: nothing on the 11th."""
    path = tmp_path_factory.mktemp("gap")
    for run, d in (("run-a", 10), ("run-b", 12)):
        write_ledger(
            path,
            run,
            start_ts=day(d, 1),
            end_ts=day(d, 2),
            events=[ev(day(d, 1) + 60.25, prompt=100 * d, gen=1)],
            heartbeat_every_s=20.0,
        )
    return path


def _run(root: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str]:
    argv = ["report", "--root", str(root), "--tz", "UTC", "--at", f"{day(13):.0f}", *flags]
    code = cli.main(argv)
    return code, capsys.readouterr().out


def _row(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(name + " "))


def test_the_day_with_no_run_reads_the_same_in_both_forms(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _run(root, capsys, "--by", "day", "--since", "2026-11-10", "--until", "2026-11-13")
    assert code == 0
    assert _row(out, "2026-11-11").endswith("INCOMPLETE (nothing recorded; 1 d uncovered)")
    assert "nothing recorded" not in _row(out, "2026-11-10")

    code, out = _run(root, capsys, "--since", "2026-11-11", "--until", "2026-11-12")
    assert code == EXIT_NOTHING_MATCHED
    assert out.splitlines()[0].startswith("nothing matched: no run under ")
    rows = [line for line in out.splitlines() if "INCOMPLETE" in line]
    assert rows and all(r.endswith("INCOMPLETE (nothing recorded; 1 d uncovered)") for r in rows)

    def windows(*flags: str) -> dict[str, Any]:
        _code, text = _run(root, capsys, "--json", *flags)
        return dict(json.loads(text)["windows"])

    by_day = windows("--by", "day", "--since", "2026-11-10", "--until", "2026-11-13")
    one = windows("--since", "2026-11-11", "--until", "2026-11-12")
    assert by_day["2026-11-11"]["nothing_recorded"] is True
    assert by_day["2026-11-10"]["nothing_recorded"] is False
    assert by_day["total"]["nothing_recorded"] is False
    (only,) = one.values()
    for key in ("start", "cutoff", "input", "uncovered_seconds", "nothing_recorded", "problems"):
        assert only[key] == by_day["2026-11-11"][key], key


def test_a_day_an_unreadable_file_may_hold_is_not_nothing_recorded(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "root"
    shutil.copytree(root, copy)
    bad = copy / "20261111T000000Z-testhost-7"
    bad.mkdir()
    (bad / "w0.g0.ledger.sqlite").write_bytes(b"not a ledger" * 1000)
    flags = ("--by", "day", "--since", "2026-11-10", "--until", "2026-11-13")
    _code, out = _run(copy, capsys, *flags)
    assert "nothing recorded" not in out
    _code, text = _run(copy, capsys, "--json", *flags)
    w = json.loads(text)["windows"]["2026-11-11"]
    assert (w["nothing_recorded"], w["problems"]) == (False, {"ledger_unreadable": 1})
