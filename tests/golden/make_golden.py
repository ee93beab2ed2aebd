"""Make the golden cases: small ledger roots written by the project's own Recorder on fake
clocks, the commands to run on them, and what those commands print today.

    PYTHONPATH=. .venv/bin/python tests/golden/make_golden.py [CASE ...]
    PYTHONPATH=. .venv/bin/python tests/golden/make_golden.py --outputs [CASE ...]

The first rewrites the named cases (all by default) from scratch; ``--outputs`` keeps the
committed ledger files and rewrites only ``commands.json`` and ``expected/``: the way to take
an intended change of what the commands print.

Rewrites tests/golden/cases/ from scratch. The expected outputs come from harness.run_case,
the same code the test runs, on fresh copies of the files just written. This script imports
the writing side (``vllm_ledger.recorder``, ``identity``, ``maintenance``) as laid out at commit
968ee87, which made the committed cases; after modules move, its imports need updating (the
committed cases and the test do not depend on it).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TypedDict
from zoneinfo import ZoneInfo

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.golden import harness
from tests.ledgers import FakeClock, ev
from tests.whose_ledgers import Req, drop_attribution, write_whose_ledger
from vllm_ledger import maintenance
from vllm_ledger.format import identity, smallfiles
from vllm_ledger.write import iteration, recorder

SH = "Asia/Shanghai"
NY = "America/New_York"
H = 3600
D = 86400


def local(zone: str, year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> int:
    return int(datetime(year, month, day, hour, minute, tzinfo=ZoneInfo(zone)).timestamp())


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> int:
    return int(datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc).timestamp())


# ---- writing ledgers ---------------------------------------------------------------------


def write_writer(
    root: Path,
    run_id: str,
    *,
    start_ts: float,
    end_ts: float,
    events: Sequence[iteration.IterationEvent] = (),
    rank: int = 0,
    expected: int = 1,
    clean: bool = True,
    port: int = 8000,
    models: tuple[str, ...] = ("tiny",),
    host: str = "gpu1",
    engines: tuple[int, ...] = (0,),
    heartbeat_s: float = 5.0,
    span_break_s: float = 30.0,
    queue_size: int = 4096,
    rejects: Sequence[float] = (),
    fail_commits: tuple[float, float] | None = None,
) -> None:
    """One writer from start_ts to end_ts, committing every ``heartbeat_s`` as a live one does.

    Events (and rejects) stamped before a commit are submitted just before it; commits at
    times in ``fail_commits`` [from, to) fail as a full disk would (three failures lose the
    batch). With a small ``queue_size`` a burst overflows the queue (dropped events).
    """
    clock = FakeClock(start_ts)
    rec = recorder.Recorder(
        root,
        identity.WriterIdentity(
            run_id,
            rank,
            expected,
            engine_indexes=engines,
            pid=4000 + rank,
            instance=identity.InstanceInfo(models, port, host, "0.32.0"),
        ),
        clock=clock,
        queue_size=queue_size,
        span_break_s=span_break_s,
    )
    rec.pump()
    pending = sorted(events, key=lambda e: e[0])
    rejected = sorted(rejects)
    t = start_ts
    while t < end_ts:
        t = min(end_ts, t + heartbeat_s)
        while rejected and rejected[0] < t:
            rec.reject(rejected.pop(0))
        while pending and pending[0][0] < t:
            rec.submit(pending.pop(0))
        clock.t = t
        failing = fail_commits is not None and fail_commits[0] <= t < fail_commits[1]
        if failing and not (clean and t == end_ts):
            with _failing_commits(rec):
                rec.pump()
        else:
            rec.pump(final=clean and t == end_ts)
    assert not pending and not rejected, "events after the end"
    if not clean:
        rec.abandon()


@contextlib.contextmanager
def _failing_commits(rec: recorder.Recorder) -> Iterator[None]:
    def fail(conn: sqlite3.Connection, now_ts: float, final: bool) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    rec._commit = fail  # type: ignore[method-assign]
    try:
        yield
    finally:
        del rec._commit


def checkpoint(root: Path) -> dict[str, int]:
    """Fold any -wal into its ledger so each file stands alone; no -wal or -shm remains.

    A zero-byte -wal (left by a read-only open, as the maintenance pass makes) holds nothing
    and is removed without opening the ledger, which keeps the ledger's mtime. Returns those
    removed empty files' mtimes (ns) by path relative to ``root``.
    """
    empty = {}
    for wal in sorted(root.rglob("*-wal")):
        db = Path(str(wal)[: -len("-wal")])
        if wal.stat().st_size == 0:
            empty[wal.relative_to(root).as_posix()] = wal.stat().st_mtime_ns
            wal.unlink()
            Path(f"{db}-shm").unlink(missing_ok=True)
            continue
        conn = sqlite3.connect(str(db))
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        finally:
            conn.close()
    leftovers = [p for p in root.rglob("*") if p.name.endswith(("-wal", "-shm", ".tmp"))]
    assert not leftovers, leftovers
    return empty


# ---- commands ----------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    build: Callable[[Path], None]
    # label -> (at instant, zone label -> zone)
    instants: dict[str, float]
    zones: dict[str, str] = field(default_factory=lambda: {"": SH})
    # extra report --json flags per slug suffix, e.g. {"instance-8000": ["--instance", "8000"]}
    extra_reports: dict[str, list[str]] = field(default_factory=dict)
    # slugs (or "label.slug") run a second time on a copy with restored mtimes
    restored: Sequence[str] = ()
    all_restored: bool = False
    # an instant at which, with restored mtimes, the summary must answer for every file
    summary_at: float | None = None
    # report --by values with a calendar step, run at the first instant (e.g. "day,model")
    calendar: Sequence[str] = ()
    # report --by whose keys (e.g. "key", "day,user"): text, JSON and CSV at the first instant
    whose: Sequence[str] = ()
    # export commands at the first instant: slug -> flags after --root and --tz
    exports: dict[str, list[str]] = field(default_factory=dict)


def commands_for(case: Case) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    first = next(iter(case.instants))
    for label, at in case.instants.items():
        at_s = repr(float(at)) if at != int(at) else str(int(at))
        for zlabel, zone in case.zones.items():
            pre = f"{label}.{zlabel}." if zlabel else f"{label}."
            rep = ["report", "--root", harness.ROOT, "--at", at_s, "--tz", zone]
            tl = ["timeline", "--root", harness.ROOT, "--at", at_s, "--tz", zone]
            cmds: dict[str, list[str]] = {
                "report-json": [*rep, "--json"],
                "report-text": rep,
                **{f"report-json-by-{k}": [*rep, "--json", "--by", k] for k in BY},
                **{f"report-json-{k}": [*rep, "--json", *v] for k, v in case.extra_reports.items()},
                "timeline-json-today-1h": [*tl, "--json", "--window", "today", "--step", "1h"],
                "timeline-json-total-1d": [*tl, "--json", "--window", "total", "--step", "1d"],
                "status": ["status", "--root", harness.ROOT, "--tz", zone],
            }
            if label == first:  # 7 days of hours: 169 steps, about 65 KB; once per case
                cmds["timeline-json"] = [*tl, "--json"]
                cmds["report-text-by-run"] = [*rep, "--by", "run"]
                cmds["timeline-text"] = tl
                for by in (*case.calendar, *case.whose):  # --by day / month / day,model / key
                    slug = by.replace(",", "-")
                    cmds[f"report-text-by-{slug}"] = [*rep, "--by", by]
                    cmds[f"report-json-by-{slug}"] = [*rep, "--json", "--by", by]
                    cmds[f"report-csv-by-{slug}"] = [*rep, "--csv", "--by", by]
                for slug, flags in case.exports.items():
                    cmds[f"export-{slug}"] = [
                        "export",
                        "--root",
                        harness.ROOT,
                        "--tz",
                        zone,
                        *flags,
                    ]
            mode = "restored" if case.all_restored else "fresh"
            for slug, argv in cmds.items():
                out[pre + slug] = {"argv": argv, "clock": at, "mtimes": mode}
        out[f"{label}.check"] = {
            "argv": ["check", "--root", harness.ROOT],
            "clock": at,
            "mtimes": "restored" if case.all_restored else "fresh",
        }
    for slug in case.restored:
        src = out[slug]
        other = "fresh" if src["mtimes"] == "restored" else "restored"
        out[f"{slug}.{other}-mtimes"] = {**src, "mtimes": other}
    return out


BY = ("instance", "model", "run", "engine")


class _SameRun(TypedDict):
    """The write_writer arguments the writers of one run share."""

    expected: int
    models: tuple[str, ...]
    engines: tuple[int, ...]


# ---- the cases ---------------------------------------------------------------------------

A0 = local(SH, 2026, 11, 20, 9, 30)


def build_a(root: Path) -> None:
    """One run, two writers (two DP engines), clean close, events in several seconds."""
    run = "20261120T013000Z-gpu1-4121"
    kw: _SameRun = {"expected": 2, "models": ("qwen2.5-7b",), "engines": (0, 1)}
    write_writer(
        root,
        run,
        rank=0,
        start_ts=A0,
        end_ts=A0 + 2 * H,
        events=[
            ev(A0 + 60.2, prompt=1200, gen=345, cached=600, engine=0, finished=[(345, 6.88)]),
            ev(A0 + 60.7, prompt=800, gen=12, engine=1),
            ev(A0 + 61.1, gen=40, engine=1, finished=[(52, 1.25)]),
            ev(A0 + 1800.5, prompt=5000, gen=1, cached=4096, engine=0),
            ev(A0 + 1801.5, gen=300, engine=0, finished=[(301, 3.0)]),
            ev(
                A0 + H + 17.9,
                prompt=64,
                gen=64,
                cached=32,
                engine=1,
                finished=[(64, 0.5), (1, 0.01)],
            ),
        ],
        **kw,
    )
    write_writer(
        root,
        run,
        rank=1,
        start_ts=A0 + 2,
        end_ts=A0 + 2 * H + 1,
        events=[
            ev(A0 + 60.9, prompt=333, gen=7, engine=0, finished=[(7, 0.2)]),
            ev(A0 + 2700.0, prompt=2048, gen=512, cached=1024, engine=1, finished=[(512, 10.24)]),
            ev(A0 + 2 * H - 0.01, prompt=10, gen=1, engine=0, finished=[(1, 0.0)]),
        ],
        **kw,
    )


B0 = local(SH, 2026, 11, 18, 22, 0)


def build_b(root: Path) -> None:
    """Three runs of one instance: a 10 min gap, then a 30 s restart across local midnight."""
    spans = [(B0, B0 + H), (B0 + H + 600, B0 + 2 * H), (B0 + 2 * H + 30, B0 + 3 * H)]
    for k, (a, b) in enumerate(spans):
        write_writer(
            root,
            f"20261118T{14 + k}0000Z-gpu1-{100 + k}",
            start_ts=a,
            end_ts=b,
            events=[
                ev(
                    a + 12.5,
                    prompt=100 * (k + 1),
                    gen=10 * (k + 1),
                    cached=50 * k,
                    finished=[(10 * (k + 1), 0.4)],
                ),
                ev(b - 20.25, prompt=7, gen=3, finished=[(3, 0.1)]),
            ],
        )


C0 = local(SH, 2026, 11, 22, 14, 0)


def build_c(root: Path) -> None:
    """Two instances (ports 8000 and 8001) serving two models, one of them under two names."""
    write_writer(
        root,
        "20261122T060000Z-gpu1-200",
        start_ts=C0,
        end_ts=C0 + 3 * H,
        port=8000,
        models=("qwen-7b",),
        events=[
            ev(C0 + 100.5, prompt=1000, gen=100, cached=500, finished=[(100, 2.0)]),
            ev(C0 + 5400.5, prompt=2000, gen=200, cached=0, finished=[(200, 4.0)]),
            ev(C0 + 3 * H - 60, prompt=3000, gen=300, cached=3000, finished=[(300, 6.0)]),
        ],
    )
    write_writer(
        root,
        "20261122T070000Z-gpu1-300",
        start_ts=C0 + H,
        end_ts=C0 + 2 * H,
        port=8001,
        models=("llama-8b", "llama"),
        events=[
            ev(C0 + H + 30.5, prompt=40, gen=4, finished=[(4, 0.05)]),
            ev(C0 + 5400.75, prompt=400, gen=44, cached=200, finished=[(44, 0.5)]),
        ],
    )


D0 = local(SH, 2026, 11, 23, 8, 0)


def build_d(root: Path) -> None:
    """A crashed writer (no clean close), then a later run of the same instance."""
    write_writer(
        root,
        "20261123T000000Z-gpu1-400",
        start_ts=D0,
        end_ts=D0 + H,
        clean=False,
        events=[
            ev(D0 + 600.5, prompt=50, gen=5),
            ev(D0 + H - 0.5, prompt=9, gen=1, finished=[(6, 0.3)]),
        ],
    )
    write_writer(
        root,
        "20261123T010200Z-gpu1-401",
        start_ts=D0 + H + 120,
        end_ts=D0 + 2 * H,
        events=[ev(D0 + H + 125.5, prompt=70, gen=7, finished=[(7, 0.7)])],
    )


E0 = local(SH, 2026, 11, 24, 10, 0)


def build_e(root: Path) -> None:
    """A run that expected two writers; only rank 0 ever wrote."""
    write_writer(
        root,
        "20261124T020000Z-gpu1-500",
        expected=2,
        start_ts=E0,
        end_ts=E0 + 1800,
        events=[ev(E0 + 300.5, prompt=120, gen=12, cached=60, finished=[(12, 0.6)])],
    )


F0 = local(SH, 2026, 11, 25, 16, 0)
F_LAST = F0 + H  # the latest run's last heartbeat


def build_f(root: Path) -> None:
    """A clean run, then a latest run whose writer stops heartbeating (alive, then stale)."""
    write_writer(
        root,
        "20261125T080000Z-gpu1-600",
        start_ts=F0,
        end_ts=F0 + 1800,
        events=[ev(F0 + 900.5, prompt=11, gen=2)],
    )
    write_writer(
        root,
        "20261125T083100Z-gpu1-601",
        start_ts=F0 + 1860,
        end_ts=F_LAST,
        clean=False,
        events=[
            ev(F0 + 2000.5, prompt=22, gen=4, finished=[(4, 0.2)]),
            ev(F_LAST - 0.5, prompt=33, gen=6),
        ],
    )


G0 = local(SH, 2026, 11, 26, 9, 0)


def build_g(root: Path) -> None:
    """Problem seconds: a queue overflow, rejected input, and a batch lost to failed writes."""
    burst = [ev(G0 + 600.1 + k / 20, prompt=10, gen=1) for k in range(12)]  # queue of 8: 4 dropped
    write_writer(
        root,
        "20261126T010000Z-gpu1-700",
        start_ts=G0,
        end_ts=G0 + 1800,
        queue_size=8,
        rejects=[G0 + 900.5, G0 + 900.6, G0 + 901.2],
        fail_commits=(G0 + 1200, G0 + 1215),
        events=[
            ev(G0 + 100.5, prompt=500, gen=50, cached=100, finished=[(50, 1.0)]),
            *burst,
            ev(G0 + 700.5, prompt=1, gen=1),
            ev(G0 + 1198.5, prompt=5, gen=5),
            ev(G0 + 1203.3, prompt=6, gen=6),
            ev(G0 + 1207.1, prompt=7, gen=7),
            ev(G0 + 1500.5, prompt=8, gen=8, finished=[(8, 0.8)]),
        ],
    )


H0 = local(SH, 2026, 11, 28, 12, 0)  # "now" for compaction
H_AT2 = H0 - 3 * D + 1234  # its 7d window starts inside a compacted hour


def build_h(root: Path) -> None:
    """40 days of history in three runs, compacted by the maintenance pass as of H0."""
    runs = [
        ("20261019T040000Z-gpu1-800", H0 - 40 * D, H0 - 30 * D, True),
        ("20261030T040000Z-gpu1-801", H0 - 29 * D, H0 - 12 * D, False),
        ("20261117T040000Z-gpu1-802", H0 - 11 * D, H0 - H, True),
    ]
    edge = H_AT2 - 7 * D
    for run_id, a, b, clean in runs:
        events = [
            ev(
                t + 1037.4,
                prompt=100 + k,
                gen=10 + k % 7,
                cached=50 * (k % 2),
                finished=[(10 + k % 7, 0.5)],
            )
            for k, t in enumerate(range(a, b - 1100, 6 * H))
        ]
        if a < edge < b:  # either side of the 7d edge of the second instant, in one hour
            events += [ev(edge - 100.5, prompt=1111, gen=11), ev(edge + 100.5, prompt=2222, gen=22)]
        write_writer(
            root,
            run_id,
            start_ts=a,
            end_ts=b,
            clean=clean,
            events=events,
            heartbeat_s=H,
            span_break_s=2 * H + 1,
        )
    checkpoint(root)
    result = maintenance.run(root, clock=lambda: H0)
    assert [c.status for c in result.compacted] == ["compacted"] * 3, result
    assert result.summary_entries == 3, result


I0 = local(SH, 2026, 11, 27, 9, 0)
I_NOW = I0 + 4 * H


def build_i(root: Path) -> None:
    """Two finished runs and the summary of finished files written by the maintenance pass."""
    for k, (a, b) in enumerate([(I0, I0 + H), (I0 + 2 * H, I0 + 3 * H)]):
        write_writer(
            root,
            f"20261127T0{1 + 2 * k}0000Z-gpu1-{900 + k}",
            start_ts=a,
            end_ts=b,
            events=[
                ev(a + 30.5, prompt=300 + k, gen=30, cached=100, finished=[(30, 0.75)]),
                ev(b - 30.5, prompt=40, gen=4, finished=[(4, 0.1)]),
            ],
        )
    checkpoint(root)
    result = maintenance.run(root, clock=lambda: I_NOW)
    assert result.summary_entries == 2 and not any(
        c.status == "compacted" for c in result.compacted
    ), result


J0 = utc(2026, 10, 31, 15, 0)  # 23:00 in Shanghai, 11:00 in New York (EDT)


def build_j(root: Path) -> None:
    """Events either side of local midnight in Shanghai and New York, and the DST fall-back."""
    events = [
        ev(utc(2026, 10, 31, 15, 59, 59) + 0.5, prompt=10, gen=1),  # 23:59:59 Shanghai
        ev(utc(2026, 10, 31, 16, 0, 0) + 0.2, prompt=20, gen=2),  # 00:00:00 Shanghai
        ev(utc(2026, 10, 31, 16, 0, 1) + 0.7, prompt=30, gen=3, finished=[(3, 0.3)]),
        ev(utc(2026, 11, 1, 3, 59, 59) + 0.4, prompt=40, gen=4),  # 23:59:59 EDT
        ev(utc(2026, 11, 1, 4, 0, 0) + 0.6, prompt=50, gen=5, finished=[(5, 0.5)]),  # 00:00 EDT
        ev(utc(2026, 11, 1, 5, 30), prompt=60, gen=6),  # 01:30 EDT
        ev(utc(2026, 11, 1, 6, 30), prompt=70, gen=7),  # 01:30 EST, the hour again
        ev(utc(2026, 11, 1, 7, 59, 58), prompt=80, gen=8, finished=[(8, 0.8)]),
    ]
    write_writer(
        root,
        "20261031T150000Z-gpu2-1000",
        start_ts=J0,
        end_ts=utc(2026, 11, 1, 8, 0),
        host="gpu2",
        events=events,
        heartbeat_s=29,
    )


K0 = local(SH, 2026, 11, 21, 13, 0)


def build_k(root: Path) -> None:
    """A ledger whose marker says it lost two commits, and a writer's file that is not SQLite."""
    run = "20261121T050000Z-gpu1-77"
    write_writer(
        root,
        run,
        expected=2,
        start_ts=K0,
        end_ts=K0 + 1800,
        events=[ev(K0 + 60.5, prompt=90, gen=9, finished=[(9, 0.9)])],
    )
    ledger = root / run / "w0.g0.ledger.sqlite"
    seq, _ts = smallfiles.read_sequence_marker(ledger) or (0, 0.0)
    smallfiles.write_sequence_marker(ledger, seq + 2, K0 + 1810.0)  # as if power loss undid two
    (root / run / "w1.g0.ledger.sqlite").write_bytes(b"not a ledger\n" * 400)


