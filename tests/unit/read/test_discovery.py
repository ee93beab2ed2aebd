"""Finding ledger files under roots: each real file once, by run directory and name, with what
could not be looked at named. Empty files stand in for ledgers: nothing is opened here."""

from __future__ import annotations

import errno
from pathlib import Path

from vllm_ledger.format.paths import MISSING_LEDGER
from vllm_ledger.read.discovery import Unseen, discover, discover_paths, discover_runs


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


def test_ledgers_come_by_run_then_name_and_other_files_are_not_ledgers(tmp_path: Path) -> None:
    b1 = _touch(tmp_path / "run-b" / "w1.g0.ledger.sqlite")
    b0 = _touch(tmp_path / "run-b" / "w0.g1.ledger.sqlite")
    a0 = _touch(tmp_path / "run-a" / "w0.g0.ledger.sqlite")
    _touch(tmp_path / "run-a" / "w0.g0.ledger.sqlite-wal")
    _touch(tmp_path / "run-a" / "notes.txt")
    _touch(tmp_path / "run-a" / "wx.g0.ledger.sqlite")
    _touch(tmp_path / "run-c" / "summary.json")
    _touch(tmp_path / "loose.ledger.sqlite")  # not in a run directory
    assert discover_paths([tmp_path]) == [a0, b0, b1]
    runs = discover_runs([tmp_path])
    assert [[f.rel for f in run] for run in runs] == [
        ["run-a/w0.g0.ledger.sqlite"],
        ["run-b/w0.g1.ledger.sqlite", "run-b/w1.g0.ledger.sqlite"],
    ]
    first = runs[0][0]
    assert (first.root, first.run_name, first.file_name, first.path) == (
        tmp_path,
        "run-a",
        "w0.g0.ledger.sqlite",
        a0,
    )
    assert first.wal and not runs[1][0].wal
    assert first.stat.st_size == 0


def test_a_file_reached_twice_is_found_once(tmp_path: Path) -> None:
    root = tmp_path / "root"
    real = _touch(root / "run-a" / "w0.g0.ledger.sqlite")
    (root / "run-link").symlink_to(root / "run-a")
    assert discover_paths([root, root]) == [real]


def test_what_cannot_be_looked_at_is_named(tmp_path: Path) -> None:
    _touch(tmp_path / "run-a" / "w0.g0.ledger.sqlite.seq")  # its ledger is gone
    _touch(tmp_path / "run-a" / "w1.g0.ledger.sqlite.seq")
    kept = _touch(tmp_path / "run-a" / "w1.g0.ledger.sqlite")
    (tmp_path / "run-a" / "w2.g0.ledger.sqlite").symlink_to(tmp_path / "nowhere")
    missing_root = tmp_path / "no-such-root"
    unseen: list[Unseen] = []
    assert [f.path for f in discover([tmp_path, missing_root], unseen)] == [kept]
    assert [(u.path, u.error.errno) for u in unseen] == [
        (tmp_path / "run-a" / "w0.g0.ledger.sqlite", errno.ENOENT),
        (tmp_path / "run-a" / "w2.g0.ledger.sqlite", errno.ENOENT),
        (missing_root, errno.ENOENT),
    ]
    assert unseen[0].error.strerror == MISSING_LEDGER
    assert discover([missing_root]) == []  # without a list, nothing is said
