"""How much a ledger file grows in a day of attributed requests (``bench/run.py --only
attrdisk``).

A real ``Recorder`` with its own ``TagBook``, driven on a fake clock (``pump``), takes a day of
finished requests at ``RATE_PER_S``: each second one event holding that second's finished
requests, each tagged first as the middleware tags it (``begin``, ``named``; ``end`` once
answered), its key one of ``KEYS`` and its user one of ``USERS``. Three days are written, each
in its own root:

* ``independent``: key and user drawn apart for every request, so a day meets up to
  ``KEYS x USERS`` pairs: the most rows those counts can make;
* ``user behind one key``: each user always comes with the same key (an application's key and
  its end users), ``USERS`` pairs in all;
* ``no attribution``: the same events without the join (the recorder's own rows only).

Each file is measured after the day, and again after the maintenance pass compacts it at
10 days of age (every per-second row past the 8-day horizon dropped, as ``compact_file`` does):
what stays for good. The per-hour bound of distinct keys and users (1,000 each by default,
``write/credits.py``) holds at these counts, so nothing folds into ``other``.
"""

from __future__ import annotations

import random
import sqlite3
import time
from pathlib import Path
from typing import Any

from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.write import compaction
from vllm_ledger.write.recorder import Recorder
from vllm_ledger.write.tags import TagBook

DAY = 86_400
RATE_PER_S = 10
KEYS = 1_000
USERS = 1_000
COMMIT_EVERY_S = 300  # fewer, larger commits than live (1 s): the same rows, written faster
START = 1_795_000_000 - DAY  # a fixed UTC day (the bench's instant), hour-aligned below
START -= START % DAY
# When the file is compacted: the whole day is past the 8-day horizon (8 days and an hour).
AGE_S = 10 * DAY
TABLES = ("buckets", "hourly", "daily", "attr_dims", "attr_seconds", "attr_hourly", "attr_daily")


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def write_day(root: Path, pairing: str, seconds: int = DAY, seed: int = 0) -> dict[str, Any]:
    """One writer's day of requests under ``pairing``; the file's size and rows, before and
    after compaction."""
    rnd = random.Random(seed)
    clock = Clock(START)
    book = TagBook(monotonic=clock)
    book.consumer = pairing != "no attribution"
    rec = Recorder(
        root,
        WriterIdentity("attr", 0, 1, (0,), 100, InstanceInfo(("tiny",), 8000, "bench-host")),
        clock=clock,
        monotonic=clock,
        queue_size=1 << 30,
        book=book,
    )
    keys = [f"key:{k:08x}" for k in range(KEYS)]
    users = [f"user-{u:04d}" for u in range(USERS)]
    t0 = time.monotonic()
    n = 0
    for s in range(START, START + seconds):
        clock.t = float(s)
        finished: list[tuple[Any, ...]] = []
        entries = []
        prompts = cached = gens = 0
        for _ in range(RATE_PER_S):
            u, k = rnd.randrange(USERS), rnd.randrange(KEYS)
            if pairing != "independent":
                k = u % KEYS
            x = f"{n:032x}"
            n += 1
            p, g = 100 + rnd.randrange(900), 1 + rnd.randrange(256)
            c = rnd.randrange(p // 2)
            prompts, cached, gens = prompts + p, cached + c, gens + g
            if book.consumer:
                e = book.begin(x, judge_abort=True)
                if e is not None:
                    book.named(e, keys[k], "tiny", users[u], "")
                    entries.append(e)
                finished.append((g, 0.01 * g, f"chatcmpl-{x}", p, c))
            else:
                finished.append((g, 0.01 * g))
        rec.submit((float(s), 0, prompts, gens, cached, tuple(finished), book.tick()))
        for e in entries:
            book.end(e, 200)
        if (s + 1 - START) % COMMIT_EVERY_S == 0:
            clock.t = float(s + 1)
            rec.pump()
    clock.t = float(START + seconds)
    rec.pump(final=True)
    written_s = time.monotonic() - t0
    (path,) = root.rglob("*.ledger.sqlite")
    day = _measure(path)
    result = compaction.compact_file(path, START + AGE_S)
    kept = _measure(path)
    return {
        "pairing": pairing,
        "seconds": seconds,
        "requests": n,
        "write_s": written_s,
        "compaction": result.status,
        "day": day,
        "kept": kept,
        "faults": rec.internal_faults_total,
        "rejected": rec.rejected_total,
    }


def _measure(path: Path) -> dict[str, Any]:
    """The file's bytes (with any ``-wal`` beside it), its pages in use and rows per table."""
    size = path.stat().st_size
    wal = path.with_name(path.name + "-wal")
    if wal.exists():
        size += wal.stat().st_size
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = {}
        for table in TABLES:
            try:
                rows[table] = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            except sqlite3.OperationalError:
                rows[table] = None
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        page = conn.execute("PRAGMA page_size").fetchone()[0]
    finally:
        conn.close()
    return {"bytes": size, "free_bytes": free * page, "rows": rows}
