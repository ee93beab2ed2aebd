"""The poller's work is bounded: at most ``MAX_PARALLEL_SSH`` ssh processes at once, each killed
at its deadline; a remote that drips a byte at a time cannot stretch a poll past its total
deadline. (The ``/health`` probe's and a Prometheus query's deadlines are
tests/unit/bot/test_health.py's and tests/unit/plan/test_prom.py's.)

The ssh here is a real executable stand-in (a shell script handed to ``Fetcher(ssh=...)``)."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from vllm_ledger.bot.capped import run_capped
from vllm_ledger.bot.poll import MAX_PARALLEL_SSH, Fetcher, Poller
from vllm_ledger.bot.validate import Target
from vllm_ledger.errors import RemoteError

# Each stand-in notes its pid in LIVE, then counts the stand-ins alive (itself included) and
# appends the count to COUNTS: the largest count is the most that ever ran at once (a finished
# one is reaped before the poller starts the next, so it is never counted).
STAND_IN = """#!/bin/sh
live={live}
: > "$live/$$"
n=0
for f in "$live"/*; do
  kill -0 "${{f##*/}}" 2>/dev/null && n=$((n + 1))
done
echo "$n" >> {counts}
{then}
"""
DRIP = "while :; do printf x; sleep 0.2; done"  # never ends, never quiet for long


def stand_in(tmp_path: Path, then: str) -> tuple[Path, Path, Path]:
    live, counts = tmp_path / "live", tmp_path / "counts"
    live.mkdir()
    script = tmp_path / "ssh"
    script.write_text(STAND_IN.format(live=live, counts=counts, then=then))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, live, counts


def targets(n: int) -> list[Target]:
    return [Target(19001 + i, f"h{i}", "/c", "/d") for i in range(n)]


def alive(live: Path) -> list[int]:
    out = []
    for f in live.iterdir():
        try:
            os.kill(int(f.name), 0)
        except ProcessLookupError:
            continue
        out.append(int(f.name))
    return out


def test_at_most_max_parallel_ssh_run_at_once_and_each_is_cut_at_its_deadline(
    tmp_path: Path,
) -> None:
    ssh, live, counts = stand_in(tmp_path, DRIP)
    n = MAX_PARALLEL_SSH + 2  # two waves
    # 3 s: the eight of a wave all start (and count each other) before the first is cut, on
    # a loaded machine too.
    deadline_s = 3.0
    poller = Poller(targets(n), Fetcher(ssh=str(ssh), deadline_s=deadline_s), interval_s=3600)
    began = time.monotonic()
    results = poller.poll_once()
    took = time.monotonic() - began
    seen = [int(line) for line in counts.read_text().split()]
    assert len(seen) == n  # every target ran
    assert max(seen) == MAX_PARALLEL_SSH  # never more at once; as many as allowed
    assert {r.state for r in results.values()} == {"timeout"}
    assert all(r.round_trip_s < deadline_s + 2.0 for r in results.values())
    # two waves of one deadline each, the trickle notwithstanding (generous for a busy CI)
    assert took < 2 * deadline_s + 3.0, took
    assert alive(live) == []  # each killed (its whole process group), none left behind


def test_the_limit_is_the_pollers_to_set(tmp_path: Path) -> None:
    ssh, live, counts = stand_in(tmp_path, "sleep 0.3; exit 255")
    poller = Poller(targets(5), Fetcher(ssh=str(ssh), deadline_s=5.0), max_parallel=2)
    results = poller.poll_once()
    assert max(int(line) for line in counts.read_text().split()) == 2
    assert {r.state for r in results.values()} == {"unreachable"}
    assert alive(live) == []
    with pytest.raises(ValueError, match="max_parallel must be at least 1"):
        Poller(targets(1), Fetcher(ssh=str(ssh)), max_parallel=0)


def test_a_trickle_does_not_extend_the_deadline(tmp_path: Path) -> None:
    began = time.monotonic()
    run = run_capped(["sh", "-c", "while :; do printf x; sleep 0.1; done"], deadline_s=0.8)
    took = time.monotonic() - began
    assert run.ended == "timeout" and run.exit_code is None
    assert 3 <= len(run.stdout) <= 20 and set(run.stdout) == {ord("x")}
    assert took < 0.8 + 2.0, took


def test_a_stand_in_that_cannot_start_is_one_line(tmp_path: Path) -> None:
    ssh = tmp_path / "ssh"
    ssh.write_text("#!/bin/sh\n")  # not executable
    with pytest.raises(RemoteError, match=r"could not be started: Permission denied$"):
        Fetcher(ssh=str(ssh))(targets(1)[0])
