"""The span a writer vouches for in its current file, and the commit that extends it.

One commit is one transaction that adds the batch to the stored rows (seconds, hours, days,
problem seconds, credits), takes the next sequence number and extends the span, or starts a
new one after a failure, a clock step back or a long silence; the sequence marker beside the
file is written after it.

Standard library only: this runs inside vLLM.
"""

from __future__ import annotations

import contextlib
import sqlite3

from vllm_ledger.format import writes
from vllm_ledger.write import faults
from vllm_ledger.write.batch import Batch
from vllm_ledger.write.buckets import fold, second_rows
from vllm_ledger.write.ledgerfile import LedgerFile

SPAN_BREAK_S = 30.0  # a gap between commits longer than this starts a new span


class Span:
    """The commits to the current file: the last one's sequence number, span and time."""

    __slots__ = ("break_s", "end_ts", "seq", "span_id")

    def __init__(self, break_s: float = SPAN_BREAK_S) -> None:
        self.break_s = break_s
        self.seq = 0
        self.span_id: int | None = None
        self.end_ts = 0.0

    def commit(
        self, conn: sqlite3.Connection, batch: Batch, file: LedgerFile, now_ts: float, final: bool
    ) -> None:
        """Add ``batch`` to ``file`` in one transaction and extend the span to ``now_ts``."""
        rows, hours = second_rows(batch.buckets)
        problem_rows = faults.problem_rows(batch.fault_seconds, now_ts)
        seq = self.seq + 1
        # A new span starts after a failure, a clock step back, or a long silence.
        new_span = (
            self.span_id is None
            or now_ts < self.end_ts - 1.0
            or now_ts - self.end_ts > self.break_s
        )
        span_id = writes.commit_batch(
            conn,
            seconds=rows,
            hours=[(t, e, *c) for (t, e), c in hours.items()],
            days=[(t, e, *c) for (t, e), c in fold(hours, 86400).items()],
            problems=problem_rows,
            span_id=None if new_span else self.span_id,
            now_ts=now_ts,
            seq=seq,
            final=final,
            attribution=batch.credits.rows(),
            folded=batch.credits.folded_rows(),
            dim_ids=file.dim_ids,
        )
        self.seq = seq
        self.span_id = span_id
        self.end_ts = now_ts
        path = file.path
        if path is not None:
            with contextlib.suppress(OSError):
                file.marker.write(path, seq, now_ts)  # in place, kept open

    def broken(self) -> None:
        """What follows is not vouched for by the span so far: the next commit starts one."""
        self.span_id = None

    def new_file(self) -> None:
        """The next commit is the first to a new file: a new span, sequence number 1."""
        self.span_id = None
        self.seq = 0
