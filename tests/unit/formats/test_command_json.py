"""The ``--json`` documents of doctor, preflight, verify and check, key by key as
docs/json-schema.md gives them, from the commands' own result types."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_ledger.deploy.preflight.findings import Finding, Preflight
from vllm_ledger.doctor import DoctorReport
from vllm_ledger.doctor.base import Row
from vllm_ledger.formats.command_json import (
    SCHEMA,
    check_dict,
    doctor_dict,
    dumps,
    preflight_dict,
    verify_dict,
)
from vllm_ledger.read.check import FileVerdict
from vllm_ledger.read.verify import Difference, OtherServer, VerifyResult


def test_dumps_is_indented_ascii_with_one_newline_and_refuses_nan() -> None:
    assert SCHEMA == 1
    assert dumps({"path": "été", "n": 1}) == '{\n  "path": "\\u00e9t\\u00e9",\n  "n": 1\n}\n'
    with pytest.raises(ValueError):
        dumps({"x": float("nan")})


def test_doctor_every_row_as_the_table_shows_it() -> None:
    report = DoctorReport(
        (
            Row("storage", True, "writable"),
            Row("flags", True, "no flags", warn=True, fix="pass --flags"),
            Row("writers", False, "1 of 2", fix="restart"),
        )
    )
    assert doctor_dict(report, vllm_output_lines=3) == {
        "schema": 1,
        "ok": False,
        "summary": "1 of 3 checks pass; 1 warns",
        "checks": [
            {"check": "storage", "result": "pass", "checked": "writable", "fix": ""},
            {"check": "flags", "result": "warn", "checked": "no flags", "fix": "pass --flags"},
            {"check": "writers", "result": "FAIL", "checked": "1 of 2", "fix": "restart"},
        ],
        "vllm_output_lines": 3,
    }


def test_preflight_counts_its_blockers() -> None:
    result = Preflight(
        (
            Finding("gpu", "BLOCKER", "none", "1 GPU", "nvidia-smi"),
            Finding("disk", "pass", "90 GB", "20 GB", "df"),
        )
    )
    doc = preflight_dict(result)
    assert (doc["schema"], doc["blocked"], doc["blockers"]) == (1, True, 1)
    assert doc["findings"][1] == {
        "check": "disk",
        "result": "pass",
        "found": "90 GB",
        "needs": "20 GB",
        "source": "df",
    }


def test_verify_both_sides_the_differences_and_another_server() -> None:
    result = VerifyResult(
        "run-a",
        {"input": 10},
        {"input": 12},
        (Difference("input", "vllm:prompt_tokens_total", 10, 12),),
        waited_s=1.23456,
        other_server=OtherServer(created_ts=100.0004, run_start_ts=40.0),
    )
    assert verify_dict(result) == {
        "schema": 1,
        "match": False,
        "run_id": "run-a",
        "ledger": {"input": 10},
        "vllm": {"input": 12},
        "differences": [
            {"figure": "input", "metric": "vllm:prompt_tokens_total", "ledger": 10, "vllm": 12}
        ],
        "waited_seconds": 1.235,
        "other_server": {"created_at": 100.0, "run_start_at": 40.0, "offset_seconds": 60.0},
    }
    same = VerifyResult("run-a", {"input": 10}, {"input": 10}, (), waited_s=0.0)
    doc = verify_dict(same)
    assert (doc["match"], doc["differences"], doc["other_server"]) == (True, [], None)


def test_check_a_verdict_per_file_and_per_problem_beyond_them(tmp_path: Path) -> None:
    verdicts = [
        FileVerdict(tmp_path / "a", True, "ok", ""),
        FileVerdict(tmp_path / "b", False, "damaged", "malformed"),
        FileVerdict(tmp_path, False, "writer_missing", "run-a writer 1", root=True),
    ]
    doc = check_dict([tmp_path], verdicts)
    assert {k: v for k, v in doc.items() if k != "verdicts"} == {
        "schema": 1,
        "ok": False,
        "roots": [str(tmp_path)],
        "files": 2,
        "files_with_problems": 1,
        "problems_beyond_files": 1,
    }
    assert doc["verdicts"][2] == {
        "path": str(tmp_path),
        "ok": False,
        "verdict": "writer_missing",
        "detail": "run-a writer 1",
        "root": True,
    }
    assert json.loads(dumps(doc)) == doc
    assert check_dict([tmp_path], verdicts[:1])["ok"] is True
    assert check_dict([tmp_path], [])["ok"] is False  # nothing checked is not ok
