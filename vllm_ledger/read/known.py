"""What a figure is worth: exact, a lower bound, or unknown. Pure.

The ledger never prints an unknown figure as zero. A window (a report's, a calendar step's, a
timeline's step, an export row) whose every second is uncovered and in which nothing was
counted holds figures nobody knows; ``figures_known`` says so once, and every form prints it
the same way (docs/ledger.md, "Unknown is never zero"): a blank cell in CSV, ``null`` in JSON,
``?`` in text, each with its coverage beside it; ``--zeros`` prints 0 there for those who want
it. The model keeps its integers (zero where nothing was counted): the renderers decide.
"""

from __future__ import annotations

from typing import Literal

from vllm_ledger.figures import report_names

FiguresKnown = Literal["exact", "lower_bound", "unknown"]
UNKNOWN_MARK = "?"  # an unknown figure in text (the report's tables, the chat): never 0
# The words, from the most known to the least.
FIGURES_KNOWN: tuple[FiguresKnown, ...] = ("exact", "lower_bound", "unknown")


def figures_known(
    complete: bool, uncovered_seconds: int, wall_seconds: int, counted: bool
) -> FiguresKnown:
    """What a window's (or a step's) figures are worth, the one rule every form prints by:

    - ``exact``: the window is complete (every second vouched for, or declared idle; no
      problem named);
    - ``unknown``: the ledger proves no second of it (every second uncovered: none covered,
      none declared idle; an empty window too) and counted nothing in it. Its figures are not
      zero but unknown: blank in CSV, ``null`` in JSON, ``?`` in text (``--zeros`` prints 0);
    - ``lower_bound``: the rest. What was counted is shown; the uncovered seconds or the
      problems named may hold more.
    """
    if complete:
        return "exact"
    if uncovered_seconds >= wall_seconds and not counted:
        return "unknown"
    return "lower_bound"


def weakest(*said: FiguresKnown) -> FiguresKnown:
    """The least known of ``said`` (``unknown`` below ``lower_bound`` below ``exact``)."""
    return max(said, key=FIGURES_KNOWN.index)


def counted(row: object) -> bool:
    """Whether any figure of ``row`` (a field per ``figures.FIGURES``) is above zero."""
    return any(getattr(row, name) for name in report_names())


__all__ = ["FIGURES_KNOWN", "UNKNOWN_MARK", "FiguresKnown", "counted", "figures_known", "weakest"]
