"""``vllm-ledger doctor`` as a command: one check alone (``--only``), its table and its exit
status, in a real process; ``--stack`` against a store that calls its answer partial (a warning
row naming it, exit 0). Each check failing for its real cause is tests/test_doctor.py's."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from tests.inproc import run_cli
from tests.unit.doctor.test_stack import GROUPS, TARGETS, _api
from vllm_ledger.doctor import stack


def test_the_command_runs_the_storage_check_alone(tmp_path: Path) -> None:
    code, out, err = run_cli("doctor", "--only", "storage", "--root", str(tmp_path))
    assert (code, err) == (0, ""), out + err
    lines = out.splitlines()
    assert lines[0] == "check    result  what was checked"
    assert lines[1].startswith("storage  pass    self-test on a ")
    assert lines[1].endswith(f"; {tmp_path} writable with room, no write failures recorded")
    assert lines[2:] == ["1 of 1 checks pass"]


def test_the_stack_from_a_partial_answer_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    fetch = _api(TARGETS, GROUPS, {"targets": {"isPartial": True}})
    monkeypatch.setattr(stack, "stack_rows", functools.partial(stack.stack_rows, fetch=fetch))
    code, out, err = run_cli("doctor", "--stack", "http://prom:9090")
    assert (code, err) == (0, ""), out + err
    assert "stack  warn    stack targets: 2 of 2 up (vllm, vllm-ledger); the store's answer " in out
    assert "so a target may be missing (docs/doctor.md#a-partial-answer)" in out
    assert out.endswith("\n1 of 2 checks pass; 1 warns\n")
    code, out, err = run_cli("doctor", "--stack", "http://prom:9090", "--json")
    doc = json.loads(out)
    assert code == 0 and [c["result"] for c in doc["checks"]] == ["warn", "pass"]
