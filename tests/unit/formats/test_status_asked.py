"""What the status document answers when asked (``asked``): the digest's day and week and the
usage by key, adapter or user equal ``report`` of the same window, to the token; the ask is
read from the command line or from the end of the command a client sent over SSH, and from
nowhere else; the block is bounded and strict to parse."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.credited_ledgers import Call, write_credited_ledger
from tests.inproc import run_cli
from tests.unit.formats.test_status import GOOD, _worst_ports, _worst_report
from vllm_ledger.formats.status import MAX_STATUS_BYTES, StatusParseError, doc_dict, parse
from vllm_ledger.formats.status_asked import (
    ASKS,
    MAX_ASKED_BYTES,
    Asked,
    ask_of_original,
    asked_dict,
)
from vllm_ledger.formats.status_render import render
from vllm_ledger.read.attribution import Credited
from vllm_ledger.read.report import WindowReport
from vllm_ledger.read.whose import NotAttributed, WhoseRow, WhoseWindow

DAY = 1_795_996_800  # 2026-11-30 00:00 UTC
AT = DAY + 3 * 86400 + 4 * 3600  # 2026-12-03 04:00 UTC
YESTERDAY = DAY + 2 * 86400  # 2026-12-02


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four days of whose tokens: three keys, two adapters (one with a slash), two users (one
    not of a label's shape), a request without a key, one untagged and one cut short."""
    root = tmp_path_factory.mktemp("asked") / "usage"
    calls = []
    for day in range(4):
        t = DAY + day * 86400 + 3600
        calls += [
            Call(
                t + 10, "team-a", "tiny", "alice", prompt=100_000 * (day + 1), gen=2_000, cached=64
            ),
            Call(t + 20, "key:1a2b3c4d", "org/tiny-lora", "bob smith", prompt=4_000, gen=900),
            Call(t + 30, "", "tiny", prompt=300 + day, gen=30),
            Call(t + 40, prompt=50, gen=10, untagged=True),
            Call(t + 50, "team-b", "tiny", "alice", prompt=20, gen=2, aborted=True),
        ]
    for day in range(4):  # one run a day: each closed cleanly
        write_credited_ledger(
            root,
            f"run-{day}",
            start_ts=DAY + day * 86400,
            end_ts=DAY + day * 86400 + 86400 - 1 if day < 3 else AT - 60,
            calls=[c for c in calls if DAY + day * 86400 <= c.ts < DAY + (day + 1) * 86400],
            port=19001,
            heartbeat_every_s=3600.0,
        )
    return root


BASE = ("--at", str(AT), "--tz", "UTC")


def _json(*args: str, env: dict[str, str] | None = None) -> Any:
    code, out, err = run_cli(*args, *BASE, env=env)
    assert (code, err) == (0, ""), err
    return json.loads(out)


def _asked(root: Path, ask: str | None, env: dict[str, str] | None = None) -> Any:
    args = ("--ask", ask) if ask else ()
    return _json("status", "--root", str(root), "--no-health", *args, env=env).get("asked")


