"""Synthetic ledgers for the benchmarks and the tests, written through the project's own Recorder.

``generate(root, writers=8, days=365, runs=1)`` writes what ``writers`` busy API processes
would have left after ``days`` days, split into ``runs`` launches (restarts): every second
of the last 8 days as its own event (per-second rows, as a live ledger keeps them), and
older history as one event per writer-hour (which the recorder folds into the same hourly
rows a busy writer would leave), then the compaction pass the writers run themselves. The
recorder is driven on the caller's thread with a fake clock (``Recorder.pump``), and its
span-break limit is raised for the old history so a run stays one vouched span, as a live
writer's heartbeats would make it.

    python -m tests.generate OUT_DIR --writers 8 --days 365 --runs 1
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.ledgers import FakeClock
from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.write import compaction
from vllm_ledger.write.recorder import Recorder

HOUR = 3600
DETAIL_S = compaction.HORIZON_S  # per-second events for the span that keeps seconds
COMMIT_EVERY_S = 300  # fewer, larger commits than live (1 s) to generate quickly


def _write_run(
    root: Path,
    run_id: str,
    rank: int,
    writers: int,
    start: int,
    end: int,
    now: int,
    rnd: random.Random,
) -> None:
    clock = FakeClock(start)
    rec = Recorder(
        root,
        WriterIdentity(
            run_id,
            rank,
            writers,
            engine_indexes=(0,),
            pid=100 + rank,
            instance=InstanceInfo(("bench-model",), 8000, "bench-host", "0.32.0"),
        ),
        clock=clock,
        queue_size=1 << 30,
        span_break_s=2 * HOUR + 1,
    )
    rec.pump()
    detail_from = max(start, now - DETAIL_S)
    t = start
    # Old history: one event per hour (the hour's sum), committed hourly.
    while t < min(end, detail_from):
        n = min(HOUR, min(end, detail_from) - t)
        rec.submit((float(t), 0, 900 * n, 120 * n, 500 * n, ((121, 2.0),) * (n // 10)))
        clock.t = t + n
        rec.pump()
        t += n
    # The last 8 days: every second its own event, committed every COMMIT_EVERY_S.
    while t < end:
        for s in range(t, min(end, t + COMMIT_EVERY_S)):
            rec.submit(
                (
                    s + 0.5,
                    0,
                    500 + s % 800,
                    80 + s % 80,
                    200 + s % 300,  # cached is part of input (500 at least)
                    ((121, 2.0),) if s % 10 == 0 else (),
                )
            )
        t = min(end, t + COMMIT_EVERY_S)
        clock.t = t
        rec.pump()
    clock.t = end
    rec.compact()
    rec.pump(final=True)


def generate(
    root: Path,
    *,
    writers: int = 8,
    days: float = 1,
    runs: int = 1,
    now: int | None = None,
    seed: int = 0,
) -> Path:
    """Write the ledgers under ``root``; the last run ends at ``now`` (default: this second)."""
    now = int(time.time()) if now is None else now
    rnd = random.Random(seed)
    start = now - int(days * 86400)
    bounds = [start + (now - start) * i // runs for i in range(runs + 1)]
    for r in range(runs):
        run_id = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(bounds[r]))}-bench-{r}"
        for w in range(writers):
            _write_run(root, run_id, w, writers, bounds[r], bounds[r + 1], now, rnd)
    return root


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("out", type=Path)
    p.add_argument("--writers", type=int, default=8)
    p.add_argument("--days", type=float, default=1)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--now", type=int)
    a = p.parse_args()
    t0 = time.monotonic()
    generate(a.out, writers=a.writers, days=a.days, runs=a.runs, now=a.now)
    print(
        f"wrote {a.writers} writers x {a.runs} runs x {a.days} days to {a.out} "
        f"in {time.monotonic() - t0:.1f} s"
    )


if __name__ == "__main__":
    main()
