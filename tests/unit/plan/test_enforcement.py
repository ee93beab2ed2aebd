"""Whether hard budgets hold: the enforcer's over-budget file judged fresh, stale, missing or
unusable, from real files the enforcer's own writer wrote (``format/overbudget.py``)."""

from __future__ import annotations

import os
from pathlib import Path

from vllm_ledger.format import overbudget
from vllm_ledger.plan.enforcement import EnforcerLook, judge_file, look_at, read_file

T0 = 1_800_000_000.0
OVER = [overbudget.Over("key", "team-a", T0 + 3600, "key-team-a-day")]


def test_a_file_written_within_its_fresh_seconds_is_enforcing(tmp_path: Path) -> None:
    overbudget.write(tmp_path, OVER, written_ts=T0)
    look = look_at(tmp_path, T0 + 30)
    assert look == EnforcerLook(tmp_path, "fresh", T0 + 30, T0, 30.0, 1)
    assert look.enforcing and look.age_s == 30.0


def test_a_file_older_than_its_fresh_seconds_is_stale(tmp_path: Path) -> None:
    overbudget.write(tmp_path, OVER, written_ts=T0, fresh_s=12)
    look = look_at(tmp_path, T0 + 95.5)
    assert (look.state, look.age_s, look.over, look.enforcing) == ("stale", 95.5, 1, False)
    assert look.problem == (
        ".vllm-ledger-over-budget.json was written 96 s ago (stale after 12 s): the enforcer "
        "stopped"
    )


def test_no_file_is_missing(tmp_path: Path) -> None:
    look = look_at(tmp_path, T0)
    assert (look.state, look.age_s, look.written_ts) == ("missing", None, None)
    assert look.problem == "no .vllm-ledger-over-budget.json: the enforcer has not published one"


def test_a_broken_file_a_fifo_and_an_unreadable_root_are_unusable(tmp_path: Path) -> None:
    overbudget.path_in(tmp_path).write_text('{"version": 2}')
    look = look_at(tmp_path, T0)
    assert look.state == "unusable"
    assert look.problem == (
        ".vllm-ledger-over-budget.json cannot be used: not a version 1 over-budget document"
    )
    fifo_root = tmp_path / "fifo"
    fifo_root.mkdir()
    os.mkfifo(overbudget.path_in(fifo_root))
    assert read_file(overbudget.path_in(fifo_root)) == (None, "not a regular file of at most 1 MiB")
    assert look_at(fifo_root, T0).state == "unusable"
    deep = b"[" * 100_000 + b"]" * 100_000
    assert judge_file(tmp_path, deep, T0).state == "unusable"


def test_a_file_dated_ahead_of_the_clock_is_fresh(tmp_path: Path) -> None:
    """As the middleware judges it: only an age past fresh_s is stale."""
    overbudget.write(tmp_path, [], written_ts=T0 + 5)
    look = look_at(tmp_path, T0)
    assert (look.state, look.age_s, look.over) == ("fresh", -5.0, 0)
