"""A fleet read from answers the store called incomplete. Pure.

A store may answer with only part of what it holds and say so beside ``data``
(``plan.prom.Said``): VictoriaMetrics cluster ``"isPartial": true`` when some storage nodes did
not answer, Prometheus and Thanos ``"warnings"`` (Thanos for a partial response: a store that
did not answer). From such an answer a host's series may be missing, or one copy of a series
(an HA replica's) taken for all of them: two copies that would disagree look like one that
agrees with itself. So no window, host or model of the fleet is complete, and ``incomplete``
names each such answer and what the store said (``plan/partial.py``'s words, shared with the
other commands that read the store); ``Fleet.said`` keeps it for ``--json``. An
``infos`` text (newer Prometheus) does not say that anything is missing: it is a note.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TypeVar

from vllm_ledger.plan import partial
from vllm_ledger.plan.fleet import Fleet, Host, ModelRow
from vllm_ledger.plan.prom import Said

PARTIAL_DOC = "docs/fleet.md#a-partial-answer"
MISSING = "a host's series or a copy of one"  # what a partial answer may lack
Row = TypeVar("Row", Host, ModelRow)


def said_lines(name: str, said: Said) -> tuple[str, ...]:
    """The ``incomplete`` lines of the answer to ``name`` (a query's name: ``windows``,
    ``targets``, ...): none when the store said nothing of it was missing."""
    return partial.said_lines(name, said, MISSING, PARTIAL_DOC)


def with_said(fleet: Fleet, said: Mapping[str, Said]) -> Fleet:
    """``fleet`` with what the store said of the answers it was read from (``said``: query name
    to ``Said``): where any was partial or warned, nothing is complete, and the store's lines
    come first under ``incomplete``. Taken more than once (``fleet --by``'s own queries), the
    lines and ``Fleet.said`` add up."""
    told = partial.told(said)
    infos = tuple(
        f"the store's answer to {name} came with an info: {i}"
        for name, s in said.items()
        for i in s.infos
    )
    if not told:
        return dataclasses.replace(fleet, notes=(*fleet.notes, *infos)) if infos else fleet
    lines = partial.told_lines(told, MISSING, PARTIAL_DOC)
    before = sum(len(said_lines(name, s)) for name, s in fleet.said.items())  # told earlier
    return dataclasses.replace(
        fleet,
        hosts=tuple(_not_complete(h) for h in fleet.hosts),
        models=tuple(_not_complete(m) for m in fleet.models),
        complete=dict.fromkeys(fleet.complete, False),
        incomplete=(*fleet.incomplete[:before], *lines, *fleet.incomplete[before:]),
        notes=(*fleet.notes, *infos),
        said={**fleet.said, **told},
    )


def _not_complete(row: Row) -> Row:
    return dataclasses.replace(row, complete=dict.fromkeys(row.complete, False))


__all__ = ["PARTIAL_DOC", "said_lines", "with_said"]
