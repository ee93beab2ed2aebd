"""``vllm-ledger doctor`` as a command: one check alone (``--only``), its table and its exit
status, in a real process. Each check failing for its real cause is tests/test_doctor.py's."""

from __future__ import annotations

from pathlib import Path

from tests.inproc import run_cli


def test_the_command_runs_the_storage_check_alone(tmp_path: Path) -> None:
    code, out, err = run_cli("doctor", "--only", "storage", "--root", str(tmp_path))
    assert (code, err) == (0, ""), out + err
    lines = out.splitlines()
    assert lines[0] == "check    result  what was checked"
    assert lines[1].startswith("storage  pass    self-test on a ")
    assert lines[1].endswith(f"; {tmp_path} writable with room, no write failures recorded")
    assert lines[2:] == ["1 of 1 checks pass"]
