"""The HTML page: each table cell with its exact value beside the shown one, the sections a
report asks for, the writers that cannot vouch, and the page written whole as a regular file."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.ledgers import three_ports
from vllm_ledger.errors import BadArgument
from vllm_ledger.formats import html
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.page import Page, build_page
from vllm_ledger.read.report import BreakdownRow, WindowReport, build_report

AT = 1_800_000_000.5  # 2027-01-15 16:00:00.5 in Shanghai
UTC = ZoneInfo("UTC")
HOUR = WindowReport(
    name="1h",
    start_ts=1_800_000_000 - 3600,
    cutoff_ts=1_800_000_000,
    input_tokens=1234,
    output_tokens=7200,
    cached_tokens=617,
    requests=3,
    decode_tokens=400,
    decode_seconds=8.0,
    uncovered_seconds=0,
    complete=True,
)


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LedgerSet]:
    tmp_path = tmp_path_factory.mktemp("ledgers")
    three_ports(tmp_path / "root", AT - 0.5)
    with LedgerSet.read([tmp_path / "root"], clock=lambda: AT) as ls:
        yield ls


def test_a_window_row_shows_each_figure_and_carries_its_exact_value() -> None:
    text = html.windows_table([HOUR], UTC)
    cells = re.findall(r'data-field="([a-z_]+)" data-value=\'([^\']*)\'[^>]*>([^<]*)<', text)
    assert cells == [
        ("input", "1234", "1,234"),
        ("output", "7200", "7,200"),
        ("cached", "617", "617"),
        ("hit_rate", "0.5", "50.0%"),
        ("avg_speed", "2.0", "2.00"),
        ("gen_speed", "50.0", "50.00"),
        ("requests", "3", "3"),
        ("uncovered_seconds", "0", "0 s"),
        ("complete", "true", "complete"),
    ]
    assert '<tr><th>1h</th><td class="span" data-window="1h">' in text
    assert "2027-01-15 07:00:00 +00:00 → 2027-01-15 08:00:00 +00:00" in text


def test_an_incomplete_window_is_marked_and_names_its_problems() -> None:
    bad = WindowReport(**{**HOUR.__dict__, "complete": False, "problems": {"gap": 2}})
    text = html.windows_table([bad], UTC)
    assert '<tr class="bad"><th>1h</th>' in text
    assert 'title="gap 2">INCOMPLETE</td>' in text


def test_a_breakdown_marks_each_keys_first_row_and_escapes_the_key() -> None:
    assert html.breakdown_table([], "instances", "instance") == (
        '<p class="muted">no ledger rows</p>'
    )
    text = html.breakdown_table([BreakdownRow("<a&b>", (HOUR, HOUR))], "t", "key")
    rows = re.findall(r"<tr[^>]*>", text)
    assert rows == [
        "<tr>",
        '<tr class="first" data-key="&lt;a&amp;b&gt;">',
        '<tr data-key="&lt;a&amp;b&gt;">',
    ]
    assert "<th>&lt;a&amp;b&gt;</th><td>1h</td>" in text and "<td></td><td>1h</td>" in text


def test_the_page_has_the_reports_sections_and_no_outside_resource(ledgers: LedgerSet) -> None:
    report = build_report(ledgers, at_ts=AT, by="model")
    page = build_page(ledgers, report)
    text = html.render(page.report, page.timeline, page.instances)
    assert re.findall(r"<h[12]>(.*?)</h[12]>", text) == [
        "vLLM token ledger, 2027-01-15 15:59:59 (Asia/Shanghai)",
        "Windows",
        "Tokens per hour and coverage, last 7 days",
        "By instance",
        "By model",
        "Writers and files that cannot vouch",
    ]
    assert (
        "<li>run run-b writer 0 of 1 (testhost:8001): stale, last heartbeat "
        "2027-01-15 15:30:00</li>" in text
    )
    assert "3 run(s), 3 writer(s)" in text
    assert "input 110, output 11, cached 40" in text
    assert "The chart and strip cover every ledger under the roots." in text
    assert not re.search(r"<(script|link|img|iframe)\b|https?:|url\(", text, re.I)
    assert [t for t in re.findall(r'<table id="([a-z]+)"', text)] == [
        "windows",
        "instances",
        "breakdown",
    ]


def test_a_filtered_page_says_so_and_names_no_breakdown_twice(ledgers: LedgerSet) -> None:
    report = build_report(ledgers, at_ts=AT, instance=8000)
    page = build_page(ledgers, report)
    text = html.render(page.report, page.timeline, page.instances)
    assert "the same instance and model filter as the tables." in text
    assert "By model" not in text and "cannot vouch" not in text


def test_write_puts_the_page_whole_and_refuses_a_folder(ledgers: LedgerSet, tmp_path: Path) -> None:
    report = build_report(ledgers, at_ts=AT)
    page: Page = build_page(ledgers, report)
    out = tmp_path / "page.html"
    html.write(page, out)
    assert out.read_text() == html.render(page.report, page.timeline, page.instances)
    with pytest.raises(BadArgument, match="--html"):
        html.write(page, tmp_path)
