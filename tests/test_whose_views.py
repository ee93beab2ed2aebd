"""Whose tokens in every view of the command line: report --by key|adapter|user|tenant in text,
JSON and CSV, and export --by key, over ledgers written by the real Recorder and TagBook.

The three forms carry the same numbers, which add up to each window's own figures exactly;
labels a client or a forged file chose are printed safe in each; a ledger written before
attribution credits nobody and no window over it is complete; 100,000 distinct users in a day
through one file give bounded rows and an ``other`` row whose folded count is exact.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.whose_ledgers import Req, many_users, write_whose_ledger
from vllm_ledger import cli
from vllm_ledger.formats.csvout import text_cell

T = int(datetime(2026, 11, 30, 2, 0, tzinfo=timezone.utc).timestamp())
END = T + 600
AT = str(END + 1)
GOLDEN = Path(__file__).resolve().parent / "golden" / "cases"

HOSTILE = (
    "\x1b[2J\x1b]0;owned\x07",  # clears the screen, sets the title
    "line one\nforged: 999,999 tokens",  # a forged line
    '=HYPERLINK("http://x","y")',  # spreadsheet formulas
    "+1+2",
    "-2+3",
    "@SUM(A1)",
    "\t=1",
    "\u202eevil",  # a bidi override
    "x" * 256,  # as long as a label can be
)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert rc == 0 and err == "", err
    return out


@pytest.fixture(scope="module")
def hostile_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    reqs = [
        Req(T + 10.5 + i, f"key-{i}", "tiny", user, "", prompt=100 + i, gen=10 + i, cached=i)
        for i, user in enumerate(HOSTILE)
    ]
    reqs += [
        Req(T + 100.5, "key-0", "tiny", HOSTILE[1], prompt=5, gen=5, aborted=True),
        Req(T + 101.5, prompt=3, gen=1, untagged=True),
    ]
    write_whose_ledger(root, "run-h", start_ts=T, end_ts=END, requests=reqs)
    return root


def _report(root: Path, capsys: pytest.CaptureFixture[str], by: str, *fmt: str) -> str:
    argv = ["report", "--root", str(root), "--at", AT, "--tz", "UTC", "--by", by, *fmt]
    return _run(capsys, *argv, "--since", str(T), "--until", str(END))


def test_text_json_and_csv_carry_the_same_numbers_and_add_up(
    hostile_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(_report(hostile_root, capsys, "user", "--json"))
    ww = doc["whose"]["windows"]["period"]
    assert doc["whose"]["by"] == "user" and ww["complete"] is True
    total = doc["windows"]["period"]
    assert ww["total"] == {k: total[k] for k in ("input", "output", "cached", "requests")}
    assert total["input"] == sum(100 + i for i in range(9)) + 5 + 3 == 944
    for fig in ("input", "output", "cached", "requests"):
        assert sum(r[fig] for r in ww["rows"]) + ww["not_attributed"][fig] == total[fig]
        assert (
            sum(c[fig] for c in ww["not_attributed"]["reasons"].values())
            == (ww["not_attributed"][fig])
        )
    # JSON keeps each label whole (escaped by JSON), most input first
    assert [r["value"] for r in ww["rows"]] == list(reversed(HOSTILE))
    assert ww["rows"][-1] == {
        "by": "user",
        "value": HOSTILE[0],
        "input": 100,
        "output": 10,
        "cached": 0,
        "requests": 1,
        "requests_aborted": 0,
        "requests_refused": 0,
    }
    assert [r["requests_aborted"] for r in ww["rows"] if r["value"] == HOSTILE[1]] == [1]
    assert ww["not_attributed"]["reasons"]["untagged"] == {
        "input": 3,
        "output": 1,
        "cached": 0,
        "requests": 1,
    }
    assert ww["not_attributed"]["reasons"]["aborted"]["input"] == 5

    rows = list(csv.DictReader(io.StringIO(_report(hostile_root, capsys, "user", "--csv"))))
    credited = [r for r in rows if r["kind"] == "credited"]
    assert [int(r["input"]) for r in credited] == [r["input"] for r in ww["rows"]]
    assert sum(int(r["input"]) for r in rows) == 944
    assert [r["reason"] for r in rows if r["kind"] == "not_attributed"] == [
        "untagged",
        "ambiguous",
        "copies",
        "aborted",
        "fault",
    ]

    text = _report(hostile_root, capsys, "user")
    total_line = next(line for line in text.splitlines() if line.startswith("  total"))
    assert total_line.split()[1:6] == ["944", "132", "36", "10", "complete"]


def test_hostile_labels_are_printed_safe(
    hostile_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _report(hostile_root, capsys, "user")
    assert not any(ord(c) < 0x20 and c != "\n" for c in text), "a control character got out"
    assert "\x1b" not in text and "\u202e" not in text
    assert "\\x1b[2J\\x1b]0;owned\\x07" in text and "\\u202eevil" in text
    assert not any(line.startswith("forged") for line in text.splitlines())
    assert max(len(line) for line in text.splitlines()) < 200  # the 256 x's are cut
    raw = _report(hostile_root, capsys, "user", "--csv")
    assert "\x1b" not in raw and "\u202e" not in raw
    values = {r["value"] for r in csv.DictReader(io.StringIO(raw)) if r["kind"] == "credited"}
    assert values == {
        "\\x1b[2J\\x1b]0;owned\\x07",
        "line one\\x0aforged: 999,999 tokens",
        '\'=HYPERLINK("http://x","y")',
        "'+1+2",
        "'-2+3",
        "'@SUM(A1)",
        "\\x09=1",  # the tab shown as an escape: no longer a formula
        "\\u202eevil",
        "x" * 256,
    }
    lines = _run(
        capsys,
        "export",
        "--root",
        str(hostile_root),
        "--since",
        str(T),
        "--until",
        str(END),
        "--by",
        "user",
        "--format",
        "jsonl",
    ).splitlines()
    assert all(line.isascii() and "\\u001b" not in line for line in lines)
    got = {json.loads(line)["value"] for line in lines if '"credited"' in line}
    assert "\\x1b[2J\\x1b]0;owned\\x07" in got and "line one\\x0aforged: 999,999 tokens" in got


def test_export_gives_the_report_numbers_for_the_same_period(
    hostile_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for by in ("key", "adapter", "user", "tenant"):
        doc = json.loads(_report(hostile_root, capsys, by, "--json"))
        ww = doc["whose"]["windows"]["period"]
        for grain in ("", "hour,", "day,", "month,"):
            out = _run(
                capsys,
                "export",
                "--root",
                str(hostile_root),
                "--since",
                str(T),
                "--until",
                str(END),
                "--by",
                f"{grain}{by}",
                "--tz",
                "UTC",
            )
            rows = list(csv.DictReader(io.StringIO(out)))
            sums: Counter[str] = Counter()
            for r in rows:
                if r["kind"] == "credited":
                    sums[r["value"]] += int(r["input"])
            want = Counter({text_cell(r["value"]): r["input"] for r in ww["rows"]})
            assert sums == want, (by, grain)
            na: Counter[str] = Counter()
            for r in rows:
                if r["kind"] == "not_attributed":
                    na[r["reason"]] += int(r["output"])
            outputs = {k: v["output"] for k, v in ww["not_attributed"]["reasons"].items()}
            assert {k: na[k] for k in outputs} == outputs and na["fault"] == 0


def test_a_ledger_from_before_attribution_credits_nobody(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    shutil.copytree(GOLDEN / "a_one_run_two_writers" / "root", root)
    files = len(list(root.rglob("*.sqlite")))
    at = "1795146000.5"
    argv = ["report", "--root", str(root), "--at", at, "--tz", "Asia/Shanghai", "--by", "key"]
    doc = json.loads(_run(capsys, *argv, "--json"))
    for name, ww in doc["whose"]["windows"].items():
        w = doc["windows"][name]
        assert ww["rows"] == [] and ww["files_without_attribution"] == files == 2
        assert ww["complete"] is False
        assert ww["not_attributed"]["reasons"]["aborted"] == {
            k: w[k] for k in ("input", "output", "cached", "requests")
        }
    assert doc["windows"]["total"]["input"] > 0
    text = _run(capsys, *argv)
    assert "2 file(s) from before attribution" in text
    assert " complete" not in text.replace("INCOMPLETE", "")


def _midnight() -> int:
    return int(datetime(2026, 11, 29, tzinfo=timezone.utc).timestamp())


@pytest.fixture(scope="module")
def users_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """100,000 distinct users in one UTC day, through one file (one writer)."""
    root = tmp_path_factory.mktemp("users")
    day = _midnight()
    write_whose_ledger(
        root,
        "run-u",
        start_ts=day,
        end_ts=day + 86400,
        requests=many_users(day),
        heartbeat_s=25.0,
    )
    return root


def test_100000_users_in_a_day_give_bounded_rows_and_an_exact_folded_count(
    users_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    day = _midnight()
    per_hour = Counter(int(r.ts - day) // 3600 for r in many_users(day))
    assert len(per_hour) == 24 and min(per_hour.values()) > 1000
    folded = sum(n - 1000 for n in per_hour.values())
    assert folded == 100_000 - 24 * 1000 == 76_000
    argv = ["report", "--root", str(users_root), "--at", str(day + 86400), "--tz", "UTC"]
    doc = json.loads(_run(capsys, *argv, "--by", "user", "--window", "yesterday", "--json"))
    ww = doc["whose"]["windows"]["yesterday"]
    assert ww["complete"] is True and ww["folded"] == folded
    named = [r for r in ww["rows"] if r["value"] != "other"]
    assert len(named) == 24 * 1000 and len(ww["rows"]) == 24 * 1000 + 1
    (other,) = [r for r in ww["rows"] if r["value"] == "other"]
    assert ww["rows"][0] is not None and ww["rows"][0]["value"] == "other"  # most input
    assert (other["input"], other["output"], other["requests"]) == (10 * folded, folded, folded)
    assert sum(r["input"] for r in ww["rows"]) == doc["windows"]["yesterday"]["input"] == 1_000_000
    text = _run(capsys, *argv, "--by", "user", "--window", "yesterday")
    lines = text.splitlines()
    assert lines[3].split()[:2] == ["other", "760,000"] and lines[3].endswith("76,000 folded")
    assert lines[23].split()[:3] == ["(23,981", "more)", "239,810"]
    # export by hour: at most 1,000 named users and other per hour
    out = _run(
        capsys,
        "export",
        "--root",
        str(users_root),
        "--since",
        str(day),
        "--until",
        str(day + 86400),
        "--by",
        "hour,user",
        "--tz",
        "UTC",
    )
    rows = [r for r in csv.DictReader(io.StringIO(out)) if r["kind"] == "credited"]
    by_hour = Counter(r["start"] for r in rows)
    assert len(by_hour) == 24 and set(by_hour.values()) == {1001}
    assert sum(int(r["folded"]) for r in rows if r["value"] == "other") == folded
