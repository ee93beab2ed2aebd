"""A root that a hostile or unlucky operator prepared: nothing hangs, nothing unknown is known."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.ledgers import ev, write_ledger
from vllm_ledger.read.summary import SUMMARY_NAME

REPO = Path(__file__).resolve().parent.parent
T0 = 1_796_000_000.0
PYTHON_M = (sys.executable, "-m", "vllm_ledger")
DEADLINE_S = 20  # a command that blocks on a FIFO never returns: the deadline catches it


def _report(root: Path, at: float) -> tuple[int, dict, str]:
    out = subprocess.run(
        [*PYTHON_M, "report", "--json", "--root", str(root), "--at", str(at)],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return out.returncode, json.loads(out.stdout) if out.stdout else {}, out.stderr


def _one_run(root: Path) -> Path:
    write_ledger(
        root,
        "run-a",
        start_ts=T0,
        end_ts=T0 + 60,
        events=[ev(T0 + 5 + i, prompt=10, gen=2) for i in range(20)],
    )
    return root / "run-a" / "w0.g0.ledger.sqlite"


def test_fifos_named_like_a_ledger_a_marker_and_the_summary_are_named_not_read(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ledger"
    good = _one_run(root)
    os.mkfifo(root / SUMMARY_NAME)
    (root / "run-b").mkdir()
    os.mkfifo(root / "run-b" / "w0.g0.ledger.sqlite")
    code, doc, err = _report(root, T0 + 61)
    assert code == 0, err
    assert doc["windows"]["total"]["input"] == 200
    files = {Path(f["path"]).relative_to(root).as_posix(): f for f in doc["files"]}
    assert files == {
        "run-b/w0.g0.ledger.sqlite": {
            "path": str(root / "run-b" / "w0.g0.ledger.sqlite"),
            "status": "unreadable",
            "detail": "not a regular file",
        }
    }
    assert doc["windows"]["total"]["complete"] is False
    assert doc["windows"]["total"]["problems"]["ledger_unreadable"] == 1

    # A FIFO where the good file's sequence marker should be could hide lost commits.
    shutil.rmtree(root / "run-b")
    marker = Path(f"{good}.seq")
    marker.unlink()
    os.mkfifo(marker)
    code, doc, err = _report(root, T0 + 61)
    assert code == 0, err
    assert [(f["status"], f["detail"]) for f in doc["files"]] == [
        ("unreadable", "w0.g0.ledger.sqlite.seq is not a regular file")
    ]
    assert doc["windows"]["total"]["complete"] is False
