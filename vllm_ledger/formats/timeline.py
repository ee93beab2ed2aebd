"""The forms of a Timeline: a terminal chart with a table, JSON (schema 1) and CSV.

Each function takes a built ``Timeline`` and returns a string; none reads a ledger.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from vllm_ledger.formats import csvout
from vllm_ledger.formats.json import window_dict
from vllm_ledger.formats.safe import printable
from vllm_ledger.formats.table import pad
from vllm_ledger.formats.text import figure_cells, partial_note
from vllm_ledger.read.known import UNKNOWN_MARK
from vllm_ledger.read.report import SCHEMA_VERSION, WindowReport
from vllm_ledger.read.timeline import Timeline, UncoveredSpan
from vllm_ledger.read.zone import ZoneChoice
from vllm_ledger.units import format_duration, format_instant

CHART_COLUMNS = 56  # label (9) + chart (56) + scale (<= 12) stays within 80 columns
BLOCKS = "▁▂▃▄▅▆▇█"
TABLE_MAX_STEPS = 48
MAX_SPANS_SHOWN = 10

# ---- JSON and CSV ---------------------------------------------------------------------------


def _spans(spans: tuple[UncoveredSpan, ...]) -> list[dict[str, Any]]:
    return [
        {"start": u.start_ts, "end": u.end_ts, "seconds": u.seconds, "cause": u.cause}
        for u in spans
    ]


def timeline_dict(
    tl: Timeline, zone: ZoneChoice | None = None, zeros: bool = False
) -> dict[str, Any]:
    """Schema 1; ``calendar``, ``filter`` and ``breakdown`` only appear when asked for (keys
    are only ever added within a schema). Unknown figures are null (``zeros``: 0)."""
    out: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "at": round(tl.at_ts, 3),
        "cutoff": tl.cutoff_ts,
        "tz": tl.tz,
        **({"tz_source": zone.source} if zone is not None else {}),
        # null with a calendar step (--by day): its steps differ in length
        "step_seconds": tl.step_seconds,
        **({"calendar": tl.calendar} if tl.calendar is not None else {}),
        "window": {"name": tl.window.name, **window_dict(tl.window, zeros)},
        "steps": [window_dict(s, zeros) for s in tl.steps],
        "uncovered_spans": _spans(tl.uncovered),
    }
    if tl.instance_filter is not None or tl.model_filter is not None:
        out["filter"] = {"instance": tl.instance_filter, "model": tl.model_filter}
    if tl.breakdown_by is not None:
        out["breakdown"] = {
            "by": tl.breakdown_by,
            "rows": [
                {
                    "key": r.key,
                    "window": {"name": r.window.name, **window_dict(r.window, zeros)},
                    "steps": [window_dict(s, zeros) for s in r.steps],
                    "uncovered_spans": _spans(r.uncovered),
                }
                for r in tl.breakdown
            ],
        }
    return out


def render_json(tl: Timeline, zone: ZoneChoice | None = None, zeros: bool = False) -> str:
    return json.dumps(timeline_dict(tl, zone, zeros), indent=2, allow_nan=False) + "\n"


CSV_FIELDS = (
    *csvout.instant_fields("start", "cutoff"),
    "input",
    "output",
    "cached",
    "hit_rate",
    "avg_speed",
    "gen_speed",
    "requests",
    "uncovered_seconds",
    "complete",
    "figures",
)


def render_csv(tl: Timeline, zone: ZoneChoice | None = None, zeros: bool = False) -> str:
    """One row per step; with ``--by``, one row per key and step, the key first. The
    project's one CSV dialect (formats/csvout.py): unknown figures empty (``zeros``: 0)."""
    by = tl.breakdown_by is not None
    tz = ZoneInfo(tl.tz)
    keyed = (
        [(r.key, s) for r in tl.breakdown for s in r.steps] if by else [("", s) for s in tl.steps]
    )

    def row(key: str, s: WindowReport) -> dict[str, object]:
        d = window_dict(s, zeros)
        return {
            **({"key": key} if by else {}),
            **csvout.instant("start", s.start_ts, tz),
            **csvout.instant("cutoff", s.cutoff_ts, tz),
            **{f: d[f] for f in CSV_FIELDS[4:]},
        }

    return csvout.render(("key", *CSV_FIELDS) if by else CSV_FIELDS, (row(k, s) for k, s in keyed))


