"""The one table of bounds (bounds.py): an instant within 2000-2100 and finite, a DP engine
index an int (not a bool) from 0 to MAX_ENGINE."""

from __future__ import annotations

import math

from vllm_ledger.bounds import (
    DECODE_US_PER_ENGINE_SECOND,
    EARLIEST_AT,
    LATEST_AT,
    MAX_ENGINE,
    engine_ok,
    instant_ok,
)


def test_instants_are_finite_and_within_2000_to_2100() -> None:
    assert (EARLIEST_AT, LATEST_AT) == (946684800, 4102444800)
    assert instant_ok(EARLIEST_AT) and instant_ok(float(LATEST_AT - 1)) and instant_ok(1.7e9)
    assert not instant_ok(EARLIEST_AT - 1) and not instant_ok(LATEST_AT)
    for bad in (math.nan, math.inf, "1700000000", None, True):
        assert not instant_ok(bad), bad


def test_an_engine_is_an_int_from_0_to_max_engine() -> None:
    assert MAX_ENGINE == 65535
    assert engine_ok(0) and engine_ok(MAX_ENGINE)
    for bad in (-1, MAX_ENGINE + 1, True, 0.0, "0"):
        assert not engine_ok(bad), bad


def test_a_daily_row_of_decode_time_stays_below_2_to_the_62() -> None:
    assert DECODE_US_PER_ENGINE_SECOND * 86400 <= 2**62
