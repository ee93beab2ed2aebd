"""``vllm-ledger preflight``: a host file it cannot read is one line (exit 2); the table's
blocker count, the JSON's and the exit status agree. Each check is
tests/unit/deploy/preflight/'s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO
from vllm_ledger import cli

HOST = REPO / "tests" / "data" / "render" / "cpu-bare.json"


def test_a_host_file_it_cannot_read_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["preflight", "--host", str(tmp_path / "none.json")]) == 2
    assert capsys.readouterr().err == (
        f"vllm-ledger: error: host file {tmp_path / 'none.json'} not found: pass --host HOST.json\n"
    )
    (tmp_path / "h.json").write_text("nope\n")
    assert cli.main(["preflight", "--host", str(tmp_path / "h.json")]) == 2
    assert capsys.readouterr().err == (
        f"vllm-ledger: error: host file {tmp_path / 'h.json'} is not JSON: line 1 column 1: "
        "Expecting value\n"
    )


def test_the_table_and_the_json_count_the_same_blockers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = cli.main(["preflight", "--host", str(HOST), "--json"])
    doc = json.loads(capsys.readouterr().out)
    blockers = sum(f["result"] == "BLOCKER" for f in doc["findings"])
    assert (doc["schema"], doc["blockers"], doc["blocked"]) == (1, blockers, blockers > 0)
    assert code == (1 if doc["blocked"] else 0)
    assert cli.main(["preflight", "--host", str(HOST)]) == code
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == f"{blockers} blocker{'s' if blockers != 1 else ''}"
