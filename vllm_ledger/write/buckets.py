"""A bucket: what the recorder sums of one wall second of one DP engine, and its roll-ups.

A bucket is a list of counts in the order of ``schema.COUNT_COLUMNS``: the figures first, then
the fault counts (dropped, rejected, lost), which stay zero in an engine's bucket (faults are
kept per wall second apart from every engine, ``write/faults.py``). Here: the index of each
count and the most one second of one engine holds of each (module constants found once from
``figures.py``), the check that an event fits its second's bucket, and the sums of seconds per
hour and per day that one commit adds to the stored rows.

Standard library only: this runs inside vLLM.
"""

from __future__ import annotations

from typing import Any

from vllm_ledger import figures
from vllm_ledger.format import schema

# Indexes into a bucket's list of counts (the order of ``schema.COUNT_COLUMNS``), found once.
PROMPT = schema.COUNT_COLUMNS.index(figures.INPUT_TOKENS.column)
GENERATION = schema.COUNT_COLUMNS.index(figures.OUTPUT_TOKENS.column)
CACHED = schema.COUNT_COLUMNS.index(figures.CACHED_TOKENS.column)
REQUESTS = schema.COUNT_COLUMNS.index(figures.REQUESTS.column)
DECODE_TOKENS = schema.COUNT_COLUMNS.index(figures.DECODE_TOKENS.column)
DECODE_US = schema.COUNT_COLUMNS.index(figures.DECODE_US.column)
DROPPED, REJECTED, LOST = (schema.COUNT_COLUMNS.index(c) for c in schema.FAULT_COLUMNS)
N_FIGURES = len(schema.SUM_COLUMNS)  # the figures come first; the fault counts after them
N_COUNTS = len(schema.COUNT_COLUMNS)
# The most one second of one DP engine holds of each (``figures.py``), found once.
MOST_PROMPT = _MOST_PROMPT = schema.PER_ENGINE_SECOND[figures.INPUT_TOKENS.column]
MOST_GENERATION = _MOST_GENERATION = schema.PER_ENGINE_SECOND[figures.OUTPUT_TOKENS.column]
MOST_CACHED = _MOST_CACHED = schema.PER_ENGINE_SECOND[figures.CACHED_TOKENS.column]
MOST_REQUESTS = _MOST_REQUESTS = schema.PER_ENGINE_SECOND[figures.REQUESTS.column]
_MOST_DECODE_TOKENS = schema.PER_ENGINE_SECOND[figures.DECODE_TOKENS.column]
_MOST_DECODE_US = schema.PER_ENGINE_SECOND[figures.DECODE_US.column]

Buckets = dict[tuple[int, int], list[int]]  # (second or hour or day, engine) -> counts


def fits(b: list[int], prompt: int, generation: int, cached: int, finished: Any) -> bool:
    """Whether an event fits its second's bucket within the per-second bounds (``figures.py``)."""
    if (
        cached > prompt
        or b[PROMPT] + prompt > _MOST_PROMPT
        or b[GENERATION] + generation > _MOST_GENERATION
        or b[CACHED] + cached > _MOST_CACHED
        or b[REQUESTS] + len(finished) > _MOST_REQUESTS
    ):
        return False
    if finished:
        decode_tokens = sum(r[0] - 1 for r in finished if r[0] > 1)
        decode_us = sum(round(r[1] * 1e6) for r in finished)
        if (
            b[DECODE_TOKENS] + decode_tokens > _MOST_DECODE_TOKENS
            or b[DECODE_US] + decode_us > _MOST_DECODE_US
        ):
            return False
    return True


def second_rows(buckets: Buckets) -> tuple[list[tuple[int, ...]], Buckets]:
    """The rows of the seconds that hold a figure, and their sums per hour and engine."""
    rows = []
    hours: Buckets = {}
    for (second, engine), b in buckets.items():
        if any(b[:N_FIGURES]):
            rows.append((second, engine, *b))
            h = hours.get((second - second % 3600, engine))
            if h is None:
                hours[(second - second % 3600, engine)] = list(b)
            else:
                for i in range(N_COUNTS):
                    h[i] += b[i]
    return rows, hours


def fold(rows: Buckets, size: int) -> Buckets:
    """Sum ``(ts, engine) -> counts`` rows into buckets of ``size`` seconds."""
    out: Buckets = {}
    for (ts, engine), counts in rows.items():
        key = (ts - ts % size, engine)
        acc = out.get(key)
        if acc is None:
            out[key] = list(counts)
        else:
            for i, c in enumerate(counts):
                acc[i] += c
    return out
