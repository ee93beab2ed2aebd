"""What a figure is worth: exact, a lower bound or unknown, and whether a row counted anything."""

from __future__ import annotations

from types import SimpleNamespace

from vllm_ledger.figures import report_names
from vllm_ledger.read.known import counted, figures_known


def test_a_complete_window_is_exact_whatever_it_counted() -> None:
    assert figures_known(True, 0, 60, False) == "exact"
    assert figures_known(True, 60, 60, True) == "exact"


def test_a_window_wholly_uncovered_that_counted_nothing_is_unknown() -> None:
    assert figures_known(False, 60, 60, False) == "unknown"
    assert figures_known(False, 0, 0, False) == "unknown"  # an empty window


def test_the_rest_is_a_lower_bound() -> None:
    assert figures_known(False, 60, 60, True) == "lower_bound"  # counted in an uncovered window
    assert figures_known(False, 59, 60, False) == "lower_bound"  # one second vouched for
    assert figures_known(False, 0, 60, False) == "lower_bound"  # a problem named, all covered


def test_counted_is_any_figure_above_zero() -> None:
    zeros = dict.fromkeys(report_names(), 0)
    assert not counted(SimpleNamespace(**zeros))
    for name in report_names():
        assert counted(SimpleNamespace(**{**zeros, name: 1})), name
