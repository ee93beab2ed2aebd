"""The report's terminal tables stay aligned for every value: long window names, long
durations, wide numbers (a test of the columns, not only of the figures)."""

from __future__ import annotations

import re

from vllm_ledger.formats.text import render
from vllm_ledger.read.report import Report, WindowReport


def _window(name: str, uncovered: int, tokens: int) -> WindowReport:
    return WindowReport(
        name=name,
        start_ts=1_796_000_000 - 86_400,
        cutoff_ts=1_796_000_000,
        input_tokens=tokens,
        output_tokens=tokens // 7,
        cached_tokens=tokens // 3,
        requests=tokens // 100,
        decode_tokens=tokens // 8,
        decode_seconds=12.5,
        uncovered_seconds=uncovered,
        complete=uncovered == 0,
        problems={} if uncovered == 0 else {"heartbeat_stale": 1},
    )


def test_both_tables_align_for_long_names_durations_and_numbers() -> None:
    windows = (
        _window("today", 86_399, 7),
        _window("this-month", 0, 123_456_789_012),
        _window("last-month", 31 * 86_400 - 1, 0),
        _window("period", 3_599, 55),
    )
    report = Report(
        schema=1,
        generated_ts=1_796_000_000.0,
        at_ts=1_796_000_000.0,
        cutoff_ts=1_796_000_000,
        tz="UTC",
        roots=("/r",),
        windows=windows,
        writers=(),
        files=(),
        runs=1,
    )
    lines = render(report).splitlines()
    first = lines.index(next(x for x in lines if x.startswith("window  ")))
    second = lines.index(next(x for x in lines[first + 1 :] if x.startswith("window ")))
    # (right-aligned column indexes) per table: the first's seven figures, the second's
    # uncovered time; every other column is left-aligned.
    for at, right in ((first, set(range(1, 8))), (second, {2})):
        block = lines[at : at + 1 + len(windows)]
        cells = [_cells(row) for row in block]
        assert len({len(c) for c in cells}) == 1, block  # no cell ran into its neighbour
        for j in range(len(cells[0])):
            edges = {(end if j in right else start) for start, end in (c[j] for c in cells)}
            assert len(edges) == 1, (j, block)


def _cells(row: str) -> list[tuple[int, int]]:
    """(start, end) of each cell: cells are parted by two or more spaces."""
    out = []
    for m in re.finditer(r"\S+(?: \S+)*", row):
        out.append((m.start(), m.end()))
    return out
