"""The summary of finished files at a root: what ``refresh`` writes and reuses, and what
``read_index`` takes back (nothing from an absent, older or damaged summary)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.ledgers import ev, write_ledger
from vllm_ledger.format.identity import InstanceInfo
from vllm_ledger.read import summary
from vllm_ledger.read.discovery import discover_runs

T = 1_800_000_000.0
NOW = T + 7200  # run-a and run-b finished (closed, or silent past an hour); run-c not


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for rank in (0, 1):
        write_ledger(
            tmp_path,
            "run-a",
            start_ts=T,
            end_ts=T + 60,
            rank=rank,
            expected=2,
            events=[ev(T + 5 + rank, prompt=10 + rank, gen=2, cached=4, engine=rank)],
            heartbeat_every_s=20,
        )
    write_ledger(
        tmp_path, "run-b", start_ts=T + 100, end_ts=T + 160, clean=False, heartbeat_every_s=20
    )
    write_ledger(
        tmp_path, "run-c", start_ts=T + 7000, end_ts=T + 7100, clean=False, heartbeat_every_s=20
    )
    return tmp_path


def test_refresh_keeps_finished_files_and_reads_each_once(root: Path) -> None:
    assert not summary.read_index(root) and summary.load(root) == {}
    assert summary.refresh(root, NOW) == (3, 4)  # 3 entries; every file read
    assert summary.refresh(root, NOW) == (3, 1)  # only run-c's, unfinished, read again
    index = summary.read_index(root)
    assert index.run_names() == ["run-a", "run-b"]
    assert index.instances() == [InstanceInfo(("tiny",), 8000, "testhost", "0.32.0")]
    assert sorted(summary.load(root)) == [
        "run-a/w0.g0.ledger.sqlite",
        "run-a/w1.g0.ledger.sqlite",
        "run-b/w0.g0.ledger.sqlite",
    ]
    assert (root / summary.SUMMARY_NAME).stat().st_mode & 0o777 == 0o644
    assert not [p for p in root.iterdir() if p.name.startswith(".summary-")]


def test_only_a_run_that_closed_is_answered_whole_and_only_while_unchanged(root: Path) -> None:
    summary.refresh(root, NOW)
    index = summary.read_index(root)
    runs = {files[0].run_name: files for files in discover_runs([root])}
    whole = index.summary_run(runs["run-a"])
    assert whole is not None and whole.run_id == "run-a"
    assert [s.input_tokens for _e, s in sorted(whole.totals.items())] == [10, 11]
    assert (whole.first_ts, whole.last_end_ts) == (T + 5, T + 7)
    assert index.summary_run(runs["run-b"]) is None  # not closed: its entries only
    assert index.summary_run(runs["run-c"]) is None
    assert set(index.entries("run-b")) == {"w0.g0.ledger.sqlite"}
    assert index.entries("run-c") == {}
    changed = runs["run-a"][1].path
    os.utime(changed, ns=(0, 1))
    (fresh,) = [f for f in discover_runs([root]) if f[0].run_name == "run-a"]
    assert summary.read_index(root).summary_run(fresh) is None


def test_an_older_or_damaged_summary_is_no_summary(root: Path) -> None:
    summary.refresh(root, NOW)
    path = root / summary.SUMMARY_NAME
    head, rest = path.read_bytes().split(b"\n", 1)
    doc = json.loads(head)
    path.write_bytes(json.dumps({**doc, "version": 1}).encode() + b"\n" + rest)
    assert not summary.read_index(root)
    path.write_bytes(b"{not json\n" + rest)
    assert not summary.read_index(root)
    path.write_bytes(json.dumps({**doc, "runs": []}).encode() + b"\n")
    assert not summary.read_index(root)
    deep = b"[" * (summary.MAX_NESTING + 1) + b"]" * (summary.MAX_NESTING + 1)
    path.write_bytes(deep + b"\n")
    assert not summary.read_index(root)
    path.unlink()
    path.mkdir()  # not a regular file
    assert not summary.read_index(root)


def test_a_damaged_line_of_file_facts_means_those_files_are_read(root: Path) -> None:
    summary.refresh(root, NOW)
    path = root / summary.SUMMARY_NAME
    head, first, second, end = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([head, first, b"x" * len(second), end]))
    index = summary.read_index(root)
    assert set(index.entries("run-a")) == {"w0.g0.ledger.sqlite", "w1.g0.ledger.sqlite"}
    assert index.entries("run-b") == {}
