"""``bot/poll.py``'s verdict on one finished ssh run: which exit statuses carry a document."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from vllm_ledger.bot.capped import CappedRun
from vllm_ledger.bot.poll import classify


def _status_of_an_empty_root(root: Path) -> tuple[int, bytes]:
    p = subprocess.run(
        [sys.executable, "-m", "vllm_ledger", "status", "--root", str(root)],
        capture_output=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    return p.returncode, p.stdout


def test_nothing_matched_is_a_whole_document_the_bot_reads(tmp_path: Path) -> None:
    code, out = _status_of_an_empty_root(tmp_path)
    assert code == 3
    state, doc = classify(CappedRun("exit", code, out))
    assert state == "ok" and doc is not None
    assert doc.runs == 0 and dict(doc.writers)["alive"] == 0


@pytest.mark.parametrize(
    ("code", "state"), [(1, "remote_failed"), (2, "remote_failed"), (255, "unreachable")]
)
def test_other_exit_statuses_carry_no_document(tmp_path: Path, code: int, state: str) -> None:
    _code, out = _status_of_an_empty_root(tmp_path)
    assert classify(CappedRun("exit", code, out)) == (state, None)
