"""The time a file the reader cannot count may hide: unreadable, or never committed to."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path

from vllm_ledger.read.hidden_time import never_committed_spans, unreadable_spans
from vllm_ledger.read.snapshot import FileStatus, LedgerSnapshot

T0 = 1_796_000_000.0


def _snap(
    status: FileStatus,
    run_id: str,
    *,
    writer_rank: int = 0,
    generation: int = 0,
    created_ts: float | None = None,
    spans: list[tuple[float, float]] | None = None,
) -> LedgerSnapshot:
    return LedgerSnapshot(
        path=Path(f"/x/{run_id}/w0.sqlite"),
        status=status,
        run_id=run_id,
        writer_rank=writer_rank,
        generation=generation,
        created_ts=created_ts,
        spans=spans or [],
    )


def test_an_unreadable_file_of_an_unknown_run_may_hide_all_time() -> None:
    bad = _snap("unreadable", "no-stamp")
    assert unreadable_spans([bad], {}, {}, {}) == [(-math.inf, math.inf)]


def test_an_unreadable_file_hides_its_run_up_to_its_instances_next_launch() -> None:
    bad = _snap("denied", "run-a")
    run_start = {"run-a": T0, "run-b": T0 + 600, "run-c": T0 + 300}
    run_instance = {"run-a": "h:8000", "run-b": "h:8000", "run-c": "h:8001"}
    assert unreadable_spans([bad], run_start, run_instance, {}) == [(T0, T0 + 600)]


def test_an_unreadable_file_ends_where_its_writers_next_generation_begins() -> None:
    bad = _snap("bad_values", "run-a", writer_rank=0, generation=0)
    nxt = _snap("ok", "run-a", writer_rank=0, generation=1, spans=[(T0 + 100, T0 + 200)])
    by_writer = {("run-a", 0): [nxt]}
    got = unreadable_spans([bad], {"run-a": T0}, {"run-a": "h:8000"}, by_writer)
    assert got == [(T0, T0 + 100)]


def test_a_run_known_only_by_its_id_starts_at_its_stamp() -> None:
    bad = _snap("unreadable", "20260101T000000Z-gpu1-42")
    stamp = datetime(2026, 1, 1, tzinfo=timezone.utc).timestamp()
    assert unreadable_spans([bad], {}, {}, {}) == [(stamp, math.inf)]


def test_a_file_never_committed_to_hides_from_its_creation_to_the_next_launch_on_its_host() -> None:
    never = _snap("never_committed", "20260101T000000Z-gpu1-42", created_ts=T0)
    readable = _snap("ok", "run-x")
    run_start = {"20260102T000000Z-gpu1-43": T0 + 900, "20260102T000000Z-gpu2-44": T0 + 60}
    got = never_committed_spans([never, readable], run_start, {}, {})
    assert got == [(T0, T0 + 900)]
