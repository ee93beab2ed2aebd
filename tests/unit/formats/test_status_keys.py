"""The status document's top keys today (``keys_today``): the same rows as the ledger's whose
tokens, bounded in bytes, strict to parse, and only key names of a key's shape ever kept."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.credited_ledgers import Call, write_credited_ledger
from tests.inproc import run_cli
from tests.unit.formats.test_status import GOOD, _worst_ports, _worst_report
from vllm_ledger.formats.status import (
    MAX_BASE_BYTES,
    MAX_STATUS_BYTES,
    StatusParseError,
    doc_dict,
    parse,
)
from vllm_ledger.formats.status_keys import (
    MAX_KEYS_BYTES,
    MAX_STATUS_KEYS,
    keys_dict,
)
from vllm_ledger.formats.status_render import render
from vllm_ledger.read.attribution import Credited
from vllm_ledger.read.report import WindowReport
from vllm_ledger.read.whose import NotAttributed, WhoseRow, WhoseWindow

BIG = 10**15


def _today(rows: list[WhoseRow], **na: int) -> WhoseWindow:
    w = WindowReport("today", 0, 86400, 0, 0, 0, 0, 0, 0.0, 0, True)
    return WhoseWindow(
        "today",
        0,
        86400,
        "key",
        tuple(rows),
        NotAttributed(
            na.get("input", 0),
            na.get("output", 0),
            0,
            0,
            {"aborted": Credited()},
            requests_aborted=na.get("aborted", 0),
        ),
        w,
        folded=na.get("folded", 0),
    )


def test_the_top_five_keys_today_and_the_rest_counted() -> None:
    rows = [WhoseRow(f"team-{i}", 100 - i, 10, 5, 1) for i in range(7)]
    rows.insert(2, WhoseRow("\x1b]0;evil\x07", 99, 1, 0, 1))  # not a key's shape
    got = keys_dict(_today(rows, input=-3, output=4, aborted=2, folded=9))
    assert [r["key"] for r in got["rows"]] == ["team-0", "team-1", "team-2", "team-3", "team-4"]
    assert got["rows"][0] == {"key": "team-0", "input": 100, "output": 10, "cached": 5,
                              "requests": 1}  # fmt: skip
    assert got["truncated"] == 3  # two past the five, and the one of no key's shape
    assert got["not_attributed"] == {"input": -3, "output": 4, "requests_aborted": 2}
    assert got["folded"] == 9


def test_the_worst_case_keys_fit_their_bound_and_the_whole_document_still_fits() -> None:
    rows = [WhoseRow(f"{i}" + "x" * 63, BIG, BIG, BIG, BIG) for i in range(MAX_STATUS_KEYS)]
    today = _today(rows, input=-BIG, output=-BIG, aborted=BIG, folded=BIG)
    block = json.dumps(keys_dict(today), separators=(",", ":"))
    assert len(block) + len(',"keys_today":') < MAX_KEYS_BYTES
    text = render(_worst_report(), keys=today)  # the base and the keys: no row to drop
    assert len(text.encode()) < MAX_BASE_BYTES + MAX_KEYS_BYTES
    assert len(json.loads(text)["keys_today"]["rows"]) == MAX_STATUS_KEYS
    # 16 port rows with every count at its largest leave no room for the keys: the keys go
    # first, counted, and every port row stays.
    text = render(_worst_report(), _worst_ports(16, truncated=10**6), keys=today)
    assert len(text.encode()) <= MAX_STATUS_BYTES
    doc = parse(text.encode())
    assert doc.instances is not None and len(doc.instances) == 16
    assert doc.keys_today is not None
    assert len(doc.keys_today.rows) + doc.keys_today.truncated == MAX_STATUS_KEYS
    assert doc.keys_today.not_attributed_input == -BIG
    # With counts a fleet may really reach (10^12 tokens in every window of every port), the
    # five keys fit beside the 16 port rows.
    text = render(_worst_report(), _worst_ports(16, big=10**12), keys=today)
    got = json.loads(text)
    assert len(got["instances"]) == 16 and len(got["keys_today"]["rows"]) == MAX_STATUS_KEYS


def test_breakdown_rows_go_before_keys_and_keys_before_ports() -> None:
    rows = [WhoseRow(f"{i}" + "x" * 63, BIG, BIG, BIG, BIG) for i in range(MAX_STATUS_KEYS)]
    text = render(_worst_report("run", rows=40), _worst_ports(16), keys=_today(rows))
    got = json.loads(text)
    assert len(text) + 1 <= MAX_STATUS_BYTES
    # Every breakdown row went (the bot never reads them), then two keys, counted; no port.
    assert got["breakdown"] == {"by": "run", "rows": [], "truncated": 40}
    assert len(got["keys_today"]["rows"]) == 3 and got["keys_today"]["truncated"] == 2
    assert len(got["instances"]) == 16


def test_a_document_with_keys_round_trips_through_the_parser() -> None:
    keys = {
        "rows": [
            {"key": "team-a", "input": 1200, "output": 30, "cached": 64, "requests": 2},
            {"key": "key:1a2b3c4d", "input": 40, "output": 9, "cached": 0, "requests": 1},
            {"key": "", "input": 33, "output": 11, "cached": 0, "requests": 1},
            {"key": "other", "input": 3, "output": 1, "cached": 0, "requests": 1},
        ],
        "truncated": 0,
        "not_attributed": {"input": -5, "output": 2, "requests_aborted": 1},
        "folded": 12,
    }
    data = json.dumps({**GOOD, "keys_today": keys}).encode()
    doc = parse(data)
    assert doc.keys_today is not None
    assert [r.key for r in doc.keys_today.rows] == ["team-a", "key:1a2b3c4d", "", "other"]
    assert doc_dict(doc)["keys_today"] == keys
    assert parse(json.dumps(GOOD).encode()).keys_today is None  # a host from before: none


GOOD_ROW: dict[str, object] = {"key": "team-a", "input": 10, "output": 1, "cached": 0,
                               "requests": 1}  # fmt: skip
GOOD_KEYS = {
    "rows": [GOOD_ROW],
    "truncated": 0,
    "not_attributed": {"input": 0, "output": 0, "requests_aborted": 0},
    "folded": 0,
}


def _keys(**change: object) -> bytes:
    keys = json.loads(json.dumps(GOOD_KEYS))
    row = dict(keys["rows"][0])
    for k, v in change.items():
        if k.startswith("row_"):
            row[k[4:]] = v
        elif k.startswith("na_"):
            keys["not_attributed"][k[3:]] = v
        else:
            keys[k] = v
    keys["rows"] = [row, *keys["rows"][1:]] if "rows" not in change else change["rows"]
    return json.dumps({**GOOD, "keys_today": keys}).encode()


@pytest.mark.parametrize(
    "data",
    [
        _keys(row_key="\x1b]0;pwned\x07"),
        _keys(row_key="team\u202ea"),
        _keys(row_key="key:XYZ"),  # not 8 hex
        _keys(row_key="a b"),
        _keys(row_key="x" * 65),
        _keys(row_key=5),
        _keys(row_key="-leading-dash"),
        _keys(row_input=-1),
        _keys(row_input=1.5),
        _keys(row_input=10**16),
        _keys(row_cached=11),  # more cached than input
        _keys(row_requests="1"),
        _keys(rows=[GOOD_ROW] * 2),  # a key given twice
        _keys(rows=[{**GOOD_ROW, "key": f"k{i}"} for i in range(6)]),
        _keys(rows={"key": "x"}),
        _keys(truncated=-1),
        _keys(folded=True),
        _keys(na_input=-(10**16)),
        _keys(na_requests_aborted=-1),
        json.dumps({**GOOD, "keys_today": []}).encode(),
        json.dumps({**GOOD, "keys_today": {**GOOD_KEYS, "not_attributed": 3}}).encode(),
    ],
)
def test_hostile_keys_refuse_the_whole_document(data: bytes) -> None:
    with pytest.raises(StatusParseError):
        parse(data)


def test_the_status_command_carries_todays_keys_from_the_ledger(tmp_path: Path) -> None:
    t0 = int(time.time()) - 900
    root = tmp_path / "usage"
    calls = [
        Call(t0 + 10, "team-a", "tiny", prompt=120, gen=30, cached=64),
        Call(t0 + 20, "key:1a2b3c4d", "tiny", prompt=40, gen=9),
        Call(t0 + 30, prompt=5, gen=1, untagged=True),
        Call(t0 + 40, "team-a", "tiny", prompt=20, gen=2, aborted=True),
    ]
    write_credited_ledger(root, "r1", start_ts=t0, end_ts=t0 + 100, calls=calls, port=19001)
    code, out, err = run_cli("status", "--root", str(root), "--no-health", "--tz", "UTC")
    assert code == 0, err
    keys = json.loads(out)["keys_today"]
    today = json.loads(out)["windows"]["today"]
    if today["start"] > t0:  # midnight UTC came within the last 15 minutes: nothing today
        pytest.skip("the calls fell on yesterday (UTC)")
    assert keys == {
        "rows": [
            {"key": "team-a", "input": 120, "output": 30, "cached": 64, "requests": 1},
            {"key": "key:1a2b3c4d", "input": 40, "output": 9, "cached": 0, "requests": 1},
        ],
        "truncated": 0,
        "not_attributed": {"input": 25, "output": 3, "requests_aborted": 1},
        "folded": 0,
    }
    assert sum(r["input"] for r in keys["rows"]) + keys["not_attributed"]["input"] == today["input"]
    # Nothing matched: no keys (the document is still whole).
    code, out, _err = run_cli("status", "--root", str(root), "--no-health", "--model", "nope")
    assert code == 3 and "keys_today" not in json.loads(out)
