"""An iteration event: what the plugin submits to the recorder per engine iteration, and the
check of its values against the one table of bounds (``bounds.py``).

The plugin checks the same before it submits; the recorder checks again as it takes each event
in, which guards every other caller of ``Recorder.submit``.

Standard library only: this runs inside vLLM.
"""

from __future__ import annotations

from typing import Any

from vllm_ledger import bounds

# An iteration event, as the plugin builds it:
#   (event_ts, engine, prompt_tokens, generation_tokens, cached_tokens, finished[, record_no])
# where ``finished`` holds per finished request (generation_tokens, decode_seconds) and, where
# the attribution join is on, its (request_id, prompt_tokens, cached_tokens) after them;
# ``record_no`` is the ``TagBook.tick`` of the ``record()`` call (``write/tags.py``).
IterationEvent = tuple[Any, ...]

_MOST_EVENT_TOKENS = bounds.TOKENS_PER_ENGINE_SECOND
_MOST_ENGINE = bounds.MAX_ENGINE
_EARLIEST, _LATEST = bounds.EARLIEST_AT, bounds.LATEST_AT
_MOST_DECODE_S = bounds.MAX_DECODE_SECONDS


def fields_of(stats: tuple[Any, ...]) -> tuple[tuple[Any, ...], ...]:
    """The numbers of vLLM's finished-request stats (0.30-0.33 layout) the join needs; an
    object without them raises (the event is then rejected input)."""
    return tuple(
        [
            (
                f.num_generation_tokens,
                f.decode_time,
                f.request_id,
                f.num_prompt_tokens,
                f.num_cached_tokens,
            )
            for f in stats
        ]
    )


def well_formed(
    ts: Any, engine: Any, prompt: Any, generation: Any, cached: Any, finished: Any
) -> bool:
    """Whether an event's values are what the one table of bounds allows (``bounds.py``): the
    plugin checks the same before it submits; this guards every other caller of ``submit``."""
    if not (
        type(ts) is float
        and _EARLIEST <= ts < _LATEST
        and type(engine) is int
        and 0 <= engine <= _MOST_ENGINE
        and type(prompt) is int
        and 0 <= prompt <= _MOST_EVENT_TOKENS
        and type(generation) is int
        and 0 <= generation <= _MOST_EVENT_TOKENS
        and type(cached) is int
        and 0 <= cached <= _MOST_EVENT_TOKENS
        and type(finished) is tuple
    ):
        return False
    for request in finished:
        if type(request) is not tuple or (len(request) != 2 and len(request) != 5):
            return False
        g, d = request[0], request[1]
        if not (
            type(g) is int
            and 0 <= g <= _MOST_EVENT_TOKENS
            and (type(d) is float or type(d) is int)
            and 0.0 <= d < _MOST_DECODE_S
        ):
            return False
        if len(request) == 5:
            p, c = request[3], request[4]
            if not (
                type(p) is int and 0 <= p <= _MOST_EVENT_TOKENS and type(c) is int and 0 <= c <= p
            ):
                return False
    return True
