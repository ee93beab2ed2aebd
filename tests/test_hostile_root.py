"""A root that a hostile or unlucky operator prepared: nothing hangs, nothing unknown is known."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.ledgers import ev, write_ledger
from vllm_ledger.read.summary import SUMMARY_NAME

REPO = Path(__file__).resolve().parent.parent
T0 = 1_796_000_000.0
PYTHON_M = (sys.executable, "-m", "vllm_ledger")
DEADLINE_S = 20  # a command that blocks on a FIFO never returns: the deadline catches it


def _report(root: Path, at: float) -> tuple[int, dict, str]:
    out = subprocess.run(
        [*PYTHON_M, "report", "--json", "--root", str(root), "--at", str(at)],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return out.returncode, json.loads(out.stdout) if out.stdout else {}, out.stderr


def _one_run(root: Path) -> Path:
    write_ledger(
        root,
        "run-a",
        start_ts=T0,
        end_ts=T0 + 60,
        events=[ev(T0 + 5 + i, prompt=10, gen=2) for i in range(20)],
    )
    return root / "run-a" / "w0.g0.ledger.sqlite"


def test_fifos_named_like_a_ledger_a_marker_and_the_summary_are_named_not_read(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ledger"
    good = _one_run(root)
    os.mkfifo(root / SUMMARY_NAME)
    (root / "run-b").mkdir()
    os.mkfifo(root / "run-b" / "w0.g0.ledger.sqlite")
    code, doc, err = _report(root, T0 + 61)
    assert code == 0, err
    assert doc["windows"]["total"]["input"] == 200
    files = {Path(f["path"]).relative_to(root).as_posix(): f for f in doc["files"]}
    assert files == {
        "run-b/w0.g0.ledger.sqlite": {
            "path": str(root / "run-b" / "w0.g0.ledger.sqlite"),
            "status": "unreadable",
            "detail": "not a regular file",
        }
    }
    assert doc["windows"]["total"]["complete"] is False
    assert doc["windows"]["total"]["problems"]["ledger_unreadable"] == 1

    # A FIFO where the good file's sequence marker should be could hide lost commits.
    shutil.rmtree(root / "run-b")
    marker = Path(f"{good}.seq")
    marker.unlink()
    os.mkfifo(marker)
    code, doc, err = _report(root, T0 + 61)
    assert code == 0, err
    assert [(f["status"], f["detail"]) for f in doc["files"]] == [
        ("unreadable", "w0.g0.ledger.sqlite.seq is not a regular file")
    ]
    assert doc["windows"]["total"]["complete"] is False


def _two_writers(root: Path) -> tuple[Path, Path]:
    for rank in (0, 1):
        write_ledger(
            root,
            "run-a",
            start_ts=T0,
            end_ts=T0 + 60,
            events=[ev(T0 + 5 + i, prompt=10 + rank, gen=2, cached=3) for i in range(20)],
            rank=rank,
            expected=2,
        )
    return root / "run-a" / "w0.g0.ledger.sqlite", root / "run-a" / "w1.g0.ledger.sqlite"


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


BAD_EDITS = {
    "negative tokens": (
        "UPDATE {table} SET prompt_tokens = -500 WHERE ts = (SELECT min(ts) FROM {table})",
        "a negative count (-500)",
    ),
    "text tokens": (
        "UPDATE {table} SET generation_tokens = 'lots' WHERE ts = (SELECT min(ts) FROM {table})",
        "a count that is not an integer",
    ),
    "blob tokens": (
        "UPDATE {table} SET cached_tokens = X'00ff' WHERE ts = (SELECT max(ts) FROM {table})",
        "a count that is not an integer",
    ),
    "int64 max": (
        "UPDATE {table} SET prompt_tokens = 9223372036854775807"
        " WHERE ts = (SELECT min(ts) FROM {table})",
        "9223372036854775807 tokens in one row (at most 10^8 per second)",
    ),
    "cached over input": (
        "UPDATE {table} SET cached_tokens = prompt_tokens + 1"
        " WHERE ts = (SELECT min(ts) FROM {table})",
        "more cached than input tokens in a row",
    ),
    "a billion expected writers": (
        "UPDATE meta SET value = '1000000000' WHERE key = 'expected_writers'",
        "expected writers 1000000000 is not a count from 0 to 4096",
    ),
    "NaN span start": (
        "UPDATE spans SET start_ts = 'nan' WHERE id = (SELECT min(id) FROM spans)",
        "span start 'nan' is not a time",
    ),
    "span ends before it starts": (
        "UPDATE spans SET end_ts = start_ts - 10 WHERE id = (SELECT min(id) FROM spans)",
        "a span ends",
    ),
}


def _check(root: Path) -> tuple[int, str]:
    out = subprocess.run(
        [*PYTHON_M, "check", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert "Traceback" not in out.stderr
    return out.returncode, out.stdout


import pytest  # noqa: E402


@pytest.mark.parametrize("case", sorted(BAD_EDITS))
def test_a_bad_value_refuses_its_file_and_nothing_from_it_is_added(
    case: str, tmp_path: Path
) -> None:
    import sqlite3

    root = tmp_path / "ledger"
    bad, good = _two_writers(root)
    sql, detail = BAD_EDITS[case]
    with sqlite3.connect(bad) as conn:  # what the reader adds: seconds, hours and days alike
        for table in ("buckets", "hourly", "daily") if "{table}" in sql else ("",):
            conn.execute(sql.format(table=table))
    conn.close()
    before = {p.name: _sha(p) for p in bad.parent.iterdir()}
    code, doc, err = _report(root, T0 + 61)
    assert code == 0 and "Traceback" not in err, err
    (f,) = doc["files"]
    assert (Path(f["path"]).name, f["status"]) == (bad.name, "bad_values")
    assert detail in f["detail"]
    total = doc["windows"]["total"]
    # Only the sound writer's figures: 20 events of 11 input, 2 output, 3 cached.
    assert (total["input"], total["output"], total["cached"]) == (220, 40, 60)
    assert total["complete"] is False
    assert total["problems"]["ledger_unreadable"] == 1
    assert all(not w["complete"] for w in doc["windows"].values())
    code, out = _check(root)
    assert code == 1
    verdicts = {line.split()[1]: line.split()[0] for line in out.splitlines()[:-1]}
    assert verdicts[str(bad)] in ("BAD_VALUES", "UNREADABLE") and verdicts[str(good)] == "ok"
    assert {p.name: _sha(p) for p in bad.parent.iterdir()} == before  # readers wrote nothing


def test_check_on_an_empty_or_missing_ledger_root_says_so_and_fails(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    code, out = _check(tmp_path / "empty")
    assert code == 1
    assert "no ledger files" in out


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PYTHON_M, *argv],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def test_escape_sequences_planted_in_a_ledger_never_reach_the_terminal(tmp_path: Path) -> None:
    from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
    from vllm_ledger.write.recorder import Recorder

    root = tmp_path / "ledger"
    host = "evil\x1b[2J\x1b]0;pwned\x07\u202ehost\nFAKE LINE"
    model = "m\x1b[31m\u2066x"
    clock = [T0]
    rec = Recorder(
        root,
        WriterIdentity(
            "run\x1b[1m-a", 0, 1, pid=1, instance=InstanceInfo((model,), 8000, host, "0.32\r")
        ),
        clock=lambda: clock[0],
    )
    rec.pump()
    rec.submit(ev(T0 + 1, prompt=4, gen=1))
    clock[0] = T0 + 5
    rec.pump(final=True)
    for by in ("instance", "model", "run"):
        out = _run("report", "--root", str(root), "--at", str(T0 + 6), "--by", by)
        assert out.returncode == 0, out.stderr
        text = out.stdout + out.stderr
        for raw in ("\x1b", "\x07", "\u202e", "\u2066", "\r"):
            assert raw not in text, (by, raw)
        assert "FAKE LINE" not in "\n".join(text.splitlines()) or "\\x0aFAKE LINE" in text
    out = _run("report", "--root", str(root), "--at", str(T0 + 6), "--by", "instance")
    assert "evil\\x1b[2J\\x1b]0;pwned\\x07\\u202ehost\\x0aFAKE LINE:8000" in out.stdout


BAD_AT = {
    "1796065409000": "looks like milliseconds: give seconds, e.g. --at 1796065409",
    "nan": "is not a time",
    "inf": "is not a time",
    "-5": "is outside 2000-2100",
    "2026-11-29T25:00": "is not a time",
    "2026-13-01": "is not a date",
    "soon": "is not a time",
}


def test_bad_at_values_give_one_line_and_exit_2_in_every_command(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    _one_run(root)
    cost: tuple[str, ...] = ("cost", "--power-watts", "300", "--electricity-price", "1")
    cost += ("--hardware-price", "2e4", "--lifetime-years", "3", "--ops-per-hour", "0.1")
    for command in (("report",), ("timeline",), cost):
        for value, says in BAD_AT.items():
            out = _run(*command, "--root", str(root), f"--at={value}")
            assert out.returncode == 2, (command, value, out.stderr)
            assert out.stdout == ""
            lines = out.stderr.splitlines()
            assert len(lines) == 1 and "Traceback" not in out.stderr, (command, value)
            assert lines[0] == f"vllm-ledger: error: --at {value!r} {says}" or (
                lines[0].startswith(f"vllm-ledger: error: --at {value!r} {says}")
            ), (command, lines[0])


def _as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *PYTHON_M, *argv],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        cwd="/",
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )


def test_a_run_folder_the_reader_cannot_enter_is_named_and_nothing_is_complete() -> None:
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="ledger-0700-", dir="/tmp"))
    try:
        base.chmod(0o755)
        root = base / "ledger"
        _one_run(root)  # run-a: 20 events of 10 input
        write_ledger(
            root, "run-b", start_ts=T0 + 100, end_ts=T0 + 160, events=[ev(T0 + 110, prompt=7)]
        )
        (root / "run-b").chmod(0o700)  # root's own: uid 65534 cannot list it
        out = _as_nobody("report", "--json", "--root", str(root), "--at", str(T0 + 161))
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
        doc = json.loads(out.stdout)
        assert [(f["path"], f["status"]) for f in doc["files"]] == [(str(root / "run-b"), "denied")]
        total = doc["windows"]["total"]
        assert total["input"] == 200  # what it could see, and it says it is not all
        assert total["complete"] is False and total["problems"]["ledger_unreadable"] == 1
        assert not any(w["complete"] for w in doc["windows"].values())
        check = _as_nobody("check", "--root", str(root))
        assert check.returncode == 1
        assert f"DENIED        {root / 'run-b'}  cannot list: Permission denied" in check.stdout
        # Root itself reads everything, and neither reader left a file in the folders.
        code, doc, _err = _report(root, T0 + 161)
        assert code == 0 and doc["windows"]["total"]["input"] == 207 and doc["files"] == []
        left = sorted(p.name for p in root.rglob("*") if p.is_file())
        assert left == sorted(["w0.g0.ledger.sqlite", "w0.g0.ledger.sqlite.seq"] * 2), left
    finally:
        shutil.rmtree(base)


def test_a_root_with_no_ledger_names_no_ledger_in_every_window(tmp_path: Path) -> None:
    from vllm_ledger.formats.status import parse

    (tmp_path / "empty").mkdir()
    code, doc, err = _report(tmp_path / "empty", T0)
    assert code == 3, err  # nothing matched (docs/cli.md, report)
    assert err.startswith("nothing matched: no ledger file under "), err
    assert {n: w["problems"] for n, w in doc["windows"].items()} == {
        n: {"no_ledger": 1} for n in ("today", "24h", "3d", "7d", "total")
    }
    assert not any(w["complete"] for w in doc["windows"].values())
    out = _run("status", "--root", str(tmp_path / "empty"))
    assert out.returncode == 3, out.stderr
    status = parse(out.stdout.encode())  # the bot's own parser accepts the new code
    assert all(dict(w.problems) == {"no_ledger": 1} for w in status.windows)


def test_a_marker_the_reader_may_not_read_is_named_not_taken_for_none() -> None:
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="ledger-seq-000-", dir="/tmp"))
    try:
        base.chmod(0o755)
        root = base / "ledger"
        good = _one_run(root)
        Path(f"{good}.seq").chmod(0o000)  # root's own: uid 65534 cannot read it
        out = _as_nobody("report", "--json", "--root", str(root), "--at", str(T0 + 61))
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
        doc = json.loads(out.stdout)
        assert [(Path(f["path"]).name, f["status"]) for f in doc["files"]] == [
            (good.name, "denied")
        ]
        assert "Permission denied" in doc["files"][0]["detail"]
        assert doc["windows"]["total"]["complete"] is False
    finally:
        shutil.rmtree(base)