L0 = local(SH, 2026, 11, 26, 9, 0)
L_END = L0 + 2 * H


def build_l(root: Path) -> None:
    """Whose tokens: keys, adapters, users and tenants tagged by the middleware's book and joined
    by the recorder (n = 2 copies, a cut stream, an untagged request, a middleware fault, an id
    two clients shared), two writers of one run and a second instance with hostile user labels,
    and the day before, a run whose file was written before attribution."""
    run = "20261126T010000Z-gpu1-500"
    w0 = [
        Req(L0 + 10.5, "team-a", "qwen2.5-7b", "alice", "acme", prompt=1200, gen=80, cached=512),
        Req(L0 + 70.5, "team-a", "qwen-lora-sql", "bob", "acme", prompt=300, gen=40, n=2),
        Req(L0 + 130.5, "key:3f9a1c2e", "qwen2.5-7b", "alice", prompt=90, gen=9, aborted=True),
        Req(L0 + 190.5, "key:3f9a1c2e", "qwen2.5-7b", "", prompt=400, gen=20),
        Req(L0 + 250.5, prompt=50, gen=5, untagged=True),
        Req(L0 + 310.5, prompt=60, gen=6, fault=True),
        Req(L0 + 3700.5, "", "qwen-lora-sql", "carol", prompt=70, gen=7, cached=64),
    ]
    dup = (
        Req(L0 + 400.5, "team-a", "qwen2.5-7b", "alice", prompt=11, gen=1, rid="client-1"),
        Req(L0 + 400.5, "key:3f9a1c2e", "qwen2.5-7b", "dave", prompt=13, gen=2, rid="client-1"),
    )
    w1 = [
        Req(L0 + 20.5, "team-a", "qwen2.5-7b", "alice", "acme", prompt=500, gen=50, cached=256),
        Req(L0 + 3800.5, "team-b", "qwen2.5-7b", "erin", "globex", prompt=800, gen=60),
    ]
    for rank, reqs, shared in ((0, w0, [dup]), (1, w1, [])):
        write_whose_ledger(
            root,
            run,
            rank=rank,
            expected=2,
            start_ts=L0,
            end_ts=L_END,
            requests=reqs,
            shared=shared,
            model="qwen2.5-7b",
            host="gpu1",
        )
    hostile = [
        Req(L0 + 30.5, "team-b", "llama", "\x1b[2J\x1b]0;owned\x07", prompt=25, gen=5),
        Req(L0 + 40.5, "team-b", "llama", '=HYPERLINK("http://x")', prompt=35, gen=5),
        Req(L0 + 50.5, "team-b", "llama", "line\nforged: 1,000,000", prompt=45, gen=5),
    ]
    write_whose_ledger(
        root,
        "20261126T010000Z-gpu2-600",
        start_ts=L0,
        end_ts=L_END,
        requests=hostile,
        model="llama",
        host="gpu2",
        port=8001,
    )
    old = root / "before"
    write_whose_ledger(
        old,
        "20261125T010000Z-gpu1-400",
        start_ts=L0 - D,
        end_ts=L0 - D + H,
        requests=[Req(L0 - D + 10.5, "team-a", "qwen2.5-7b", prompt=700, gen=70)],
        model="qwen2.5-7b",
        host="gpu1",
    )
    assert drop_attribution(old) == 1
    for p in old.iterdir():
        p.rename(root / p.name)
    old.rmdir()


