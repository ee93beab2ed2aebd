"""A closed run as one summary record: what ``summarise`` writes from its files, what
``from_record`` takes back (every value checked), and the windows it answers whole."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from tests.ledgers import ev, write_ledger
from vllm_ledger.format.identity import InstanceInfo
from vllm_ledger.read.discovery import discover
from vllm_ledger.read.open_ledger import read_ledger
from vllm_ledger.read.snapshot import LedgerSnapshot
from vllm_ledger.read.summary import EVERYTHING
from vllm_ledger.read.summary_run import (
    RECORD_FIELDS,
    from_record,
    instance_from,
    summarise,
)
from vllm_ledger.read.values import BadValues
from vllm_ledger.read.windows import Window

T = 1_800_000_000.0
INSTANCE = InstanceInfo(("tiny",), 8000, "testhost", "0.32.0")


def _snaps(root: Path, *, clean: bool = True) -> list[LedgerSnapshot]:
    for rank in (0, 1):
        write_ledger(
            root,
            "run-a",
            start_ts=T,
            end_ts=T + 60,
            rank=rank,
            expected=2,
            clean=clean,
            events=[ev(T + 5 + rank, prompt=10 + rank, gen=2, cached=4, engine=rank)],
            heartbeat_every_s=20,
        )
    return [read_ledger(f.path, [EVERYTHING], now_ts=T + 7200) for f in discover([root])]


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    snaps = _snaps(tmp_path_factory.mktemp("root"))
    instances: list[Any] = []
    made = summarise(snaps, [s.window_sums(EVERYTHING) for s in snaps], instances)
    assert made is not None
    assert instances == [INSTANCE.to_meta()]
    return made


def test_the_record_holds_the_runs_coverage_and_counts(record: list[Any]) -> None:
    assert dict(zip(RECORD_FIELDS, record, strict=True)) == {
        "run_id": "run-a",
        "instance": 0,
        "expected_writers": 2,
        "start_ts": T,
        "end_ts": T + 60,
        "closed": True,
        "extra_ranks": [],
        "writer_states": "closed",
        "writer_first_ts": T,
        "writer_last_ts": T + 60,
        "vouched": [[T, T + 60]],
        "problem_seconds": [],
        "gaps": [],
        "first_record_ts": int(T),
        "totals": {"0": [10, 2, 4, 0, 0, 0], "1": [11, 2, 4, 0, 0, 0]},
        "counts": [int(T) + 5, T + 7],
        "edges": [],
    }


def test_a_run_that_did_not_close_has_no_record(tmp_path: Path) -> None:
    snaps = _snaps(tmp_path, clean=False)
    assert summarise(snaps, [s.window_sums(EVERYTHING) for s in snaps], []) is None


def test_the_record_read_back_answers_a_window_that_holds_all_its_counts_or_none(
    record: list[Any],
) -> None:
    run = from_record(record, [INSTANCE], [])
    assert (run.run_id, run.instance, run.ok, run.first_record_ts) == (
        "run-a",
        INSTANCE,
        True,
        int(T),
    )
    assert [(w.writer_rank, w.state, w.instance) for w in run.coverage.writers] == [
        (0, "closed", "testhost:8000"),
        (1, "closed", "testhost:8000"),
    ]
    assert run.coverage.vouched == [(T, T + 60)]
    holds = run.whole_sums(Window("all", int(T), int(T) + 60))
    assert holds is not None and sum(s.input_tokens for s in holds.values()) == 21
    assert run.whole_sums(Window("after", int(T) + 8, int(T) + 60)) == {}
    assert run.whole_sums(Window("cuts", int(T) + 6, int(T) + 60)) is None
    assert not run.imprecise(Window("all", int(T), int(T) + 60))


def test_a_value_summarise_never_writes_is_refused(record: list[Any]) -> None:
    def at(field: str, value: Any) -> list[Any]:
        changed = list(record)
        changed[RECORD_FIELDS.index(field)] = value
        return changed

    cases = {
        "expected_writers": (0, "expected writers 0 is not 1 to"),
        "instance": (1, "instance 1 is not a count from 0 to 0"),
        "start_ts": (math.nan, "run start nan is not a time"),
        "writer_states": ("alive", "writer states 'alive' are not 2 of"),
        "writer_first_ts": ([T], "writer first proof: 1 for 2 writers"),
        "extra_ranks": ([1], "extra writer ranks [1] are not above the expected"),
        "counts": ([int(T) + 7, T + 5], "counts end"),
        "vouched": ([[T + 1, T]], "is empty, out of order or overlaps"),
        "gaps": ([[T, T + 1, -1]], "lost commits -1 is not a count"),
        "totals": ({"0": [1]}, "totals of engine 0: 1 sums, not 6"),
    }
    for field, (value, text) in cases.items():
        with pytest.raises(BadValues, match=text.replace("[", r"\[").replace("]", r"\]")):
            from_record(at(field, value), [INSTANCE], [])
    with pytest.raises(ValueError):
        from_record(record[:-1], [INSTANCE], [])


def test_a_gap_without_a_marker_time_reaches_forever(record: list[Any]) -> None:
    changed = list(record)
    changed[RECORD_FIELDS.index("gaps")] = [[T + 60, None, 2]]
    assert from_record(changed, [INSTANCE], []).gaps == [(T + 60, math.inf, 2)]


def test_instance_facts_are_checked_as_a_ledgers_meta() -> None:
    assert instance_from(INSTANCE.to_meta()) == INSTANCE
    with pytest.raises(BadValues, match="is not a mapping of short strings"):
        instance_from({"port": 8000})
