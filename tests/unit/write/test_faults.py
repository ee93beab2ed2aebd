"""Fault seconds: the submitter's bounded counts and the problem rows of a commit."""

from __future__ import annotations

import pytest

from vllm_ledger.write import faults
from vllm_ledger.write.buckets import DROPPED, REJECTED

NOW = 1_800_000_000.0


def test_the_submitter_counts_per_second_and_kind_up_to_its_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(faults, "MAX_PENDING_FAULT_SECONDS", 2)
    held = faults.SubmitFaults()
    held.add(10, DROPPED)
    held.add(10, DROPPED, 2)
    held.add(11, REJECTED)
    held.add(12, REJECTED, 5)  # past the bound: uncounted
    assert held.by_second == {(10, DROPPED): 3, (11, REJECTED): 1}
    assert held.uncounted == 5


def test_problem_rows_are_in_order_without_empty_seconds_and_never_outside_2000_2100() -> None:
    rows = faults.problem_rows(
        {
            int(NOW) + 2: [0, 1, 0],
            int(NOW) + 1: [2, 0, 3],
            int(NOW) + 3: [0, 0, 0],
            5: [1, 0, 0],  # the wall clock read 1970: lands in this commit's second
        },
        NOW,
    )
    assert rows == [(int(NOW), 1, 0, 0), (int(NOW) + 1, 2, 0, 3), (int(NOW) + 2, 0, 1, 0)]
