"""The gate every value read from a ledger, a summary or another host's exporter passes: its
type and its physical range, each refusal one line naming the value. (A sum row's bounds per
unit: tests/unit/test_figures.py.)"""

from __future__ import annotations

import re
from typing import Any

import pytest

from vllm_ledger.figures import FIGURES
from vllm_ledger.read.values import (
    MAX_COUNT,
    BadValues,
    check_bool,
    check_count,
    check_counts,
    check_instant,
    check_instants,
    check_intervals,
    check_meta,
    check_number,
    check_optional_instant,
    check_optional_second,
    check_problem_seconds,
    check_reported,
    check_sample_time,
    check_second,
    check_spans,
    check_sum_row,
    check_text,
    check_totals,
)

T = 1_800_000_000
OK_ROW = (0, 1, 2, 1, 0, 1, 5, 0, 0, 2, 1, 5, 0)


def refused(text: str) -> Any:
    return pytest.raises(BadValues, match=f"^{re.escape(text)}$")


def test_a_sum_row_needs_a_dp_rank_whole_counts_and_none_negative() -> None:
    assert check_sum_row("buckets", OK_ROW)[0] == 0
    with refused("buckets: engine 65536 is not a DP rank"):
        check_sum_row("buckets", (65536, *OK_ROW[1:]))
    with refused("buckets: engine '0' is not a DP rank"):
        check_sum_row("buckets", ("0", *OK_ROW[1:]))
    with refused("daily: a count that is not an integer"):
        check_sum_row("daily", (*OK_ROW[:7], 1, *OK_ROW[8:]))
    with refused("buckets: a negative count (-3)"):
        check_sum_row("buckets", (*OK_ROW[:8], -3, *OK_ROW[9:]))
    # the same sum is too many for a second and fine for a day
    big = (*OK_ROW[:9], 10**8 + 1, *OK_ROW[10:])
    with refused("buckets: 100000001 tokens in one row (at most 10^8 per second)"):
        check_sum_row("buckets", big)
    assert check_sum_row("daily", big)[0] == 0


def test_instants_lie_in_2000_to_2100_and_are_finite() -> None:
    assert check_instant("span start", T) == float(T)
    assert check_instant("x", 946_684_800) == 946_684_800.0
    with refused("span start inf is not a time"):
        check_instant("span start", float("inf"))
    with refused("x True is not a time"):
        check_instant("x", True)
    with refused("x 4102444801 is outside 2000-2100"):
        check_instant("x", 4_102_444_801)
    assert check_optional_instant("x", None) is None
    assert check_optional_instant("x", T) == float(T)


def test_counts_and_seconds_are_whole_and_in_range() -> None:
    assert check_count("engine", 3, 10) == 3
    with refused("engine 11 is not a count from 0 to 10"):
        check_count("engine", 11, 10)
    with refused("engine 1.0 is not a count from 0 to 10"):
        check_count("engine", 1.0, 10)
    assert check_second("first", T) == T
    with refused(f"first {T + 0.5!r} is not a whole second in 2000-2100"):
        check_second("first", T + 0.5)
    assert check_optional_second("first", None) is None
    assert check_counts("row", [0, 5], 5) == [0, 5]
    with refused("rows [0, 6] are not counts from 0 to 5"):
        check_counts("row", [0, 6], 5)
    with refused("rows (0,) are not counts from 0 to 5"):
        check_counts("row", (0,), 5)


def test_spans_and_fault_seconds() -> None:
    assert check_spans([(T, T + 1.5), (T, T)]) == [(T, T + 1.5), (T, T)]
    with refused(f"a span ends ({float(T)!r}) before it starts ({float(T + 1)!r})"):
        check_spans([(T + 1, T)])
    assert check_problem_seconds([(T, 1, 0, 2)]) == [(T, 1, 0, 2)]
    with refused(f"fault second {T + 0.5!r} is not a whole second"):
        check_problem_seconds([(T + 0.5, 1, 0, 0)])
    with refused("lost events -1 is not a count from 0 to 9007199254740992"):
        check_problem_seconds([(T, 0, 0, -1)])


def test_instants_and_intervals_of_a_summary() -> None:
    assert check_instants("close", [T, T + 0.5]) == [float(T), T + 0.5]
    with refused("closes [None] are not times in 2000-2100"):
        check_instants("close", [None])
    assert check_intervals("covered", [[T, T + 1], [T + 2, T + 3]]) == [(T, T + 1), (T + 2, T + 3)]
    with refused("covered {} is not a list of intervals"):
        check_intervals("covered", {})
    for bad in ([[T, T]], [[T + 2, T + 3], [T, T + 1]], [[T, T + 2], [T + 2, T + 3]]):
        with pytest.raises(BadValues, match="is empty, out of order or overlaps"):
            check_intervals("covered", bad)


def test_flags_texts_and_instance_facts() -> None:
    assert check_bool("clean", False) is False
    with refused("clean 0 is not true or false"):
        check_bool("clean", 0)
    assert check_text("model", "tiny") == "tiny"
    with pytest.raises(BadValues, match="is not a short string"):
        check_text("model", "x" * 4097)
    assert check_meta("meta", {"port": "8000"}) == {"port": "8000"}
    for bad in ({"port": 8000}, {str(i): "" for i in range(65)}, {"m": "x" * 4097}, ["a"]):
        with pytest.raises(BadValues, match="is not a mapping of short strings"):
            check_meta("meta", bad)


def test_totals_per_engine() -> None:
    assert check_totals({"0": [1, 2, 0, 0, 0, 0], "3": [0] * 6}) == {
        0: [1, 2, 0, 0, 0, 0],
        3: [0] * 6,
    }
    with refused("totals [] are not sums per engine"):
        check_totals([])
    with refused("engine '-1' is not a DP rank"):
        check_totals({"-1": [0] * 6})
    with refused("engine 70000 is not a count from 0 to 65535"):
        check_totals({"70000": [0] * 6})
    with refused("totals of engine 0: 5 sums, not 6"):
        check_totals({"0": [0] * 5})


def test_a_number_another_host_reports() -> None:
    assert check_number("x", 3, most=10) == 3.0
    cases = {
        "nan": (float("nan"), "x nan is not a number"),
        "text": ("1", "x '1' is not a number"),
        "inf": (float("inf"), "x inf is not finite"),
        "negative": (-0.5, "x -0.5 is negative"),
        "above": (11, "x 11 is above 10, the most it can be"),
    }
    for value, text in cases.values():
        with refused(text):
            check_number("x", value, most=10)
    with refused("x 2.5 is not a whole number"):
        check_number("x", 2.5, most=10, whole=True)
    by_name = {f.report_name: f for f in FIGURES}
    assert check_reported("input", 7, by_name["input_tokens"]) == 7.0
    with refused("input 7.5 is not a whole number"):
        check_reported("input", 7.5, by_name["input_tokens"])
    assert check_reported("decode", 0.25, by_name["decode_seconds"]) == 0.25
    with refused(f"decode 1e+13 is above {MAX_COUNT / 1e6:g}, the most it can be"):
        check_reported("decode", 1e13, by_name["decode_seconds"])


def test_a_sample_stamped_after_it_was_asked_for_means_a_clock_ahead() -> None:
    assert check_sample_time("sample", T + 5, at_ts=T, ahead_s=5) == float(T + 5)
    with refused(
        "sample is stamped 3,600 s after the time it was asked at (at most 5 s allowed): "
        "that host's clock is ahead"
    ):
        check_sample_time("sample", T + 3600, at_ts=T, ahead_s=5)
