"""The over-budget file: written whole, read only when it changed, judged before it counts;
a file the enforcer stopped rewriting (stale), missing or broken refuses nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vllm_ledger.format import overbudget
from vllm_ledger.format.overbudget import Over, OverBudget

T = 1_800_000_000.0


class Clocks:
    def __init__(self) -> None:
        self.now = T
        self.mono = 100.0

    def wall(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.mono


def test_written_whole_and_read_back(tmp_path: Path) -> None:
    over = [Over("key", "team-a", T + 600, "team-a-day"), Over("user", "bob", T + 60, "b")]
    path = overbudget.write(tmp_path, over, written_ts=T)
    assert path.name == overbudget.OVER_BUDGET_FILE
    assert [p.name for p in tmp_path.iterdir()] == [overbudget.OVER_BUDGET_FILE]
    written, fresh, got = overbudget.parse(path.read_bytes())
    assert (written, fresh) == (T, overbudget.FRESH_S)
    assert got == {("key", "team-a"): over[0], ("user", "bob"): over[1]}


def test_the_middleware_view_refuses_while_fresh_and_until_the_period_ends(
    tmp_path: Path,
) -> None:
    c = Clocks()
    view = OverBudget(tmp_path, c.wall, c.monotonic)
    view.refresh()
    assert view.refused("key", "team-a") is None and "not published" in (view.problem or "")
    overbudget.write(tmp_path, [Over("key", "team-a", T + 600, "b")], written_ts=T)
    view.refresh()  # within a second of the last look: not looked at again
    assert view.reads_total == 0
    c.mono += 1.0
    view.refresh()
    assert view.refused("key", "team-a") is not None and view.refused("key", "x") is None
    c.mono += 1.0
    view.refresh()
    assert view.reads_total == 1  # unchanged: not read again
    c.now = T + 31  # the enforcer stopped: stale, fails open
    assert view.refused("key", "team-a") is None and "stale" in (view.problem or "")
    overbudget.write(tmp_path, [Over("key", "team-a", T + 600, "b")], written_ts=T + 31)
    c.mono += 1.0
    view.refresh()
    assert view.refused("key", "team-a") is not None
    c.now = T + 600  # the period is over
    assert view.refused("key", "team-a") is None


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b'{"version": 2, "written_ts": 1800000000, "fresh_s": 30, "over": []}',
        b'{"version": 1, "written_ts": 5, "fresh_s": 30, "over": []}',
        b'{"version": 1, "written_ts": 1800000000, "fresh_s": 30, "over": [{"kind": "k"}]}',
        b"[" * 100_000,
    ],
)
def test_a_file_that_cannot_be_used_refuses_nothing(tmp_path: Path, data: bytes) -> None:
    overbudget.write(tmp_path, [Over("key", "a", T + 600, "b")], written_ts=T)
    c = Clocks()
    view = OverBudget(tmp_path, c.wall, c.monotonic)
    view.refresh()
    assert view.refused("key", "a") is not None
    overbudget.path_in(tmp_path).write_bytes(data)
    c.mono += 1.0
    view.refresh()
    assert view.refused("key", "a") is None and view.bad_total == 1


def test_a_fifo_is_never_opened(tmp_path: Path) -> None:
    os.mkfifo(overbudget.path_in(tmp_path))
    c = Clocks()
    view = OverBudget(tmp_path, c.wall, c.monotonic)
    view.refresh()  # would block forever if opened
    assert "not a regular file" in (view.problem or "")
