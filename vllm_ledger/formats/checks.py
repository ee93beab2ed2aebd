"""The one check table: ``doctor``'s and ``preflight``'s rows, aligned and terminal-safe. Pure.

A row names a check, its result, what was checked or found, and how to fix a failure::

    check      result  what was checked
    interface  FAIL    vLLM 0.32.0: FinishedRequestStats has no field decode_time
               fix:    pin the vLLM version the plugin supports ...
    storage    pass    self-test on a tmpfs: ...

Every cell goes through ``formats/safe.printable`` (paths, run ids, model names and error
details come from disk or a remote), and the columns are display widths
(``formats/table.aligned``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from vllm_ledger.formats.table import aligned

Result = Literal["pass", "warn", "FAIL", "BLOCKER", "n/a"]
RESULTS: tuple[Result, ...] = ("pass", "warn", "FAIL", "BLOCKER", "n/a")


@dataclass(frozen=True)
class CheckRow:
    """One check in the table. ``fix`` is shown on a line of its own under a row that did not
    pass."""

    check: str
    result: Result
    detail: str
    fix: str = ""


def render(rows: Sequence[CheckRow], *, heading: str = "what was checked") -> list[str]:
    """The header (``check``, ``result``, ``heading``), one line per row, and a ``fix:`` line
    under each row that did not pass and says how to fix it."""
    cells = [["check", "result", heading]]
    for r in rows:
        cells.append([r.check, r.result, r.detail])
        if r.fix and r.result != "pass":
            cells.append(["", "fix:", r.fix])
    return aligned(cells, safe=True)


__all__ = ["RESULTS", "CheckRow", "Result", "render"]
