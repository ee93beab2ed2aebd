"""The terminal form of a Report: an aligned plain-text table, then coverage details.

Standard library only, so the report works wherever the plugin does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import timezone
from pathlib import Path
from zoneinfo import ZoneInfo

from vllm_ledger.formats.safe import printable
from vllm_ledger.formats.table import aligned
from vllm_ledger.read.known import UNKNOWN_MARK
from vllm_ledger.read.matched import NothingMatched, root_hint
from vllm_ledger.read.periods import is_edge
from vllm_ledger.read.report import Report, WindowReport
from vllm_ledger.read.zone import ZoneChoice
from vllm_ledger.units import format_duration, format_instant


def _int(n: int) -> str:
    return f"{n:,}"


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def rate(x: float | None) -> str:
    """A rate with two decimals; one above zero that would print as 0.00 is ``<0.01``."""
    if x is None:
        return "-"
    return "<0.01" if 0 < x < 0.005 else f"{x:,.2f}"


def figure_cells(w: WindowReport, zeros: bool = False) -> list[str]:
    """input, output, cached, hit rate, avg tok/s, gen tok/s and requests as the tables print
    them; ``?`` for each where the figures are unknown (``zeros``: 0 and ``-``)."""
    if w.known == "unknown" and not zeros:
        return [UNKNOWN_MARK] * 7
    return [
        _int(w.input_tokens),
        _int(w.output_tokens),
        _int(w.cached_tokens),
        pct(w.hit_rate),
        rate(w.avg_speed),
        rate(w.gen_speed),
        _int(w.requests),
    ]


def _when(ts: float, tz: ZoneInfo) -> str:
    return format_instant(ts, tz)


def clean_stop_ts(report: Report) -> float | None:
    """When every writer the report knows has closed cleanly: the last close (nothing has
    recorded since, so the time after it is uncovered); else None."""
    if not report.writers or any(wr.state != "closed" for wr in report.writers):
        return None
    lasts = [wr.last_ts for wr in report.writers if wr.last_ts is not None]
    return max(lasts) if lasts else None


def coverage_cell(
    w: WindowReport, stopped_ts: float | None = None, tz: ZoneInfo | None = None
) -> str:
    """``complete`` or ``INCOMPLETE (N uncovered)``; ``stopped_ts`` (``clean_stop_ts``) adds
    why, in plain words, to a window that runs past the clean stop."""
    declared = (
        f"{format_duration(w.declared_seconds, 'words')} declared idle"
        if w.declared_seconds
        else ""
    )
    if w.complete:
        return f"complete ({declared})" if declared else "complete"
    if w.wall_seconds == 0:
        return "INCOMPLETE (empty: no second before the cutoff)"
    extra = f", {declared}" if declared else ""
    if (
        stopped_ts is not None
        and tz is not None
        and w.uncovered_seconds
        and w.cutoff_ts > stopped_ts
    ):
        extra += f"; not recording since the clean stop at {_when(stopped_ts, tz)}"
    what = "nothing recorded; " if w.nothing_recorded else ""
    if not what and w.known == "unknown":
        what = "unknown; "
    return f"INCOMPLETE ({what}{format_duration(w.uncovered_seconds, 'words')} uncovered{extra})"


def _table(rows: list[list[str]], right: set[int]) -> list[str]:
    return aligned(rows, right=right)


HEADER = [
    "window",
    "input",
    "output",
    "cached",
    "hit rate",
    "avg tok/s",
    "gen tok/s",
    "requests",
    "coverage",
]


def window_rows(
    windows: tuple[WindowReport, ...],
    label: str = "",
    *,
    stopped_ts: float | None = None,
    tz: ZoneInfo | None = None,
    zeros: bool = False,
) -> list[list[str]]:
    return [
        [f"{label}{w.name}", *figure_cells(w, zeros), coverage_cell(w, stopped_ts, tz)]
        for w in windows
    ]


def _names(names: tuple[str, ...], more: int) -> str:
    if not names:
        return "none"
    return ", ".join(printable(n) for n in names) + (f" (and {more} more)" if more else "")


def _instant(ts: float, tz: ZoneInfo | None) -> str:
    """An instant in ``tz``, in UTC when no zone is known: never Unix seconds."""
    return format_instant(ts, tz if tz is not None else timezone.utc)


def nothing_matched_lines(
    nm: NothingMatched, tz: ZoneInfo | None = None, cutoff_ts: int | None = None
) -> list[str]:
    """The first lines of every command's output when nothing matched: what was asked, and
    the models and instances the roots do hold (terminal-safe); ``cutoff_ts`` (the report's
    cutoff) names a period that starts after it as such."""
    roots = printable(", ".join(nm.roots))
    if nm.reason == "no_ledger" and nm.starting:
        first = (
            f"nothing committed yet: {nm.starting} ledger file(s) under {roots} were created "
            "moments ago: a writer is starting; ask again in a few seconds"
        )
    elif nm.reason == "no_ledger" and (hint := root_hint(map(Path, nm.roots))):
        first = f"nothing matched: no ledger file under {roots}{printable(hint)}"
    elif nm.reason == "no_ledger":
        first = (
            f"nothing matched: no ledger file under {roots}: is the plugin on "
            "(VLLM_LEDGER_DIR), and is this the root it writes? (docs/ledger.md)"
        )
    elif nm.reason == "never_committed":
        since = "" if nm.never_since_ts is None else f" (from {_instant(nm.never_since_ts, tz)})"
        first = (
            f"nothing committed: {nm.never_committed} ledger file(s) under {roots} were created"
            f"{since} and never committed to: the writer could not write (a full disk? no "
            "write permission?) or died before its first commit; its tokens are unknown "
            "(docs/faults.md#a-writer-that-never-committed)"
        )
    elif nm.reason == "no_match":
        asked = " and ".join(
            [
                *([f"instance {printable(str(nm.instance))}"] if nm.instance is not None else []),
                *([f"model {printable(nm.model)}"] if nm.model is not None else []),
            ]
        )
        first = f"nothing matched: no ledger under {roots} is of {asked}"
    elif nm.since_ts is not None and cutoff_ts is not None and nm.since_ts >= cutoff_ts:
        first = (
            f"nothing matched: the period from {_instant(nm.since_ts, tz)} starts after the "
            f"cutoff, {_instant(cutoff_ts, tz)} (the last second the ledgers under {roots} "
            "have proven): nothing is recorded there yet; ask for an earlier start"
        )
    else:
        lo = "the start" if nm.since_ts is None else _instant(nm.since_ts, tz)
        hi = "the cutoff" if nm.until_ts is None else _instant(nm.until_ts, tz)
        first = f"nothing matched: no run under {roots} recorded from {lo} to {hi}"
    lines = [
        first,
        f"known models: {_names(nm.models, nm.more_models)}; "
        f"known instances: {_names(nm.instances, nm.more_instances)}",
    ]
    if nm.unreadable:
        lines.append(f"({nm.unreadable} file(s) or folder(s) could not be read)")
    return lines


def filter_line(report: Report) -> str | None:
    """What the report was narrowed to (``--instance``, ``--model``), or None."""
    parts = []
    if report.instance_filter is not None:
        parts.append(f"instance {printable(str(report.instance_filter))}")
    if report.model_filter is not None:
        parts.append(f"model {printable(report.model_filter)}")
    return f"(only {', '.join(parts)})" if parts else None


def render(report: Report, zone: ZoneChoice | None = None, zeros: bool = False) -> str:
    """The text report; ``zone`` (the rule's choice) adds where the zone came from; ``zeros``
    (``--zeros``): unknown figures as 0 instead of ``?``."""
    lines = [*head_lines(report, zone), *window_table(report, zeros), *tail_lines(report)]
    return "\n".join(lines) + "\n"


def head_lines(report: Report, zone: ZoneChoice | None = None) -> list[str]:
    """The lines above the tables: what was read, as of when, in which zone, narrowed to what."""
    tz = ZoneInfo(report.tz)
    zone_text = printable(zone.label) if zone is not None else report.tz
    writers = len(report.writers)
    nm = report.nothing_matched
    lines = [] if nm is None else [*nothing_matched_lines(nm, tz, report.cutoff_ts), ""]
    lines += [
        f"vLLM token ledger as of {_when(report.cutoff_ts, tz)} ({zone_text}); "
        f"{report.runs} run(s), {writers} writer(s)",
    ]
    only = filter_line(report)
    if only is not None:
        lines.append(only)
    if report.behind_s:
        lines.append(
            f"(live writers have proven their counts up to here: {report.behind_s} s behind "
            f"the query at {_when(math.floor(report.at_ts), tz)})"
        )
    return lines


def window_table(report: Report, zeros: bool = False) -> list[str]:
    """The windows' figures and coverage, then the breakdown's (``--by model``, ...)."""
    tz = ZoneInfo(report.tz)
    lines = [""]
    header = window_header(report)
    stopped = clean_stop_ts(report)
    rows = [header, *window_rows(report.windows, stopped_ts=stopped, tz=tz, zeros=zeros)]
    lines += _table(rows, right=set(range(1, 8)))
    if report.breakdown_by is not None:
        lines += ["", f"by {report.breakdown_by}:"]
        brows = [["key", *header]]
        for row in report.breakdown:
            for r in window_rows(row.windows, zeros=zeros):
                brows.append([printable(row.key), *r])
        lines += _table(brows, right=set(range(2, 9)))
    return lines


def window_header(report: Report) -> list[str]:
    """The table's header: with --by day (month) the rows are the period's days (months), then
    its total."""
    return [report.calendar or "window", *HEADER[1:]]


def tail_lines(report: Report) -> list[str]:
    """The lines below the tables: each window's span and problems, writers that cannot vouch
    for their time, files that could not be read, and what an incomplete window means."""
    tz = ZoneInfo(report.tz)
    header = window_header(report)
    spans = [[header[0], "start -> cutoff", "uncovered", "problems"]]
    for i, w in enumerate(report.windows):
        inner = 0 < i < len(report.windows) - 2  # neither the first step, the last, nor total
        if report.calendar is not None and w.complete and inner:
            continue  # a whole day (month), midnight to midnight: the total's line says the span
        problems = ", ".join(f"{k} {v}" for k, v in w.problems.items()) or "none"
        spans.append(
            [
                w.name,
                f"{_when(w.start_ts, tz)} -> {_when(w.cutoff_ts, tz)}",
                format_duration(w.uncovered_seconds, "words"),
                problems,
            ]
        )
    lines = ["", *_table(spans, right={2})]
    bad = [wr for wr in report.writers if wr.state not in ("alive", "closed")]
    if bad:
        lines += ["", "writers that cannot vouch for their time:"]
        for wr in bad:
            lines.append(
                f"  {printable(wr.run_id)} writer {wr.writer_rank} of {wr.expected_writers}:"
                f" {wr.state}"
            )
    for f in report.files:
        lines.append(f"  ledger {printable(f.path)}: {f.status} ({printable(f.detail)})")
    lines += [
        "",
        *partial_lines(report),
        f"Unknown is never shown as zero: {UNKNOWN_MARK} marks figures no second of the window "
        "vouches for;",
        "an incomplete window's other figures are a lower bound.",
    ]
    return lines


def partial_lines(report: Report) -> list[str]:
    """With ``--by day`` (hour, month): a line saying that the first or last row covers only
    part of its day, where the period starts or ends inside one (``--since 7d``: both)."""
    if report.calendar is None or len(report.windows) < 2:
        return []
    steps = report.windows[:-1]  # then the total
    return partial_note(steps, report.calendar, ZoneInfo(report.tz))


def partial_note(steps: Sequence[WindowReport], grain: str, tz: ZoneInfo) -> list[str]:
    """Under a table of calendar ``steps`` (report's rows, timeline's steps): the line saying
    which of the first and last covers only part of its ``grain``, and where the period starts
    or ends inside it; nothing when both ends are on the zone's edges."""
    if not steps:
        return []
    start, end = steps[0].start_ts, steps[-1].cutoff_ts
    said = [
        *([f"starts at {_when(start, tz)}"] if not is_edge(start, grain, tz) else []),
        *([f"ends at {_when(end, tz)}"] if not is_edge(end, grain, tz) else []),
    ]
    if not said:
        return []
    if len(steps) == 1:
        rows = "The one row is a partial"
    elif len(said) == 2:
        rows = "The first and last rows are partial"
    else:
        rows = f"The {'first' if said[0].startswith('starts') else 'last'} row is a partial"
    return [
        f"{rows} {grain}{'s' if rows.endswith('are partial') else ''}: the period "
        f"{' and '.join(said)}.",
        "",
    ]
