"""plan/fleet_checks: each served value through the value gate by what it is, and a host's clock
named as ahead past the tolerance, by how far."""

from __future__ import annotations

import math

import pytest

from vllm_ledger.errors import BadValues
from vllm_ledger.plan.fleet_checks import AHEAD_TOLERANCE_S, check_sample, clock_ahead

AT = 1_800_000_000.0
LABELS = {"__name__": "vllm_ledger_window_input_tokens", "instance": "a:9464", "window": "24h"}


@pytest.mark.parametrize(
    ("name", "value"),
    [("input_tokens", 5.0), ("decode_seconds", 0.25), ("problems", 3.0), ("complete", 1.0)],
)
def test_a_value_in_its_bounds_passes_as_it_is(name: str, value: float) -> None:
    assert check_sample(name, LABELS, value) == value


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        ("input_tokens", -1.0, "is negative"),
        ("input_tokens", 1.5, "is not a whole number"),
        ("report_ok", 2.0, "is above 1"),
        ("wall_seconds", math.inf, "is not finite"),
    ],
)
def test_a_value_out_of_its_bounds_is_refused_naming_the_series(
    name: str, value: float, why: str
) -> None:
    with pytest.raises(BadValues) as caught:
        check_sample(name, LABELS, value)
    assert caught.value.what.startswith('vllm_ledger_window_input_tokens{window="24h"}')
    assert why in caught.value.what


def test_a_clock_ahead_past_the_tolerance_is_named_by_its_furthest_sample() -> None:
    ahead = [
        ({"instance": "a:9464"}, AT + AHEAD_TOLERANCE_S / 2),  # within the tolerance
        ({"instance": "b:9464"}, AT + 100),
        ({"instance": "b:9464"}, AT + 240),
    ]
    got = clock_ahead(ahead, AT)
    assert list(got) == ["b:9464"]
    assert got["b:9464"][0] == 240.0
    assert "vllm_ledger_report_ok" in got["b:9464"][1]
