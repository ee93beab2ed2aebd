"""Fault seconds: events dropped, rejected or lost, counted per wall second.

They are kept apart from every engine's counts and become ``problem_seconds`` rows. The thread
that calls ``Recorder.submit()`` counts what it drops or rejects in a ``SubmitFaults`` and hands
the counts over through the buffer; the recorder's thread keeps them per second, with what it
rejects or gives up itself (``write/batch.py``), until a commit writes them (``problem_rows``).

Standard library only: this runs inside vLLM.
"""

from __future__ import annotations

from vllm_ledger import bounds

MAX_PENDING_FAULT_SECONDS = 86_400

FaultSeconds = dict[int, list[int]]  # wall second -> [dropped, rejected, lost]


class SubmitFaults:
    """Fault counts per wall second, owned by the thread that calls ``submit()``."""

    __slots__ = ("by_second", "uncounted")

    def __init__(self) -> None:
        self.by_second: dict[tuple[int, int], int] = {}
        self.uncounted = 0

    def add(self, second: int, kind: int, n: int = 1) -> None:
        key = (second, kind)
        if key in self.by_second:
            self.by_second[key] += n
        elif len(self.by_second) < MAX_PENDING_FAULT_SECONDS:
            self.by_second[key] = n
        else:
            self.uncounted += n


def problem_rows(fault_seconds: FaultSeconds, now_ts: float) -> list[tuple[int, int, int, int]]:
    """The ``problem_seconds`` rows of one commit at ``now_ts``: per second, in order, the
    dropped, rejected and lost events, where any is not zero."""
    faults: FaultSeconds = {}
    for second, counts in fault_seconds.items():
        # A fault taken while the wall clock read outside 2000-2100 lands in this commit's
        # second: a reader would refuse the whole file for its own.
        at = second if bounds.instant_ok(second) else int(now_ts)
        into = faults.setdefault(at, [0, 0, 0])
        for i, n in enumerate(counts):
            into[i] += n
    rows = []
    for second, (dropped, rejected, lost) in sorted(faults.items()):
        if dropped or rejected or lost:
            rows.append((second, dropped, rejected, lost))
    return rows
