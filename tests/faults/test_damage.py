"""Damage done to a ledger from outside, for real: a page overwritten with random bytes, a
zeroed header, a truncated file, a deleted -wal (all under a live writer), and a flipped byte in
the -wal after a SIGKILL. The damaged file stays byte-identical, a new generation is in use, the
report flags the damaged span and `vllm-ledger check` exits 1 naming the file."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.faults.helpers import (
    WriterProc,
    identity,
    ledger_files,
    quick_check,
    sha256,
    snapshot,
    total_sums,
    wait_for,
    wal_commit_ends,
    wal_page_size,
)
from vllm_ledger.read.report import build_report
from vllm_ledger.write.recorder import Recorder

OLD_SECONDS = 2000


def _checkpoint_all(path: Path) -> None:
    """Move every page into the db file (WAL emptied), as a long-running writer's would be."""
    conn = sqlite3.connect(str(path), timeout=5)
    try:
        for _ in range(100):
            busy, _log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if not busy:
                return
            time.sleep(0.02)
        raise AssertionError("checkpoint stayed busy")
    finally:
        conn.close()


def _overwrite_old_bucket_page(path: Path) -> None:
    """Random bytes over the leftmost leaf of `buckets`: old seconds, never rewritten."""
    _checkpoint_all(path)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = conn.execute(
        "SELECT pageno FROM dbstat WHERE name = 'buckets' AND pagetype = 'leaf' ORDER BY path"
    ).fetchall()
    conn.close()
    assert len(pages) > 3
    fd = os.open(path, os.O_WRONLY)
    os.pwrite(fd, random.Random(1).randbytes(page_size), (pages[0][0] - 1) * page_size)
    os.close(fd)


def _zero_header(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY)
    os.pwrite(fd, b"\0" * 100, 0)
    os.close(fd)


def _truncate(path: Path) -> None:
    os.truncate(path, 0)


def _delete_wal(path: Path) -> None:
    os.unlink(f"{path}-wal")


DAMAGE: dict[str, Callable[[Path], None]] = {
    "page_random": _overwrite_old_bucket_page,
    "zeroed_header": _zero_header,
    "truncated": _truncate,
    "deleted_wal": _delete_wal,
}


