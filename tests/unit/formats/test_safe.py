"""``printable`` (formats/safe.py): text from disk or a remote with every control, format and
separator character shown as an escape, printable text unchanged."""

from __future__ import annotations

from vllm_ledger.formats.safe import printable


def test_printable_text_is_unchanged() -> None:
    assert printable("gpu1:8000 qwen/Qwen2.5-7B ✓ 模型") == "gpu1:8000 qwen/Qwen2.5-7B ✓ 模型"
    assert printable(12) == "12"


def test_controls_bidi_and_separators_are_escaped() -> None:
    assert printable("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert printable("line\nforged") == "line\\x0aforged"
    assert printable("tab\there") == "tab\\x09here"
    assert printable("\u202eevil") == "\\u202eevil"  # a bidi override
    assert printable("zero\u200bwidth") == "zero\\u200bwidth"
    assert printable("para\u2029sep") == "para\\u2029sep"
    assert printable("\x7f") == "\\x7f"
