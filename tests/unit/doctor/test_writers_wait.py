"""doctor's writers check waits only for what a wait can tell: writers that all closed are known
at once (no sleep at all), a live one is watched until its heartbeat moves. The clock and the
sleep are injected and counted; nothing here measures wall time."""

from __future__ import annotations

from pathlib import Path

from tests.inproc import run_cli
from tests.ledgers import write_ledger
from vllm_ledger.doctor import doctor
from vllm_ledger.doctor.writers import check_writers, still_unknown
from vllm_ledger.read.report import WriterStatus

T = 1_800_000_000.0


class Clock:
    """A clock that moves only when slept on; counts the sleeps."""

    def __init__(self, t: float) -> None:
        self.t = t
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.t += s


def _closed_run(root: Path) -> None:
    for rank in (0, 1):
        write_ledger(
            root, "run-1", start_ts=T - 600, end_ts=T - 60, rank=rank, expected=2, clean=True
        )


def test_writers_that_all_closed_are_known_without_a_single_sleep(tmp_path: Path) -> None:
    _closed_run(tmp_path)
    clock = Clock(T)
    row = check_writers([tmp_path], wait_s=12.0, clock=clock, sleep=clock.sleep)
    assert clock.sleeps == []
    assert "w0 closed" in row.checked and "w1 closed" in row.checked
    # The same through doctor(), the writers check alone.
    report = doctor([tmp_path], None, checks=("writers",), clock=clock, sleep=clock.sleep)
    assert clock.sleeps == [] and [r.check for r in report.rows] == ["writers"]


def test_a_live_writer_is_watched_until_the_wait_is_over(tmp_path: Path) -> None:
    # One writer closed, one alive (last heartbeat 2 s ago, never moving again here): the watch
    # goes on for the live one only, and ends at the wait.
    write_ledger(tmp_path, "run-1", start_ts=T - 600, end_ts=T - 60, rank=0, expected=2)
    write_ledger(tmp_path, "run-1", start_ts=T - 600, end_ts=T - 2, rank=1, expected=2, clean=False)
    clock = Clock(T)
    row = check_writers([tmp_path], wait_s=3.0, clock=clock, sleep=clock.sleep)
    assert clock.sleeps == [0.5] * 6
    assert "w1 silent: no heartbeat in 3 s" in row.checked


def _w(rank: int, state: str, last: float | None = T) -> WriterStatus:
    return WriterStatus("run-1", rank, 2, "h:8000", state, T - 100, last)  # type: ignore[arg-type]


def test_what_is_still_unknown() -> None:
    closed = {0: _w(0, "closed"), 1: _w(1, "stale")}
    assert still_unknown(closed, closed, 2) == set()
    # A missing writer of a run nobody is alive in will not appear: known.
    assert still_unknown({0: _w(0, "closed")}, {0: _w(0, "closed")}, 2) == set()
    # Beside a live one it may still start: watched, as is the live one until it moves.
    live = {0: _w(0, "alive")}
    assert still_unknown(live, live, 2) == {0, 1}
    assert still_unknown(live, {0: _w(0, "alive", T + 5), 1: _w(1, "alive", T + 5)}, 2) == set()


def test_the_command_answers_at_once_for_closed_writers(tmp_path: Path) -> None:
    """`doctor --only writers --heartbeat-wait 10m` over closed writers: it prints its row
    instead of watching ten minutes (the run_cli timeout would end a watch long before)."""
    import time

    # Real instants: the command reads the real clock.
    now = float(int(time.time()))
    for rank in (0, 1):
        write_ledger(tmp_path, "run-1", start_ts=now - 600, end_ts=now - 60, rank=rank, expected=2)
    code, out, err = run_cli(
        "doctor", "--only", "writers", "--root", str(tmp_path), "--heartbeat-wait", "10m"
    )
    assert code == 1, err  # closed writers are not recording: the row fails, at once
    assert "w0 closed" in out and "w1 closed" in out


def test_a_closed_writers_age_is_in_words() -> None:
    from vllm_ledger.doctor.writers import writers_row

    first = {0: _w(0, "closed", T - 3900)}
    row = writers_row("run-1", first, first, watched_s=0, now=T)
    assert "w0 closed (last heartbeat 1 h 5 min ago)" in row.checked
