"""The forms of a load ramp: its terminal table, its chart, and the four files the command
writes (ramp.png, ramp.html, ramp.json, ramp.csv). Pure: each takes the steps
(``plan.ramp.StepResult``) and the knee ``plan.ramp.find_knee`` named, and returns text or
bytes; none talks to the server or writes a file (the command writes what ``render_files``
returns). The chart needs matplotlib (the ``charts`` extra).

A step with failed requests gets a line under the table (how many, the first one's HTTP status
and the start of its answer, control characters escaped: ``formats/safe.printable``), and the
verdict says why no knee is drawn when a step had more than 1 % (``plan.ramp.errors_verdict``).
"""

from __future__ import annotations

import html
import io
import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from vllm_ledger.errors import MissingExtra
from vllm_ledger.formats import csvout
from vllm_ledger.formats.safe import printable
from vllm_ledger.formats.table import aligned
from vllm_ledger.plan.ramp import Knee, StepResult, error_text, errors_verdict


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1000:.0f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}"


def _num(x: float | int | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


COLUMNS = (
    "concurrency",
    "requests",
    "errors",
    "seconds",
    "output tokens",
    "server output",
    "tokens/s",
    "TTFT P50 ms",
    "TTFT P99 ms",
    "TPOT ms",
    "KV max %",
    "waiting max",
)
CSV_COLUMNS = (*COLUMNS, "first error status", "first error")


def table_rows(steps: Sequence[StepResult]) -> list[list[str]]:
    return [
        [
            str(s.concurrency),
            str(s.requests),
            str(s.errors),
            f"{s.seconds:.1f}",
            str(s.output_tokens),
            "-" if s.server_output_tokens is None else str(s.server_output_tokens),
            f"{s.throughput_tokens_per_s:.1f}",
            _ms(s.ttft_p50_s),
            _ms(s.ttft_p99_s),
            _ms(s.tpot_s),
            _pct(s.kv_usage_max),
            _num(s.waiting_max),
        ]
        for s in steps
    ]


def error_lines(steps: Sequence[StepResult]) -> list[str]:
    """A line per step with failed requests: how many, and the first one (escaped)."""
    return [
        printable(
            f"errors at concurrency {s.concurrency}: {s.errors} of {s.requests} requests "
            f"({s.error_fraction * 100:.1f} %), first {error_text(s)}"
        )
        for s in steps
        if s.errors
    ]


def render_table(steps: Sequence[StepResult], knee: Knee | None) -> str:
    """The steps as a terminal table, every column right-aligned, a line per step with errors,
    then the verdict."""
    lines = aligned([list(COLUMNS), *table_rows(steps)], right=range(len(COLUMNS)), safe=True)
    lines += error_lines(steps)
    lines.append(knee_text(knee, steps))
    return "\n".join(lines) + "\n"


def knee_text(knee: Knee | None, steps: Sequence[StepResult] = ()) -> str:
    """The verdict: the knee, not reached, or none drawn and why (too many errors)."""
    refused = errors_verdict(steps)
    if refused is not None:
        return printable(f"knee: {refused}")
    if knee is None:
        return "knee: not reached (throughput still rising, KV-cache usage under 90 %)"
    return f"knee: concurrency {knee.concurrency}: {knee.reason}"


def figure(steps: Sequence[StepResult], knee: Knee | None, title: str) -> Any:
    """The chart: throughput; TTFT P50/P99 and TPOT; KV usage and waiting, vs concurrency."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MissingExtra("matplotlib", "charts") from exc
    xs = [s.concurrency for s in steps]
    fig = Figure(figsize=(12, 4), dpi=100, layout="constrained")
    ax1, ax2, ax3 = fig.subplots(1, 3)
    ax1.plot(xs, [s.throughput_tokens_per_s for s in steps], "o-", color="C0", lw=2.5)
    ax1.set_title("throughput")
    ax1.set_ylabel("output tokens / s")
    nan = float("nan")
    ax2.plot(
        xs,
        [nan if s.ttft_p50_s is None else s.ttft_p50_s * 1000 for s in steps],
        "o-",
        color="C1",
        lw=2.5,
        label="TTFT P50",
    )
    ax2.plot(
        xs,
        [nan if s.ttft_p99_s is None else s.ttft_p99_s * 1000 for s in steps],
        "s--",
        color="C3",
        lw=2.5,
        label="TTFT P99",
    )
    ax2.plot(
        xs,
        [nan if s.tpot_s is None else s.tpot_s * 1000 for s in steps],
        "^-",
        color="C2",
        lw=2.5,
        label="TPOT",
    )
    ax2.set_title("latency")
    ax2.set_ylabel("ms")
    ax2.legend(loc="upper left")
    ax3.plot(
        xs,
        [nan if s.kv_usage_max is None else s.kv_usage_max * 100 for s in steps],
        "o-",
        color="C4",
        lw=2.5,
        label="KV-cache usage (max)",
    )
    ax3.axhline(90, color="C4", lw=1, ls=":")
    ax3.set_ylim(0, 100)
    ax3.set_ylabel("KV-cache usage %")
    ax3.set_title("KV cache and queue")
    ax4 = ax3.twinx()
    ax4.plot(
        xs,
        [nan if s.waiting_max is None else s.waiting_max for s in steps],
        "d-",
        color="C5",
        lw=2.5,
        label="waiting (max)",
    )
    ax4.set_ylabel("waiting requests")
    waits = [s.waiting_max for s in steps if s.waiting_max is not None]
    ax4.set_ylim(0, max([1.0, *waits]) * 1.1)
    handles = ax3.get_legend_handles_labels()[0] + ax4.get_legend_handles_labels()[0]
    ax3.legend(handles=handles, loc="upper left")
    for ax in (ax1, ax2, ax3):
        ax.set_xlabel("concurrency")
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.grid(True, alpha=0.3)
        if knee is not None:
            ax.axvline(knee.concurrency, color="red", ls="--", lw=1.5)
    fig.suptitle(title + ("" if knee is None else f" (knee at concurrency {knee.concurrency})"))
    return fig


def svg_of(fig: Any) -> str:
    """The figure as an inline <svg> element (text drawn as paths: no fonts to fetch)."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path"}):
        fig.savefig(buf, format="svg")
    text = buf.getvalue()
    return text[text.index("<svg") :]


