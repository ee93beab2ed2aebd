"""The one CSV dialect (formats/csvout.py): report --csv, export and timeline --csv alike.

ISO 8601 instants with the zone's offset beside Unix seconds, lowercase booleans, the JSON's
field names, and formula-safe, terminal-safe text cells: a model or host name written by
whoever can write a ledger folder never becomes a formula a spreadsheet runs.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from tests.ledgers import ev, write_ledger
from vllm_ledger import cli
from vllm_ledger.formats import csvout

T0 = 1_796_000_400  # 2026-11-30 09:00:00+08:00
EVIL_MODEL = '=HYPERLINK("http://evil.example/x","click")'
EVIL_HOST = "@SUM(1+1)*cmd"


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("=1+1", "'=1+1"),
        ("+cmd", "'+cmd"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "\\x09x"),  # a tab or CR is escaped visibly first: never a raw cell start
        ("\r=1", "\\x0d=1"),
        ("-5", "-5"),  # a number stays a number
        ("+3.25", "+3.25"),
        ("-1e3", "-1e3"),
        ("-", "'-"),
        ("qwen", "qwen"),
        ("a=b", "a=b"),  # only the first character counts
        ("\x1b[2J", "\\x1b[2J"),
        # White space a spreadsheet may trim before it reads a formula, the pipe (DDE), and
        # the full-width forms some spreadsheets read as = + - @.
        (" =1+1", "' =1+1"),
        ("\u00a0=1+1", "'\u00a0=1+1"),
        ("\u3000=1+1", "'\u3000=1+1"),
        (" ", "' "),
        ("|calc", "'|calc"),
        ("\uff1d1+1", "'\uff1d1+1"),
        ("\uff0bcmd", "'\uff0bcmd"),
        ("\uff0d2+3", "'\uff0d2+3"),
        ("\uff20SUM(A1)", "'\uff20SUM(A1)"),
        (" 5", " 5"),  # still a number
        ("\uff15", "\uff15"),  # a full-width digit starts no formula
        ("a|b", "a|b"),
    ],
)
def test_text_cells_are_terminal_safe_and_formula_safe(value: str, cell: str) -> None:
    assert csvout.text_cell(value) == cell


def test_values_in_the_dialect() -> None:
    assert [csvout.cell(v) for v in (True, False, None, 0, 1.5, "x")] == [
        "true",
        "false",
        "",
        0,
        1.5,
        "x",
    ]
    from zoneinfo import ZoneInfo

    assert csvout.instant("start", T0, ZoneInfo("Asia/Shanghai")) == {
        "start": "2026-11-30T09:00:00+08:00",
        "start_unix": T0,
    }


def test_a_row_must_match_its_header() -> None:
    w = csvout.CsvWriter(io.StringIO(), ("a", "b"))
    with pytest.raises(ValueError, match=r"missing \['b'\], extra \['c'\]"):
        w.row({"a": 1, "c": 2})


@pytest.fixture
def hostile_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    write_ledger(
        root,
        "run-1",
        start_ts=T0,
        end_ts=T0 + 1800,
        events=[ev(T0 + 10.5, prompt=100, gen=5, cached=20)],
        model=EVIL_MODEL,
        host=EVIL_HOST,
    )
    return root


def _csv(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict[str, str]]:
    assert cli.main(argv) == 0
    out, _ = capsys.readouterr()
    return list(csv.DictReader(io.StringIO(out)))


def test_formula_cells_are_quoted_in_all_three_csvs(
    hostile_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--root", str(hostile_root), "--tz", "Asia/Shanghai"]
    at = ["--at", str(T0 + 1800)]  # the clean close: total is complete
    model_key = f"'{EVIL_MODEL}"
    instance_key = f"'{EVIL_HOST}:8000"

    report = _csv(["report", *common, *at, "--by", "model", "--csv"], capsys)
    assert [r["key"] for r in report if r["key"]] == [model_key] * 5
    report = _csv(["report", *common, *at, "--by", "instance", "--csv"], capsys)
    assert {r["key"] for r in report if r["key"]} == {instance_key}
    total = next(r for r in report if r["window"] == "total" and not r["key"])
    assert (total["input"], total["cached"], total["complete"]) == ("100", "20", "true")
    assert total["start"].endswith("+08:00") and total["start_unix"].isdigit()

    rows = _csv(["export", *common, "--since", str(T0), "--until", str(T0 + 3600)], capsys)
    assert [(r["instance"], r["model"], r["input"]) for r in rows] == [
        (instance_key, model_key, "100")
    ]
    assert (rows[0]["start"], rows[0]["start_unix"]) == ("2026-11-30T09:00:00+08:00", str(T0))

    steps = _csv(
        ["timeline", *common, *at, "--window", "24h", "--step", "1h", "--by", "model", "--csv"],
        capsys,
    )
    assert {r["key"] for r in steps} == {model_key}
    assert sum(int(r["input"] or 0) for r in steps) == 100  # unknown steps: empty, never 0


# A model name for each leading character the guard gained (and a host name for the pipe).
NEW_STARTS = {
    "space": " =1+1",
    "no-break space": "\u00a0=1+1",
    "full-width equals": "\uff1d1+1",
    "full-width plus": "\uff0bcmd",
    "full-width minus": "\uff0d2+3",
    "full-width at": "\uff20SUM(A1)",
    "pipe": "|calc!A1",
}


def test_each_new_formula_start_is_quoted_in_all_three_csvs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    for i, model in enumerate(NEW_STARTS.values()):
        write_ledger(
            root,
            f"run-{i}",
            start_ts=T0,
            end_ts=T0 + 1800,
            events=[ev(T0 + 10.5, prompt=100 + i, gen=5)],
            model=model,
            port=8000 + i,
            host="|cmd" if i == 0 else "gpu1",
            heartbeat_every_s=600,
        )
    common = ["--root", str(root), "--tz", "Asia/Shanghai"]
    at = ["--at", str(T0 + 1800)]
    models = {f"'{m}" for m in NEW_STARTS.values()}
    instances = {"'|cmd:8000", *(f"gpu1:{8000 + i}" for i in range(1, len(NEW_STARTS)))}

    report = _csv(["report", *common, *at, "--by", "model", "--csv"], capsys)
    assert {r["key"] for r in report if r["key"]} == models
    by_model = {r["key"]: r["input"] for r in report if r["window"] == "total" and r["key"]}
    assert by_model == {f"'{m}": str(100 + i) for i, m in enumerate(NEW_STARTS.values())}
    report = _csv(["report", *common, *at, "--by", "instance", "--csv"], capsys)
    assert {r["key"] for r in report if r["key"]} == instances

    rows = _csv(["export", *common, "--since", str(T0), "--until", str(T0 + 3600)], capsys)
    assert {r["model"] for r in rows} == models
    assert {r["instance"] for r in rows} == instances
    assert sum(int(r["input"]) for r in rows) == sum(100 + i for i in range(len(NEW_STARTS)))

    for by, keys in (("model", models), ("instance", instances)):
        steps = _csv(
            ["timeline", *common, *at, "--window", "24h", "--step", "1h", "--by", by, "--csv"],
            capsys,
        )
        assert {r["key"] for r in steps} == keys
