"""formats/timeline.py: the chart, table, CSV and JSON of a Timeline built by hand (no ledger)."""

from __future__ import annotations

import csv
import io
import json

from vllm_ledger.formats.timeline import (
    CSV_FIELDS,
    compact,
    render_csv,
    render_json,
    render_text,
    sparkline,
)
from vllm_ledger.read.report import WindowReport
from vllm_ledger.read.timeline import Timeline, UncoveredSpan
from vllm_ledger.units import format_duration

T0 = 1_800_000_000  # 2027-01-15 08:00:00 UTC, on the hour


def _w(
    start: int, hours: int, inp: int, out: int, cached: int, uncovered: int = 0, name: str = ""
) -> WindowReport:
    return WindowReport(
        name=name,
        start_ts=start,
        cutoff_ts=start + hours * 3600,
        input_tokens=inp,
        output_tokens=out,
        cached_tokens=cached,
        requests=1 if out else 0,
        decode_tokens=max(0, out - 1),
        decode_seconds=2.0 if out else 0.0,
        uncovered_seconds=uncovered,
        complete=uncovered == 0,
    )


def _timeline(
    steps: tuple[WindowReport, ...], uncovered: tuple[UncoveredSpan, ...] = ()
) -> Timeline:
    end = steps[-1].cutoff_ts if steps else T0
    window = WindowReport(
        name=f"{len(steps)}h",
        start_ts=T0,
        cutoff_ts=end,
        input_tokens=sum(s.input_tokens for s in steps),
        output_tokens=sum(s.output_tokens for s in steps),
        cached_tokens=sum(s.cached_tokens for s in steps),
        requests=sum(s.requests for s in steps),
        decode_tokens=sum(s.decode_tokens for s in steps),
        decode_seconds=sum(s.decode_seconds for s in steps),
        uncovered_seconds=sum(s.uncovered_seconds for s in steps),
        complete=all(s.complete for s in steps),
    )
    return Timeline(end + 0.25, end, "UTC", 3600, window, steps, uncovered)


THREE = (
    _w(T0, 1, 1000, 500, 250),
    _w(T0 + 3600, 1, 0, 0, 0, uncovered=1800),
    _w(T0 + 7200, 1, 3000, 2_000_000, 0),
)
GAP = (UncoveredSpan(T0 + 3600, T0 + 5400, "not_recording"),)


def test_span_text_compact_and_sparkline() -> None:
    assert [format_duration(s, "unit-words") for s in (3600, 5400, 86400, 90)] == [
        "1 h",
        "90 min",
        "1 d",
        "90 s",
    ]
    assert [compact(n) for n in (0, 999, 1234, 5_600_000, 2.5e9, 0.25)] == [
        "0",
        "999",
        "1.2k",
        "5.6M",
        "2.5G",
        "0.25",
    ]
    # 0 is blank, anything above 0 at least the lowest block, the top the full block
    assert sparkline([0, 1, 50, 100], 100) == " ▁▄█"
    assert sparkline([1, 2], 0) == "  "


def test_text_has_the_chart_the_totals_the_table_and_the_gaps() -> None:
    assert render_text(_timeline(THREE, GAP)) == (
        "vLLM tokens: 3h in 1 h steps, as of 2027-01-15 11:00:00 +00:00 (UTC)\n"
        "one column = 1 h; the scale is the column maximum\n"
        "\n"
        "input    ▃ █  max 3.0k\n"
        "output   ▁ █  max 2.0M\n"
        "cached   █    max 250\n"
        "uncov.    ▄   of time\n"
        "         01-15 08:00 +00:00 01-15 11:00 +00:00\n"
        "\n"
        "input 4,000  output 2,000,500  cached 250  hit rate 6.2%\n"
        "avg 185.23 tok/s  uncovered 30 min  INCOMPLETE: figures are a lower bound\n"
        "\n"
        "step start               input     output     cached    hit    avg/s      uncov.\n"
        "01-15 08:00 +00:00       1,000        500        250  25.0%     0.14         0 s\n"
        "01-15 09:00 +00:00           0          0          0      -     0.00      30 min\n"
        "01-15 10:00 +00:00       3,000  2,000,000          0   0.0%   555.56         0 s\n"
        "\n"
        "uncovered spans:\n"
        "  01-15 09:00 +00:00 -> 01-15 09:30 +00:00        30 min  not_recording\n"
    )
    assert max(len(line) for line in render_text(_timeline(THREE, GAP)).splitlines()) <= 80


