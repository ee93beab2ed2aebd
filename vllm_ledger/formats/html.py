"""The Report as one self-contained HTML page: tables, an hourly chart and a coverage strip.

Nothing is fetched when the page is viewed: no scripts, fonts, images or style sheets from
anywhere; the charts are inline SVG and the styles inline CSS. Standard library only.

The page holds the five-window table, a stacked hourly chart of the last 7 days with a
coverage strip under it on the same time axis (``formats/html_chart.py``), and the per-instance
breakdown. Every figure in a table carries its exact value in
``data-window``/``data-field``/``data-value`` attributes, the same values as ``report --json``.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from vllm_ledger.formats.html_chart import chart_svg, legend
from vllm_ledger.formats.json import window_dict
from vllm_ledger.formats.text import rate
from vllm_ledger.outfile import write_file
from vllm_ledger.read.page import Page
from vllm_ledger.read.report import BreakdownRow, Report, WindowReport
from vllm_ledger.read.timeline import Timeline
from vllm_ledger.units import format_duration, format_instant

FIELDS = (
    ("input", "input"),
    ("output", "output"),
    ("cached", "cached"),
    ("hit_rate", "hit rate"),
    ("avg_speed", "avg tok/s"),
    ("gen_speed", "gen tok/s"),
    ("requests", "requests"),
    ("uncovered_seconds", "uncovered"),
)

CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { font: 15px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
  background: #fff; margin: 0 auto; padding: 12px; max-width: 1100px; }
h1 { font-size: 1.25em; margin: 0 0 4px; }
h2 { font-size: 1.05em; margin: 18px 0 6px; }
p { margin: 4px 0; }
.muted { color: #666; font-size: .9em; }
.scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 8px; border-bottom: 1px solid #e4e4e4; white-space: nowrap; }
th { text-align: left; font-weight: 600; background: #f6f6f6; }
td.n { text-align: right; }
tr.bad td.cov { color: #b00020; font-weight: 600; }
tr.first td, tr.first th { border-top: 2px solid #bbb; }
figure { margin: 8px 0; }
svg { display: block; width: 100%; height: auto; }
svg text { font: 11px system-ui, sans-serif; fill: #444; }
.legend { list-style: none; padding: 0; margin: 6px 0; display: flex; flex-wrap: wrap;
  gap: 4px 16px; font-size: .9em; }
.sw { display: inline-block; width: 11px; height: 11px; margin-right: 5px; vertical-align: -1px; }
@media (max-width: 640px) {
  body { font-size: 13px; padding: 8px; }
  th, td { padding: 2px 5px; }
  svg text { font-size: 22px; }
  svg .wide { display: none; }
}
@page { size: A4 landscape; margin: 8mm; }
@media print {
  body { font-size: 8pt; line-height: 1.25; max-width: none; padding: 0; }
  h1 { font-size: 1.2em; }
  h2 { margin: 6px 0 2px; }
  th, td { padding: 0 5px; }
  .scroll { overflow: visible; }
  figure { margin: 2px 0; }
  svg { max-height: 50mm; }
  .legend { margin: 2px 0; }
  section, figure, table { break-inside: avoid; }
  .noprint { display: none; }
}
"""


def write(page: Page, path: str | os.PathLike[str]) -> None:
    """Write ``page`` to ``path``: only as a regular file (a directory, FIFO or device there is
    refused with one line), and atomically: a reader never sees half."""
    text = render(page.report, page.timeline, page.instances)
    write_file(path, text.encode("utf-8"), flag="--html", example="--html usage.html")


# ---- rendering (pure) ------------------------------------------------------------------------


def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


