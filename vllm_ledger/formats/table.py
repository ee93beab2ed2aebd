"""Aligned columns for every terminal table of the project. Pure.

Widths are display widths: a CJK character (East Asian Wide or Fullwidth) takes two columns,
so a model named ``通义千问`` lines up with ``qwen``. Cells are taken as given; a renderer
passes text from disk or a remote through ``formats/safe.printable`` first, or asks
``aligned(..., safe=True)`` to.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Container, Sequence

from vllm_ledger.formats.safe import printable


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal (wide and fullwidth characters count two)."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def pad(text: str, width: int, *, right: bool = False) -> str:
    """``text`` filled with spaces to ``width`` display columns, on the left with ``right``."""
    fill = " " * max(0, width - display_width(text))
    return fill + text if right else text + fill


def aligned(
    rows: Sequence[Sequence[str]],
    *,
    right: Container[int] = (),
    gap: str = "  ",
    safe: bool = False,
) -> list[str]:
    """One line per row, each column as wide as its widest cell; columns in ``right`` are
    right-aligned; trailing spaces dropped. With ``safe``, every cell is made terminal-safe."""
    if not rows:
        return []
    cells = [[printable(c) if safe else c for c in r] for r in rows]
    n = max(len(r) for r in cells)
    widths = [max((display_width(r[i]) for r in cells if i < len(r)), default=0) for i in range(n)]
    return [
        gap.join(pad(c, widths[i], right=i in right) for i, c in enumerate(r)).rstrip()
        for r in cells
    ]
