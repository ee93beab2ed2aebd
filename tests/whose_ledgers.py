"""Hand-built ledgers with whose tokens: requests tagged by a real ``TagBook`` as the
middleware tags them, joined and written by the project's own Recorder on a fake clock."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.ledgers import FakeClock
from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.read.discovery import discover_paths
from vllm_ledger.write.recorder import Recorder
from vllm_ledger.write.tags import TagBook


@dataclass(frozen=True)
class Req:
    """One request, finished at ``ts`` (its tokens counted in that second) unless ``aborted``
    (its tokens counted, no finished stats: the client cut it). ``n`` copies share one id;
    ``untagged``: no tag (a route the middleware does not see); ``fault``: the middleware
    faulted and let it through untagged; ``rid``: its ``X-Request-Id`` (two requests that
    share one while in flight are ambiguous, ``shared``); ``refused``: answered 429 over a
    hard budget by the middleware."""

    ts: float
    key: str = ""
    adapter: str = ""
    user: str = ""
    tenant: str = ""
    prompt: int = 0
    gen: int = 0
    cached: int = 0
    n: int = 1
    aborted: bool = False
    untagged: bool = False
    fault: bool = False
    rid: str | None = None
    refused: bool = False  # answered 429 over a hard budget: counted under its labels, no tokens


def write_whose_ledger(
    root: Path,
    run_id: str,
    *,
    start_ts: float,
    end_ts: float,
    requests: Sequence[Req] = (),
    shared: Sequence[tuple[Req, Req]] = (),
    rank: int = 0,
    expected: int = 1,
    port: int = 8000,
    model: str = "tiny",
    host: str = "testhost",
    heartbeat_s: float = 5.0,
) -> Recorder:
    """A writer from ``start_ts`` to ``end_ts`` (closed cleanly), committing every
    ``heartbeat_s``; each request tagged, counted and joined as in a serving API process."""
    clock = FakeClock(start_ts)
    book = TagBook(monotonic=clock)
    book.consumer = True
    rec = Recorder(
        root,
        WriterIdentity(
            run_id, rank, expected, pid=2000 + rank, instance=InstanceInfo((model,), port, host)
        ),
        clock=clock,
        book=book,
    )
    rec.pump()
    todo: list[tuple[float, int, object]] = [(r.ts, i, r) for i, r in enumerate(requests)]
    todo += [(a.ts, len(todo) + i, (a, b)) for i, (a, b) in enumerate(shared)]
    todo.sort(key=lambda t: (t[0], t[1]))
    t, i, seq = start_ts, 0, 0
    while t < end_ts:
        t = min(end_ts, t + heartbeat_s)
        while i < len(todo) and todo[i][0] < t:
            item = todo[i][2]
            seq += 1
            if isinstance(item, Req):
                _one(rec, book, item, f"r{seq}")
            else:
                _shared(rec, book, *item)  # type: ignore[misc]
            i += 1
        clock.t = t
        rec.pump(final=t >= end_ts)
    assert i == len(todo), "requests after the end"
    return rec


def _one(rec: Recorder, book: TagBook, r: Req, x: str) -> None:
    rid = r.rid or x
    if r.refused:  # never reached the engine: only the book counts it
        book.refused((r.key, r.adapter, r.user, r.tenant))
        rec.submit((r.ts, 0, 0, 0, 0, (), book.tick()))
        return
    if r.fault:
        book.fault()
        entry = None
    elif r.untagged:
        entry = None
    else:
        entry = book.begin(rid, judge_abort=True)
        assert entry is not None
        book.named(entry, r.key, r.adapter, r.user, r.tenant)
    finished = (
        ()
        if r.aborted
        else tuple((r.gen, 0.5, f"chatcmpl-{rid}", r.prompt, r.cached) for _ in range(r.n))
    )
    rec.submit((r.ts, 0, r.prompt * r.n, r.gen * r.n, r.cached * r.n, finished, book.tick()))
    if entry is not None:
        book.end(entry, 200)


def _shared(rec: Recorder, book: TagBook, a: Req, b: Req) -> None:
    """Two requests that hold one client-chosen id at once: ambiguous, credited to neither."""
    rid = a.rid or "dup"
    ea = book.begin(rid, judge_abort=True)
    eb = book.begin(rid, judge_abort=True)
    assert ea is not None and eb is not None
    book.named(ea, a.key, a.adapter, a.user, a.tenant)
    book.named(eb, b.key, b.adapter, b.user, b.tenant)
    finished = tuple((r.gen, 0.5, f"chatcmpl-{rid}", r.prompt, r.cached) for r in (a, b))
    prompt, gen, cached = a.prompt + b.prompt, a.gen + b.gen, a.cached + b.cached
    rec.submit((a.ts, 0, prompt, gen, cached, finished, book.tick()))
    book.end(ea, 200)
    book.end(eb, 200)


def drop_attribution(root: Path) -> int:
    """Make every ledger under ``root`` look written before attribution: its attr tables and
    their migration dropped. Returns the files changed."""
    n = 0
    for path in discover_paths([root]):
        conn = sqlite3.connect(path)
        try:
            names = [
                r[0]
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'attr_%'"
                )
            ]
            for name in names:
                conn.execute(f'DROP TABLE "{name}"')
            conn.execute("DELETE FROM migrations WHERE name = '0004_attribution'")
            conn.commit()
        finally:
            conn.close()
        n += 1
    return n


def many_users(day_start_ts: int, users: int = 100_000, seconds: int = 86400) -> list[Req]:
    """``users`` distinct end users, one request each (10 prompt, 1 generated token), spread
    evenly over ``seconds`` from ``day_start_ts``, all under one key and adapter."""
    step = seconds / users
    return [
        Req(day_start_ts + i * step + 0.001, "team-a", "tiny", f"user-{i:06d}", prompt=10, gen=1)
        for i in range(users)
    ]