class _Feeder:
    """Submits one event every few ms, as vLLM's output loop would, until stopped; with
    ``idle_s`` it pauses after every 0.1 s of traffic (a server between requests)."""

    def __init__(self, rec: Recorder, idle_s: float = 0.0) -> None:
        self.rec = rec
        self.idle_s = idle_s
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            burst_end = time.monotonic() + 0.1
            while time.monotonic() < burst_end:
                self.rec.submit((time.time(), 0, 3, 1, 0, ()))
                time.sleep(0.003)
            self.stop.wait(self.idle_s)

    def join(self) -> None:
        self.stop.set()
        self.thread.join()


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_damage_under_a_live_writer(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "ledger"
    rec = Recorder(
        root,
        identity("run-1"),
        flush_interval_s=0.05,
        heartbeat_interval_s=0.1,
        integrity_check_interval_s=0.3,
    )
    start = int(time.time())
    for i in range(OLD_SECONDS):  # a history of old seconds, so `buckets` has many leaves
        rec.submit((start - 3000 + i + 0.5, 0, 1, 0, 0, ()))
    rec.start()
    feeder = _Feeder(rec, idle_s=0.3)  # the damage watch runs only when traffic pauses
    try:
        wait_for(lambda: rec.committed_events_total >= OLD_SECONDS + 50, what="commits")
        g0 = rec.path
        assert g0 is not None and g0.name == "w0.g0.ledger.sqlite"
        DAMAGE[kind](g0)
        damaged_sha = sha256(g0)
        wait_for(lambda: rec.files_rotated_total >= 1, what="rotation")
        wait_for(lambda: rec.path != g0 and rec._span.seq >= 3, what="commits to the new file")
    finally:
        feeder.join()
        clean = rec.close()
    assert clean is True
    assert rec.path is not None and rec.path.name == "w0.g1.ledger.sqlite"
    wal = Path(f"{g0}-wal")
    wal_sha = sha256(wal) if wal.exists() else None
    assert "damaged" in (rec.last_error or "") or rec.files_rotated_total == 1

    at = time.time() + 2  # past the second of the last event
    r = build_report([root], at_ts=at, clock=lambda: at)
    code, out, _err = run_cli("check", "--root", str(root))

    assert sha256(g0) == damaged_sha  # left byte for byte as it was found
    if wal_sha is not None:
        assert wal.exists() and sha256(wal) == wal_sha  # readers never touch the evidence
    g1 = snapshot(rec.path)
    assert g1.status == "ok" and g1.clean_close_ts is not None and g1.last_seq >= 3
    assert quick_check(rec.path) == "ok"
    total = r.window("total")
    assert total.complete is False
    # Either the damaged span is flagged, or every committed event is still counted (the
    # damage missed what the report reads): never a figure that is silently smaller.
    flagged = {
        k: v for k, v in total.problems.items() if k in ("ledger_unreadable", "sequence_gap")
    }
    committed_input = OLD_SECONDS + 3 * (rec.committed_events_total - OLD_SECONDS)
    assert flagged or total.input_tokens == committed_input, (total, committed_input)
    if not flagged:
        print(f"\n{kind}: the report read every committed event despite the damage")
    assert code == 1
    bad_lines = [ln for ln in out.splitlines() if str(g0) in ln]
    assert bad_lines and not bad_lines[0].startswith("ok"), out
    assert any(ln.startswith("ok") and str(rec.path) in ln for ln in out.splitlines()), out


def test_flipped_byte_in_the_wal_after_sigkill(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    w = WriterProc.start("--root", str(root), "--run-id", "run-1")
    wait_for(lambda: len(w.acks()) >= 40, what="40 commits")
    w.proc.send_signal(signal.SIGKILL)
    w.finish()
    acks = w.acks()
    (g0,) = ledger_files(root)
    wal = Path(f"{g0}-wal")
    ends = wal_commit_ends(wal)
    frame_start = ends[len(ends) // 2]
    with open(wal, "r+b") as f:  # one byte inside the next frame's page data
        f.seek(frame_start + 24 + wal_page_size(wal) // 2)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0x40]))
    shas = sha256(g0), sha256(wal)

    # SQLite cannot see it: the frames after the flip just vanish.
    assert quick_check(g0) == "ok"
    snap = snapshot(g0)
    assert snap.status == "ok" and 0 < snap.last_seq < max(acks)
    # The marker names the last commit that returned, or the one announced when the kill came
    # (a test thread slowed past the 40th acknowledgement: killed between commit and marker).
    marker_seq = snap.last_seq + snap.missing_commits
    assert max(acks) <= marker_seq <= max(w.pres())
    assert total_sums(snap).input_tokens == 3 * acks[snap.last_seq]

    # The instance restarts under the same run id: a new generation, the old file untouched.
    w2 = WriterProc.start(
        "--root", str(root), "--run-id", "run-1", "--events", "20", "--close", "--sleep", "0.05"
    )
    rc, err = w2.finish()
    assert rc == 0, err
    assert sorted(p.name for p in ledger_files(root)) == [
        "w0.g0.ledger.sqlite",
        "w0.g1.ledger.sqlite",
    ]
    at = time.time() + 2  # past the second of the last event
    total = build_report([root], at_ts=at, clock=lambda: at).window("total")
    assert total.problems["sequence_gap"] == marker_seq - snap.last_seq
    assert total.input_tokens == 3 * acks[snap.last_seq] + 3 * 20
    assert total.uncovered_seconds > 0 and total.complete is False
    code, out, _ = run_cli("check", "--root", str(root))
    assert code == 1
    assert any(ln.startswith("SEQUENCE_GAP") and str(g0) in ln for ln in out.splitlines()), out
    assert (sha256(g0), sha256(wal)) == shas


def test_damage_is_noticed_under_steady_traffic(tmp_path: Path) -> None:
    rec = Recorder(
        tmp_path / "ledger",
        identity("run-1"),
        flush_interval_s=0.05,
        heartbeat_interval_s=0.1,
        integrity_check_interval_s=0.3,
    )
    rec.start()
    feeder = _Feeder(rec)  # never idle
    try:
        wait_for(lambda: rec._span.seq >= 5, what="commits")
        assert rec.path is not None
        _zero_header(rec.path)
        wait_for(lambda: rec.files_rotated_total >= 1, what="rotation")
    finally:
        feeder.join()
        rec.close()
