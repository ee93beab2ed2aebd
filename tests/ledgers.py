"""Hand-built ledgers for tests, written through the project's own Recorder with a fake clock."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vllm_ledger.format import connect
from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.read.discovery import discover_paths
from vllm_ledger.write.iteration import IterationEvent
from vllm_ledger.write.recorder import Recorder


@dataclass
class FakeClock:
    t: float

    def __call__(self) -> float:
        return self.t


def ev(
    ts: float,
    prompt: int = 0,
    gen: int = 0,
    cached: int = 0,
    engine: int = 0,
    finished: Sequence[tuple[int, float]] = (),
) -> IterationEvent:
    return (float(ts), engine, prompt, gen, cached, tuple(finished))


def write_ledger(
    root: Path,
    run_id: str,
    *,
    start_ts: float,
    end_ts: float,
    events: Sequence[IterationEvent] = (),
    rank: int = 0,
    expected: int = 1,
    clean: bool = True,
    port: int = 8000,
    model: str = "tiny",
    heartbeat_every_s: float | None = 5.0,
    host: str = "testhost",
) -> Recorder:
    """A writer that ran from start_ts to end_ts, committing heartbeats on the way."""
    clock = FakeClock(start_ts)
    rec = Recorder(
        root,
        WriterIdentity(
            run_id,
            rank,
            expected,
            pid=1000 + rank,
            instance=InstanceInfo((model,), port, host, "0.32.0"),
        ),
        clock=clock,
    )
    rec.pump()
    pending = sorted(events, key=lambda e: e[0])
    t = start_ts
    step = heartbeat_every_s or (end_ts - start_ts)
    i = 0
    while t < end_ts:
        t = min(end_ts, t + step)
        while i < len(pending) and pending[i][0] < t:
            rec.submit(pending[i])
            i += 1
        clock.t = t
        rec.pump()
    for e in pending[i:]:
        rec.submit(e)
    clock.t = end_ts
    if clean:
        rec.pump(final=True)
    else:
        rec.pump()
        rec.abandon()
    return rec


def second_rows(root: Path) -> int:
    """Per-second rows in every ledger under ``root`` (what compaction drops past 8 days)."""
    n = 0
    for p in discover_paths([root]):
        with connect.open_read_only(p) as conn:
            n += conn.execute("SELECT count(*) FROM buckets").fetchone()[0]
    return n


def closed_file(root: Path, t0: float) -> Path:
    """Writer 1 of 2, run-a on :8001, from t0 to t0+60, heartbeats every 5 s: two events, one
    per engine, at t0+5 and t0+7.5."""
    write_ledger(
        root,
        "run-a",
        start_ts=t0,
        end_ts=t0 + 60,
        events=[
            ev(t0 + 5, prompt=10, gen=2, cached=4, engine=0),
            ev(t0 + 7.5, prompt=3, engine=1, finished=[(5, 0.25)]),
        ],
        rank=1,
        expected=2,
        port=8001,
        model="m",
    )
    return root / "run-a" / "w1.g0.ledger.sqlite"


def three_ports(root: Path, at: float) -> None:
    """Three instances on testhost, heartbeats every 20 s: :8000 (run-a, model a) closed at
    ``at`` after 10 min with input 100, output 10, cached 40 at at-300; :8001 (run-b, model b)
    left uncleanly at at-1800 after 10 min with input 7, output 1; :8002 (run-c, model c)
    still writing at ``at`` after a minute, with input 3 at at-30."""
    write_ledger(
        root,
        "run-a",
        start_ts=at - 600,
        end_ts=at,
        port=8000,
        model="a",
        events=[ev(at - 300, prompt=100, gen=10, cached=40)],
        heartbeat_every_s=20,
    )
    write_ledger(
        root,
        "run-b",
        start_ts=at - 2400,
        end_ts=at - 1800,
        port=8001,
        model="b",
        clean=False,
        events=[ev(at - 2000, prompt=7, gen=1)],
        heartbeat_every_s=20,
    )
    write_ledger(
        root,
        "run-c",
        start_ts=at - 60,
        end_ts=at,
        port=8002,
        model="c",
        clean=False,
        events=[ev(at - 30, prompt=3)],
        heartbeat_every_s=20,
    )
