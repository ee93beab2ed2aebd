"""``vllm-ledger compact``: one line per root, what was compacted and what the summary holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ledgers import ev, write_ledger
from vllm_ledger import cli

T0 = 1_700_000_000  # long finished: its per-second rows are past the 8 days kept


def test_a_finished_ledger_is_compacted_and_summarised_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["compact", "--root", str(tmp_path)]) == 0
    assert capsys.readouterr().out == (
        f"{tmp_path}: compacted 0 file(s) (0 per-second rows dropped), summary holds 0 "
        "finished file(s)\n"
    )
    write_ledger(tmp_path, "run-a", start_ts=T0, end_ts=T0 + 1800, events=[ev(T0 + 5, 10, 2)])
    assert cli.main(["compact", "--root", str(tmp_path)]) == 0
    assert capsys.readouterr().out == (
        f"{tmp_path}: compacted 1 file(s) (1 per-second rows dropped), summary holds 1 "
        "finished file(s)\n"
    )


def test_a_missing_root_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["compact", "--root", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err == (
        f"vllm-ledger: error: ledger root {tmp_path / 'missing'} is not a directory: pass "
        "--root DIR where the ledgers are\n"
    )
