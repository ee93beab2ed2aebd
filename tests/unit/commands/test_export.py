"""``vllm-ledger export``: a period is required; the CSV has its header and a row per hour,
model and instance, with the figures exact. Every breakdown against the report is
tests/golden's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ledgers import ev, write_ledger
from vllm_ledger import cli

T0 = 1_700_000_000  # 2023-11-14T22:13:20Z: 2023-11-15 06:13:20 in Asia/Shanghai


def test_a_period_is_required(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["export", "--root", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        "vllm-ledger: error: one of the arguments --window --since is required: see "
        "vllm-ledger export --help\n"
    )


def test_the_csv_has_a_row_per_hour_model_and_instance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_ledger(
        tmp_path, "run-a", start_ts=T0, end_ts=T0 + 1800, port=19001, events=[ev(T0 + 5, 10, 2)]
    )
    argv = ["export", "--root", str(tmp_path), "--since", str(T0), "--until", str(T0 + 3600)]
    assert cli.main([*argv, "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "start,start_unix,end,end_unix,instance,model,input,output,cached,requests,"
        "decode_tokens,decode_seconds,uncovered_seconds,declared_seconds,complete,figures,"
        "problems",
        "2023-11-15T06:13:20+08:00,1700000000,2023-11-15T07:00:00+08:00,1700002800,"
        "testhost:19001,tiny,10,2,0,0,0,0.0,1000,0,false,lower_bound,",
    ]
