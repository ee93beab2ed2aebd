"""Ledgers with whose tokens for tests: the real Recorder and the real tag book (``write/tags.py``)
on a fake clock, each request tagged as the attribution middleware tags it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.ledgers import FakeClock
from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.write.recorder import Recorder
from vllm_ledger.write.tags import TagBook


@dataclass(frozen=True)
class Call:
    """One request, counted in the second ``ts``: whose it is and its counts. ``aborted``: its
    tokens were served but it never finished (a cut stream); ``untagged``: no tag names it."""

    ts: float
    key: str = ""
    adapter: str = ""
    user: str = ""
    tenant: str = ""
    prompt: int = 0
    gen: int = 0
    cached: int = 0
    aborted: bool = False
    untagged: bool = False


def write_credited_ledger(
    root: Path,
    run_id: str,
    *,
    start_ts: float,
    end_ts: float,
    calls: Sequence[Call] = (),
    port: int = 8000,
    model: str = "tiny",
    host: str = "testhost",
    heartbeat_every_s: float = 5.0,
) -> None:
    """A writer that ran from ``start_ts`` to ``end_ts`` and closed cleanly, crediting ``calls``;
    an aborted call is counted as aborted once the book settles it (at the next heartbeat)."""
    clock = FakeClock(start_ts)
    book = TagBook(monotonic=clock)
    book.consumer = True
    rec = Recorder(
        root,
        WriterIdentity(
            run_id, 0, 1, pid=1000, instance=InstanceInfo((model,), port, host, "0.32.0")
        ),
        clock=clock,
        monotonic=clock,
        book=book,
    )
    rec.pump()
    pending = sorted(enumerate(calls), key=lambda ic: ic[1].ts)
    t = start_ts
    i = 0
    while t < end_ts:
        t = min(end_ts, t + heartbeat_every_s)
        while i < len(pending) and pending[i][1].ts < t:
            n, call = pending[i]
            clock.t = call.ts
            _submit(rec, book, f"{run_id}-{n}", call)
            i += 1
        clock.t = t
        rec.pump()
    clock.t = end_ts
    rec.pump(final=True)
    assert rec.last_error is None, rec.last_error


def _submit(rec: Recorder, book: TagBook, x: str, call: Call) -> None:
    entry = None if call.untagged else book.begin(x, judge_abort=True)
    if entry is not None:
        book.named(entry, call.key, call.adapter, call.user, call.tenant)
    finished = () if call.aborted else ((call.gen, 0.5, f"chatcmpl-{x}", call.prompt, call.cached),)
    rec.submit((float(call.ts), 0, call.prompt, call.gen, call.cached, finished, book.tick()))
    if entry is not None:
        book.end(entry, 200)