# ---- the terminal chart ---------------------------------------------------------------------


def compact(n: float) -> str:
    """1234 -> 1.2k, 5_600_000 -> 5.6M."""
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.1f}{unit}"
    return f"{n:.0f}" if float(n).is_integer() else f"{n:.2f}"


def sparkline(values: list[float], top: float) -> str:
    """One character per value; 0 is a blank, anything above 0 at least the lowest block."""
    out = []
    for v in values:
        if v <= 0 or top <= 0:
            out.append(" ")
        else:
            out.append(BLOCKS[min(len(BLOCKS), max(1, math.ceil(v / top * len(BLOCKS)))) - 1])
    return "".join(out)


def _columns(steps: tuple[WindowReport, ...], width: int) -> tuple[int, list[list[WindowReport]]]:
    per = max(1, math.ceil(len(steps) / width))
    return per, [list(steps[i : i + per]) for i in range(0, len(steps), per)]


STEP_HEADER = ("step start", "input", "output", "cached", "hit", "avg/s", "uncov.")


def _row(*cells: str) -> str:
    widths = (18, 11, 10, 10, 6, 8, 11)  # within 80 columns
    first = pad(cells[0], widths[0])
    rest = [pad(c, wd, right=True) for c, wd in zip(cells[1:], widths[1:], strict=True)]
    return " ".join([first, *rest]).rstrip()


def label(ts: int, tz: ZoneInfo) -> str:
    """A step's start as the chart and table name it, with its offset: ``11-30 09:00 +08:00``
    (a DST change shows in the offset, not as a missing or repeated hour)."""
    local = datetime.fromtimestamp(ts, tz)
    offset = local.strftime("%z")
    return f"{local:%m-%d %H:%M} {offset[:3]}:{offset[3:5]}"


def _step_row(s: WindowReport, tz: ZoneInfo, zeros: bool) -> str:
    """One step of the table; ``?`` where its figures are unknown (``zeros``: 0)."""
    inp, out, cached, hit, avg, _gen, _requests = figure_cells(s, zeros)
    uncovered = format_duration(s.uncovered_seconds, "words")
    return _row(label(s.start_ts, tz), inp, out, cached, hit, avg, uncovered)


def _steps_said(tl: Timeline, per: int) -> str:
    """``per`` steps in words: ``1 h``, ``90 min``; a calendar step as ``day``, ``2 days``."""
    if tl.step_seconds is None:
        return f"{per} {tl.calendar}{'s' if per > 1 else ''}"
    return format_duration(per * tl.step_seconds, "unit-words")


def render_text(tl: Timeline, zone: ZoneChoice | None = None, zeros: bool = False) -> str:
    tz = ZoneInfo(tl.tz)
    # The header names the zone; where it came from (when not --tz) closes the output, so the
    # header stays within 80 columns.
    zone_note = (
        [f"zone: {printable(zone.label)}"] if zone is not None and zone.source != "--tz" else []
    )
    w = tl.window
    steps = f"by {tl.calendar}" if tl.calendar is not None else f"in {_steps_said(tl, 1)} steps"
    head = f"vLLM tokens: {w.name} {steps}"
    as_of = f"as of {format_instant(tl.cutoff_ts, tz)} ({printable(tl.tz)})"
    # one line within 80 columns, else two
    lines = [f"{head}, {as_of}"] if len(head) + len(as_of) + 2 <= 80 else [head, as_of]
    if not tl.steps:
        return "\n".join([*lines, "the window is empty", *zone_note]) + "\n"
    lines += _chart(tl, tz)
    inp, out, cached, hit, avg, _gen, _requests = figure_cells(w, zeros)
    lines += [
        "",
        f"input {inp}  output {out}  cached {cached}  hit rate {hit}",
        f"avg {avg} tok/s  uncovered {format_duration(w.uncovered_seconds, 'words')}"
        + ("" if w.complete else "  INCOMPLETE: figures are a lower bound"),
    ]
    if len(tl.steps) <= TABLE_MAX_STEPS:
        lines += ["", _row(*STEP_HEADER), *(_step_row(s, tz, zeros) for s in tl.steps)]
        # --window 7d --by day: 8 steps, the first and last partial days, said under the table
        said = partial_note(tl.steps, tl.calendar, tz) if tl.calendar is not None else []
        lines += ["", said[0]] if said else []
    else:
        lines += ["", f"{len(tl.steps)} steps: --csv or --json prints every one"]
    if tl.uncovered:
        lines += ["", "uncovered spans:"]
        for u in tl.uncovered[-MAX_SPANS_SHOWN:]:
            lines.append(
                f"  {label(u.start_ts, tz)} -> {label(u.end_ts, tz)}  "
                f"{pad(format_duration(u.seconds, 'words'), 12, right=True)}  {u.cause}"
            )
        if len(tl.uncovered) > MAX_SPANS_SHOWN:
            lines.append(
                f"  ... and {len(tl.uncovered) - MAX_SPANS_SHOWN} earlier (--json lists all)"
            )
    if any(s.known == "unknown" for s in tl.steps) and not zeros:
        lines += ["", f"{UNKNOWN_MARK}: unknown (no second of the step vouched for), never 0"]
    if tl.breakdown_by is not None:
        lines += _rows_text(tl, tz, zeros)
    lines += zone_note
    return "\n".join(lines) + "\n"


