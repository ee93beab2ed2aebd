"""The status document written from a report, bounded in bytes (formats/status_render.py)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.ledgers import ev, write_ledger
from vllm_ledger.formats.status import STATUS_SCHEMA, STATUS_WINDOWS, WRITER_STATES
from vllm_ledger.formats.status_render import render, status_dict
from vllm_ledger.read.ports import PortRow, PortRows
from vllm_ledger.read.report import Report, build_report

T0 = 1_800_000_000


def _report(root: Path, by: str | None = None) -> Report:
    write_ledger(root, "r1", start_ts=T0, end_ts=T0 + 60, events=[ev(T0 + 5, 40, 7, 16)])
    return build_report([root], at_ts=T0 + 61, clock=lambda: T0 + 61, tz="UTC", by=by)


def test_the_document_has_its_fixed_keys(tmp_path: Path) -> None:
    doc = status_dict(_report(tmp_path), tz_source="root")
    assert doc["schema"] == STATUS_SCHEMA
    assert list(doc["windows"]) == list(STATUS_WINDOWS)
    assert list(doc["writers"]) == list(WRITER_STATES)
    assert (doc["tz"], doc["tz_offset"], doc["tz_source"]) == ("UTC", 0, "root")
    assert doc["windows"]["total"]["input"] == 40
    assert "instances" not in doc and "breakdown" not in doc


def test_a_port_row_carries_only_a_known_health_and_a_real_http_status(tmp_path: Path) -> None:
    report = _report(tmp_path, by="instance")
    row = report.breakdown[0]
    ports = PortRows((PortRow(8000, 1, {"closed": 1}, row.windows),), 0)
    doc = status_dict(report, ports, {8000: ("healthy", 999)})
    assert doc["instances"][0]["health"] == {"state": "healthy", "http_status": None}
    assert "health" not in status_dict(report, ports, {8000: ("maybe", 200)})["instances"][0]
    assert doc["breakdown"]["by"] == "instance" and doc["breakdown"]["truncated"] == 0


def test_render_is_one_ascii_line(tmp_path: Path) -> None:
    text = render(_report(tmp_path))
    assert text.endswith("\n") and text.count("\n") == 1 and text.isascii()
    assert json.loads(text) == status_dict(_report(tmp_path / "again"))
