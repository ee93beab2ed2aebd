"""Opening one ledger file: its facts, and a status instead of figures where it cannot be
read (not a ledger yet, damaged, denied, commits the file lacks)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.faults.helpers import ALL_TIME, snapshot
from tests.ledgers import closed_file
from vllm_ledger import __version__
from vllm_ledger.format import connect, smallfiles
from vllm_ledger.format.identity import InstanceInfo
from vllm_ledger.read.open_ledger import read_ledger

HOUR0 = 1_795_996_800  # a whole UTC hour
T0 = float(HOUR0 + 600)


def test_the_facts_of_a_closed_file(tmp_path: Path) -> None:
    snap = snapshot(closed_file(tmp_path, T0))
    assert (snap.status, snap.detail, snap.ok) == ("ok", "", True)
    assert (snap.run_id, snap.writer_rank, snap.generation, snap.expected_writers) == (
        "run-a",
        1,
        0,
        2,
    )
    assert snap.instance == InstanceInfo(("m",), 8001, "testhost", "0.32.0", __version__)
    assert (snap.created_ts, snap.clean_close_ts) == (T0, T0 + 60)
    # One commit at start, one per 5 s heartbeat (12), the clean close: 14.
    assert snap.last_seq == 14
    assert snap.spans == [(T0, T0 + 60)] and snap.last_proof_ts == T0 + 60
    assert (snap.first_bucket_ts, snap.last_end_ts) == (T0 + 5, T0 + 8)
    assert (snap.problem_seconds, snap.compacted_before_ts, snap.has_daily) == ([], None, True)
    assert (snap.missing_commits, snap.marker_ts) == (0, None)


def _sqlite_without_ledger_tables(path: Path) -> None:
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE other (x)")
    conn.commit()
    conn.close()


def test_files_that_are_not_a_ledger_yet(tmp_path: Path) -> None:
    run = tmp_path / "run-b"
    run.mkdir()
    empty = run / "w0.g0.ledger.sqlite"
    empty.touch()
    mtime = empty.stat().st_mtime
    # A file a writer just claimed and never committed to: "starting" for ten seconds after
    # its last change, then "never_committed", created at that change.
    late = read_ledger(empty, now_ts=mtime + 10)
    assert (late.status, late.detail, late.created_ts) == ("never_committed", "truncated", mtime)
    assert snapshot(empty).status == "never_committed"
    assert read_ledger(empty, now_ts=mtime + 9.9).status == "starting"
    other = tmp_path / "run-c" / "w2.g3.ledger.sqlite"
    _sqlite_without_ledger_tables(other)
    snap = snapshot(other)
    assert (snap.status, snap.detail) == ("never_committed", "no ledger tables")
    # The name alone says whose file it is.
    assert (snap.run_id, snap.writer_rank, snap.generation) == ("run-c", 2, 3)
    assert snap.window_sums(ALL_TIME) == {}


def test_a_file_with_commits_made_and_none_in_it_is_unreadable(tmp_path: Path) -> None:
    other = tmp_path / "run-c" / "w0.g0.ledger.sqlite"
    _sqlite_without_ledger_tables(other)
    smallfiles.write_sequence_marker(other, 3, T0)
    snap = snapshot(other)
    assert (snap.status, snap.detail) == (
        "unreadable",
        "no ledger tables; 3 commit(s) made, none in the file",
    )


def _truncate_to_50(path: Path) -> None:
    os.truncate(path, 50)


def _zero_the_header(path: Path) -> None:
    with open(path, "r+b") as f:
        f.write(b"\0" * connect.HEADER_BYTES)


def _a_directory_in_its_place(path: Path) -> None:
    for p in path.parent.iterdir():
        p.unlink()
    path.mkdir()


@pytest.mark.parametrize(
    ("damage", "detail"),
    [
        (_truncate_to_50, "truncated"),  # its marker says commits were made
        (_zero_the_header, "bad header"),
        (_a_directory_in_its_place, "not a regular file"),
    ],
)
def test_a_damaged_file_is_unreadable_and_adds_nothing(
    tmp_path: Path, damage: Callable[[Path], None], detail: str
) -> None:
    path = closed_file(tmp_path, T0)
    damage(path)
    snap = snapshot(path, now_ts=T0 + 61)
    assert (snap.status, snap.detail) == ("unreadable", detail)
    assert (snap.run_id, snap.writer_rank, snap.generation) == ("run-a", 1, 0)
    assert snap.window_sums(ALL_TIME) == {} and snap.spans == []
    # Readers left nothing beside it: no -wal, no -shm.
    assert not any(p.name.endswith(("-wal", "-shm")) for p in path.parent.iterdir())


NOBODY_READS = r"""
import json, sys
from pathlib import Path
from vllm_ledger.read.open_ledger import read_ledger
s = read_ledger(Path(sys.argv[1]))
print(json.dumps([s.status, s.detail, s.run_id, s.writer_rank]))
"""


def test_a_file_the_reader_may_not_open_is_denied() -> None:
    base = Path(tempfile.mkdtemp(prefix="ledger-denied-", dir="/tmp"))
    try:
        base.chmod(0o755)
        path = closed_file(base, T0)
        path.chmod(0)  # no one may read it but root, and the reader is not root
        cmd = [sys.executable, "-c", NOBODY_READS, str(path)]
        if os.geteuid() == 0:
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
        out = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/",
            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        )
        assert out.returncode == 0, out.stderr[-2000:]
        assert json.loads(out.stdout) == ["denied", "unable to open database file", "run-a", 1]
    finally:
        shutil.rmtree(base)


def test_the_sequence_marker_names_commits_the_file_lacks(tmp_path: Path) -> None:
    path = closed_file(tmp_path, T0)
    smallfiles.write_sequence_marker(path, 14 + 3, T0 + 70)  # three commits the file never got
    snap = snapshot(path)
    assert (snap.status, snap.last_seq, snap.missing_commits, snap.marker_ts) == (
        "ok",
        14,
        3,
        T0 + 70,
    )
    assert snap.window_sums(ALL_TIME)[0].input_tokens == 10  # what it holds still counts
    smallfiles.write_sequence_marker(path, 14, T0 + 60)  # the marker of the last commit: no gap
    assert (snapshot(path).missing_commits, snapshot(path).marker_ts) == (0, None)
    # A marker is a hint written without fsync: a torn one is no evidence of anything.
    Path(f"{path}.seq").write_text("not a marker\n")
    assert snapshot(path).missing_commits == 0
