"""The bench's results (bench/results.py): rows and notes kept under the part running, this
run's parts merged into the last results.json (the rows of parts not run kept, on the same
machine only), and results.md written from it in the parts' order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import results

ORDER = ["report", "disk", "opens"]


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(results, "ROWS", [])
    monkeypatch.setattr(results, "DETAILS", {})
    monkeypatch.setattr(results, "JSON", tmp_path / "results.json")
    monkeypatch.setattr(results, "MARKDOWN", tmp_path / "results.md")
    return tmp_path


def _run(part: str, measured: float, met: bool | None) -> None:
    results.begin(part)
    results.row(f"{part} figure", measured, "ms", "<= 10 ms", 5.0, "baseline", 2.0, met)
    results.note(f"{part}: a file at {results.REPO}/bench/out/x")


def test_rows_and_notes_go_under_the_part_running(fresh: Path) -> None:
    _run("disk", 7.0, True)
    assert results.ROWS[0]["part"] == "disk" and results.ROWS[0]["met"] is True
    assert results.DETAILS["notes"] == {"disk": ["disk: a file at bench/out/x"]}


def test_parts_not_run_are_kept_from_the_last_run_on_the_same_machine(fresh: Path) -> None:
    _run("opens", 1.0, True)
    _run("report", 3.0, False)
    ran = {n: {"date": "2026-12-01 10:00", "wall_s": 1.0} for n in ("opens", "report")}
    results.write("m1", str(results.REPO / ".venv/bin/python"), ran, 2.0, ORDER)
    old: dict[str, Any] = json.loads((fresh / "results.json").read_text())
    assert [r["part"] for r in old["rows"]] == ["report", "opens"]
    assert old["python"] == ".venv/bin/python"

    results.ROWS.clear()
    results.DETAILS.clear()
    _run("disk", 7.0, None)
    doc = results.merge("m1", "py", {"disk": {"date": "2026-12-02 10:00", "wall_s": 0.5}}, 1, ORDER)
    assert [r["part"] for r in doc["rows"]] == ["report", "disk", "opens"]
    assert list(doc["parts"]) == ["report", "disk", "opens"]
    assert list(doc["details"]["notes"]) == ["opens", "report", "disk"]
    other = results.merge("m2", "py", {"disk": {"date": "2026-12-02", "wall_s": 0.5}}, 1, ORDER)
    assert [r["part"] for r in other["rows"]] == ["disk"]


def test_the_markdown_table_and_notes_in_the_parts_order(fresh: Path) -> None:
    _run("opens", 1.0, True)
    _run("report", 30.0, False)
    ran = {n: {"date": "2026-12-01 10:00", "wall_s": 1.0} for n in ("opens", "report")}
    results.write("m1", "py", ran, 2.0, ORDER)
    md = (fresh / "results.md").read_text().splitlines()
    assert md[0] == "Measured by `make bench` on m1, 2026-12-01."
    assert md[4] == "| report figure | 30 ms | <= 10 ms | 5 ms (baseline) | 2 | **missed** |"
    assert md[5] == "| opens figure | 1 ms | <= 10 ms | 5 ms (baseline) | 2 | met |"
    assert md[-3:] == [
        "- report: a file at bench/out/x",
        "- opens: a file at bench/out/x",
        "- wall time per part: report 1 s, opens 1 s",
    ]


def test_a_figure_in_a_note() -> None:
    assert results.f3(None) == "n/a"
    assert results.f3(1.23456) == "1.235"
