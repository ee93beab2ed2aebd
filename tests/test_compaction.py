"""Compaction and the summary of finished files keep every window and coverage figure exact."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli
from tests.generate import generate
from tests.ledgers import ev, second_rows, write_ledger
from vllm_ledger import maintenance
from vllm_ledger.format import connect
from vllm_ledger.read import summary
from vllm_ledger.read.discovery import discover_paths
from vllm_ledger.read.report import build_report
from vllm_ledger.write import compaction

NOW = 1_795_000_000


def _report(root: Path, at: float, *extra: str) -> dict:
    code, out, err = run_cli("report", "--root", str(root), "--json", "--at", str(at), *extra)
    assert code == 0, err
    doc = json.loads(out)
    doc.pop("generated_at")
    return doc


@pytest.fixture(scope="module")
def old_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two writers, three runs over 12 days: 4 days older than the compaction horizon."""
    root = tmp_path_factory.mktemp("old") / "ledger"
    generate(root, writers=2, days=12, runs=3, now=NOW)
    return root


# Reports as of any instant whose windows all start after the compaction horizon (the last
# 25 hours here) are exact after compaction; see the last test for older instants.
AT_CASES = [NOW, NOW - 5 * 3600 + 17, NOW - 86400 + 1234]


def test_compaction_keeps_every_figure(old_ledger: Path, tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    import shutil

    shutil.copytree(old_ledger, root)
    before = {at: _report(root, at, "--by", "run") for at in AT_CASES}
    rows_before = second_rows(root)
    result = maintenance.run(root, clock=lambda: NOW)
    assert [c.status for c in result.compacted].count("compacted") == 2  # the oldest run
    rows_after = second_rows(root)
    # Per-second rows older than the horizon are gone. The generator wrote that old history
    # as one event per writer-hour (from `start`), so that is one row per writer-hour.
    start = NOW - 12 * 86400
    hours_before_horizon = -(-(compaction.horizon_ts(NOW) - start) // 3600)
    assert rows_before - rows_after == 2 * hours_before_horizon
    assert result.summary_entries == 6
    for at in AT_CASES:
        assert _report(root, at, "--by", "run") == before[at], at
    # Compacting again changes nothing.
    again = maintenance.run(root, clock=lambda: NOW)
    assert all(c.status != "compacted" for c in again.compacted)


def test_summary_answers_only_what_it_can(old_ledger: Path, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "ledger"
    shutil.copytree(old_ledger, root)
    plain = {at: _report(root, at) for at in AT_CASES}
    summary.refresh(root, NOW)
    assert (root / summary.SUMMARY_NAME).exists()
    for at in AT_CASES:
        assert _report(root, at) == plain[at], at
    # A summary that no longer matches a file (size/mtime) is ignored for that file.
    f = next(iter(discover_paths([root])))
    os.utime(f, ns=(0, 0))
    for at in AT_CASES:
        assert _report(root, at) == plain[at], at
    # A damaged summary only means files are opened.
    (root / summary.SUMMARY_NAME).write_text("{not json")
    assert _report(root, NOW) == plain[NOW]


KILL_INSIDE = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from vllm_ledger.write import compaction
from vllm_ledger.format import writes
real = writes.transaction
import contextlib
@contextlib.contextmanager
def slow(conn):
    with real(conn) as c:
        yield c
        print("deleted, not committed", flush=True)
        time.sleep(60)
writes.transaction = slow  # what compact() commits with
compaction.compact_file(__import__("pathlib").Path(sys.argv[2]), float(sys.argv[3]))
"""


def test_sigkill_mid_compaction_loses_nothing(old_ledger: Path, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "ledger"
    shutil.copytree(old_ledger, root)
    before = {at: _report(root, at, "--by", "run") for at in AT_CASES}
    rows_before = second_rows(root)
    oldest = sorted(discover_paths([root]))[0]
    digest_before = connect.quick_check(oldest)
    p = subprocess.Popen(
        [sys.executable, "-c", KILL_INSIDE, str(REPO), str(oldest), str(NOW)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None
    assert p.stdout.readline().strip() == "deleted, not committed"
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert digest_before == "ok" and connect.quick_check(oldest) == "ok"
    assert second_rows(root) == rows_before
    for at in AT_CASES:
        assert _report(root, at, "--by", "run") == before[at]
    # The interrupted compaction can simply run again.
    maintenance.run(root, clock=lambda: NOW)
    for at in AT_CASES:
        assert _report(root, at, "--by", "run") == before[at]


def test_compaction_never_touches_a_damaged_file(old_ledger: Path, tmp_path: Path) -> None:
    import hashlib
    import shutil

    root = tmp_path / "ledger"
    shutil.copytree(old_ledger, root)
    victim = sorted(discover_paths([root]))[0]
    with open(victim, "r+b") as f:
        f.seek(4096 * 3)
        f.write(os.urandom(4096))
    digest = hashlib.sha256(victim.read_bytes()).hexdigest()
    result = maintenance.run(root, clock=lambda: NOW)
    by_path = {c.path: c for c in result.compacted}
    assert hashlib.sha256(victim.read_bytes()).hexdigest() == digest
    assert connect.quick_check(victim) != "ok"
    assert by_path[victim].status == "skipped"
    assert by_path[victim].detail.startswith("quick_check:")


def test_older_edges_are_flagged_not_guessed(old_ledger: Path, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "ledger"
    shutil.copytree(old_ledger, root)
    at = NOW - 3 * 86400 + 1234  # its 7d window starts inside the compacted days
    before = _report(root, at)
    assert "imprecise_edge" not in before["windows"]["7d"]["problems"]
    maintenance.run(root, clock=lambda: NOW)
    after = _report(root, at)
    seven = after["windows"]["7d"]
    assert seven["problems"].get("imprecise_edge") == 1
    assert seven["complete"] is False
    # Windows that start after the horizon stay exact.
    for name in ("today", "24h", "3d"):
        assert after["windows"][name] == before["windows"][name]
    assert after["windows"]["total"] == before["windows"]["total"]


def test_compaction_that_deletes_nothing_keeps_the_first_second(tmp_path: Path) -> None:
    at = NOW
    rec = write_ledger(
        tmp_path,
        "r1",
        start_ts=at - 1800,
        end_ts=at - 10,
        events=[ev(at - 1700, prompt=7)],
        clean=False,
    )

    def total() -> tuple[int, int]:
        t = build_report([tmp_path], at_ts=at, clock=lambda: at, tz="UTC").window("total")
        return t.start_ts, t.input_tokens

    assert total() == (at - 1800, 7)
    rec.pump()  # reopen, then compact as the writer does a minute after start
    assert rec.compact() == 0
    rec.pump(final=True)
    assert total() == (at - 1800, 7)
