"""The terminal form of whose tokens (``report --by key|adapter|user|tenant``): per window, the
rows by the key asked (most input first), one row of what is not attributed with its reasons
beneath it, and the window's total with its coverage. Pure.

Every label came from a client (``user``, the ``model`` a request named) or a proxy (a tenant
header): it is printed through ``formats/safe.printable`` (the aligner's ``safe=True``) and cut
to ``MAX_LABEL_COLUMNS`` columns, so no label can act on a terminal, forge a line, or push the
table off the screen. ``--json`` and ``--csv`` carry every label whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol
from zoneinfo import ZoneInfo

from vllm_ledger.formats.safe import printable
from vllm_ledger.formats.table import aligned, display_width
from vllm_ledger.formats.text import clean_stop_ts, coverage_cell, head_lines, tail_lines
from vllm_ledger.read.attribution import Credited
from vllm_ledger.read.whose import WhoseRow, WhoseWindow
from vllm_ledger.read.whose_report import WhoseReport
from vllm_ledger.read.zone import ZoneChoice

DEFAULT_TOP = 20  # rows named per window; the rest are summed in one row
MAX_LABEL_COLUMNS = 48
NONE_LABEL = "(none)"  # a request that named no key (adapter, user, tenant)
FOLDED_LABEL = "other"  # as the writer names values folded past its per-hour bound
REASON_NAMES = ("untagged", "ambiguous", "copies")
HEADER = ["input", "output", "cached", "requests", "note"]


def render(report: WhoseReport, zone: ZoneChoice | None = None, top: int = DEFAULT_TOP) -> str:
    """The whose report: the report's head, a table per window, the report's tail. ``top``: the
    rows named per window (0: all), the rest summed in one ``(N more)`` row."""
    tz = ZoneInfo(report.tz)
    stopped = clean_stop_ts(report)
    lines = head_lines(report, zone)
    for ww in report.whose:
        lines += ["", *window_lines(ww, top, stopped, tz)]
    lines += [*tail_lines(report), NOT_ATTRIBUTED_NOTE]
    return "\n".join(lines) + "\n"


NOT_ATTRIBUTED_NOTE = (
    "Not attributed: what no row can be credited with, by reason (docs/attribution.md); "
    "the rows and it add up to the window's total."
)


def window_lines(
    ww: WhoseWindow,
    top: int = DEFAULT_TOP,
    stopped_ts: float | None = None,
    tz: ZoneInfo | None = None,
) -> list[str]:
    """One window's table: its rows, the not-attributed row and its reasons, the total."""
    rows: list[list[str]] = [[f"{ww.name} by {ww.by}", *HEADER]]
    shown, more = cut(ww.rows, top)
    more += ww.more  # values the model already left out (built with the same ``top``)
    for r in shown:
        rows.append(["  " + label(r.value), *_figures(r), _row_note(r, ww)])
    na = ww.not_attributed
    if more:
        rest = the_rest(ww, shown)
        aborted = f"{rest.events:,} aborted" if rest.events else ""
        rows.append([f"  ({more:,} more)", *_figures(rest), aborted])
    rows.append(["  not attributed", *_figures(na), ""])
    for reason in REASON_NAMES:
        rows.append([f"    {reason}", *_figures(na.reasons[reason]), ""])
    ended = f"{na.requests_aborted:,} ended unfinished" if na.requests_aborted else ""
    rows.append(["    aborted", *_figures(na.reasons["aborted"]), ended])
    if na.faults:
        rows.append(["    middleware faults", "-", "-", "-", "-", f"{na.faults:,} served untagged"])
    rows.append(["  total", *_figures(ww.total), coverage(ww, stopped_ts, tz)])
    lines = aligned(rows, right={1, 2, 3, 4}, safe=True)
    if ww.folded and not any(r.value == FOLDED_LABEL for r in ww.rows):
        lines.append(f"  ({ww.folded:,} {ww.by} value(s) folded past the per-hour bound)")
    return lines


def cut(rows: Sequence[WhoseRow], top: int) -> tuple[Sequence[WhoseRow], int]:
    """The first ``top`` rows (all when ``top`` is 0), and how many are left."""
    if top <= 0 or len(rows) <= top:
        return rows, 0
    return rows[:top], len(rows) - top


def the_rest(ww: WhoseWindow, shown: Sequence[WhoseRow]) -> Credited:
    """What the rows not shown add up to (``events``: their requests that ended unfinished):
    the window's total less what is not attributed and the rows shown, so a table of 24,000
    rows costs what one of twenty does."""
    na = ww.not_attributed
    out = Credited(
        ww.total.input_tokens - na.input_tokens,
        ww.total.output_tokens - na.output_tokens,
        ww.total.cached_tokens - na.cached_tokens,
        ww.total.requests - na.requests,
        na.requests_aborted,
    )
    for r in shown:
        out.add_counts(
            -r.input_tokens, -r.output_tokens, -r.cached_tokens, -r.requests, -r.requests_aborted
        )
    return out


def label(value: str) -> str:
    """A value as a cell: ``(none)`` for none, terminal-safe, at most ``MAX_LABEL_COLUMNS``."""
    if value == "":
        return NONE_LABEL
    text = printable(value)
    if display_width(text) <= MAX_LABEL_COLUMNS:
        return text
    while display_width(text) > MAX_LABEL_COLUMNS - 3:
        text = text[:-1]
    return text + "..."


def coverage(ww: WhoseWindow, stopped_ts: float | None, tz: ZoneInfo | None) -> str:
    """The window's coverage (``text.coverage_cell``); a window that read a file written before
    attribution is not complete, and says how many."""
    cell = coverage_cell(ww.total, stopped_ts, tz)
    if not ww.files_without:
        return cell
    old = f"{ww.files_without:,} file(s) from before attribution"
    if ww.total.complete:
        return f"INCOMPLETE ({old})"
    return f"{cell[:-1]}; {old})"


class _Figures(Protocol):
    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cached_tokens(self) -> int: ...
    @property
    def requests(self) -> int: ...


def _figures(c: _Figures) -> list[str]:
    return [
        f"{c.input_tokens:,}",
        f"{c.output_tokens:,}",
        f"{c.cached_tokens:,}",
        f"{c.requests:,}",
    ]


def _row_note(r: WhoseRow, ww: WhoseWindow) -> str:
    notes = []
    if r.value == FOLDED_LABEL and ww.folded:
        notes.append(f"{ww.folded:,} folded")
    if r.requests_aborted:
        notes.append(f"{r.requests_aborted:,} aborted")
    if r.requests_refused:
        notes.append(f"{r.requests_refused:,} refused (over budget)")
    return ", ".join(notes)
