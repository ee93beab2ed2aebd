"""What a reader refuses in a ledger's attribution rows (``read/attribution.py`` reads them):
every count an integer, not negative, at most ``MAX_COUNT`` (in a row, and summed), never more
cached than prompt tokens; every label a short text; every reason one the writer gives. A file
with any value that fails is refused whole (``BadValues``), as for its counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import gt
from typing import Any

from vllm_ledger.bounds import MAX_COUNT
from vllm_ledger.errors import BadValues

REASONS = frozenset({"", "untagged", "ambiguous", "copies", "aborted", "fault", "refused"})
MAX_LABEL_CHARS = 256  # as the writer bounds them (``write/credits.py``)


def judged_row(table: str, row: tuple[Any, ...]) -> tuple[int, int, int, int, int, int]:
    """A label set's sums over a span with their checks (``attr_reads.sums``), refused where a
    count is not an integer, negative, past ``MAX_COUNT`` in a row or summed, or more cached than
    prompt tokens; else ``(dim, *sums)``."""
    dim, p, g, c, r, e, non_int, lowest, most, over = row
    if non_int:
        raise BadValues(f"{table}: a count that is not an integer")
    if lowest is not None and lowest < 0:
        raise BadValues(f"{table}: a negative count ({lowest})")
    if most is not None and most > MAX_COUNT:
        raise BadValues(f"{table}: {most} in one row, more than any ledger holds")
    if over:
        raise BadValues(f"{table}: more cached than input tokens in a row")
    for v in (p, g, c, r, e):
        if type(v) is not int or v > MAX_COUNT:
            raise BadValues(f"{table}: a sum that is not a count")
    return dim, p, g, c, r, e


def judged_columns(table: str, counts: list[Sequence[Any]], totals: list[int]) -> None:
    """A span's five columns of counts (``ATTR_COLUMNS``, as read) judged as ``judged_row``
    judges a row, a column at a time: every count an integer (then so is its column's sum; any
    other value makes the sum a float or fails it), none negative, none with more cached than
    prompt tokens; their sums added to ``totals``, which bound every value (none is
    negative)."""
    if not counts[0]:
        return
    try:
        sums = [sum(column) for column in counts]
    except TypeError:  # a text, a blob or a NULL
        sums = []
    non_int = len(sums) != len(counts) or any(type(n) is not int for n in sums)
    lowest = 0 if non_int else min([min(column) for column in counts])
    over = not non_int and any(map(gt, counts[2], counts[0]))
    if non_int or over or lowest < 0:
        judged_row(table, (None, 0, 0, 0, 0, 0, non_int, lowest, None, over))
    for i, n in enumerate(sums):
        totals[i] += n
    if max(totals) > MAX_COUNT:
        raise BadValues(f"{table}: sums of more than any ledger holds")


def short_texts(values: dict[Any, list[int]]) -> bool:
    """Whether every value is a text of at most ``MAX_LABEL_CHARS`` (a pass per question)."""
    if not set(map(type, values)) <= {str}:
        return False
    return max(map(len, values), default=0) <= MAX_LABEL_CHARS


def bad_label(by: str, value: Any, reason: Any) -> None:
    """Refuse a value of ``by`` and its reason: a label set the file does not name (no
    reason), a value that is not a short text, or a reason the writer never gives."""
    if reason is None:
        raise BadValues(f"attr_dims: a row of {by} names a label set the file does not")
    if type(value) is not str or len(value) > MAX_LABEL_CHARS:
        raise BadValues(f"attr_dims: label set {str(value)[:40]!r} is not short texts")
    raise BadValues(f"attr_dims: {str(reason)[:40]!r} is not a reason the writer gives")
