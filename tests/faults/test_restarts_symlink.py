"""Two API processes (two writers expected), three restarts, and one ledger root reachable twice
(a symlink) plus a stray copy of one file: exact sums, each file counted once, the gaps between
runs reported as uncovered seconds. Through the CLI, as a user runs it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tests.conftest import run_cli
from tests.ledgers import ev, write_ledger

T0 = 1_800_000_000.0
RUN_S = 100
GAP_S = 50


def test_two_writers_three_restarts_root_reached_twice(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    expected = {"input": 0, "output": 0}
    for k in range(4):  # the first start and three restarts
        start = T0 + k * (RUN_S + GAP_S)
        for rank in (0, 1):
            events = [ev(start + 1 + i * 10 + rank, prompt=11 + rank, gen=k + 1) for i in range(9)]
            expected["input"] += sum(e[2] for e in events)
            expected["output"] += sum(e[3] for e in events)
            write_ledger(
                root,
                f"run-{k}",
                start_ts=start,
                end_ts=start + RUN_S,
                events=events,
                rank=rank,
                expected=2,
            )
    link = tmp_path / "same-root"
    os.symlink(root, link)
    stray = tmp_path / "backup"
    (stray / "run-0").mkdir(parents=True)
    shutil.copyfile(root / "run-0" / "w1.g0.ledger.sqlite", stray / "run-0" / "w1.g0.ledger.sqlite")
    end = T0 + 3 * (RUN_S + GAP_S) + RUN_S
    code, out, err = run_cli(
        "report",
        "--root",
        str(root),
        "--root",
        str(link),
        "--root",
        str(stray),
        "--at",
        str(end),
        "--tz",
        "UTC",
        "--json",
    )
    assert code == 0, err
    doc = json.loads(out)
    total = doc["windows"]["total"]
    assert (total["input"], total["output"]) == (expected["input"], expected["output"])
    assert doc["runs"] == 4
    states = sorted(
        (w["run_id"], w["writer_rank"], w["expected_writers"], w["state"]) for w in doc["writers"]
    )
    assert states == [(f"run-{k}", r, 2, "closed") for k in range(4) for r in (0, 1)]
    assert total["uncovered_seconds"] == 3 * GAP_S
    assert total["complete"] is False
    assert total["problems"] == {}

    # A ledger deleted with its sequence marker left: a loss, named (the marker counts commits
    # the reader cannot see), never a writer that merely did not come up.
    (root / "run-3" / "w1.g0.ledger.sqlite").unlink()
    code, out, _ = run_cli("report", "--root", str(root), "--at", str(end), "--tz", "UTC", "--json")
    doc = json.loads(out)
    assert doc["windows"]["total"]["problems"] == {"ledger_unreadable": 1, "writer_missing": 1}
    assert [(f["status"], f["detail"]) for f in doc["files"]] == [
        ("unreadable", "cannot read: ledger file missing; its sequence marker remains")
    ]

    # One writer of the last run never came up (no file, no marker): its run is uncovered and
    # the writer named.
    (root / "run-3" / "w1.g0.ledger.sqlite.seq").unlink()
    code, out, _ = run_cli("report", "--root", str(root), "--at", str(end), "--tz", "UTC", "--json")
    doc = json.loads(out)
    missing = [w for w in doc["writers"] if w["state"] == "missing"]
    assert [(w["run_id"], w["writer_rank"]) for w in missing] == [("run-3", 1)]
    assert doc["windows"]["total"]["uncovered_seconds"] == 3 * GAP_S + RUN_S
    assert doc["windows"]["total"]["problems"] == {"writer_missing": 1}
