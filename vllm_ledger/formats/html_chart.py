"""The HTML page's chart: stacked hourly bars of the last 7 days and, on the same time axis, the
coverage strip, as inline SVG, and its legend. Standard library only.

Bars stack cached input, uncached input and output, so a bar's height is input + output; the
strip is green where every expected writer vouched and coloured by cause where not.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from vllm_ledger.read.timeline import CAUSE_TEXT, CAUSES, Timeline
from vllm_ledger.units import format_duration

# Series and causes keep these exact colours (the browser test looks for them).
SERIES_COLORS = {"cached": "#4e79a7", "uncached": "#a0cbe8", "output": "#f28e2b"}
SERIES_TEXT = {"cached": "input, cached", "uncached": "input, not cached", "output": "output"}
COVERED_COLOR = "#59a14f"
CAUSE_COLORS = {
    "write_failed": "#76b7b2",
    "queue_overflow": "#ff9da7",
    "rejected_input": "#9c755f",
    "unclean_exit": "#b07aa1",
    "heartbeat_stale": "#edc948",
    "writer_missing": "#e15759",
    "not_recording": "#9d9d9d",
}

# SVG geometry, in viewBox units.
VIEW_W = 1000
PLOT_X0, PLOT_X1 = 64, 990
CHART_Y0, CHART_Y1 = 12, 232
STRIP_Y0, STRIP_Y1 = 262, 288
VIEW_H = 300
MIN_BAR_H = 1.5  # a step with any tokens stays visible
MIN_SPAN_W = 2.0  # so does a one-second uncovered span


def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


def _when(ts: float, tz: ZoneInfo, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    return datetime.fromtimestamp(ts, tz).strftime(fmt)


def _nice_top(value: float) -> float:
    if value <= 0:
        return 1.0
    mag = 10 ** math.floor(math.log10(value))
    for m in (1, 2, 2.5, 5, 10):
        if value <= m * mag:
            return m * mag
    return 10 * mag  # pragma: no cover


def _fmt_axis(n: float) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            v = n / size
            return f"{v:.0f}{unit}" if v.is_integer() else f"{v:.1f}{unit}"
    return f"{n:.0f}"


# Where an instant falls on the chart's x axis.
_XScale = Callable[[float], float]


def chart_svg(tl: Timeline) -> str:
    """The stacked hourly bars and, on the same time axis, the coverage strip."""
    start, span = tl.window.start_ts, max(1, tl.window.cutoff_ts - tl.window.start_ts)

    def x(ts: float) -> float:
        return PLOT_X0 + (ts - start) / span * (PLOT_X1 - PLOT_X0)

    tz = ZoneInfo(tl.tz)
    top = _nice_top(max((s.input_tokens + s.output_tokens for s in tl.steps), default=0))
    parts = [
        f'<svg id="chart" viewBox="0 0 {VIEW_W} {VIEW_H}" role="img" '
        f'aria-label="tokens per hour and coverage over the last 7 days">',
        *_grid(tl, tz, x, top),
        '<g shape-rendering="crispEdges">',
        *_bars(tl, tz, x, top),
        *_strip(tl, tz, x),
        "</g>",
        f'<text class="wide" x="{PLOT_X0 - 6}" y="{(STRIP_Y0 + STRIP_Y1) / 2 + 4:.1f}" '
        f'text-anchor="end">coverage</text>',
        "</svg>",
    ]
    return "".join(parts)


def _grid(tl: Timeline, tz: ZoneInfo, x: _XScale, top: float) -> list[str]:
    """Three horizontal lines with token labels, a vertical line at each local midnight, and
    the cutoff's label."""
    start, cutoff = tl.window.start_ts, tl.window.cutoff_ts
    span = max(1, cutoff - start)
    ch = CHART_Y1 - CHART_Y0
    parts: list[str] = []
    for frac in (0.0, 0.5, 1.0):
        y = CHART_Y1 - frac * ch
        parts.append(
            f'<line x1="{PLOT_X0}" x2="{PLOT_X1}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="#dddddd" stroke-width="1"/>'
        )
        parts.append(
            f'<text x="{PLOT_X0 - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{_e(_fmt_axis(top * frac))}</text>"
        )
    day = datetime.fromtimestamp(start, tz).replace(hour=0, minute=0, second=0, microsecond=0)
    while True:
        day = (day + timedelta(days=1, hours=2)).replace(hour=0)
        ts = day.timestamp()
        if ts >= cutoff:
            break
        parts.append(
            f'<line x1="{x(ts):.2f}" x2="{x(ts):.2f}" y1="{CHART_Y0}" y2="{STRIP_Y1}" '
            f'stroke="#dddddd" stroke-width="1"/>'
        )
        if cutoff - ts > span / 6:  # leave room for the cutoff's label (about 70 px)
            parts.append(
                f'<text x="{x(ts) + 3:.2f}" y="{CHART_Y1 + 16}">'
                f"{_e(day.strftime('%a %m-%d'))}</text>"
            )
    parts.append(
        f'<text class="wide" x="{PLOT_X1}" y="{CHART_Y1 + 16}" text-anchor="end">'
        f"{_e(_when(cutoff, tz, '%m-%d %H:%M'))}</text>"
    )
    return parts


