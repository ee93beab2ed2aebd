"""Readers under contention: another process holding an exclusive lock, a reader holding a read
transaction while the writer writes, the report run as a different user. The report returns
with a status (never a traceback, never a zero shown as complete) and the writer keeps writing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.conftest import REPO, run_cli
from tests.faults.helpers import identity, ledger_files, wait_for
from tests.ledgers import ev, write_ledger
from vllm_ledger.format import connect
from vllm_ledger.read.report import build_report
from vllm_ledger.write.recorder import Recorder

T0 = 1_800_000_000.0
LOCKER = """
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("PRAGMA locking_mode=EXCLUSIVE")
c.execute("BEGIN EXCLUSIVE")
c.execute("SELECT count(*) FROM meta").fetchone()
print("LOCKED", flush=True)
time.sleep(120)
"""


def test_exclusive_lock_reads_as_busy(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    write_ledger(root, "run-1", start_ts=T0, end_ts=T0 + 60, events=[ev(T0 + 5, prompt=9)])
    (path,) = ledger_files(root)
    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert locker.stdout is not None and locker.stdout.readline().strip() == "LOCKED"
        t = time.monotonic()
        r = build_report([root], at_ts=T0 + 60, clock=lambda: T0 + 60, busy_timeout_s=0.5)
        elapsed = time.monotonic() - t
        print(f"\nreport against an exclusively locked ledger returned in {elapsed:.2f} s")
        assert [(f.status, f.path) for f in r.files] == [("busy", str(path))]
        total = r.window("total")
        assert total.problems.get("ledger_busy") == 1
        assert total.complete is False
        code, out, err = run_cli("check", "--root", str(root))
        assert code == 1 and "Traceback" not in err
        assert out.splitlines()[0].startswith("BUSY") and str(path) in out
    finally:
        locker.kill()
        locker.wait()
    after = build_report([root], at_ts=T0 + 60, clock=lambda: T0 + 60).window("total")
    assert (after.input_tokens, after.complete) == (9, True)


def test_long_read_transaction_does_not_stop_the_writer(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    rec = Recorder(root, identity("run-1"), flush_interval_s=0.05, heartbeat_interval_s=0.1)
    rec.start()
    try:
        rec.submit((time.time(), 0, 5, 1, 0, ()))
        wait_for(lambda: rec.committed_events_total == 1, what="first event")
        assert rec.path is not None
        with connect.open_read_only(rec.path) as conn:
            conn.execute("BEGIN")
            held = conn.execute("SELECT sum(prompt_tokens) FROM buckets").fetchone()[0]
            seq_at_start = rec._span.seq
            for i in range(200):
                rec.submit((time.time(), 0, 5, 1, 0, ()))
                if i % 20 == 0:
                    time.sleep(0.1)
            wait_for(lambda: rec.committed_events_total == 201, what="commits during the read")
            # The writer kept committing; the reader's snapshot did not move.
            assert rec._span.seq > seq_at_start
            assert conn.execute("SELECT sum(prompt_tokens) FROM buckets").fetchone()[0] == held
            conn.execute("COMMIT")
        assert rec.commit_failures_total == 0
    finally:
        assert rec.close()
    at = time.time() + 2
    assert build_report([root], at_ts=at, clock=lambda: at).window("total").input_tokens == 1005


def _report_as_nobody(root: Path) -> tuple[int, str, str]:
    p = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            sys.executable,
            "-m",
            "vllm_ledger",
            "report",
            "--root",
            str(root),
            "--json",
            "--at",
            str(T0 + 60),
            "--tz",
            "UTC",
        ],
        capture_output=True,
        text=True,
        cwd="/",
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    return p.returncode, p.stdout, p.stderr


def test_report_as_another_user(tmp_path: Path) -> None:
    """Ledgers owned by root in a directory the reporting user cannot write."""
    base = Path(tempfile.mkdtemp(prefix="ledger-other-user-", dir="/tmp"))
    try:
        base.chmod(0o755)
        closed = base / "closed"
        write_ledger(closed, "run-1", start_ts=T0, end_ts=T0 + 60, events=[ev(T0 + 5, prompt=9)])
        live = base / "live"
        rec = write_ledger(
            live, "run-1", start_ts=T0, end_ts=T0 + 60, events=[ev(T0 + 5, prompt=9)], clean=False
        )
        # write_ledger(clean=False) closes the connection: reopen one, as a live writer holds it.
        (live_path,) = ledger_files(live)
        holder = connect.open_for_write(live_path, T0 + 60)
        holder.execute("SELECT count(*) FROM meta").fetchone()
        del rec
        outcomes = {}
        for name, root in (("closed", closed), ("live", live)):
            code, out, err = _report_as_nobody(root)
            assert "Traceback" not in err, err[-2000:]
            assert code == 0, err
            doc = json.loads(out)
            total = doc["windows"]["total"]
            statuses = [f["status"] for f in doc["files"]]
            outcomes[name] = (total["input"], total["complete"], statuses, total["problems"])
            # Either the file was read in full, or its status says why it was not.
            if statuses:
                assert total["complete"] is False
            else:
                assert total["input"] == 9
        print(f"\nreport as uid 65534: {outcomes}")
        # A user who can only read gets the same figures as root: a closed ledger (no -wal) is
        # opened immutable (nothing to create), a live one through the writer's -shm.
        assert outcomes == {
            "closed": (9, True, [], {}),
            "live": (9, True, [], {}),
        }
        holder.close()
    finally:
        shutil.rmtree(base)
