"""export: a period as hour (or day) x model x instance rows, each with its coverage; the rows
add up to the report's figures for the same period, exactly."""

from __future__ import annotations

import csv
import io
import itertools
import json
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.ledgers import ev, write_ledger
from vllm_ledger import cli
from vllm_ledger.read.periods import since_until
from vllm_ledger.read.report import window_reports

SH = ZoneInfo("Asia/Shanghai")
H0 = int(datetime(2026, 11, 30, 9, 0, tzinfo=SH).timestamp())  # 09:00 in Shanghai


def _two_instances(root: Path) -> None:
    # gpu a:8000 serves "qwen" from 09:00 to 11:30; b:8001 serves "llama" from 10:00 to 11:00.
    write_ledger(
        root,
        "run-a",
        start_ts=H0,
        end_ts=H0 + 9000,
        events=[
            ev(H0 + 10.5, prompt=100, gen=10),
            ev(H0 + 3700.5, prompt=50, gen=5),
            ev(H0 + 8000.5, prompt=7, gen=1),
        ],
        port=8000,
        model="qwen",
    )
    write_ledger(
        root,
        "run-b",
        start_ts=H0 + 3600,
        end_ts=H0 + 7200,
        events=[ev(H0 + 3601.5, prompt=30, gen=3)],
        port=8001,
        model="llama",
    )


def _export(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    at = H0 + 9000
    rc = cli.main(["export", "--root", str(root), "--since", str(H0), "--until", str(at), *args])
    out, err = capsys.readouterr()
    assert rc == 0, err
    # a file written is named on stderr, its path absolute; nothing else is said
    files = [b for a, b in itertools.pairwise(args) if a == "--output"]
    assert err == "".join(f"wrote {Path(f).resolve()}\n" for f in files), err
    return out


def test_hourly_rows_per_model_and_instance_add_up_to_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_instances(tmp_path)
    rows = list(csv.DictReader(io.StringIO(_export(tmp_path, capsys, "--tz", "Asia/Shanghai"))))
    got = [(r["start"][11:16], r["instance"], r["model"], r["input"], r["complete"]) for r in rows]
    assert got == [
        ("09:00", "testhost:8000", "qwen", "100", "true"),
        ("10:00", "testhost:8000", "qwen", "50", "true"),
        ("10:00", "testhost:8001", "llama", "30", "true"),
        ("11:00", "testhost:8000", "qwen", "7", "true"),  # b closed at 11:00: no row
    ]
    assert rows[-1]["end"].endswith("11:30:00+08:00")  # the period ends at 11:30
    # The rows add up to the report's figures for the same period, exactly.
    at = H0 + 9000
    (period,), _m = window_reports(
        [tmp_path], [since_until(H0, at, at)], at_ts=at, clock=lambda: at
    )
    assert sum(int(r["input"]) for r in rows) == period.input_tokens == 187
    assert sum(int(r["output"]) for r in rows) == period.output_tokens == 19


def test_daily_rows_as_json_lines_by_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_instances(tmp_path)
    out = _export(tmp_path, capsys, "--by", "day,model", "--format", "jsonl", "--tz", "UTC")
    docs = [json.loads(line) for line in out.splitlines()]
    assert [(d["model"], d["instance"], d["input"]) for d in docs] == [
        ("llama", "*", 30),
        ("qwen", "*", 157),
    ]
    assert all(set(d) >= {"start", "end", "complete", "problems"} for d in docs)


def test_export_to_a_file_is_written_whole_and_bad_by_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    _two_instances(root)
    target = tmp_path / "november.csv"
    assert _export(root, capsys, "--output", str(target)) == ""
    assert target.read_text().startswith(
        "start,start_unix,end,end_unix,instance,model,input,output,"
    )
    rc = cli.main(["export", "--root", str(root), "--since", str(H0), "--by", "week"])
    _out, err = capsys.readouterr()
    assert rc == 2 and err.count("\n") == 1 and "--by 'week'" in err
