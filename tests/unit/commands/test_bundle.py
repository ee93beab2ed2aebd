"""``vllm-ledger bundle``: the folder written (said on stderr), how to enable it and, with
--tz, the zone it records (stdout)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vllm_ledger import cli


def test_the_bundle_says_what_it_wrote_and_how_to_enable_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["bundle", "--output", "plugin"]) == 0  # relative: said absolute
    out, err = capsys.readouterr()
    folder = os.path.abspath(tmp_path / "plugin")
    files = [p for p in (tmp_path / "plugin").rglob("*") if p.is_file()]
    assert err == f"wrote {folder} (a plugin bundle of {len(files)} files)\n"
    assert out == (
        f"enable with: PYTHONPATH={folder} VLLM_LEDGER_DIR=/path/to/ledgers vllm serve ...\n"
    )


def test_a_zone_is_recorded_and_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["bundle", "--tz", "Europe/Berlin", "--output", str(tmp_path / "b")]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "the plugin records the zone Europe/Berlin in the ledger root (ROOT/zone) at start"
    )
    assert cli.main(["bundle", "--tz", "Mars/Olympus", "--output", str(tmp_path / "c")]) == 2
    assert capsys.readouterr().err == (
        "vllm-ledger: error: --tz 'Mars/Olympus' is not a known time zone: use an IANA name, "
        "e.g. --tz Asia/Shanghai\n"
    )
    assert not (tmp_path / "c").exists()
