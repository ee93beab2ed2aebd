"""What a value read from a ledger must be before it counts: its type and its physical range.

The disk is not trusted: a file may have been edited, damaged in a way SQLite cannot see, or
written by something else. A file with any value outside these bounds is refused whole (status
``bad_values``): nothing from it is added and the time it may cover is uncovered.

The bounds (``write/store.py``: the recorder refuses events past them, so no sound writer
ever writes such a row) are far above what any engine does, so that only nonsense fails them:

- tokens: at most ``MAX_TOKENS_PER_ENGINE_SECOND`` = 10^8 per second per DP engine (input,
  output, cached, decode tokens alike). The fastest prefill measured on one H200-class GPU is
  in the 10^5 tokens/s range; an engine spans at most a few dozen GPUs, so this leaves a margin
  of ten or more. An hourly row may hold 3,600 times that, a daily row 86,400 times.
- requests: at most 10^6 finished per second per engine.
- decode time of the requests that finished in one second: at most
  ``MAX_DECODE_US_PER_ENGINE_SECOND`` = 2^62 / 86,400 us (about 5 x 10^7 s), so a daily row stays
  below 2^62; ten thousand requests finishing in one second after a thousand seconds of decode
  each make 10^7 s.
- cached tokens never exceed input tokens in a second (they are part of it).
- instants (spans, fault seconds, creation, clean close) lie between 2000-01-01 and 2100-01-01
  and are finite; a span ends at or after its start.
- expected writers: 1 to ``MAX_EXPECTED_WRITERS`` = 4096 (vLLM's API server count is a few
  dozen at most); writer ranks and generations: as the file names allow (4 and 6 digits).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from vllm_ledger.errors import BadValues
from vllm_ledger.write.store import (
    MAX_DECODE_US_PER_ENGINE_SECOND,
    MAX_REQUESTS_PER_ENGINE_SECOND,
    MAX_TOKENS_PER_ENGINE_SECOND,
)

MAX_EXPECTED_WRITERS = 4096
MAX_ENGINE = 65535
EARLIEST_TS = 946_684_800.0  # 2000-01-01T00:00:00Z
LATEST_TS = 4_102_444_800.0  # 2100-01-01T00:00:00Z
ROW_SECONDS = {"buckets": 1, "hourly": 3600, "daily": 86400}


def check_sum_row(table: str, row: Sequence[Any]) -> tuple[int, tuple[int, ...]]:
    """``(engine, six sums)`` of one ``store.sum_by_engine`` row, or ``BadValues``."""
    engine = row[0]
    sums = tuple(row[1:7])
    non_integer, lowest, most_tokens, most_requests, most_decode_us, cached_over = row[7:13]
    if type(engine) is not int or not 0 <= engine <= MAX_ENGINE:
        raise BadValues(f"{table}: engine {engine!r} is not a DP rank")
    if non_integer:
        raise BadValues(f"{table}: a count that is not an integer")
    if lowest is not None and lowest < 0:
        raise BadValues(f"{table}: a negative count ({lowest})")
    span = ROW_SECONDS[table]
    if most_tokens is not None and most_tokens > MAX_TOKENS_PER_ENGINE_SECOND * span:
        raise BadValues(f"{table}: {most_tokens} tokens in one row (at most 10^8 per second)")
    if most_requests is not None and most_requests > MAX_REQUESTS_PER_ENGINE_SECOND * span:
        raise BadValues(f"{table}: {most_requests} requests in one row (at most 10^6 per second)")
    if most_decode_us is not None and most_decode_us > MAX_DECODE_US_PER_ENGINE_SECOND * span:
        raise BadValues(f"{table}: {most_decode_us} us of decode time in one row")
    if cached_over:
        raise BadValues(f"{table}: more cached than input tokens in a row")
    if any(type(v) is not int for v in sums):  # pragma: no cover - an empty group has no row
        raise BadValues(f"{table}: a sum that is not an integer")
    return engine, sums


def check_instant(name: str, value: Any) -> float:
    if type(value) not in (int, float) or not math.isfinite(value):
        raise BadValues(f"{name} {value!r} is not a time")
    if not EARLIEST_TS <= value <= LATEST_TS:
        raise BadValues(f"{name} {value!r} is outside 2000-2100")
    return float(value)


def check_count(name: str, value: Any, most: int) -> int:
    if type(value) is not int or not 0 <= value <= most:
        raise BadValues(f"{name} {value!r} is not a count from 0 to {most}")
    return value


def check_spans(spans: Sequence[tuple[Any, Any]]) -> list[tuple[float, float]]:
    out = []
    for start, end in spans:
        a, b = check_instant("span start", start), check_instant("span end", end)
        if b < a:
            raise BadValues(f"a span ends ({b!r}) before it starts ({a!r})")
        out.append((a, b))
    return out


def check_problem_seconds(
    rows: Sequence[tuple[Any, Any, Any, Any]],
) -> list[tuple[int, int, int, int]]:
    out = []
    for ts, dropped, rejected, lost in rows:
        check_instant("fault second", ts)
        if type(ts) is not int:
            raise BadValues(f"fault second {ts!r} is not a whole second")
        out.append(
            (
                ts,
                check_count("dropped events", dropped, 2**53),
                check_count("rejected events", rejected, 2**53),
                check_count("lost events", lost, 2**53),
            )
        )
    return out
