"""``--tz`` and the zone a command reads its days in (commands/_zones.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from vllm_ledger.commands._zones import add_tz, local_zone_of, zone_of
from vllm_ledger.errors import BadArgument
from vllm_ledger.units import ZONE_ENV


def test_the_flag_wins_over_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ZONE_ENV, "Asia/Tokyo")
    p = argparse.ArgumentParser()
    add_tz(p)
    assert zone_of(p.parse_args(["--tz", "UTC"]), [tmp_path]).name == "UTC"
    assert zone_of(p.parse_args([]), [tmp_path]).name == "Asia/Tokyo"


def test_a_command_without_roots_names_a_bad_environment_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ZONE_ENV, "Mars/Base")
    with pytest.raises(BadArgument, match=f"^{ZONE_ENV} 'Mars/Base'"):
        local_zone_of(argparse.Namespace(tz=None))
    assert local_zone_of(argparse.Namespace(tz="UTC"))[1] == "UTC"
