"""A power loss: with WAL and synchronous=NORMAL, commits since the last sync may vanish.

Simulated for real on the files: the writer commits N batches on a fake clock and is never
closed (no checkpoint); its db, -wal and sequence marker are copied as a crashed machine would
leave them, then the copied -wal is cut back to an earlier commit frame (or through the middle
of the next frame: a torn write). The ledger must read as consistent, count each surviving
commit once, show the lost stretch as uncovered and name it a sequence gap.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.faults.helpers import (
    copy_ledger_image,
    ledger_files,
    pumped_recorder,
    quick_check,
    sha256,
    snapshot,
    total_sums,
    wal_commit_ends,
)
from tests.ledgers import ev, write_ledger
from vllm_ledger.read.report import build_report

T0 = 1_800_000_000.0  # 2027-01-15, a whole second
STEP_S = 5.0
COMMITS = 12
DROPPED_COMMITS = 3


@pytest.mark.parametrize("cut", ["commit_boundary", "torn_frame"])
def test_power_loss_drops_the_unsynced_tail(tmp_path: Path, cut: str) -> None:
    live = tmp_path / "live"
    rec, clock = pumped_recorder(live, "run-1", T0)
    per_commit: list[int] = []  # input tokens each commit adds
    for k in range(COMMITS):
        clock.t = T0 + k * STEP_S
        n = 10 + k
        for j in range(n):
            rec.submit(ev(clock.t - 1 + j / 100, prompt=7, gen=2, cached=1))
        assert rec.pump()
        per_commit.append(7 * n)
    src = ledger_files(live)[0]
    assert rec._span.seq == COMMITS

    # The machine loses power: what reached the disk is an earlier prefix of the WAL.
    after = tmp_path / "after-power-loss"
    image = copy_ledger_image(src, after, "run-1")
    wal = Path(f"{image}-wal")
    ends = wal_commit_ends(wal)
    keep = ends[-1 - DROPPED_COMMITS]
    if cut == "torn_frame":
        keep += 1000  # part of the next frame reached the disk, the rest did not
    os.truncate(wal, keep)
    assert not Path(f"{image}-shm").exists()

    assert quick_check(image) == "ok"
    snap = snapshot(image)
    assert snap.status == "ok"
    survived = COMMITS - DROPPED_COMMITS
    assert snap.last_seq == survived
    assert snap.missing_commits == DROPPED_COMMITS  # the marker saw commits the file lacks
    assert total_sums(snap).input_tokens == sum(per_commit[:survived])

    # After the reboot a new run of the same instance starts and closes cleanly.
    reboot_ts = T0 + (COMMITS - 1) * STEP_S + 60
    write_ledger(
        after,
        "run-2",
        start_ts=reboot_ts,
        end_ts=reboot_ts + 20,
        events=[ev(reboot_ts + 3, prompt=1000)],
    )
    image_sha = sha256(image), sha256(wal)
    at = reboot_ts + 20
    r = build_report([after], at_ts=at, clock=lambda: at, tz="UTC")
    total = r.window("total")
    # Each surviving commit counted once, nothing from the lost ones, nothing twice.
    assert total.input_tokens == sum(per_commit[:survived]) + 1000
    # The crashed writer's last second is not vouched for (coverage.TAIL_S).
    last_vouched = T0 + (survived - 1) * STEP_S - 1
    assert total.start_ts == T0 - 1  # the first event's second
    # Uncovered: the second before the first heartbeat, and the lost stretch up to the reboot.
    assert total.uncovered_seconds == 1 + (reboot_ts - last_vouched)
    assert total.problems == {"sequence_gap": DROPPED_COMMITS, "unclean_exit": 1}
    assert total.complete is False
    assert sorted((w.run_id, w.state) for w in r.writers) == [
        ("run-1", "crashed"),
        ("run-2", "closed"),
    ]
    assert (sha256(image), sha256(wal)) == image_sha  # reading changed nothing
    rec.abandon()


def test_power_loss_that_also_lost_the_marker_still_shows_the_gap_as_uncovered(
    tmp_path: Path,
) -> None:
    """The marker is a hint (no fsync): lost with the rest, no gap is named, but the lost
    stretch still reads as uncovered time and nothing is counted twice."""
    live = tmp_path / "live"
    rec, clock = pumped_recorder(live, "run-1", T0)
    for k in range(COMMITS):
        clock.t = T0 + k * STEP_S
        rec.submit(ev(clock.t - 0.5, prompt=7))
        assert rec.pump()
    src = ledger_files(live)[0]
    after = tmp_path / "after"
    image = copy_ledger_image(src, after, "run-1")
    os.truncate(Path(f"{image}-wal"), wal_commit_ends(Path(f"{image}-wal"))[-1 - DROPPED_COMMITS])
    Path(f"{image}.seq").unlink()
    at = T0 + 200
    total = build_report([after], at_ts=at, clock=lambda: at, tz="UTC").window("total")
    survived = COMMITS - DROPPED_COMMITS
    assert total.input_tokens == 7 * survived
    assert total.uncovered_seconds == 1 + int(at) - int(T0 + (survived - 1) * STEP_S - 1)
    assert total.problems == {"heartbeat_stale": 1}
    rec.abandon()
