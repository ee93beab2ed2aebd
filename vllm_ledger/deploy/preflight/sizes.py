"""Sizes in bytes as preflight counts and writes them: ``GIB``, ``MIB`` and ``gib_text``."""

from __future__ import annotations

GIB = 1024**3
MIB = 1024**2


def gib_text(n: int | float) -> str:
    """``12.3 GiB`` (or MiB below a tenth of a GiB)."""
    return f"{n / GIB:.1f} GiB" if n >= GIB / 10 else f"{n / MIB:.1f} MiB"