def render_html(steps: Sequence[StepResult], knee: Knee | None, title: str, svg: str) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>"
        for row in table_rows(steps)
    )
    verdict = [*error_lines(steps), knee_text(knee, steps)]
    notes = "".join(f"<p>{html.escape(x)}</p>" for x in verdict)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;margin:16px;color:#222;background:#fff}"
        ".chart svg{width:1150px;height:auto;display:block}"
        "table{border-collapse:collapse;margin-top:12px}"
        "th,td{border:1px solid #ccc;padding:3px 8px;text-align:right;font-size:13px}</style>"
        "</head><body>"
        f'<h1 style="font-size:18px">{html.escape(title)}</h1>'
        f"{notes}"
        f'<div class="chart">{svg}</div>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        "</body></html>\n"
    )


OUTPUT_NAMES = tuple(f"ramp.{k}" for k in ("png", "html", "json", "csv"))


def render_json(steps: Sequence[StepResult], knee: Knee | None, title: str) -> str:
    """``knee`` (null when not reached or not drawn), ``verdict`` (the line the table ends
    with), ``errors_over_limit`` (a step had more than 1 % errors: no knee drawn)."""
    doc = {
        "title": title,
        "knee": None if knee is None else asdict(knee),
        "verdict": knee_text(knee, steps),
        "errors_over_limit": errors_verdict(steps) is not None,
        "steps": [
            {**asdict(s), "throughput_tokens_per_s": s.throughput_tokens_per_s} for s in steps
        ],
    }
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def render_csv(steps: Sequence[StepResult]) -> str:
    """The table's rows in the one CSV dialect (``formats/csvout.py``: formula-safe cells, ``\\n``
    line ends), a figure with no value an empty cell."""
    return csvout.render(
        CSV_COLUMNS,
        (
            {
                **{c: None if v == "-" else v for c, v in zip(COLUMNS, row, strict=True)},
                "first error status": s.first_error_status,
                "first error": s.first_error or None,
            }
            for s, row in zip(steps, table_rows(steps), strict=True)
        ),
    )


def render_files(steps: Sequence[StepResult], knee: Knee | None, title: str) -> dict[str, bytes]:
    """The contents of ramp.png, ramp.html (self-contained, inline SVG), ramp.json and
    ramp.csv, by their suffix, in the order of ``OUTPUT_NAMES``."""
    fig = figure(steps, knee, title)
    png = io.BytesIO()
    fig.savefig(png, format="png")
    return {
        "png": png.getvalue(),
        "html": render_html(steps, knee, title, svg_of(fig)).encode("utf-8"),
        "json": render_json(steps, knee, title).encode("utf-8"),
        "csv": render_csv(steps).encode("utf-8"),
    }


__all__ = [
    "COLUMNS",
    "CSV_COLUMNS",
    "OUTPUT_NAMES",
    "error_lines",
    "figure",
    "knee_text",
    "render_csv",
    "render_files",
    "render_html",
    "render_json",
    "render_table",
    "svg_of",
    "table_rows",
]
