"""The integrity pass (read/check.py): one verdict per ledger file, as cron sees it.

Busy, bad values and a folder that cannot be listed are in tests/faults/test_readers.py and
tests/test_hostile_root.py; unclean exits after real SIGKILLs in tests/faults/test_sigkill.py.
"""

from __future__ import annotations

import os
from datetime import timezone
from pathlib import Path

from tests.ledgers import ev, write_ledger
from vllm_ledger.format import connect, smallfiles
from vllm_ledger.read.check import FileVerdict, check, check_file
from vllm_ledger.units import format_instant

T0 = 1_800_000_000.0
WHO = "run run-a writer 0 gen 0"


def _ledger(root: Path, *, clean: bool = True, run_id: str = "run-a") -> Path:
    """A writer from T0 to T0+60, heartbeats every 5 s: 14 commits, the last at T0+60 (the
    clean close, or, with ``clean=False``, the writer's last commit before it died)."""
    write_ledger(
        root, run_id, start_ts=T0, end_ts=T0 + 60, events=[ev(T0 + 5, prompt=3)], clean=clean
    )
    return root / run_id / "w0.g0.ledger.sqlite"


def test_a_cleanly_closed_file_is_ok_at_any_age(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    for now in (T0 + 61, T0 + 86400 * 365):
        assert check_file(path, now) == FileVerdict(
            path, True, "ok", f"{WHO}: closed cleanly, seq 14"
        )


def test_a_writer_is_alive_for_30_s_after_its_last_heartbeat_stale_then_an_unclean_exit(
    tmp_path: Path,
) -> None:
    path = _ledger(tmp_path, clean=False)  # its last commit at T0+60, no clean close
    assert check_file(path, T0 + 90) == FileVerdict(path, True, "ok", f"{WHO}: alive, seq 14")
    for now in (T0 + 91, T0 + 60 + 3600):
        assert check_file(path, now) == FileVerdict(
            path,
            False,
            "stale",
            f"{WHO}: no clean close, last heartbeat {now - T0 - 60:.0f} s ago: frozen, failing "
            "to write, or exited uncleanly (an hour of silence makes it unclean_exit)",
        )
    assert check_file(path, T0 + 60 + 3601) == FileVerdict(
        path,
        False,
        "unclean_exit",
        f"{WHO}: no clean close, last heartbeat 3601 s ago (its unflushed tail is lost)",
    )


def test_a_damaged_header_is_damaged_and_left_as_it_is(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    with open(path, "r+b") as f:
        f.write(b"\0" * connect.HEADER_BYTES)
    damaged = path.read_bytes()
    assert check_file(path, T0 + 61) == FileVerdict(path, False, "damaged", "bad header")
    os.truncate(path, 50)
    assert check_file(path, T0 + 61) == FileVerdict(path, False, "damaged", "truncated")
    assert path.read_bytes() == damaged[:50]
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name, f"{path.name}.seq"]


def test_commits_the_marker_has_and_the_file_lacks_are_a_sequence_gap(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    smallfiles.write_sequence_marker(path, 16, T0 + 62)
    assert check_file(path, T0 + 61) == FileVerdict(
        path, False, "sequence_gap", f"{WHO}: 2 committed batch(es) missing after seq 14"
    )


def test_something_other_than_a_file_named_like_a_ledger_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "run-b" / "w0.g0.ledger.sqlite"
    path.mkdir(parents=True)
    assert check_file(path, T0) == FileVerdict(path, False, "unreadable", "not a regular file")


def test_check_gives_every_file_under_the_roots_a_verdict_on_the_clock_given(
    tmp_path: Path,
) -> None:
    closed = _ledger(tmp_path / "one")
    silent = _ledger(tmp_path / "two", clean=False, run_id="run-b")
    roots = [tmp_path / "one", tmp_path / "two"]
    now = {v.path: (v.ok, v.verdict) for v in check(roots, lambda: T0 + 90)}
    assert now == {closed: (True, "ok"), silent: (True, "ok")}
    later = check(roots, lambda: T0 + 91)
    assert {v.path: (v.ok, v.verdict) for v in later} == {
        closed: (True, "ok"),
        silent: (False, "stale"),
    }
    # A root that is not there is never "all sound".
    missing = tmp_path / "nothing-here"
    assert check([missing], lambda: T0) == [
        FileVerdict(missing, False, "unreadable", "cannot list: No such file or directory")
    ]


def test_a_file_claimed_and_never_committed_is_named_never_ok(tmp_path: Path) -> None:
    """A writer that created its file and never committed (a full disk, no permission, killed
    before its first commit) leaves a file with no commit and no marker: what it saw is
    unknown, so check names it, since when and why, and fails (docs/faults.md). Moments after
    its creation it is a writer starting: ok."""
    run = tmp_path / "run-z"
    run.mkdir()
    path = run / "w0.g0.ledger.sqlite"
    path.touch()
    mtime = path.stat().st_mtime
    assert check_file(path, mtime + 1) == FileVerdict(
        path, True, "ok", "starting: created moments ago, no commit yet"
    )
    verdict = check_file(path, mtime + 3600)
    assert (verdict.ok, verdict.verdict) == (False, "never_committed")
    assert verdict.detail.startswith(
        f"run run-z writer 0 gen 0: created at {format_instant(mtime, timezone.utc)}, nothing "
        "committed since (truncated): the writer could not write (a full disk, no write "
        "permission) or its process died before its first commit"
    )
    # With a marker, commits were made and the file holds none: that is a loss.
    smallfiles.write_sequence_marker(path, 2, mtime)
    verdict = check_file(path, mtime + 3600)
    assert (verdict.ok, verdict.verdict) == (False, "damaged")
