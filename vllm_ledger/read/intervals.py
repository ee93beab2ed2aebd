"""Half-open wall-clock intervals ``(start, end)`` and the set algebra coverage needs. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

Interval = tuple[float, float]


def normalize(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, merged, non-empty intervals."""
    out: list[Interval] = []
    for s, e in sorted(i for i in intervals if i[1] > i[0]):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def intersect(a: Sequence[Interval], b: Sequence[Interval]) -> list[Interval]:
    """Intersection of two normalized lists."""
    out: list[Interval] = []
    i = j = 0
    while i < len(a) and j < len(b):
        s = max(a[i][0], b[j][0])
        e = min(a[i][1], b[j][1])
        if e > s:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def intersect_all(sets: Sequence[Sequence[Interval]]) -> list[Interval]:
    if not sets:
        return []
    acc = list(sets[0])
    for other in sets[1:]:
        acc = intersect(acc, other)
    return acc


def subtract(a: Sequence[Interval], b: Sequence[Interval]) -> list[Interval]:
    """``a`` minus ``b``, both normalized."""
    out: list[Interval] = []
    j = 0
    for s, e in a:
        cur = s
        while j < len(b) and b[j][1] <= cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] < e:
            if b[k][0] > cur:
                out.append((cur, b[k][0]))
            cur = max(cur, b[k][1])
            k += 1
        if cur < e:
            out.append((cur, e))
    return out


def clip(a: Sequence[Interval], start: float, end: float) -> list[Interval]:
    return intersect(a, [(start, end)]) if end > start else []


def measure(a: Iterable[Interval]) -> float:
    return sum(e - s for s, e in a)
