"""``vllm-ledger doctor`` as a command: one check alone (``--only``), its table and its exit
status, in a real process. Each check failing for its real cause is tests/test_doctor.py's."""

from __future__ import annotations

import time
from pathlib import Path

from tests.conftest import run_cli


def test_the_command_runs_the_storage_check_alone(tmp_path: Path) -> None:
    code, out, err = run_cli("doctor", "--only", "storage", "--root", str(tmp_path))
    assert (code, err) == (0, ""), out + err
    lines = out.splitlines()
    assert lines[0] == "check    result  what was checked"
    assert lines[1].startswith("storage  pass    self-test on a ")
    assert lines[1].endswith(f"; {tmp_path} writable with room, no write failures recorded")
    assert lines[2:] == ["1 of 1 checks pass"]


def test_the_command_says_attribution_is_off_and_gives_the_flag(tmp_path: Path) -> None:
    """A real doctor process (it imports the installed vLLM, which joins) over a ledger whose
    finished request no tag named: off, the middleware's flag as the fix, exit 1."""
    from tests.unit.doctor.test_attribution import _ledger

    _ledger(tmp_path, "run-1", time.time() - 60, "untagged")
    code, out, err = run_cli("doctor", "--only", "attribution", "--root", str(tmp_path))
    assert code == 1, out + err
    assert out.splitlines() == [
        "check        result  what was checked",
        "attribution  FAIL    off: run run-1: only untagged rows (1 finished request, none "
        "tagged): the middleware is not loaded",
        "             fix:    add --middleware vllm_ledger.middleware.LedgerMiddleware to vllm "
        "serve (render --usage writes it in every mode; docs/attribution.md), then restart vLLM",
        "0 of 1 checks pass",
    ]
    assert "Traceback" not in err
