"""``vllm-ledger check``: a verdict line per ledger file and a count, exit 1 when a file has a
problem or there is no ledger file (``no_ledger_line``). That check agrees with report is
tests/test_check_agrees.py's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ledgers import ev, write_ledger
from vllm_ledger import cli
from vllm_ledger.commands.check import no_ledger_line

T0 = 1_700_000_000


def test_no_ledger_asks_whether_the_plugin_is_on(tmp_path: Path) -> None:
    assert no_ledger_line([tmp_path]) == (
        f"no ledger files under {tmp_path}: is the plugin on (VLLM_LEDGER_DIR)?"
    )
    assert no_ledger_line([tmp_path / "a", tmp_path / "b"]) == (
        f"no ledger files under {tmp_path / 'a'}, {tmp_path / 'b'}: is the plugin on "
        "(VLLM_LEDGER_DIR)?"
    )


def test_an_empty_root_fails_and_a_sound_one_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["check", "--root", str(tmp_path)]) == 1
    assert capsys.readouterr().out == f"NO_LEDGER     {no_ledger_line([tmp_path])}\n"
    write_ledger(tmp_path, "run-a", start_ts=T0, end_ts=T0 + 1800, events=[ev(T0 + 5, 10, 2)])
    assert cli.main(["check", "--root", str(tmp_path)]) == 0
    path = tmp_path / "run-a" / "w0.g0.ledger.sqlite"
    assert capsys.readouterr().out.splitlines() == [
        f"ok            {path}  run run-a writer 0 gen 0: closed cleanly, seq 362",
        "1 ledger file(s), 0 with problems",
    ]
