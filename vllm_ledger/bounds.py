"""The one table of bounds: what each value the ledger keeps may be, for both sides.

The write side checks every value it takes from vLLM against these bounds before it counts
(``write/plugin.py``, ``write/iteration.py``): an event outside them is counted as rejected
input, never committed. The read side refuses a file whose values pass them
(``read/values.py``: the whole file is ``bad_values``). Both take them from here, so no value
a sound writer commits can make a file unreadable, and no bound moves on one side alone.

The bounds are far above what any engine does, so that only nonsense fails them
(docs/ledger.md says why each is where it is):

- tokens: at most ``TOKENS_PER_ENGINE_SECOND`` = 10^8 per second per DP engine (input,
  output, cached, decode tokens alike); an hourly row may hold 3,600 times that, a daily row
  86,400 times;
- requests: at most ``REQUESTS_PER_ENGINE_SECOND`` = 10^6 finished per second per engine;
- decode time: one request's at most ``MAX_DECODE_SECONDS`` (about 116 days); the requests
  that finished in one second at most ``DECODE_US_PER_ENGINE_SECOND`` us, so a daily row stays
  below 2^62;
- a DP engine index: 0 to ``MAX_ENGINE``;
- an instant (an event's time, a span, a fault second, a file's creation): within
  ``EARLIEST_AT`` (2000-01-01) and ``LATEST_AT`` (2100-01-01), finite;
- a writer: rank 0 to ``MAX_WRITER_RANK`` (the file name's four digits), generation 0 to
  ``MAX_GENERATION`` (six), 1 to ``MAX_EXPECTED_WRITERS`` writers in a run;
- a sum of counts or a sequence number: at most ``MAX_COUNT``; a stored text at most
  ``MAX_TEXT_CHARS`` characters.

Standard library only: the write side inside vLLM imports it.
"""

from __future__ import annotations

from vllm_ledger.units import EARLIEST_AT, LATEST_AT

TOKENS_PER_ENGINE_SECOND = 10**8
REQUESTS_PER_ENGINE_SECOND = 10**6
DECODE_US_PER_ENGINE_SECOND = 2**62 // 86400  # so a daily row stays below 2^62
MAX_DECODE_SECONDS = 1e7  # one finished request's decode time

MAX_ENGINE = 65535
MAX_EXPECTED_WRITERS = 4096
MAX_WRITER_RANK = 9999  # the file name's four digits
MAX_GENERATION = 999999  # and six
MAX_COUNT = 2**62  # a sum of counts, a sequence number
MAX_TEXT_CHARS = 4096  # a run id, an instance fact


def instant_ok(ts: object) -> bool:
    """Whether ``ts`` is a float or int instant within 2000-2100 (NaN and infinities are not)."""
    return (type(ts) is float or type(ts) is int) and EARLIEST_AT <= ts < LATEST_AT


def engine_ok(engine: object) -> bool:
    """Whether ``engine`` is a DP engine index (an ``int``, not a ``bool``, 0 to MAX_ENGINE)."""
    return type(engine) is int and 0 <= engine <= MAX_ENGINE


__all__ = [
    "DECODE_US_PER_ENGINE_SECOND",
    "EARLIEST_AT",
    "LATEST_AT",
    "MAX_COUNT",
    "MAX_DECODE_SECONDS",
    "MAX_ENGINE",
    "MAX_EXPECTED_WRITERS",
    "MAX_GENERATION",
    "MAX_TEXT_CHARS",
    "MAX_WRITER_RANK",
    "REQUESTS_PER_ENGINE_SECOND",
    "TOKENS_PER_ENGINE_SECOND",
    "engine_ok",
    "instant_ok",
]
