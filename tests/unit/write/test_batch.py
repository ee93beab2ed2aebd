"""The batch: events taken in and summed per second and engine until a commit empties it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vllm_ledger.write.batch import Batch
from vllm_ledger.write.buckets import DECODE_TOKENS, DECODE_US, DROPPED, PROMPT, REQUESTS
from vllm_ledger.write.tags import TagBook

TS = 1_800_000_000.25
S = int(TS)


def _batch() -> Batch:
    return Batch(TagBook(), lambda: TS + 100)


def test_events_are_summed_per_second_and_engine() -> None:
    b = _batch()
    b.accumulate((TS, 0, 10, 2, 4, ()))
    b.accumulate((TS + 0.5, 0, 5, 1, 0, ((3, 0.5),)))
    b.accumulate((TS, 1, 1, 1, 0, (), 7))
    counts = b.buckets[(S, 0)]
    assert counts[PROMPT] == 15 and counts[REQUESTS] == 1
    assert (counts[DECODE_TOKENS], counts[DECODE_US]) == (2, 500_000)
    assert b.buckets[(S, 1)][PROMPT] == 1
    assert b.pending_events == 3 and b.events_per_second == {S: 3} and b.taken_record == 7


def test_a_finished_request_with_its_id_is_credited() -> None:
    b = _batch()
    b.accumulate((TS, 0, 10, 2, 4, ((2, 0.5, "r1", 10, 4),)))
    assert [row[2:] for row in b.credits.rows()] == [(10, 2, 4, 1, 0)]


def test_what_cannot_be_taken_is_rejected_in_its_second_or_else_the_second_taken() -> None:
    b = _batch()
    b.accumulate((TS, 0, 5, 0, 6, ()))  # more cached than input
    b.accumulate((TS, -1, 1, 1, 1, ()))  # no such engine
    b.reject_taken(("not", "an", "event"))
    assert b.rejected == 3
    assert b.fault_seconds == {S: [0, 2, 0], S + 100: [0, 1, 0]}
    assert b.pending_events == 1  # the one that fit no bucket was counted in its second


def test_faults_handed_over_by_the_submitter_join_their_seconds() -> None:
    b = _batch()
    b.accumulate(("faults", {(S, DROPPED): 4}))
    assert b.fault_seconds == {S: [4, 0, 0]} and b.pending_events == 0


def test_a_commit_empties_the_batch_and_a_batch_given_up_is_lost_per_second() -> None:
    b = _batch()
    b.accumulate((TS, 0, 10, 2, 4, ()))
    b.accumulate((TS + 1, 0, 10, 2, 4, ()))
    b.reject_taken((TS, 0))
    assert b.give_up() == 2
    assert b.buckets == {} and b.pending_events == 0
    assert b.fault_seconds == {S: [0, 1, 1], S + 1: [0, 0, 1]}  # kept for the next commit
    b.accumulate((TS, 0, 1, 1, 1, ()))
    assert b.committed() == 1
    assert (b.buckets, b.fault_seconds, b.events_per_second) == ({}, {}, {})


_value = st.integers(min_value=0, max_value=3) | st.sampled_from(
    [-1, 10**8, 10**8 + 1, 60_000_000, 65_535, 65_536, True, 1.0, None]
)
_plain = st.tuples(
    st.sampled_from([TS, TS + 0.5, TS + 1]) | st.sampled_from([S, float("nan"), 1.0, 5e9, "x"]),
    _value,
    _value,
    _value,
    _value,
    st.just(()) | st.sampled_from([[], None, ((1, 0.5),)]),
    st.integers(min_value=1, max_value=9) | st.sampled_from([-3, True, "7", None]),
)


def _state(b: Batch) -> tuple[object, ...]:
    return (
        b.buckets,
        b.events_per_second,
        b.fault_seconds,
        b.rejected,
        b.pending_events,
        b.taken_record,
    )


@given(events=st.lists(_plain, max_size=12))
def test_the_plain_events_way_sums_and_rejects_as_the_general_way(
    events: list[tuple[object, ...]],
) -> None:
    fast, general = _batch(), _batch()
    for event in events:
        outcomes = []
        for batch, take in ((fast, fast.accumulate), (general, general._accumulate_any)):
            try:
                take(event)
                outcomes.append("taken")
            except Exception:
                batch.reject_taken(event)  # as the recorder's take-in does
                outcomes.append("raised")
        assert outcomes[0] == outcomes[1]
    assert repr(_state(fast)) == repr(_state(general))