CASES = [
    Case(
        "a_one_run_two_writers",
        build_a,
        {"at1": A0 + 2 * H + 600.5, "at2": A0 + 1800.25, "at3": local(SH, 2026, 11, 21, 8, 0)},
        extra_reports={
            "model-qwen2.5-7b": ["--model", "qwen2.5-7b"],
            "model-other": ["--model", "other"],
            "instance-8000": ["--instance", "8000"],
        },
    ),
    Case(
        "b_restarts",
        build_b,
        {"at1": B0 + 3 * H + 300.5, "at2": B0 + H + 300},
        extra_reports={
            "instance-8000": ["--instance", "8000"],
            "instance-9999": ["--instance", "9999"],
        },
    ),
    Case(
        "c_two_instances",
        build_c,
        {"at1": C0 + 3 * H + 60, "at2": C0 + 5400.5},
        extra_reports={
            "instance-8000": ["--instance", "8000"],
            "instance-8001": ["--instance", "8001"],
            "model-qwen-7b": ["--model", "qwen-7b"],
            "model-llama": ["--model", "llama"],
        },
    ),
    Case("d_crash_then_restart", build_d, {"at1": D0 + 2 * H + 30, "at2": D0 + H + 50}),
    Case("e_missing_writer", build_e, {"at1": E0 + 1800 + 30.5, "at2": E0 + 900}),
    Case(
        "f_stale_and_alive",
        build_f,
        {"alive": F_LAST + 10.5, "stale": F_LAST + 100.25, "later": F_LAST + 2 * H},
    ),
    Case("g_problem_seconds", build_g, {"at1": G0 + 1800 + 60, "at2": G0 + 1000}),
    Case(
        "h_compacted_40d",
        build_h,
        {"at1": H0 + 0.5, "at2": H_AT2, "at3": H0 - 20 * D + 1800.5},
        restored=["at1.report-json", "at3.report-json"],
        calendar=("day", "month", "day,model"),
    ),
    Case(
        "i_summary",
        build_i,
        {"at1": I_NOW, "at2": I0 + 5400},
        all_restored=True,
        summary_at=I_NOW,
        restored=["at1.report-json", "at1.timeline-json", "at2.report-json"],
    ),
    Case(
        "j_midnight_zones",
        build_j,
        {"at1": utc(2026, 11, 1, 8, 0, 30), "at2": utc(2026, 10, 31, 16, 30) + 0.5},
        zones={"sh": SH, "ny": NY},
        calendar=("day", "day,instance"),
    ),
    Case("k_damaged_files", build_k, {"at1": K0 + 1800 + 60}),
    Case(
        "l_whose",
        build_l,
        {"at1": L_END + 60.5, "at2": L0 + 3600},
        extra_reports={
            "by-key-period": ["--by", "key", "--since", str(L0), "--until", str(L_END)],
            "by-user-model-llama": ["--by", "user", "--model", "llama"],
            "by-adapter-instance-8000": ["--by", "adapter", "--instance", "8000"],
        },
        whose=("key", "adapter", "user", "tenant", "day,key"),
        exports={
            "by-key": ["--since", str(L0), "--until", str(L_END), "--by", "key"],
            "by-hour-user": ["--since", str(L0), "--until", str(L_END), "--by", "hour,user"],
            "by-day-model-adapter-jsonl": [
                "--since",
                str(L0 - D),
                "--until",
                str(L_END),
                "--by",
                "day,model,adapter",
                "--format",
                "jsonl",
            ],
        },
    ),
]


