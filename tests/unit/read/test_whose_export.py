"""export --by key|adapter|user|tenant: per step a row per value and one per reason, adding up
to the step's figures exactly, and over a period the same numbers as report --by key."""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.whose_ledgers import Req, write_whose_ledger
from vllm_ledger import cli
from vllm_ledger.errors import BadArgument
from vllm_ledger.read.whose_export import FIELDS, ExportBy, parse_by
from vllm_ledger.read.whose_report import WhoseReport, report_by

SH = ZoneInfo("Asia/Shanghai")
T = int(datetime(2026, 11, 30, 10, 0, tzinfo=SH).timestamp())
END = T + 5400  # 10:00 to 11:30, three hours begun
FIGS = ("input", "output", "cached", "requests")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two instances' ledgers, written once for the module (readers never write in a root)."""
    path = tmp_path_factory.mktemp("whose-export")
    _ledgers(path)
    return path


def _ledgers(root: Path) -> None:
    write_whose_ledger(
        root,
        "run-q",
        start_ts=T,
        end_ts=END,
        model="qwen",
        requests=[
            Req(T + 10.5, "team-a", "qwen", "alice", prompt=100, gen=10, cached=16),
            Req(T + 900.5, "team-a", "qwen", "alice", refused=True),
            Req(T + 901.5, "team-c", "qwen", "carol", refused=True),
            Req(T + 3700.5, "team-a", "qwen-lora", "bob", prompt=50, gen=5, n=2),
            Req(T + 3800.5, "key:1a2b3c4d", "qwen", "alice", prompt=30, gen=3, aborted=True),
            Req(T + 5000.5, prompt=7, gen=1, untagged=True),
        ],
    )
    write_whose_ledger(
        root,
        "run-l",
        start_ts=T,
        end_ts=END,
        model="llama",
        port=8001,
        requests=[Req(T + 20.5, "team-b", "llama", "=cmd|' /C calc'!A0", prompt=9, gen=9)],
    )


def _export(
    root: Path, capsys: pytest.CaptureFixture[str], by: str, fmt: str = "csv"
) -> list[dict[str, str]]:
    argv = ["export", "--root", str(root), "--since", str(T), "--until", str(END), "--by", by]
    rc = cli.main([*argv, "--tz", "Asia/Shanghai", "--format", fmt])
    out, err = capsys.readouterr()
    assert rc == 0 and err == "", err
    if fmt == "jsonl":
        return [json.loads(line) for line in out.splitlines()]
    assert out.splitlines()[0] == ",".join(FIELDS)
    return list(csv.DictReader(io.StringIO(out)))


def _report(root: Path, by: str) -> WhoseReport:
    rep = report_by([root], by=by, since=T, until=END, at_ts=END + 0.5, clock=lambda: END + 0.5)
    assert isinstance(rep, WhoseReport)
    return rep


