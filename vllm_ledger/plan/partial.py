"""Which of a command's answers the store called partial or gave a warning with, in words and in
JSON: one vocabulary for every command that reads Prometheus's API. Pure.

A store may answer with only part of what it holds and say so beside ``data``
(``plan.prom.Said``): VictoriaMetrics cluster ``"isPartial": true`` when some storage nodes did
not answer, Prometheus and Thanos ``"warnings"`` (Thanos for a partial response: a store that
did not answer; Prometheus for a remote read that failed). A figure computed from such an
answer may lack series. Each command says what that leaves unknown in its own terms (``fleet``:
no window complete; ``cost``: the power; ``advise``: a rule not judgeable; ``advise
--baseline``: no thresholds; ``doctor --stack``: no clean pass) and names each such answer with
``told_lines``; ``--json`` lists them with ``told_json``. An ``infos`` text (newer Prometheus)
does not say that anything is missing: it is not among them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from vllm_ledger.plan.prom import MAX_SAID, Said


def told(said: Mapping[str, Said]) -> dict[str, Said]:
    """The answers (by name) the store called partial or gave a warning with, in order."""
    return {name: s for name, s in said.items() if s.incomplete}


def said_lines(name: str, said: Said, missing: str, doc: str) -> tuple[str, ...]:
    """The lines that name the answer to ``name`` and what the store said of it: none when it
    said nothing was missing. ``missing``: what a partial answer may lack (``a target``);
    ``doc``: where the reader learns what to do."""
    lines: list[str] = []
    if said.partial:
        lines.append(
            f"the store's answer to {name} is partial (isPartial): some of its storage nodes "
            f"did not answer, so {missing} may be missing ({doc})"
        )
    lines.extend(f"the store's answer to {name} came with a warning: {w}" for w in said.warnings)
    if said.warnings_left_out:
        lines.append(f"the store's answer to {name}: {said.warnings_left_out} more warnings")
    return tuple(lines)


def told_lines(said: Mapping[str, Said], missing: str, doc: str) -> tuple[str, ...]:
    """``said_lines`` of every answer in ``said``, in order."""
    return tuple(line for name, s in said.items() for line in said_lines(name, s, missing, doc))


def said_json(said: Said) -> dict[str, Any]:
    """What the store said of one answer, in ``--json``: ``is_partial``, ``warnings`` (as
    ``Said`` keeps them: bounded, printable ASCII), ``warnings_left_out``."""
    return {
        "is_partial": said.partial,
        "warnings": list(said.warnings),
        "warnings_left_out": said.warnings_left_out,
    }


def told_json(said: Mapping[str, Said]) -> dict[str, dict[str, Any]]:
    """``said_json`` of each answer the store called partial or gave a warning with; ``{}``
    when none."""
    return {name: said_json(s) for name, s in told(said).items()}


def merged(saids: Iterable[Said]) -> Said:
    """What the store said of several answers that make one figure (a query and its
    fallbacks): partial if any was, their warnings and infos in order, at most ``MAX_SAID`` of
    each kept and the rest of the warnings counted."""
    said = list(saids)
    warnings = [w for s in said for w in s.warnings]
    infos = [i for s in said for i in s.infos]
    left_out = sum(s.warnings_left_out for s in said) + max(0, len(warnings) - MAX_SAID)
    return Said(
        any(s.partial for s in said),
        tuple(warnings[:MAX_SAID]),
        tuple(infos[:MAX_SAID]),
        left_out,
    )


__all__ = ["merged", "said_json", "said_lines", "told", "told_json", "told_lines"]
