"""The HTML page in a real headless Chromium: drawn where it should be, offline, one page in print.

Chromium is Debian's, started by the test on a file:// URL with its own profile folder and
stopped when it exits (every call has a timeout). Pixels are read back with PIL.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from tests.conftest import run_cli
from tests.ledgers import ev, write_ledger
from vllm_ledger.formats import html_chart

pytestmark = pytest.mark.e2e

CHROMIUM = "/usr/bin/chromium"
AT = 1795917600  # 2026-11-29 10:00:00 in Shanghai, on the hour
H = 3600
HOURS = 168
TRAFFIC_HOURS = (69, 88, 107, 128, 148, 165)  # hours since the 7d window's start
QUIET_HOURS = (5, 40, 75, 100, 120, 140, 160)


def _hex(c: str) -> tuple[int, int, int]:
    return (int(c[1:3], 16), int(c[3:5], 16), int(c[5:7], 16))


CHART_RGB = {_hex(c) for c in html_chart.SERIES_COLORS.values()}
STRIP_RGB = {_hex(c) for c in (html_chart.COVERED_COLOR, *html_chart.CAUSE_COLORS.values())}


def _history(root: Path) -> None:
    """Two instances. Uncovered: before AT-100h, AT-60h..AT-50h, AT-30h..AT-28h (a crash)."""
    events = [
        ev(AT - (HOURS - h) * H + 600, prompt=500 + 10 * h, gen=40, cached=256)
        for h in TRAFFIC_HOURS
    ]

    def between(a: float, b: float) -> list:
        return [e for e in events if a <= e[0] < b]

    write_ledger(
        root,
        "a1",
        start_ts=AT - 100 * H,
        end_ts=AT - 60 * H,
        events=between(AT - 100 * H, AT - 60 * H),
        heartbeat_every_s=29,
    )
    write_ledger(
        root,
        "a2",
        start_ts=AT - 50 * H,
        end_ts=AT - 30 * H,
        clean=False,
        events=between(AT - 50 * H, AT - 30 * H),
        heartbeat_every_s=29,
    )
    write_ledger(
        root,
        "a3",
        start_ts=AT - 28 * H,
        end_ts=AT,
        events=between(AT - 28 * H, AT),
        heartbeat_every_s=29,
    )
    write_ledger(
        root,
        "b1",
        start_ts=AT - 100 * H,
        end_ts=AT,
        port=8001,
        model="backup",
        heartbeat_every_s=29,
    )


def _chromium(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup.sh")
    profile = tmp_path / "profile"
    shutil.rmtree(profile, ignore_errors=True)
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-default-apps",
        "--disable-extensions",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        f"--user-data-dir={profile}",
        *args,
        url,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, start_new_session=True)


def _page_requests(net_log: Path) -> list[str]:
    """URLs the page asked for: requests made for the file:// document, not Chromium's own."""
    log = json.loads(net_log.read_text())
    types = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    urls = []
    for e in log["events"]:
        p = e.get("params") or {}
        if types.get(e["type"]) != "URL_REQUEST_START_JOB" or "url" not in p:
            continue
        for_page = p.get("initiator") != "not an origin" or "file://" in str(
            p.get("network_isolation_key", "")
        )
        if for_page:
            urls.append(p.get("url", ""))
    return urls


