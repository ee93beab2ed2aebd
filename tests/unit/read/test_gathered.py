"""What one read of the roots gathered: files, runs answered whole, what could not be read."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.ledgers import ev, write_ledger
from vllm_ledger.maintenance import run as maintenance_run
from vllm_ledger.read.connections import Connections
from vllm_ledger.read.gathered import gather
from vllm_ledger.read.snapshot import LedgerSnapshot
from vllm_ledger.read.summary_run import SummaryRun

T0 = 1_796_000_000.0


def _run(root: Path, run: str, ranks: int = 2) -> None:
    for rank in range(ranks):
        write_ledger(
            root,
            run,
            start_ts=T0,
            end_ts=T0 + 120,
            events=[ev(T0 + 10 + i, prompt=7, gen=3) for i in range(5)],
            rank=rank,
            expected=ranks,
        )


def test_every_file_is_opened_once_and_kept_open(tmp_path: Path) -> None:
    _run(tmp_path, "run-a")
    conns = Connections(busy_timeout_s=1.0, max_open=8)
    got = gather([tmp_path], T0 + 800, conns)
    try:
        snaps = got.snapshots()
        assert [(s.run_id, s.writer_rank, s.ok) for s in snaps] == [
            ("run-a", 0, True),
            ("run-a", 1, True),
        ]
        assert got.sources() == snaps
        assert conns.opens == 2
    finally:
        conns.close()


def test_a_summarised_run_is_one_source_and_its_files_are_taken_when_asked(
    tmp_path: Path,
) -> None:
    _run(tmp_path, "run-a")
    maintenance_run(tmp_path, clock=lambda: T0 + 800)
    conns = Connections(busy_timeout_s=1.0, max_open=8)
    got = gather([tmp_path], T0 + 800, conns)
    try:
        (whole,) = got.sources()
        assert isinstance(whole, SummaryRun)
        assert conns.opens == 0
        files = got.snapshots()
        assert all(isinstance(s, LedgerSnapshot) and s.ok for s in files)
        assert len(files) == 2
        assert got.intact(whole)
        assert conns.opens == 0  # the summary holds their facts: nothing opened
    finally:
        conns.close()


def test_a_run_claimed_twice_is_taken_file_by_file(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _run(a, "run-a", ranks=1)
    maintenance_run(a, clock=lambda: T0 + 800)
    shutil.copytree(a / "run-a", b / "run-a")  # the same run under a second root
    conns = Connections(busy_timeout_s=1.0, max_open=8)
    got = gather([a, b], T0 + 800, conns)
    try:
        assert all(isinstance(s, LedgerSnapshot) for s in got.sources())
    finally:
        conns.close()


def test_a_folder_that_cannot_be_listed_is_a_file_that_cannot_be_read(tmp_path: Path) -> None:
    _run(tmp_path, "run-a", ranks=1)
    missing = tmp_path / "nowhere"
    conns = Connections(busy_timeout_s=1.0, max_open=8)
    got = gather([tmp_path, missing], T0 + 800, conns)
    try:
        *readable, unseen = got.snapshots()
        assert [s.ok for s in readable] == [True]
        assert unseen.path == missing
        assert not unseen.ok
        assert unseen.detail.startswith("cannot list: ")
        assert unseen.run_id == ""
    finally:
        conns.close()