def _when(ts: float, tz: ZoneInfo, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    return datetime.fromtimestamp(ts, tz).strftime(fmt)


def _shown(field: str, value: Any) -> str:
    if value is None:
        return "–"
    if field == "hit_rate":
        return f"{value * 100:.1f}%"
    if field in ("avg_speed", "gen_speed"):
        return rate(value)
    if field == "uncovered_seconds":
        return format_duration(int(value), "words")
    return f"{value:,}"


def _cells(w: WindowReport) -> str:
    d = window_dict(w)
    cells = []
    for field, _label in FIELDS:
        cells.append(
            f'<td class="n" data-window="{_e(w.name)}" data-field="{field}" '
            f"data-value='{_e(json.dumps(d[field]))}'>{_e(_shown(field, d[field]))}</td>"
        )
    problems = ", ".join(f"{k} {v}" for k, v in w.problems.items()) or "no problems"
    cells.append(
        f'<td class="cov" data-window="{_e(w.name)}" data-field="complete" '
        f"data-value='{json.dumps(w.complete)}' title=\"{_e(problems)}\">"
        f"{'complete' if w.complete else 'INCOMPLETE'}</td>"
    )
    return "".join(cells)


def _header(first: Iterable[str]) -> str:
    cols = [*first, *(label for _f, label in FIELDS), "coverage"]
    return "<tr>" + "".join(f"<th>{_e(c)}</th>" for c in cols) + "</tr>"


def windows_table(windows: Sequence[WindowReport], tz: ZoneInfo) -> str:
    """The windows, each with its start -> cutoff in the zone (with the offset)."""
    rows = [_header(["window", "start → cutoff"])]
    for w in windows:
        bad = "" if w.complete else ' class="bad"'
        span = f"{format_instant(w.start_ts, tz)} → {format_instant(w.cutoff_ts, tz)}"
        rows.append(
            f'<tr{bad}><th>{_e(w.name)}</th><td class="span" data-window="{_e(w.name)}">'
            f"{_e(span)}</td>{_cells(w)}</tr>"
        )
    return f'<div class="scroll"><table id="windows">{"".join(rows)}</table></div>'


def breakdown_table(rows: Sequence[BreakdownRow], table_id: str, key_label: str) -> str:
    if not rows:
        return '<p class="muted">no ledger rows</p>'
    out = [_header([key_label, "window"])]
    for row in rows:
        for i, w in enumerate(row.windows):
            classes = " ".join(
                c for c in ("first" if i == 0 else "", "" if w.complete else "bad") if c
            )
            cls = f' class="{classes}"' if classes else ""
            key = f"<th>{_e(row.key)}</th>" if i == 0 else "<td></td>"
            out.append(
                f'<tr{cls} data-key="{_e(row.key)}">{key}<td>{_e(w.name)}</td>{_cells(w)}</tr>'
            )
    return f'<div class="scroll"><table id="{table_id}">{"".join(out)}</table></div>'


def _problem_notes(report: Report, tz: ZoneInfo) -> str:
    notes = []
    for wr in report.writers:
        if wr.state not in ("alive", "closed"):
            last = "never" if wr.last_ts is None else _when(wr.last_ts, tz)
            notes.append(
                f"run {wr.run_id} writer {wr.writer_rank} of {wr.expected_writers} "
                f"({wr.instance}): {wr.state}, last heartbeat {last}"
            )
    for f in report.files:
        notes.append(f"ledger {f.path}: {f.status} ({f.detail})")
    if not notes:
        return ""
    items = "".join(f"<li>{_e(n)}</li>" for n in notes)
    return (
        "<section><h2>Writers and files that cannot vouch</h2>"
        f'<ul class="muted">{items}</ul></section>'
    )


def render(report: Report, tl: Timeline, instances: Sequence[BreakdownRow]) -> str:
    tz = ZoneInfo(report.tz)
    w7 = tl.window
    title = f"vLLM token ledger, {_when(report.cutoff_ts, tz)} ({report.tz})"
    extra = ""
    if report.breakdown_by not in (None, "instance"):
        extra = (
            f"<section><h2>By {_e(report.breakdown_by)}</h2>"
            f"{breakdown_table(report.breakdown, 'breakdown', str(report.breakdown_by))}"
            "</section>"
        )
    chart_note = (
        f"Last 7 days in hours, {_when(w7.start_ts, tz, '%m-%d %H:%M')} to "
        f"{_when(w7.cutoff_ts, tz, '%m-%d %H:%M')}: input {w7.input_tokens:,}, "
        f"output {w7.output_tokens:,}, cached {w7.cached_tokens:,}, "
        f"uncovered {format_duration(w7.uncovered_seconds, 'words')}. The chart and strip cover "
        + (
            "every ledger under the roots."
            if report.instance_filter is None and report.model_filter is None
            else "the same instance and model filter as the tables."
        )
    )
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
<style>{CSS}</style>
</head>
<body>
<header>
<h1>{_e(title)}</h1>
<p class="muted">{report.runs} run(s), {len(report.writers)} writer(s); roots:
{_e(", ".join(report.roots))}</p>
</header>
<section>
<h2>Windows</h2>
{windows_table(report.windows, tz)}
</section>
<section>
<h2>Tokens per hour and coverage, last 7 days</h2>
<figure>
{chart_svg(tl)}
<figcaption class="muted noprint">{_e(chart_note)}</figcaption>
</figure>
{legend(tl)}
</section>
<section>
<h2>By instance</h2>
{breakdown_table(instances, "instances", "instance")}
</section>
{extra}
{_problem_notes(report, tz)}
<p class="muted">Unknown is never shown as zero: an incomplete window's figures are a lower bound.
Hit rate = cached / input; avg tok/s = output / wall seconds of the window; gen tok/s is the
decode-time-weighted speed of finished requests.</p>
</body>
</html>
"""
