"""``vllm-ledger notifier``: a missing config and a resend without a delivery id are one line
(exit 2) before anything is read or sent. The notifier's own work is tests/unit/notify/'s and
tests/e2e/test_notifier_*.py's."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_ledger import cli


def test_a_missing_config_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["notifier", "status", "--config", str(tmp_path / "none.json")]) == 2
    assert capsys.readouterr().err == (
        f"vllm-ledger: error: --config {tmp_path / 'none.json'} not found: pass --config "
        "/etc/notify/private.json\n"
    )


@pytest.mark.parametrize(("given", "shown"), [(["x"], "'x'"), (["0"], "'0'"), ([], "None")])
def test_resend_needs_a_delivery_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: list[str], shown: str
) -> None:
    config = tmp_path / "private.json"
    config.write_text("{}\n")
    assert cli.main(["notifier", "resend", *given, "--config", str(config)]) == 2
    assert capsys.readouterr().err == (
        f"vllm-ledger: error: resend needs a delivery id, not {shown}: e.g. vllm-ledger "
        "notifier resend 12 --config FILE (ids are in `notifier status`)\n"
    )
