"""Half-open intervals: normalised, intersected, subtracted, clipped and measured."""

from __future__ import annotations

from vllm_ledger.read.intervals import clip, intersect, intersect_all, measure, normalize, subtract


def test_normalize_sorts_merges_touching_and_drops_empty() -> None:
    assert normalize([(5, 7), (0, 2), (2, 3), (6, 6.5), (9, 9), (8, 4)]) == [(0, 3), (5, 7)]
    assert normalize([(0, 10), (1, 2)]) == [(0, 10)]
    assert normalize([]) == []


def test_intersect_keeps_only_shared_time() -> None:
    a = [(0, 10), (20, 30)]
    b = [(5, 25), (28, 40)]
    assert intersect(a, b) == [(5, 10), (20, 25), (28, 30)]
    assert intersect(a, [(10, 20)]) == []  # touching is not overlapping
    assert intersect(a, []) == []


def test_intersect_all_of_many_and_of_none() -> None:
    assert intersect_all([[(0, 10)], [(2, 12)], [(1, 3), (8, 20)]]) == [(2, 3), (8, 10)]
    assert intersect_all([[(0, 1)]]) == [(0, 1)]
    assert intersect_all([]) == []


def test_subtract_cuts_holes() -> None:
    assert subtract([(0, 10)], [(2, 3), (5, 7)]) == [(0, 2), (3, 5), (7, 10)]
    assert subtract([(0, 10), (20, 30)], [(-5, 1), (9, 21), (29, 40)]) == [(1, 9), (21, 29)]
    assert subtract([(0, 10)], [(0, 10)]) == []
    assert subtract([(0, 10)], []) == [(0, 10)]


def test_clip_and_measure() -> None:
    assert clip([(0, 10), (20, 30)], 5, 25) == [(5, 10), (20, 25)]
    assert clip([(0, 10)], 5, 5) == []
    assert measure([(0, 1.5), (3, 4)]) == 2.5
    assert measure([]) == 0