# ---- writing the case folders --------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def _mtimes(root: Path) -> dict[str, int]:
    return {
        p.relative_to(root).as_posix(): p.stat().st_mtime_ns
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _files_opened(case_dir: Path, at: float) -> int:
    """Ledger files a report opens on a restored copy (the rest the summary answered)."""
    from vllm_ledger.read.ledgerset import LedgerSet
    from vllm_ledger.read.report import build_report

    with tempfile.TemporaryDirectory() as t:
        root = harness.fresh_root(case_dir, Path(t) / "root", "restored")
        with LedgerSet.read([root], clock=lambda: at) as ledgers:
            build_report(ledgers, at_ts=at)
            return ledgers.opens


def make_case(case: Case) -> None:
    d = harness.CASES / case.name
    if d.exists():
        shutil.rmtree(d)
    root = d / "root"
    root.mkdir(parents=True)
    case.build(root)
    before = _mtimes(root)
    empty = checkpoint(root)
    mtimes = _mtimes(root)
    assert all(before[k] == v for k, v in mtimes.items()), "checkpoint changed a ledger"
    doc: dict[str, object] = {"files": mtimes, "empty_files": empty}
    _write(d / "mtimes.json", json.dumps(doc, indent=2) + "\n")
    doc = {"case": (case.build.__doc__ or "").strip(), "commands": commands_for(case)}
    _write(d / "commands.json", json.dumps(doc, indent=2) + "\n")
    if case.summary_at is not None:
        assert _files_opened(d, case.summary_at) == 0, "the summary did not answer"
    with tempfile.TemporaryDirectory(prefix=f"golden-{case.name}-") as work:
        stdout, status = harness.run_case(d, Path(work))
    for slug, text in stdout.items():
        _write(d / "expected" / f"{slug}.txt", text)
    _write(d / "expected" / harness.EXIT_FILE, json.dumps(status, indent=2) + "\n")
    bad = {s: v for s, v in status.items() if v["exit"] not in (0, 1) or v["stderr"]}
    print(
        f"{case.name}: {len(stdout)} commands, {len(mtimes)} files",
        "ERRORS " + str(bad) if bad else "",
    )


def remake_outputs(case: Case) -> None:
    """Keep the case's ledger files; rewrite its commands.json and expected/ (after a change to
    what the commands print, or to the commands a case runs)."""
    d = harness.CASES / case.name
    old = json.loads((d / "commands.json").read_text())
    _write(
        d / "commands.json", json.dumps({**old, "commands": commands_for(case)}, indent=2) + "\n"
    )
    for path in (d / "expected").iterdir():
        path.unlink()
    with tempfile.TemporaryDirectory(prefix=f"golden-{case.name}-") as work:
        stdout, status = harness.run_case(d, Path(work))
    for slug, text in stdout.items():
        _write(d / "expected" / f"{slug}.txt", text)
    _write(d / "expected" / harness.EXIT_FILE, json.dumps(status, indent=2) + "\n")
    print(f"{case.name}: {len(stdout)} commands")


def main(names: Sequence[str]) -> None:
    """Make the named cases (all by default); with ``--outputs``, only their commands and
    outputs, on the committed ledger files."""
    outputs_only = "--outputs" in names
    names = [n for n in names if n != "--outputs"]
    for case in CASES:
        if not names or case.name in names:
            (remake_outputs if outputs_only else make_case)(case)


if __name__ == "__main__":
    main(sys.argv[1:])