def _bars(tl: Timeline, tz: ZoneInfo, x: _XScale, top: float) -> list[str]:
    """A bar a step with tokens: cached input at the bottom, then uncached input, then output."""
    ch = CHART_Y1 - CHART_Y0
    parts: list[str] = []
    for s in tl.steps:
        x0, x1 = x(s.start_ts), x(s.cutoff_ts)
        stack = (
            ("cached", s.cached_tokens),
            ("uncached", s.input_tokens - s.cached_tokens),
            ("output", s.output_tokens),
        )
        if not any(v for _k, v in stack):
            continue
        label = (
            f"{_when(s.start_ts, tz, '%m-%d %H:%M')}–{_when(s.cutoff_ts, tz, '%H:%M')}: "
            f"input {s.input_tokens:,} (cached {s.cached_tokens:,}), output {s.output_tokens:,}, "
            f"uncovered {format_duration(s.uncovered_seconds, 'words')}"
        )
        y = float(CHART_Y1)
        parts.append(f"<g><title>{_e(label)}</title>")
        for key, v in stack:
            if v <= 0:
                continue
            h = max(MIN_BAR_H, v / top * ch)
            y -= h
            parts.append(
                f'<rect x="{x0:.2f}" y="{y:.2f}" width="{max(0.5, x1 - x0):.2f}" '
                f'height="{h:.2f}" fill="{SERIES_COLORS[key]}"/>'
            )
        parts.append("</g>")
    return parts


def _strip(tl: Timeline, tz: ZoneInfo, x: _XScale) -> list[str]:
    """The coverage strip: green, with the uncovered spans drawn over it in their cause colour."""
    pw = PLOT_X1 - PLOT_X0
    parts: list[str] = []
    parts.append(
        f'<rect id="strip" x="{PLOT_X0}" y="{STRIP_Y0}" width="{pw}" '
        f'height="{STRIP_Y1 - STRIP_Y0}" fill="{COVERED_COLOR}"/>'
    )
    for u in tl.uncovered:
        x0 = x(u.start_ts)
        w = max(MIN_SPAN_W, x(u.end_ts) - x0)
        x0 = min(x0, PLOT_X1 - w)
        a, b = _when(u.start_ts, tz, "%m-%d %H:%M:%S"), _when(u.end_ts, tz, "%m-%d %H:%M:%S")
        label = f"{a} – {b}: uncovered {format_duration(u.seconds, 'words')}, {CAUSE_TEXT[u.cause]}"
        parts.append(
            f'<rect x="{x0:.2f}" y="{STRIP_Y0}" width="{w:.2f}" '
            f'height="{STRIP_Y1 - STRIP_Y0}" fill="{CAUSE_COLORS[u.cause]}">'
            f"<title>{_e(label)}</title></rect>"
        )
    return parts


def legend(tl: Timeline) -> str:
    items = [
        f'<li><span class="sw" style="background:{SERIES_COLORS[k]}"></span>'
        f"{_e(SERIES_TEXT[k])}</li>"
        for k in ("cached", "uncached", "output")
    ]
    items.append(f'<li><span class="sw" style="background:{COVERED_COLOR}"></span>covered</li>')
    seconds: dict[str, int] = {}
    for u in tl.uncovered:
        seconds[u.cause] = seconds.get(u.cause, 0) + u.seconds
    for cause in CAUSES:
        if cause in seconds:
            items.append(
                f'<li data-cause="{cause}" data-seconds="{seconds[cause]}">'
                f'<span class="sw" style="background:{CAUSE_COLORS[cause]}"></span>'
                f"{_e(CAUSE_TEXT[cause])}: {_e(format_duration(seconds[cause], 'words'))}</li>"
            )
    return f'<ul class="legend">{"".join(items)}</ul>'
