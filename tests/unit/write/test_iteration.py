"""An iteration event's values against the one table of bounds, and vLLM's finished stats."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vllm_ledger import bounds
from vllm_ledger.write.iteration import fields_of, well_formed

TS = 1_800_000_000.5


def test_a_plain_event_is_well_formed() -> None:
    assert well_formed(TS, 0, 10, 2, 4, ())
    assert well_formed(TS, 3, 10, 2, 4, ((2, 0.5), (7, 1, "r", 10, 4)))


@pytest.mark.parametrize(
    "event",
    [
        (1_800_000_000, 0, 1, 1, 1, ()),  # an int instant: the plugin passes floats
        (float("nan"), 0, 1, 1, 1, ()),
        (bounds.LATEST_AT, 0, 1, 1, 1, ()),
        (TS, True, 1, 1, 1, ()),
        (TS, bounds.MAX_ENGINE + 1, 1, 1, 1, ()),
        (TS, 0, -1, 1, 1, ()),
        (TS, 0, 1, bounds.TOKENS_PER_ENGINE_SECOND + 1, 1, ()),
        (TS, 0, 1, 1, 1, [(1, 0.5)]),
        (TS, 0, 1, 1, 1, ((1,),)),
        (TS, 0, 1, 1, 1, ((1, -0.5),)),
        (TS, 0, 1, 1, 1, ((1, 0.5, "r", 3, 4),)),  # more cached than its prompt
    ],
)
def test_values_outside_the_bounds_are_not(event: tuple[object, ...]) -> None:
    assert not well_formed(*event)


def test_finished_stats_are_read_for_the_join_and_an_object_without_them_raises() -> None:
    f = SimpleNamespace(
        num_generation_tokens=7,
        decode_time=0.25,
        request_id="r1",
        num_prompt_tokens=12,
        num_cached_tokens=4,
    )
    assert fields_of((f,)) == ((7, 0.25, "r1", 12, 4),)
    with pytest.raises(AttributeError):
        fields_of((SimpleNamespace(num_generation_tokens=1),))
