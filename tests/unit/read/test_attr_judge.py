"""Attribution rows judged: a read's rows refused exactly where a look at each value would
refuse them, and labels that are not short texts found."""

from __future__ import annotations

from typing import cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vllm_ledger.bounds import MAX_COUNT
from vllm_ledger.errors import BadValues
from vllm_ledger.read.attr_judge import MAX_LABEL_CHARS, bad_label, judged_columns, short_texts

_VALUE = st.one_of(
    st.integers(-3, 50),
    st.integers(MAX_COUNT // 2, MAX_COUNT + 1),
    st.sampled_from([2.5, 0.0, -0.0, 7.0, "7", "x", b"\x00", None]),
)


@given(st.lists(st.tuples(*[_VALUE] * 5), max_size=6), st.integers(0, MAX_COUNT))
def test_rows_are_judged_as_one_row_at_a_time_would_judge_them(
    counts: list[tuple[object, ...]], before: int
) -> None:
    """``judged_columns`` refuses exactly the rows a plain look at each value refuses: a count
    that is not an integer, a negative one, more cached than prompt tokens, or column totals (with
    those already counted) past ``MAX_COUNT``; and it adds the sums it took."""
    columns = [list(col) for col in zip(*counts, strict=True)] or [[] for _ in range(5)]
    totals = [before] * 5
    if _refused(counts, before):
        with pytest.raises(BadValues):
            judged_columns("attr_hourly", list(columns), totals)
        return
    judged_columns("attr_hourly", list(columns), totals)
    assert totals == [before + sum(cast(list[int], col)) for col in columns]


def _refused(counts: list[tuple[object, ...]], before: int) -> bool:
    if any(type(v) is not int for c in counts for v in c):
        return True
    ints = cast(list[tuple[int, ...]], counts)
    columns = list(zip(*ints, strict=True)) or [()] * 5
    return (
        any(v < 0 for c in ints for v in c)
        or any(c[2] > c[0] for c in ints)
        or (bool(ints) and max(sum(col) for col in columns) + before > MAX_COUNT)
    )


@pytest.mark.parametrize(
    ("values", "short"),
    [
        ({}, True),
        ({"": [0], "alice": [1]}, True),
        ({"u" * MAX_LABEL_CHARS: [1]}, True),
        ({"u" * (MAX_LABEL_CHARS + 1): [1]}, False),
        ({"alice": [1], None: [1]}, False),
        ({b"alice": [1]}, False),
        ({7: [1]}, False),
    ],
)
def test_short_texts_are_texts_within_the_bound(
    values: dict[object, list[int]], short: bool
) -> None:
    assert short_texts(values) is short


@pytest.mark.parametrize(
    ("value", "reason", "says"),
    [
        ("alice", None, "names a label set the file does not"),
        (b"alice", "", "is not short texts"),
        ("alice", "paid", "is not a reason the writer gives"),
    ],
)
def test_a_bad_label_says_what_is_wrong(value: object, reason: object, says: str) -> None:
    with pytest.raises(BadValues, match=says):
        bad_label("user", value, reason)