def _chart(tl: Timeline, tz: ZoneInfo) -> list[str]:
    """The sparklines of input, output, cached and uncovered time, one column per few steps,
    under a line saying how long a column is, over the first and last instants."""
    per, cols = _columns(tl.steps, CHART_COLUMNS)
    lines = [
        f"one column = {_steps_said(tl, per)}; the scale is the column maximum",
        "",
    ]
    series = (
        ("input", [sum(s.input_tokens for s in c) for c in cols]),
        ("output", [sum(s.output_tokens for s in c) for c in cols]),
        ("cached", [sum(s.cached_tokens for s in c) for c in cols]),
    )
    for name, values in series:
        top = max(values)
        line = sparkline([float(v) for v in values], top)
        lines.append(f"{pad(name, 8)} {line}  max {compact(top)}")
    fractions = [
        sum(s.uncovered_seconds for s in c) / max(1, sum(s.wall_seconds for s in c)) for c in cols
    ]
    lines.append(f"{pad('uncov.', 8)} {sparkline(fractions, 1.0)}  of time")
    left, right = label(tl.steps[0].start_ts, tz), label(tl.window.cutoff_ts, tz)
    gap = max(1, len(cols) - len(left) - len(right))
    lines.append(f"{pad('', 8)} {left}{' ' * gap}{right}")
    return lines


def _rows_text(tl: Timeline, tz: ZoneInfo, zeros: bool) -> list[str]:
    """Per key (``--by``): its totals, then its steps (or its output as a strip if too many)."""
    lines = ["", f"by {tl.breakdown_by}:"]
    if not tl.breakdown:
        lines.append("  (no readable ledger in the selection)")
    for r in tl.breakdown:
        w = r.window
        inp, out, cached, hit, avg, _gen, _requests = figure_cells(w, zeros)
        lines += [
            "",
            f"-- {printable(r.key)} --",
            f"input {inp}  output {out}  cached {cached}  hit rate {hit}  avg {avg} tok/s  "
            f"uncovered {format_duration(w.uncovered_seconds, 'words')}"
            + ("" if w.complete else "  INCOMPLETE"),
        ]
        if len(r.steps) <= TABLE_MAX_STEPS:
            lines += [_row(*STEP_HEADER), *(_step_row(s, tz, zeros) for s in r.steps)]
        else:
            _per, cols = _columns(r.steps, CHART_COLUMNS)
            values = [float(sum(s.output_tokens for s in c)) for c in cols]
            top = max(values)
            lines.append(f"{pad('output', 8)} {sparkline(values, top)}  max {compact(top)}")
    return lines


__all__ = [
    "CSV_FIELDS",
    "compact",
    "label",
    "render_csv",
    "render_json",
    "render_text",
    "sparkline",
    "timeline_dict",
]