def _rows(report_whose: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [
        {"key": r["value"], "input": r["input"], "output": r["output"], "cached": r["cached"],
         "requests": r["requests"]}
        for r in report_whose["windows"][name]["rows"]
    ]  # fmt: skip


def _same_window(asked: dict[str, Any], report_window: dict[str, Any]) -> None:
    for k, v in asked.items():
        assert report_window[k] == v, k


def test_the_digest_is_report_for_yesterday(root: Path) -> None:
    got = _asked(root, "digest")
    assert got["ask"] == "digest" and got["files_without"] == 0
    assert got["window"]["start"] == YESTERDAY and got["window"]["cutoff"] == YESTERDAY + 86400
    for by in ("key", "adapter"):
        report = _json("report", "--root", str(root), "--window", "yesterday", "--by", by, "--json")
        _same_window(got["window"], report["windows"]["yesterday"])
        whose = report["whose"]["windows"]["yesterday"]
        assert got["by"][by]["rows"] == _rows(report["whose"], "yesterday")[:5]
        na = whose["not_attributed"]
        assert got["by"][by]["not_attributed"] == {
            "input": na["input"], "output": na["output"], "requests_aborted": na["requests_aborted"]
        }  # fmt: skip
    # team-b's one request was cut short: a row of no tokens (its requests_aborted in report)
    assert [r["key"] for r in got["by"]["key"]["rows"]] == ["team-a", "key:1a2b3c4d", "", "team-b"]
    assert [r["key"] for r in got["by"]["adapter"]["rows"]] == ["tiny", "org/tiny-lora"]
    assert got["by"]["key"]["rows"][0]["input"] == 300_000
    assert got["window"]["input"] == 300_000 + 4_000 + 302 + 50 + 20


def test_the_weeks_digest_is_report_since_a_week_ago_until_today(root: Path) -> None:
    got = _asked(root, "digest-week")
    start, end = DAY + 3 * 86400 - 7 * 86400, DAY + 3 * 86400
    assert (got["window"]["start"], got["window"]["cutoff"]) == (start, end)
    report = _json(
        "report", "--root", str(root), "--since", str(start), "--until", str(end), "--by", "key",
        "--json",
    )  # fmt: skip
    _same_window(got["window"], report["windows"]["period"])
    assert got["by"]["key"]["rows"] == _rows(report["whose"], "period")[:5]
    assert got["by"]["key"]["rows"][0]["input"] == 600_000  # three full days of team-a


@pytest.mark.parametrize(
    ("ask", "window"), [("usage:user:month", "this-month"), ("usage:adapter:7d", "7d"),
                        ("usage:key:today", "today")]
)  # fmt: skip
def test_usage_is_report_of_its_window_by_its_label(root: Path, ask: str, window: str) -> None:
    got = _asked(root, ask)
    by = ask.split(":")[1]
    report = _json("report", "--root", str(root), "--window", window, "--by", by, "--json")
    _same_window(got["window"], report["windows"][window])
    rows = _rows(report["whose"], window)
    if by == "user":  # "bob smith" has no label's shape: left out, counted
        assert [r["key"] for r in rows] == ["alice", "bob smith", ""]
        assert got["by"]["user"]["rows"] == [rows[0], rows[2]]
        assert got["by"]["user"]["truncated"] == 1
    else:
        assert got["by"][by]["rows"] == rows and got["by"][by]["truncated"] == 0


def test_the_ask_comes_from_the_end_of_the_clients_command_only(root: Path) -> None:
    sent = "cd /c && PYTHONPATH=/c exec python3 -m vllm_ledger status --root /u --ask digest"
    got = _asked(root, None, env={"SSH_ORIGINAL_COMMAND": sent})
    assert got is not None and got["ask"] == "digest"
    for other in ("status --ask digest; touch /tmp/x", "status --ask 'digest", "--ask usage:key"):
        assert _asked(root, None, env={"SSH_ORIGINAL_COMMAND": other}) is None


@pytest.mark.parametrize(
    ("original", "word"),
    [
        ("x --ask digest", "digest"),
        ("x --ask 'usage:user:7d'", "usage:user:7d"),
        ("x --ask digest-week", "digest-week"),
        ("x --ask digest extra", None),
        ("x --ask DIGEST", None),
        ("x --ask usage:tenant:today", None),  # not in the vocabulary
        ("x --ask $(touch /tmp/x)", None),
        ("x --ask 'unbalanced", None),
        ("x " * 3000 + "--ask digest", None),  # too long to read at all
        ("", None),
        (None, None),
    ],
)
def test_ask_of_original(original: str | None, word: str | None) -> None:
    got = ask_of_original(original)
    assert (got.word if got else None) == word


def _whose(by: str, rows: list[WhoseRow]) -> WhoseWindow:
    w = WindowReport("yesterday", 0, 86400, 0, 0, 0, 0, 0, 0.0, 0, True)
    na = NotAttributed(-(10**15), -(10**15), 0, 0, {"aborted": Credited()}, requests_aborted=10**15)
    return WhoseWindow("yesterday", 0, 86400, by, tuple(rows), na, w, folded=10**15)  # type: ignore[arg-type]


def test_the_worst_asked_block_fits_its_bound_and_stays_whole_before_ports() -> None:
    big = 10**15
    rows = [WhoseRow(f"{i}" + "x" * 63, big, big, big, big) for i in range(20)]
    for ask in ("digest", "usage:user:month"):
        a = ASKS[ask]
        window = _worst_report().windows[0]
        asked = Asked(a, window, {by: _whose(by, rows) for by in a.bys})
        text = render(_worst_report(), asked=asked)
        block = json.dumps(json.loads(text)["asked"], separators=(",", ":"))
        assert len(block) + len(',"asked":') < MAX_ASKED_BYTES, ask
        got = parse(text.encode()).asked
        assert got is not None and got.ask.word == ask
        # beside 16 port rows at their largest: the document answers the ask, so ports go
        # (counted) and the answer stays whole
        text = render(_worst_report(), _worst_ports(16), asked=asked)
        assert len(text) + 1 <= MAX_STATUS_BYTES
        doc = parse(text.encode())
        assert doc.instances is not None and 0 < len(doc.instances) < 16
        assert doc.instances_truncated == 16 - len(doc.instances)
        assert doc.asked is not None
        for _by, keys in doc.asked.by:
            assert (len(keys.rows), keys.truncated) == (a.rows, 20 - a.rows)


WINDOW = {
    "start": YESTERDAY, "cutoff": YESTERDAY + 86400, "input": 100, "output": 10, "cached": 5,
    "requests": 2, "hit_rate": 0.05, "avg_speed": 0.001, "gen_speed": 20.0,
    "uncovered_seconds": 0, "complete": True, "problems": {},
}  # fmt: skip
ROWS: dict[str, Any] = {
    "rows": [{"key": "team-a", "input": 90, "output": 9, "cached": 5, "requests": 1},
             {"key": "org/tiny", "input": 1, "output": 1, "cached": 0, "requests": 1}],
    "truncated": 0, "not_attributed": {"input": 9, "output": 0, "requests_aborted": 0},
    "folded": 0,
}  # fmt: skip
ASKED = {"ask": "usage:adapter:today", "window": WINDOW, "by": {"adapter": ROWS},
         "files_without": 1}  # fmt: skip


def test_an_asked_block_round_trips_through_the_parser() -> None:
    doc = parse(json.dumps({**GOOD, "asked": ASKED}).encode())
    assert doc.asked is not None and doc.asked.window.name == "today"
    assert doc_dict(doc)["asked"] == ASKED
    assert parse(json.dumps(GOOD).encode()).asked is None


def _bad_row(**change: Any) -> dict[str, Any]:
    return {**ASKED, "by": {"adapter": {**ROWS, "rows": [{**ROWS["rows"][0], **change}]}}}


@pytest.mark.parametrize(
    "asked",
    [
        {**ASKED, "ask": "usage:adapter:today; rm -rf /"},
        {**ASKED, "ask": "usage:tenant:today"},
        {**ASKED, "by": {"key": ROWS}},  # not the breakdown asked for
        {**ASKED, "by": {"adapter": ROWS, "key": ROWS}},
        {**ASKED, "window": {**WINDOW, "cached": 101}},
        {**ASKED, "window": {**WINDOW, "problems": {"made_up": 1}}},
        {**ASKED, "window": "x"},
        {**ASKED, "files_without": -1},
        _bad_row(key="\x1b]8;;http://evil\x07x"),
        _bad_row(key="\u202eevil"),
        _bad_row(key="http://evil.example"),
        _bad_row(key="a b"),
        _bad_row(key="x" * 65),
        _bad_row(input=-1),
        _bad_row(cached=91),
        {**ASKED, "by": {"adapter": {**ROWS, "rows": ROWS["rows"] * 2}}},
        {**ASKED, "by": {"adapter": {**ROWS, "rows": [ROWS["rows"][0]] * 11}}},
        [],
    ],
)
def test_a_hostile_asked_block_rejects_the_document(asked: object) -> None:
    with pytest.raises(StatusParseError):
        parse(json.dumps({**GOOD, "asked": asked}).encode())


def test_asked_dict_counts_values_of_no_labels_shape() -> None:
    rows = [WhoseRow("a b", 10, 1, 0, 1), WhoseRow("org/m", 5, 1, 0, 1), WhoseRow("", 1, 0, 0, 1)]
    a = ASKS["usage:adapter:today"]
    got = asked_dict(Asked(a, _worst_report().windows[0], {"adapter": _whose("adapter", rows)}), {})
    assert [r["key"] for r in got["by"]["adapter"]["rows"]] == ["org/m", ""]
    assert got["by"]["adapter"]["truncated"] == 1
