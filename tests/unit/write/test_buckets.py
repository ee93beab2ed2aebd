"""A bucket's layout, the check that an event fits its second, and the roll-ups of a commit."""

from __future__ import annotations

from vllm_ledger import figures
from vllm_ledger.format import schema
from vllm_ledger.write import buckets
from vllm_ledger.write.buckets import CACHED, N_COUNTS, PROMPT, REQUESTS, fits, fold, second_rows

HOUR = 1_800_000_000 - 1_800_000_000 % 86400


def test_the_indexes_follow_the_schema_columns() -> None:
    assert schema.COUNT_COLUMNS[PROMPT] == figures.INPUT_TOKENS.column
    assert schema.COUNT_COLUMNS[CACHED] == figures.CACHED_TOKENS.column
    faults = [schema.COUNT_COLUMNS[i] for i in (buckets.DROPPED, buckets.REJECTED, buckets.LOST)]
    assert tuple(faults) == tuple(schema.FAULT_COLUMNS)
    assert buckets.N_FIGURES < N_COUNTS == len(schema.COUNT_COLUMNS)


def test_an_event_fits_up_to_the_per_second_bound_and_never_with_more_cached_than_input() -> None:
    most = schema.PER_ENGINE_SECOND[figures.INPUT_TOKENS.column]
    b = [0] * N_COUNTS
    assert fits(b, most, 0, 0, ())
    assert not fits(b, most + 1, 0, 0, ())
    assert not fits(b, 5, 0, 6, ())
    b[PROMPT] = most
    assert not fits(b, 1, 0, 0, ())
    full = [0] * N_COUNTS
    full[REQUESTS] = schema.PER_ENGINE_SECOND[figures.REQUESTS.column]
    assert fits(full, 0, 0, 0, ()) and not fits(full, 0, 0, 0, ((1, 0.5),))


def test_seconds_with_a_figure_become_rows_summed_per_hour_and_day() -> None:
    one = [0] * N_COUNTS
    one[PROMPT] = 3
    idle = [0] * N_COUNTS
    idle[buckets.REJECTED] = 9  # no figure: no per-second row
    rows, hours = second_rows({(HOUR + 1, 0): one, (HOUR + 2, 0): list(one), (HOUR + 3, 1): idle})
    assert [r[:2] for r in rows] == [(HOUR + 1, 0), (HOUR + 2, 0)]
    assert hours[(HOUR, 0)][PROMPT] == 6 and (HOUR, 1) not in hours
    later = {(HOUR + 3600, 0): list(one), **hours}
    assert fold(later, 86400) == {(HOUR, 0): [9 if i == PROMPT else 0 for i in range(N_COUNTS)]}