def test_the_period_alone_is_the_report_row_for_row(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for by in ("key", "adapter", "user", "tenant"):
        rows = _export(root, capsys, by)
        (ww,) = _report(root, by).whose
        credited = [r for r in rows if r["kind"] == "credited"]
        assert [
            (
                r["value"],
                int(r["input"]),
                int(r["output"]),
                int(r["cached"]),
                int(r["requests"]),
                int(r["requests_aborted"]),
                int(r["requests_refused"]),
            )
            for r in credited
        ] == [
            (
                v.value if not v.value.startswith("=") else "'" + v.value,
                v.input_tokens,
                v.output_tokens,
                v.cached_tokens,
                v.requests,
                v.requests_aborted,
                v.requests_refused,
            )
            for v in ww.rows
        ], by
        na = {r["reason"]: r for r in rows if r["kind"] == "not_attributed"}
        assert list(na) == ["untagged", "ambiguous", "copies", "aborted", "fault"]
        for reason, c in ww.not_attributed.reasons.items():
            assert (int(na[reason]["input"]), int(na[reason]["output"])) == (
                c.input_tokens,
                c.output_tokens,
            )
        assert int(na["aborted"]["requests_aborted"]) == ww.not_attributed.requests_aborted == 1
        refused = sum(int(r["requests_refused"]) for r in rows)
        assert refused == ww.not_attributed.requests_refused == 2  # each on its value's row
        for fig in FIGS:
            assert sum(int(r[fig]) for r in rows) == getattr(
                ww.total, f"{fig}_tokens" if fig != "requests" else fig
            )
        assert {r["start"] for r in rows} == {"2026-11-30T10:00:00+08:00"}
        assert {r["end"] for r in rows} == {"2026-11-30T11:30:00+08:00"}
        assert {r["complete"] for r in rows} == {"true"} and ww.complete
    key_rows = _export(root, capsys, "key")
    assert [(r["value"], r["input"]) for r in key_rows if r["kind"] == "credited"] == [
        ("team-a", "150"),
        ("team-b", "9"),
        ("key:1a2b3c4d", "0"),
        ("team-c", "0"),  # refused over a hard budget, nothing served: a row of its own
    ]
    refused_by_key = {
        r["value"]: r["requests_refused"] for r in key_rows if r["kind"] == "credited"
    }
    assert refused_by_key == {"team-a": "1", "team-b": "0", "key:1a2b3c4d": "0", "team-c": "1"}
    assert sum(int(r["input"]) for r in key_rows) == 100 + 2 * 50 + 30 + 7 + 9 == 246


def test_hours_add_up_to_each_step_and_to_the_period(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _export(root, capsys, "hour,key")
    steps = sorted({r["start"][11:16] for r in rows})
    assert steps == ["10:00", "11:00"]
    by_step: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        by_step[r["start"]].append(r)
    plain = list(csv.DictReader(io.StringIO(_plain(root, capsys, "hour"))))
    for p in plain:  # each step's rows add up to the plain export's row of that step
        step = by_step[p["start"]]
        for fig in FIGS:
            assert sum(int(r[fig]) for r in step) == int(p[fig]), (p["start"], fig)
    per_key: dict[str, int] = defaultdict(int)
    for r in rows:
        if r["kind"] == "credited":
            per_key[r["value"]] += int(r["input"])
    (ww,) = _report(root, "key").whose
    assert dict(per_key) == {r.value: r.input_tokens for r in ww.rows}
    first = [
        (r["kind"], r["value"] or r["reason"], r["input"])
        for r in by_step["2026-11-30T10:00:00+08:00"]
    ]
    assert first == [
        ("credited", "team-a", "100"),
        ("credited", "team-b", "9"),
        ("credited", "team-c", "0"),
        ("not_attributed", "untagged", "0"),
        ("not_attributed", "ambiguous", "0"),
        ("not_attributed", "copies", "0"),
        ("not_attributed", "aborted", "0"),
        ("not_attributed", "fault", "0"),
    ]


def _plain(root: Path, capsys: pytest.CaptureFixture[str], by: str) -> str:
    argv = ["export", "--root", str(root), "--since", str(T), "--until", str(END), "--by", by]
    assert cli.main([*argv, "--tz", "Asia/Shanghai"]) == 0
    return capsys.readouterr().out


def test_groups_and_jsonl(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _export(root, capsys, "day,model,user", fmt="jsonl")
    got = [
        (r["model"], r["kind"], r["value"] or r["reason"], r["input"]) for r in rows if r["input"]
    ]
    assert got == [
        ("llama", "credited", "=cmd|' /C calc'!A0", 9),
        ("qwen", "credited", "alice", 100),
        ("qwen", "credited", "bob", 50),
        ("qwen", "not_attributed", "untagged", 7),
        ("qwen", "not_attributed", "copies", 50),
        ("qwen", "not_attributed", "aborted", 30),
    ]
    assert {r["instance"] for r in rows} == {"*"} and {r["by"] for r in rows} == {"user"}
    assert all(r["files_without_attribution"] == 0 and r["folded"] == 0 for r in rows)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("key", ExportBy(None, (), "key")),
        ("hour,key", ExportBy("hour", (), "key")),
        ("user,day", ExportBy("day", (), "user")),
        ("month,model,instance,tenant", ExportBy("month", ("model", "instance"), "tenant")),
        ("hour,model,instance", ExportBy("hour", ("model", "instance"))),
    ],
)
def test_parse_by(text: str, want: ExportBy) -> None:
    assert parse_by(text) == want


@pytest.mark.parametrize("text", ["key,user", "hour,day,key", "key,key", "key,run"])
def test_parse_by_refuses(text: str) -> None:
    with pytest.raises(BadArgument, match="by"):
        parse_by(text)


def test_the_plain_refusal_is_unchanged() -> None:
    with pytest.raises(BadArgument) as got:
        parse_by("model")
    assert (
        got.value.hint
        == "give one of hour, day or month and any of model, instance, comma-separated"
    )