def _strip_and_chart(img: Image.Image) -> tuple[int, int, int, set[int], set[int]]:
    """(strip top, strip x0, strip x1, chart columns, strip rows) found by colour."""
    rgb = img.convert("RGB")
    w, h = rgb.size
    px = rgb.load()
    assert px is not None
    strip_rows = {y for y in range(h) if sum(px[x, y] in STRIP_RGB for x in range(w)) > w // 2}
    assert strip_rows, "no coverage strip drawn"
    top = min(strip_rows)
    assert max(strip_rows) - top < 60 and len(strip_rows) == max(strip_rows) - top + 1
    mid = (top + max(strip_rows)) // 2
    xs = [x for x in range(w) if px[x, mid] in STRIP_RGB]
    chart_cols = {
        x for x in range(w) for y in range(max(0, top - 400), top) if px[x, y] in CHART_RGB
    }
    return top, min(xs), max(xs) + 1, chart_cols, strip_rows


def test_page_in_chromium(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    _history(root)
    page = tmp_path / "page.html"
    code, out, err = run_cli(
        "report",
        "--root",
        str(root),
        "--at",
        str(AT + 0.5),
        "--json",
        "--by",
        "instance",
        "--html",
        str(page),
    )
    assert code == 0, err
    doc = json.loads(out)
    url = page.resolve().as_uri()

    # 1. The screenshot: chart bars where the traffic was, the strip coloured by cause.
    shot, net_log = tmp_path / "shot.png", tmp_path / "net.json"
    r = _chromium(
        tmp_path, url, f"--screenshot={shot}", "--window-size=1200,1600", f"--log-net-log={net_log}"
    )
    assert shot.exists(), r.stderr[-2000:]
    img = Image.open(shot)
    assert img.size == (1200, 1600)
    _top, x0, x1, chart_cols, strip_rows = _strip_and_chart(img)
    width = x1 - x0
    assert width > 900  # the SVG spans the page's width

    def col(hour: float) -> int:
        return round(x0 + hour / HOURS * width)

    for hour in TRAFFIC_HOURS:
        assert any(col(hour + 0.5) + d in chart_cols for d in (-1, 0, 1)), f"no bar at {hour}"
    for hour in QUIET_HOURS:
        assert not any(col(hour) + d in chart_cols for d in range(-3, 4)), f"a bar at {hour}"
    px = img.convert("RGB").load()
    assert px is not None
    mid = (min(strip_rows) + max(strip_rows)) // 2
    colour = {name: _hex(c) for name, c in html_chart.CAUSE_COLORS.items()}
    colour["covered"] = _hex(html_chart.COVERED_COLOR)
    expected = [
        (0, 68, "not_recording"),
        (68, 108, "covered"),
        (108, 118, "not_recording"),
        (118, 138, "covered"),
        (138, 140, "unclean_exit"),
        (140, 168, "covered"),
    ]
    for a, b, name in expected:
        for t in (a + 0.4, (a + b) / 2, b - 0.4):
            assert px[col(t), mid] == colour[name], (t, name, px[col(t), mid])

    # 2. No network: nothing in the page points anywhere, and Chromium fetched nothing for it.
    text = page.read_text()
    assert "http:" not in text and "https:" not in text
    assert net_log.exists()
    assert _page_requests(net_log) == []

    # 3. The numbers in its tables are report --json's.
    from tests.test_html import _expected, parse

    cells = parse(text).cells
    assert cells["windows"] == _expected(doc["windows"])
    want = {}
    for row in doc["breakdown"]["rows"]:
        want.update(_expected(row["windows"], row["key"]))
    assert cells["instances"] == want
    # +1: the crashed run's last second is not vouched for (coverage.TAIL_S).
    assert doc["windows"]["7d"]["uncovered_seconds"] == 80 * H + 1

    # 4. Printed, it is one page.
    pdf = tmp_path / "page.pdf"
    r = _chromium(tmp_path, url, f"--print-to-pdf={pdf}", "--no-pdf-header-footer")
    assert pdf.exists(), r.stderr[-2000:]
    data = pdf.read_bytes()
    assert len(re.findall(rb"/Type\s*/Page(?![A-Za-z])", data)) == 1
    assert re.search(rb"/Count\s+1(?![0-9])", data)

    # 5. On a phone-sized screen the chart and strip still span the width, drawn.
    phone = tmp_path / "phone.png"
    _chromium(tmp_path, url, f"--screenshot={phone}", "--window-size=390,900")
    _, px0, px1, phone_cols, _ = _strip_and_chart(Image.open(phone))
    assert px1 - px0 > 300 and phone_cols


def test_the_network_check_can_fail(tmp_path: Path) -> None:
    """The same check on a page that asks 127.0.0.1 for an image must see the request."""
    page = tmp_path / "bad.html"
    page.write_text('<!doctype html><img src="http://127.0.0.1:9/x.png"><p>x</p>')
    net_log = tmp_path / "net.json"
    _chromium(
        tmp_path,
        page.as_uri(),
        f"--screenshot={tmp_path / 'bad.png'}",
        "--window-size=400,300",
        f"--log-net-log={net_log}",
    )
    assert _page_requests(net_log) == ["http://127.0.0.1:9/x.png"]
