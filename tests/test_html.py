"""The HTML page: self-contained, and its tables carry exactly the figures of `report --json`."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.conftest import run_cli
from tests.ledgers import ev, write_ledger
from vllm_ledger.formats import html as html_format
from vllm_ledger.formats import html_chart
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.page import build_page
from vllm_ledger.read.report import build_report
from vllm_ledger.read.timeline import build_timeline
from vllm_ledger.units import format_instant

AT = 1795917600  # 2026-11-29 10:00:00 in Shanghai, on the hour
SH = ZoneInfo("Asia/Shanghai")
H = 3600


class PageParser(HTMLParser):
    """Collects every table cell that carries a figure, and every rect in the chart."""

    def __init__(self) -> None:
        super().__init__()
        self.table: str | None = None
        self.row_key: str | None = None
        self.cells: dict[str, dict[tuple[str, str, str], object]] = {}
        self.rects: list[dict[str, str]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append(tag)
        if tag == "table":
            self.table = a.get("id", "")
            self.cells.setdefault(self.table, {})
        elif tag == "tr":
            self.row_key = a.get("data-key", "")
        elif tag == "td" and "data-field" in a and self.table is not None:
            key = (self.row_key or "", a["data-window"], a["data-field"])
            assert key not in self.cells[self.table], key
            self.cells[self.table][key] = json.loads(a["data-value"])
        elif tag == "rect":
            self.rects.append(a)

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.table = None


def parse(text: str) -> PageParser:
    p = PageParser()
    p.feed(text)
    return p


FIELDS = (
    "input",
    "output",
    "cached",
    "hit_rate",
    "avg_speed",
    "gen_speed",
    "requests",
    "uncovered_seconds",
    "complete",
)


def _expected(windows: dict, key: str = "") -> dict[tuple[str, str, str], object]:
    return {(key, name, f): w[f] for name, w in windows.items() for f in FIELDS}


def _two_instances(root: Path) -> None:
    write_ledger(
        root,
        "a1",
        start_ts=AT - 50 * H,
        end_ts=AT - 30 * H,
        port=8000,
        clean=False,
        events=[ev(AT - 40 * H + 5, prompt=1000, gen=100, cached=640, finished=[(100, 2.0)])],
        heartbeat_every_s=29,
    )
    write_ledger(
        root,
        "a2",
        start_ts=AT - 28 * H,
        end_ts=AT,
        port=8000,
        events=[ev(AT - 3 * H, prompt=300, gen=30, cached=0)],
        heartbeat_every_s=29,
    )
    write_ledger(
        root,
        "b1",
        start_ts=AT - 50 * H,
        end_ts=AT,
        port=8001,
        model="other",
        events=[ev(AT - 20 * H, prompt=77, gen=7, cached=32, finished=[(7, 0.5)])],
        heartbeat_every_s=29,
    )


def test_tables_equal_report_json(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    _two_instances(root)
    page = tmp_path / "page.html"
    code, out, err = run_cli(
        "report", "--root", str(root), "--at", str(AT + 0.5), "--json", "--html", str(page)
    )
    assert code == 0, err
    assert err.strip() == f"wrote {page}"  # the page's path, absolute
    doc = json.loads(out)
    p = parse(page.read_text())
    assert p.cells["windows"] == _expected(doc["windows"])
    # The report had no breakdown: the page asked for one by instance itself.
    code, out, err = run_cli(
        "report", "--root", str(root), "--at", str(AT + 0.5), "--json", "--by", "instance"
    )
    rows = json.loads(out)["breakdown"]["rows"]
    assert [r["key"] for r in rows] == ["testhost:8000", "testhost:8001"]
    want = {}
    for r in rows:
        want.update(_expected(r["windows"], r["key"]))
    assert p.cells["instances"] == want
    assert doc["windows"]["7d"]["input"] == 1377 and doc["windows"]["7d"]["complete"] is False
    # each window says its start -> cutoff in the report's zone, with the offset
    spans = dict(
        re.findall(r'<td class="span" data-window="([^"]+)">([^<]+)</td>', page.read_text())
    )
    assert spans == {
        name: f"{format_instant(w['start'], SH)} → {format_instant(w['cutoff'], SH)}"
        for name, w in doc["windows"].items()
    }
    assert spans["today"] == "2026-11-29 00:00:00 +08:00 → 2026-11-29 10:00:00 +08:00"


def test_a_breakdown_by_model_is_shown_too(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    _two_instances(root)
    page = tmp_path / "page.html"
    code, out, err = run_cli(
        "report",
        "--root",
        str(root),
        "--at",
        str(AT + 0.5),
        "--json",
        "--by",
        "model",
        "--html",
        str(page),
    )
    assert code == 0, err
    p = parse(page.read_text())
    want = {}
    for r in json.loads(out)["breakdown"]["rows"]:
        want.update(_expected(r["windows"], r["key"]))
    assert {k[0] for k in want} == {"tiny", "other"}
    assert p.cells["breakdown"] == want
    assert {k[0] for k in p.cells["instances"]} == {"testhost:8000", "testhost:8001"}


def test_the_page_needs_nothing_from_the_network(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    _two_instances(root)
    page = tmp_path / "page.html"
    with LedgerSet.read([root], clock=lambda: AT + 0.5) as ledgers:
        report = build_report(ledgers, at_ts=AT + 0.5)
        html_format.write(build_page(ledgers, report), page)
    text = page.read_text()
    assert not re.search(r"https?:|//[a-z0-9.-]+\.[a-z]{2,}", text, re.I)
    assert not re.search(r"<(script|link|img|iframe|object|embed)\b|@import|url\(", text, re.I)
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in text
    assert "@media print" in text and "@page" in text
    assert set(parse(text).tags) >= {"svg", "rect", "table"}


def test_chart_and_strip_follow_the_timeline(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    _two_instances(root)
    report = build_report([root], at_ts=AT + 0.5, clock=lambda: AT + 0.5)
    tl = build_timeline([root], at_ts=AT + 0.5, tz=report.tz, clock=lambda: AT + 0.5)
    text = html_format.render(report, tl, [])
    p = parse(text)
    colours = html_chart.SERIES_COLORS
    bars = [r for r in p.rects if r["fill"] in colours.values()]
    # Three hours had traffic: one with cached input, all with uncached input and output.
    assert sorted(r["fill"] for r in bars) == sorted(
        [colours["cached"], colours["cached"]] + [colours["uncached"]] * 3 + [colours["output"]] * 3
    )
    width = html_chart.PLOT_X1 - html_chart.PLOT_X0

    def hour_of(rect: dict[str, str]) -> int:
        return round((float(rect["x"]) - html_chart.PLOT_X0) / width * 168)

    assert sorted({hour_of(r) for r in bars}) == [128, 148, 165]
    strip = [r for r in p.rects if r["fill"] in html_chart.CAUSE_COLORS.values()]
    spans = [(u.start_ts - AT, u.end_ts - AT, u.cause) for u in tl.uncovered]
    # A dead writer's last second is not vouched for (coverage.TAIL_S).
    assert spans == [(-168 * H, -50 * H, "not_recording"), (-30 * H - 1, -28 * H, "unclean_exit")]
    assert [r["fill"] for r in strip] == [html_chart.CAUSE_COLORS[c] for *_x, c in spans]
    assert float(strip[1]["x"]) == pytest.approx(html_chart.PLOT_X0 + 138 / 168 * width, abs=0.01)
    assert 'data-cause="unclean_exit" data-seconds="7201"' in text


def test_an_empty_root_still_makes_a_page(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    code, _, err = run_cli("report", "--root", str(tmp_path), "--at", str(AT), "--html", str(page))
    assert code == 3, err  # nothing matched (docs/cli.md): the page is made all the same
    p = parse(page.read_text())
    assert p.cells["windows"][("", "7d", "input")] is None  # unknown, never 0
    assert "no ledger rows" in page.read_text()


def test_a_missing_folder_is_a_one_line_error(tmp_path: Path) -> None:
    code, _, err = run_cli(
        "report", "--root", str(tmp_path), "--html", str(tmp_path / "nope" / "page.html")
    )
    assert code == 2
    assert err == (
        f"vllm-ledger: error: --html {tmp_path}/nope/page.html: folder "
        f"{tmp_path}/nope does not exist; create it first\n"
    )
