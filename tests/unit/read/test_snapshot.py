"""One ledger file as the read side sees it (read/snapshot.py): its status, its facts read
once, its sums per window, and commits the sequence marker says the file lacks."""

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
from tests.ledgers import ev, write_ledger
from vllm_ledger import __version__
from vllm_ledger.format import connect, smallfiles
from vllm_ledger.format.identity import InstanceInfo
from vllm_ledger.read.snapshot import SUM_FIELDS, Sums, read_ledger
from vllm_ledger.read.windows import Window

HOUR0 = 1_795_996_800  # a whole UTC hour
T0 = float(HOUR0 + 600)


def _closed_file(root: Path) -> Path:
    """Writer 1 of 2, run-a on :8001, from T0 to T0+60, heartbeats every 5 s."""
    write_ledger(
        root,
        "run-a",
        start_ts=T0,
        end_ts=T0 + 60,
        events=[
            ev(T0 + 5, prompt=10, gen=2, cached=4, engine=0),
            ev(T0 + 7.5, prompt=3, engine=1, finished=[(5, 0.25)]),
        ],
        rank=1,
        expected=2,
        port=8001,
        model="m",
    )
    return root / "run-a" / "w1.g0.ledger.sqlite"


def test_the_facts_of_a_closed_file(tmp_path: Path) -> None:
    snap = snapshot(_closed_file(tmp_path))
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


def test_window_sums_per_engine_over_half_open_windows(tmp_path: Path) -> None:
    path = _closed_file(tmp_path)
    e0 = Sums(input_tokens=10, output_tokens=2, cached_tokens=4)
    e1 = Sums(input_tokens=3, requests=1, decode_tokens=4, decode_us=250_000)
    cases = {
        ALL_TIME: {0: e0, 1: e1},
        Window("to the first event", 0, int(T0) + 5): {},
        Window("its second", int(T0) + 5, int(T0) + 6): {0: e0},
        Window("up to the second event", int(T0) + 6, int(T0) + 7): {},
        Window("to the end of the hour", int(T0) + 7, HOUR0 + 3600): {1: e1},
        Window("after both", int(T0) + 8, HOUR0 + 7200): {},
    }
    snap = read_ledger(path, list(cases))
    for w, want in cases.items():
        assert snap.window_sums(w) == want, w.name


def _five_events(root: Path) -> Path:
    events = [
        ev(HOUR0 + 100, prompt=1),
        ev(HOUR0 + 2000, prompt=10),
        ev(HOUR0 + 3599, prompt=100),
        ev(HOUR0 + 3600, prompt=1000),
        ev(HOUR0 + 5000, prompt=10000),
    ]
    write_ledger(root, "r", start_ts=HOUR0, end_ts=HOUR0 + 7200, events=events)
    return root / "r" / "w0.g0.ledger.sqlite"


def _input_per_window(path: Path, cases: dict[tuple[int, int], int]) -> dict[tuple[int, int], int]:
    windows = [Window(f"{a}-{b}", a, b) for a, b in cases]
    snap = read_ledger(path, windows)
    return {
        (w.start_ts, w.cutoff_ts): sum(s.input_tokens for s in snap.window_sums(w).values())
        for w in windows
    }


def test_long_edges_read_through_the_hour_match_the_seconds(tmp_path: Path) -> None:
    # More than half an hour of edge seconds is read as the hour's row less the rest of it.
    cases = {
        (HOUR0 + 101, HOUR0 + 7200): 11110,  # 3499 edge seconds to the hour, then an hour
        (HOUR0 + 101, HOUR0 + 3600): 110,  # the hour less its first 101 seconds
        (HOUR0 + 3600, HOUR0 + 5401): 11000,  # the hour less its last 1799 seconds
        (HOUR0 + 3600, HOUR0 + 5400): 11000,  # 1800 seconds: read as seconds
        (HOUR0 + 2000, HOUR0 + 3600): 110,
        (HOUR0 + 3599, HOUR0 + 5001): 11100,  # 1402 seconds across the hour: as seconds
        (HOUR0 + 1, HOUR0 + 5000): 1111,  # from before the first record: whole hours
    }
    assert _input_per_window(_five_events(tmp_path), cases) == cases


def test_long_edges_off_the_hour_match_the_seconds(tmp_path: Path) -> None:
    # Windows under two hours with no whole hour inside: e.g. "today" at 00:45 in a zone with
    # a half-hour offset, or a 1 h timeline step there (18:30 to 19:30 UTC).
    cases = {
        (HOUR0 + 101, HOUR0 + 3599): 10,  # inside one hour, neither edge on it (read 11)
        (HOUR0 + 2000, HOUR0 + 4600): 1110,  # across the hour, 2600 s (read 111)
    }
    assert _input_per_window(_five_events(tmp_path), cases) == cases


def test_any_window_reads_what_its_seconds_hold(tmp_path: Path) -> None:
    """Seeded sweep: the tiered read (seconds, hours, days, edge complements) of random windows
    equals a plain sum of the per-second rows."""
    import random

    path = _five_events(tmp_path)
    with connect.open_read_only(path) as conn:
        seconds = conn.execute("SELECT ts, prompt_tokens FROM buckets").fetchall()
    rnd = random.Random(7)
    lo, hi = HOUR0 - 7200, HOUR0 + 9000
    cases = {}
    for _ in range(300):
        a = rnd.randrange(lo, hi)
        b = a + rnd.choice([1, 59, 1799, 1801, 3599, 3600, 3601, 5000, 7300, 90000])
        cases[(a, b)] = sum(n for ts, n in seconds if a <= ts < b)
    assert _input_per_window(path, cases) == cases


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
    path = _closed_file(tmp_path)
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
from vllm_ledger.read.snapshot import read_ledger
s = read_ledger(Path(sys.argv[1]))
print(json.dumps([s.status, s.detail, s.run_id, s.writer_rank]))
"""


def test_a_file_the_reader_may_not_open_is_denied() -> None:
    base = Path(tempfile.mkdtemp(prefix="ledger-denied-", dir="/tmp"))
    try:
        base.chmod(0o755)
        path = _closed_file(base)
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
    path = _closed_file(tmp_path)
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


def test_sums_add_every_field() -> None:
    # ``Sums.add`` names its fields one by one (it runs thousands of times per report).
    n = len(SUM_FIELDS)
    total = Sums(*range(1, n + 1))
    total.add(Sums(*range(10, 10 * n + 1, 10)))
    assert total.as_list() == [11 * i for i in range(1, n + 1)]
