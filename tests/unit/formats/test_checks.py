"""formats/checks.py: the one check table, doctor's and preflight's."""

from __future__ import annotations

from vllm_ledger.formats.checks import CheckRow, render
from vllm_ledger.formats.table import display_width


def test_a_failed_row_gets_its_fix_on_a_line_below() -> None:
    rows = [
        CheckRow("interface", "FAIL", "vLLM 0.32.0: no decode_time", "pin vLLM"),
        CheckRow("storage", "pass", "self-test on a tmpfs", "never shown for a pass"),
    ]
    assert render(rows) == [
        "check      result  what was checked",
        "interface  FAIL    vLLM 0.32.0: no decode_time",
        "           fix:    pin vLLM",
        "storage    pass    self-test on a tmpfs",
    ]


def test_the_result_column_is_as_wide_as_its_widest_word() -> None:
    rows = [CheckRow("port", "BLOCKER", "in use"), CheckRow("gpu", "n/a", "CPU serving")]
    assert render(rows, heading="found | needs (from)") == [
        "check  result   found | needs (from)",
        "port   BLOCKER  in use",
        "gpu    n/a      CPU serving",
    ]


def test_a_warning_shows_its_fix_and_an_empty_fix_adds_no_line() -> None:
    rows = [CheckRow("clock", "warn", "not synchronised", "enable NTP"), CheckRow("x", "FAIL", "y")]
    assert render(rows)[1:] == [
        "clock  warn    not synchronised",
        "       fix:    enable NTP",
        "x      FAIL    y",
    ]


def test_cells_from_disk_are_escaped_and_wide_names_line_up() -> None:
    evil = "run-a\n\x1b[2Jstorage  pass    forged"
    lines = render(
        [CheckRow("writers", "FAIL", f"run {evil}: w0 missing"), CheckRow("模型", "pass", "ok")]
    )
    assert len(lines) == 3  # no forged line
    assert lines[1] == "writers  FAIL    run run-a\\x0a\\x1b[2Jstorage  pass    forged: w0 missing"
    assert "\x1b" not in "".join(lines)
    assert lines[2] == "模型     pass    ok"
    assert display_width(lines[2].split("pass")[0]) == display_width(lines[1].split("FAIL")[0])


def test_no_rows_is_the_header_alone() -> None:
    assert render([]) == ["check  result  what was checked"]