def test_a_step_nobody_knows_is_a_question_mark_never_zero() -> None:
    """A step with no covered second and nothing counted: ``?`` in text, empty in CSV, null in
    JSON (``figures`` unknown); ``zeros`` prints 0 as before."""
    unknown = _w(T0 + 3600, 1, 0, 0, 0, uncovered=3600)
    tl = _timeline((THREE[0], unknown), ())
    lines = render_text(tl).splitlines()
    row = next(x for x in lines if x.startswith("01-15 09:00"))
    assert row.split() == ["01-15", "09:00", "+00:00", *"?????", "1", "h"]
    assert lines[-1] == "?: unknown (no second of the step vouched for), never 0"
    zeros = render_text(tl, zeros=True).splitlines()
    assert next(x for x in zeros if x.startswith("01-15 09:00")).split()[3:6] == ["0", "0", "0"]
    assert "?: unknown" not in "\n".join(zeros)
    rows = list(csv.DictReader(io.StringIO(render_csv(tl))))
    assert [(r["input"], r["avg_speed"], r["figures"]) for r in rows] == [
        ("1000", "0.138889", "exact"),
        ("", "", "unknown"),
    ]
    rows = list(csv.DictReader(io.StringIO(render_csv(tl, zeros=True))))
    assert [(r["input"], r["avg_speed"], r["figures"]) for r in rows] == [
        ("1000", "0.138889", "exact"),
        ("0", "0.0", "unknown"),
    ]
    doc = json.loads(render_json(tl))
    assert [(s["input"], s["decode_seconds"], s["figures"]) for s in doc["steps"]] == [
        (1000, 2.0, "exact"),
        (None, None, "unknown"),
    ]
    assert doc["window"]["figures"] == "lower_bound"


def test_text_of_an_empty_window() -> None:
    assert render_text(_timeline(())) == (
        "vLLM tokens: 0h in 1 h steps, as of 2027-01-15 08:00:00 +00:00 (UTC)\n"
        "the window is empty\n"
    )


def test_text_of_a_long_window_folds_columns_and_drops_the_table() -> None:
    steps = tuple(_w(T0 + i * 3600, 1, 10 * i, i, 0) for i in range(168))
    spans = tuple(
        UncoveredSpan(T0 + i * 3600, T0 + i * 3600 + 1, "rejected_input") for i in range(12)
    )
    lines = render_text(_timeline(steps, spans)).splitlines()
    assert lines[1] == "one column = 3 h; the scale is the column maximum"
    assert len(lines[3]) == len("input    ") + 56 + len("  max 1.7k")
    assert "168 steps: --csv or --json prints every one" in lines
    assert "step start" not in "\n".join(lines)
    assert lines[-1] == "  ... and 2 earlier (--json lists all)"
    assert sum(1 for x in lines if x.endswith("rejected_input")) == 10  # the latest ten


def test_csv_has_one_row_per_step() -> None:
    rows = list(csv.reader(io.StringIO(render_csv(_timeline(THREE, GAP)))))
    assert tuple(rows[0]) == CSV_FIELDS
    assert [",".join(r) for r in rows[1:]] == [
        f"2027-01-15T08:00:00+00:00,{T0},2027-01-15T09:00:00+00:00,{T0 + 3600},"
        "1000,500,250,0.25,0.138889,249.5,1,0,true,exact",
        f"2027-01-15T09:00:00+00:00,{T0 + 3600},2027-01-15T10:00:00+00:00,{T0 + 7200},"
        "0,0,0,,0.0,,0,1800,false,lower_bound",
        f"2027-01-15T10:00:00+00:00,{T0 + 7200},2027-01-15T11:00:00+00:00,{T0 + 10800},"
        "3000,2000000,0,0.0,555.555556,999999.5,1,0,true,exact",
    ]


def test_json_is_schema_1_with_every_step_and_span() -> None:
    out = render_json(_timeline(THREE, GAP))
    assert out.endswith("}\n")
    doc = json.loads(out)
    assert (doc["schema"], doc["at"], doc["cutoff"], doc["tz"], doc["step_seconds"]) == (
        1,
        T0 + 10800.25,
        T0 + 10800,
        "UTC",
        3600,
    )
    assert doc["window"]["name"] == "3h" and doc["window"]["output"] == 2_000_500
    assert [s["uncovered_seconds"] for s in doc["steps"]] == [0, 1800, 0]
    assert doc["uncovered_spans"] == [
        {"start": T0 + 3600, "end": T0 + 5400, "seconds": 1800, "cause": "not_recording"}
    ]
