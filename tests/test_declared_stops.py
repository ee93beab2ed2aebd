"""Declared stops: a clean stop, a declaration, a restart. The gap is declared idle, not
uncovered; a declaration that overlaps what the ledger proves is refused; --strict ignores it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.ledgers import ev, write_ledger
from vllm_ledger import cli
from vllm_ledger.format import declarations
from vllm_ledger.read.report import build_report, window_reports
from vllm_ledger.read.windows import Window

T0 = 1_796_000_000  # 2026-11-30T00:53:20Z
INSTANCE = "testhost:8000"


def _two_runs(root: Path) -> None:
    write_ledger(root, "run-1", start_ts=T0, end_ts=T0 + 100, events=[ev(T0 + 10.5, prompt=7)])
    write_ledger(
        root, "run-2", start_ts=T0 + 400, end_ts=T0 + 500, events=[ev(T0 + 410.5, prompt=5)]
    )


def _declare(root: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = cli.main(["declare-stop", "--root", str(root), *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_a_declared_stop_is_declared_idle_not_uncovered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_runs(tmp_path)
    at = T0 + 500
    before = build_report([tmp_path], at_ts=at, clock=lambda: at).window("total")
    assert (before.input_tokens, before.uncovered_seconds, before.complete) == (12, 300, False)

    rc, out, err = _declare(
        tmp_path,
        "--instance",
        INSTANCE,
        "--from",
        str(T0 + 100),
        "--until",
        str(T0 + 400),
        "--reason",
        "upgrade vLLM",
        capsys=capsys,
    )
    assert (rc, err) == (0, "")
    assert out.startswith(f"declared: {INSTANCE} stopped 2026-11-30 08:55:00 +08:00 -> ")
    assert "(300 s): upgrade vLLM" in out

    after = build_report([tmp_path], at_ts=at, clock=lambda: at).window("total")
    assert (after.input_tokens, after.uncovered_seconds, after.declared_seconds) == (12, 0, 300)
    assert (after.complete, after.problems) == (True, {})
    # A window across part of the stop counts only that part; --strict ignores declarations.
    (part,), _m = window_reports(
        [tmp_path], [Window("part", T0 + 50, T0 + 150)], at_ts=at, clock=lambda: at
    )
    assert (part.uncovered_seconds, part.declared_seconds, part.complete) == (0, 50, True)
    strict = build_report([tmp_path], at_ts=at, clock=lambda: at, strict=True).window("total")
    assert (strict.uncovered_seconds, strict.declared_seconds, strict.complete) == (300, 0, False)

    # The declaration is one checked JSON line, appended.
    (line,) = declarations.path_in(tmp_path).read_text().splitlines()
    doc = json.loads(line)
    assert (doc["instance"], doc["from"], doc["until"], doc["reason"]) == (
        INSTANCE,
        T0 + 100,
        T0 + 400,
        "upgrade vLLM",
    )
    # JSON and text say it.
    rc = cli.main(["report", "--root", str(tmp_path), "--json", "--at", str(at)])
    out, _ = capsys.readouterr()
    assert json.loads(out)["windows"]["total"]["declared_seconds"] == 300


def test_a_declaration_that_overlaps_the_ledger_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_runs(tmp_path)
    common = ["--instance", INSTANCE, "--reason", "maintenance"]
    rc, out, err = _declare(
        tmp_path, *common, "--from", str(T0 + 50), "--until", str(T0 + 150), capsys=capsys
    )
    assert (rc, out) == (2, "")
    assert err.count("\n") == 1 and "run run-1 of testhost:8000 was recording from" in err
    rc, _out, err = _declare(
        tmp_path, *common, "--from", str(T0 + 100), "--until", str(T0 + 9e6), capsys=capsys
    )
    assert rc == 2 and "is in the future" in err
    rc, _out, err = _declare(
        tmp_path,
        "--instance",
        "other:9",
        "--reason",
        "x",
        "--from",
        str(T0 + 100),
        "--until",
        str(T0 + 400),
        capsys=capsys,
    )
    assert rc == 2 and "knows instance other:9" in err and INSTANCE in err
    assert not declarations.path_in(tmp_path).exists()  # nothing written by a refusal


def test_refused_lines_in_the_declarations_file_are_named_and_ignored(tmp_path: Path) -> None:
    _two_runs(tmp_path)
    good = declarations.Declaration(INSTANCE, T0 + 100, T0 + 400, "upgrade", T0 + 600.0)
    bad_lines = [
        '{"instance": "testhost:8000", "from": 1, "until": 2, "reason": "x", '
        '"declared_at": 1, "by": ""}',  # before 2000
        '{"instance": "testhost:8000", "from": NaN}',
        "not json",
    ]
    declarations.path_in(tmp_path).write_text(
        "\n".join([*bad_lines, declarations.to_line(good).strip()]) + "\n"
    )
    at = T0 + 500
    report = build_report([tmp_path], at_ts=at, clock=lambda: at)
    assert report.window("total").declared_seconds == 300  # the good line still counts
    refused = [f for f in report.files if f.status == "bad_values"]
    assert [f.detail.split(":")[0] for f in refused] == [
        "refused line 1",
        "refused line 2",
        "refused line 3",
    ]


def test_a_declaration_for_one_instance_leaves_another_instances_gap_uncovered(
    tmp_path: Path,
) -> None:
    _two_runs(tmp_path)
    # A second instance that was down over the same stretch, undeclared.
    write_ledger(tmp_path, "run-b1", start_ts=T0, end_ts=T0 + 100, port=9000)
    write_ledger(tmp_path, "run-b2", start_ts=T0 + 400, end_ts=T0 + 500, port=9000)
    declarations.append(
        tmp_path, declarations.Declaration(INSTANCE, T0 + 100, T0 + 400, "upgrade", T0 + 600.0)
    )
    at = T0 + 500
    total = build_report([tmp_path], at_ts=at, clock=lambda: at).window("total")
    assert (total.uncovered_seconds, total.declared_seconds, total.complete) == (300, 0, False)
