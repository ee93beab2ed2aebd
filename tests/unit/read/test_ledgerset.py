"""The LedgerSet: every ledger read once, every view answered from that one read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO
from tests.ledgers import ev, write_ledger
from vllm_ledger.maintenance import run as maintenance_run
from vllm_ledger.read.discovery import discover_paths
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.report import build_report
from vllm_ledger.read.timeline import build_timeline

T0 = 1_796_000_000.0

# Counts, per ledger file, every open the Python process makes of it: SQLite connections
# (the ``sqlite3.connect`` audit event) and plain opens (``open``, which os.open and
# builtins.open both raise). SQLite's own open of the -wal is not the ledger file.
COUNT_OPENS = r"""
import collections, json, os, sys, urllib.parse
sys.path.insert(0, sys.argv[1])
files = {os.path.realpath(p) for p in sys.argv[3].split(",")}
opens = collections.Counter()
def hook(event, args):
    if event == "sqlite3.connect":
        db = str(args[0])
        if db.startswith("file:"):
            db = urllib.parse.unquote(db[5:].split("?", 1)[0])
        path = os.path.realpath(db)
    elif event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.path.realpath(os.fsdecode(args[0]))
    else:
        return
    if path in files:
        opens[path] += 1
sys.addaudithook(hook)
from vllm_ledger.cli import main
argv = json.loads(sys.argv[2])
with open(os.devnull, "w") as sink:
    sys.stdout = sink
    code = main(argv)
sys.stdout = sys.__stdout__
print(json.dumps({"code": code, "opens": {p: opens[p] for p in sorted(files)}}))
"""


def _two_runs(root: Path, *, live: bool = False) -> list[Path]:
    for run, start, clean in (("run-a", T0, True), ("run-b", T0 + 600, not live)):
        for rank in (0, 1):
            write_ledger(
                root,
                run,
                start_ts=start,
                end_ts=start + 120,
                events=[ev(start + 10 + i, prompt=7, gen=3 + rank) for i in range(30)],
                rank=rank,
                expected=2,
                clean=clean,
            )
    return sorted(discover_paths([root]))


def _opens(root: Path, files: list[Path], *argv: str) -> dict[str, int]:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            COUNT_OPENS,
            str(REPO),
            json.dumps([*argv, "--root", str(root), "--at", str(T0 + 800)]),
            ",".join(map(str, files)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["code"] == 0
    return got["opens"]


def test_report_html_opens_each_ledger_file_once(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    files = _two_runs(root, live=True)
    assert len(files) == 4
    opens = _opens(root, files, "report", "--html", str(tmp_path / "page.html"))
    assert list(opens.values()) == [1, 1, 1, 1]
    assert (tmp_path / "page.html").stat().st_size > 0


def test_timeline_of_total_opens_each_ledger_file_once(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    files = _two_runs(root)
    opens = _opens(root, files, "timeline", "--window", "total", "--step", "1m", "--json")
    assert list(opens.values()) == [1, 1, 1, 1]


def test_report_by_instance_opens_each_ledger_file_once(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    files = _two_runs(root)
    opens = _opens(root, files, "report", "--by", "instance", "--json")
    assert list(opens.values()) == [1, 1, 1, 1]


def test_finished_files_in_the_summary_are_not_opened_for_whole_windows(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    files = _two_runs(root)
    maintenance_run(root, clock=lambda: T0 + 800)
    opens = _opens(root, files, "report", "--json")
    # Every window holds each finished file whole (or misses it): the summary answers.
    assert list(opens.values()) == [0, 0, 0, 0]


def test_a_set_with_one_open_file_at_a_time_gives_the_same_figures(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    _two_runs(root)
    at = T0 + 800
    with LedgerSet.read([root], clock=lambda: at) as roomy:
        want = build_report(roomy, by="run")
        want_tl = build_timeline(roomy, window="total", step="1m")
        assert roomy.opens == 4
    with LedgerSet.read([root], clock=lambda: at, max_open_files=1) as tight:
        assert build_report(tight, by="run") == want
        assert build_timeline(tight, window="total", step="1m") == want_tl
        assert tight.opens > 4  # evicted files were opened again, and nothing was lost
    assert want.window("total").input_tokens == 4 * 30 * 7


def test_one_read_answers_views_at_other_instants(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    _two_runs(root)
    with LedgerSet.read([root], clock=lambda: T0 + 800) as ledgers:
        early = build_report(ledgers, at_ts=T0 + 25)
        late = build_report(ledgers)
        assert ledgers.opens == 4
    # At T0+25 run-a's writers had counted seconds T0+10 .. T0+24 (15 events each).
    assert early.window("total").input_tokens == 2 * 15 * 7
    assert late.window("total").input_tokens == 4 * 30 * 7
    assert late.generated_ts == T0 + 800


def test_a_file_that_fails_when_first_asked_for_sums_is_named_and_uncovers(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ledger"
    files = _two_runs(root)
    at = T0 + 800
    maintenance_run(root, clock=lambda: at)
    with LedgerSet.read([root], clock=lambda: at) as ledgers:
        assert ledgers.opens == 0
        # Between the read and the first window that needs the file, it is damaged.
        victim = files[0]
        data = bytearray(victim.read_bytes())
        data[:16] = b"\0" * 16
        victim.write_bytes(bytes(data))
        # A window that cuts run-a's files in two must open them.
        report = build_report(ledgers, at_ts=T0 + 25)
    assert ledgers.late_failures == 1
    statuses = {Path(f.path).name: (f.status, f.detail) for f in report.files}
    assert statuses == {victim.name: ("unreadable", "bad header")}
    assert not report.window("total").complete
    assert "ledger_unreadable" in report.window("total").problems
