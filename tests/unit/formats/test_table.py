"""formats/table.py: the one aligner, by display width."""

from __future__ import annotations

from vllm_ledger.formats.table import aligned, display_width, pad


def test_wide_characters_take_two_columns() -> None:
    assert display_width("24小时") == 6
    assert display_width("qwen") == 4
    assert pad("通义", 6) == "通义  "
    assert pad("7", 3, right=True) == "  7"


def test_columns_line_up_by_display_width() -> None:
    lines = aligned([["model", "input"], ["通义千问", "1,000"], ["qwen", "7"]], right={1})
    assert lines == ["model     input", "通义千问  1,000", "qwen          7"]
    assert len({display_width(line) for line in lines}) == 1


def test_safe_cells_are_escaped_and_rows_may_be_ragged() -> None:
    assert aligned([["a\x1bb", "x"], ["c"]], safe=True) == ["a\\x1bb  x", "c"]
    assert aligned([]) == []
