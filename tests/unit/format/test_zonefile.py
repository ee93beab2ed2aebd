"""The ledger root's zone file (format/zonefile.py): recorded once, never over another zone.
The zone rule itself is tests/test_zone_rule.py's."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_ledger.format.zonefile import record_zone
from vllm_ledger.read.zone import ZONE_FILE


def test_the_zone_is_recorded_once_and_never_over_another(tmp_path: Path) -> None:
    root = tmp_path / "root"
    assert record_zone(root, "Asia/Tokyo") == ("written", "Asia/Tokyo")
    assert (root / ZONE_FILE).read_text() == "Asia/Tokyo\n"
    assert record_zone(root, "Asia/Tokyo") == ("same", "Asia/Tokyo")
    assert record_zone(root, "UTC") == ("kept", "Asia/Tokyo")
    assert (root / ZONE_FILE).read_text() == "Asia/Tokyo\n"
    assert sorted(p.name for p in root.iterdir()) == [ZONE_FILE]  # no temporary file left
    with pytest.raises(ValueError, match="is not a known time zone"):
        record_zone(tmp_path / "other", "Mars/Base")
    assert not (tmp_path / "other" / ZONE_FILE).exists()
