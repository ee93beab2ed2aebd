"""Whether a writer is alive, closed, stale, crashed or missing, and whether it has finished.

The one place that decides a writer's state, with the one set of thresholds. A writer proves
it is alive by committing (its heartbeat ends a span); these functions judge that proof
against the reader's clock.
"""

from __future__ import annotations

from typing import Literal

from vllm_ledger.names import HEARTBEAT_STALE_AFTER_S

WriterState = Literal["alive", "closed", "stale", "crashed", "missing"]

# A heartbeat older than ``HEARTBEAT_STALE_AFTER_S`` cannot claim completeness (docs/ledger.md).
# A writer silent this long without a clean close will not write again: its file is finished
# (compaction and the summary of finished files may take it).
FINISHED_AFTER_S = 3600.0


def writer_state(
    *, clean_close_ts: float | None, last_proof_ts: float | None, at_ts: float, latest_run: bool
) -> WriterState:
    """The state of a writer that left a file (a writer with none is ``missing``).

    ``last_proof_ts`` is the end of its last committed span; ``latest_run`` says whether its run
    is its instance's newest (a silent writer of the newest run is stale, of an older one
    crashed: a later run replaced it).
    """
    if clean_close_ts is not None:
        return "closed"
    if last_proof_ts is not None and at_ts - last_proof_ts <= HEARTBEAT_STALE_AFTER_S:
        return "alive"
    return "stale" if latest_run else "crashed"


def finished(*, clean_close_ts: float | None, last_proof_ts: float | None, at_ts: float) -> bool:
    """True once the writer closed cleanly or has been silent for ``FINISHED_AFTER_S``."""
    if clean_close_ts is not None:
        return True
    return last_proof_ts is None or at_ts - last_proof_ts > FINISHED_AFTER_S
