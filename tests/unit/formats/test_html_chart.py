"""The HTML page's chart, coverage strip and legend as inline SVG (formats/html_chart.py)."""

from __future__ import annotations

from pathlib import Path

from tests.ledgers import ev, write_ledger
from vllm_ledger.formats.html_chart import (
    CAUSE_COLORS,
    COVERED_COLOR,
    SERIES_COLORS,
    _fmt_axis,
    _nice_top,
    chart_svg,
    legend,
)
from vllm_ledger.read.timeline import build_timeline

AT = 1_795_917_600  # 2026-11-29 10:00:00 in Shanghai


def test_the_axis_top_is_a_round_number_and_labels_are_short() -> None:
    assert [_nice_top(v) for v in (0, 7, 130, 2400)] == [1.0, 10, 200, 2500]
    assert [_fmt_axis(v) for v in (0, 999, 1500, 2e6, 3e9)] == ["0", "999", "1.5k", "2M", "3G"]


def test_a_step_with_tokens_is_a_stacked_bar_over_a_green_strip(tmp_path: Path) -> None:
    write_ledger(
        tmp_path, "r1", start_ts=AT - 7200, end_ts=AT, events=[ev(AT - 3000, 900, 50, 300)]
    )
    tl = build_timeline([tmp_path], at_ts=AT, tz="Asia/Shanghai", clock=lambda: AT)
    svg = chart_svg(tl)
    assert svg.startswith('<svg id="chart"') and svg.endswith("</svg>")
    assert svg.count('<g shape-rendering="crispEdges">') == 1 and svg.count("</g>") == 2
    for colour in SERIES_COLORS.values():
        assert svg.count(f'fill="{colour}"') == 1
    assert (
        f'<rect id="strip" x="64" y="262" width="926" height="26" fill="{COVERED_COLOR}"/>' in svg
    )
    # Before the run nothing recorded: that span is drawn over the strip in its cause colour.
    assert f'fill="{CAUSE_COLORS["not_recording"]}"' in svg
    assert 'data-cause="not_recording"' in legend(tl)
    assert legend(tl).count("<li") == 5  # three series, covered, one cause
