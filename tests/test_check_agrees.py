"""``check`` agrees with ``report``: whatever makes ``report``'s total window carry a problem
makes ``check`` fail and name it.

Explicit roots (a run whose second API process never started; an hourly rollup edited beside
the per-second rows it should add up) with check's exact output, and a property over random
roots (writers, runs, missing writers) with random damage (an edited rollup, a removed file, a
truncated file, a sequence marker ahead): check exits 0 only when report's total has no
problem. Time nothing was recording (between runs, after the last) is not a problem: report
shows it as uncovered, check does not fail on it. Everything runs at one fixed clock.
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.ledgers import ev, write_ledger
from vllm_ledger.format import smallfiles
from vllm_ledger.read.check import check
from vllm_ledger.read.report import build_report

T0 = 1_795_400_000  # 2026-11-23 02:13:20 UTC
AT = T0 + 7200  # the clock of every check and report here
HOUR = 3600


def _report_total(root: Path) -> tuple[bool, dict[str, int]]:
    r = build_report([root], at_ts=AT, clock=lambda: AT, periods=("total",))
    w = r.window("total")
    return w.complete, dict(w.problems)


def _lines(root: Path) -> list[str]:
    """check's lines as the command prints them, the root's path as ROOT."""
    from vllm_ledger.formats.safe import printable

    verdicts = check([root], clock=lambda: AT)
    out = []
    for v in verdicts:
        word = v.verdict.upper() if not v.ok else "ok"
        out.append(
            f"{word:<13} {printable(v.path)}  {printable(v.detail)}".replace(str(root), "ROOT")
        )
    return out


def test_a_writer_that_never_started_fails_check(tmp_path: Path) -> None:
    run = "20261124T005320Z-gpu1-1"
    write_ledger(
        tmp_path, run, start_ts=T0, end_ts=T0 + 600, expected=2, events=[ev(T0 + 10, 100, 5)]
    )
    complete, problems = _report_total(tmp_path)
    assert not complete and problems == {"writer_missing": 1}
    assert _lines(tmp_path) == [
        f"ok            ROOT/{run}/w0.g0.ledger.sqlite  run {run} writer 0 gen 0: closed cleanly,"
        " seq 122",
        f"WRITER_MISSING ROOT/{run}  run {run} writer 1 of 2: no ledger file (its API process "
        "never wrote one, or it was removed): the run's time is uncovered (docs/faults.md)",
    ]


def test_the_command_fails_on_a_missing_writer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from vllm_ledger.cli import main
    from vllm_ledger.read import check as check_module

    write_ledger(tmp_path, "20261124T005320Z-gpu1-1", start_ts=T0, end_ts=T0 + 600, expected=2)
    real = check_module.check
    monkeypatch.setattr(
        "vllm_ledger.commands.check.check", lambda roots, tz: real(roots, clock=lambda: AT, tz=tz)
    )
    assert main(["check", "--root", str(tmp_path)]) == 1
    out, _err = capsys.readouterr()
    assert (
        out.splitlines()[-1] == "1 ledger file(s), 0 with problems; 1 problem(s) beyond the files"
    )


def _edit_hourly(path: Path, input_tokens: int) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE hourly SET prompt_tokens = ?", (input_tokens,))
    conn.close()


def test_an_edited_rollup_fails_check_and_the_report_calls_total_incomplete(
    tmp_path: Path,
) -> None:
    run = "20261124T005320Z-gpu1-1"
    events = [ev(T0 + 10, 120, 3), ev(T0 + 20, 80, 2)]  # 200 input tokens in hour T0 // 3600
    write_ledger(tmp_path, run, start_ts=T0, end_ts=T0 + 600, events=events)
    assert _report_total(tmp_path)[1] == {}
    path = tmp_path / run / "w0.g0.ledger.sqlite"
    _edit_hourly(path, 99_999_999)
    complete, problems = _report_total(tmp_path)
    # The report judges each day against its hours (a cheap pass); check also judges the hour
    # against its seconds.
    assert not complete and problems == {"rollup_mismatch": 1}
    assert _lines(tmp_path) == [
        f"ROLLUP_MISMATCH ROOT/{run}/w0.g0.ledger.sqlite  run {run} writer 0 gen 0: hourly row "
        "2026-11-23 02:00:00 +00:00 engine 0: input_tokens 99999999 (its seconds: 200) "
        "(and 1 more): a rollup row changed or lost since it was written; the report calls no "
        "window over it complete (docs/ledger.md)",
    ]


# ---- the property ------------------------------------------------------------------------

DAMAGE = ("none", "edit_rollup", "remove_file", "truncate_file", "marker_ahead")


@st.composite
def roots(draw: st.DrawFn) -> tuple[list[dict[str, int]], str, int]:
    """Runs (of one or two instances), each with its expected writers and which of them
    wrote; then one kind of damage and the file (by index) it is done to."""
    runs = []
    start = T0
    for i in range(draw(st.integers(1, 3))):
        expected = draw(st.integers(1, 3))
        wrote = draw(st.integers(1, expected))
        length = draw(st.integers(60, 900))
        runs.append(
            {
                "start": start,
                "length": length,
                "expected": expected,
                "wrote": wrote,
                "port": 8000 + draw(st.integers(0, 1)),
                "clean": draw(st.booleans()),
                "tokens": draw(st.integers(0, 500)),
                "i": i,
            }
        )
        start += length + draw(st.integers(0, 300))
    return runs, draw(st.sampled_from(DAMAGE)), draw(st.integers(0, 8))


def _write(root: Path, runs: list[dict[str, int]]) -> list[Path]:
    files = []
    for r in runs:
        run_id = f"20261124T{r['i']:06d}Z-gpu1-{r['i']}"
        for rank in range(r["wrote"]):
            events = [ev(r["start"] + 5, r["tokens"], r["tokens"] // 10)] if r["tokens"] else []
            write_ledger(
                root,
                run_id,
                start_ts=r["start"],
                end_ts=r["start"] + r["length"],
                rank=rank,
                expected=r["expected"],
                clean=bool(r["clean"]),
                port=r["port"],
                events=events,
                heartbeat_every_s=30.0,
            )
            files.append(root / run_id / f"w{rank}.g0.ledger.sqlite")
    return files


def _damage(files: list[Path], kind: str, which: int) -> None:
    path = files[which % len(files)]
    if kind == "edit_rollup":
        conn = sqlite3.connect(path)
        with conn:
            conn.execute(
                "INSERT INTO hourly (ts, engine, prompt_tokens) VALUES (?, 0, 7)"
                " ON CONFLICT (ts, engine) DO UPDATE SET prompt_tokens = prompt_tokens + 7",
                (T0 - T0 % HOUR,),
            )
        conn.close()
    elif kind == "remove_file":
        path.unlink()
    elif kind == "truncate_file":
        with path.open("r+b") as f:
            f.truncate(path.stat().st_size // 2)
    elif kind == "marker_ahead":
        seq, _ts = smallfiles.read_sequence_marker(path) or (0, 0.0)
        smallfiles.write_sequence_marker(path, seq + 3, float(AT - 60))


@settings(max_examples=40)
@given(sc=roots())
def test_check_passes_only_where_the_total_has_no_problem(
    sc: tuple[list[dict[str, int]], str, int],
) -> None:
    runs, kind, which = sc
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = _write(root, runs)
        _damage(files, kind, which)
        verdicts = check([root], clock=lambda: AT)
        passed = bool(verdicts) and all(v.ok for v in verdicts)
        _complete, problems = _report_total(root)
        if passed:
            assert problems == {}, (kind, problems, verdicts)
        if problems:
            assert not passed
            named = {v.verdict for v in verdicts if not v.ok}
            assert named, problems
