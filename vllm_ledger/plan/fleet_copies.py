"""Copies of one series in a fleet's answer: what makes two samples the same series, one
exporter under several ``instance`` spellings, and taking each series once. Pure.

A series is its name, its host (``host_of``), its exporter (the scrape target, ``instance``)
and the ledger's own labels (``LEDGER_LABELS``). Copies that differ in anything else (``job``,
``replica``, ``prometheus_replica``: one exporter scraped by two jobs, HA replicas in a store
that does not deduplicate) are one series.

One exporter may be scraped under two ``instance`` spellings of one host (``127.0.0.1:9464``
and ``localhost:9464``, with one ``host`` label from relabelling): the ``ledger_instance``
values an exporter serves are the identity it puts on its series, so two ``instance`` values
of one host serving the same non-empty set of them are one exporter (``one_exporter``), named
in a ``Spelling`` and counted once. Two exporters of one host with different ledgers stay two.

``take_once`` keeps one copy of each series whose copies agree and names copies that disagree
as a ``Conflict`` (counted nowhere). docs/fleet.md#duplicates-and-conflicts says what the
output shows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from vllm_ledger import names

Sample = tuple[dict[str, str], float]
# The ledger's own labels: a series is the same series whatever other labels it carries.
LEDGER_LABELS: tuple[str, ...] = (
    names.LEDGER_INSTANCE_LABEL,
    names.MODEL_NAME_LABEL,
    names.WINDOW_LABEL,
    names.PROBLEM_LABEL,
    names.STATE_LABEL,
    names.REASON_LABEL,
    names.BY_LABEL,  # whose tokens: the label a row is by, and its value
    *names.ATTRIBUTION_LABELS,
)
# (host, instance) -> the instance spelling its exporter's series are counted under.
Exporters = Mapping[tuple[str, str], str]


@dataclass(frozen=True)
class Conflict:
    """Copies of one series with different values: none of them is counted."""

    host: str
    window: str  # "" for a series without one
    series: str  # ``name{ledger labels}`` (``series_text``)
    values: tuple[float, ...]  # each distinct value, sorted
    differ_in: tuple[str, ...]  # the labels the copies differ in (job, replica, ...)


@dataclass(frozen=True)
class Spelling:
    """One exporter of ``host`` seen under several ``instance`` values: counted once."""

    host: str
    instances: tuple[str, ...]  # sorted; the first is the one its series are counted under
    ledger_instances: tuple[str, ...]  # what each of them serves, the same for all

    def note(self) -> str:
        shown = ", ".join(self.instances[:-1]) + " and " + self.instances[-1]
        return (
            f"{shown} are one exporter of host {self.host} (the same ledger_instance labels "
            f"under {len(self.instances)} instance spellings): counted once"
        )


def host_of(labels: dict[str, str]) -> str:
    """The host a series comes from: its ``host`` label (added by relabelling) or Prometheus's
    ``instance`` (the scrape target)."""
    return labels.get("host") or labels.get("instance") or "?"


def one_exporter(samples: Iterable[Sample]) -> tuple[dict[tuple[str, str], str], list[Spelling]]:
    """The ``instance`` values of one host that are one exporter: ``(exporters, spellings)``,
    ``exporters`` mapping each merged ``(host, instance)`` to the spelling counted (the first,
    sorted), ``spellings`` naming each group. An ``instance`` serving no ``ledger_instance``
    is never merged: nothing tells it apart from another exporter."""
    served: dict[tuple[str, str], set[str]] = {}
    for labels, _value in samples:
        target = (host_of(labels), labels.get("instance", ""))
        got = served.setdefault(target, set())
        if inst := labels.get(names.LEDGER_INSTANCE_LABEL):
            got.add(inst)
    groups: dict[tuple[str, frozenset[str]], list[str]] = {}
    for (host, instance), ledger_instances in served.items():
        if ledger_instances:
            groups.setdefault((host, frozenset(ledger_instances)), []).append(instance)
    exporters: dict[tuple[str, str], str] = {}
    spellings: list[Spelling] = []
    for (host, serving), instances in groups.items():
        if len(instances) < 2:
            continue
        ordered = tuple(sorted(instances))
        exporters.update({(host, i): ordered[0] for i in ordered})
        spellings.append(Spelling(host, ordered, tuple(sorted(serving))))
    spellings.sort(key=lambda s: (s.host, s.instances))
    return exporters, spellings


def series_key(labels: dict[str, str], exporters: Exporters | None = None) -> tuple[str, ...]:
    """What makes a series one series: its name, its host (``host_of``) and exporter (its
    ``instance``, or the spelling ``exporters`` counts it under: two exporters relabelled to
    one ``host`` stay two, one exporter under two spellings is one), and the ledger's own
    labels. Copies that differ in anything else (``job``, ``replica``) are one series."""
    host, instance = host_of(labels), labels.get("instance", "")
    return (
        labels.get("__name__", ""),
        host,
        (exporters or {}).get((host, instance), instance),
        *(labels.get(name, "") for name in LEDGER_LABELS),
    )


def series_text(labels: dict[str, str]) -> str:
    """``name{window="today",ledger_instance="gpu1:8000",...}``: the ledger's labels only."""
    inner = ",".join(
        f"{name}={json.dumps(labels[name], ensure_ascii=False)}"
        for name in LEDGER_LABELS
        if name in labels
    )
    return labels.get("__name__", "?") + (f"{{{inner}}}" if inner else "")


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@dataclass
class _Copies:
    labels: dict[str, str]
    values: list[float]
    differ_in: set[str]


def _conflict(c: _Copies) -> Conflict:
    distinct: list[float] = []
    for v in c.values:
        if not any(_same(v, d) for d in distinct):
            distinct.append(v)
    return Conflict(
        host_of(c.labels),
        c.labels.get(names.WINDOW_LABEL, ""),
        series_text(c.labels),
        tuple(sorted(distinct, key=lambda v: (math.isnan(v), v))),
        tuple(sorted(c.differ_in)),
    )


def take_once(
    samples: Iterable[Sample], exporters: Exporters | None = None
) -> tuple[list[Sample], int, set[str], list[Conflict]]:
    """Each series once (``series_key``, with the spellings ``exporters`` merges):
    ``(samples, duplicates, labels the copies differ in, conflicts)``. Copies with one value
    are taken once; copies with different values are a ``Conflict`` and left out."""
    seen: dict[tuple[str, ...], _Copies] = {}
    for labels, value in samples:
        key = series_key(labels, exporters)
        got = seen.get(key)
        if got is None:
            seen[key] = _Copies(labels, [value], set())
            continue
        got.values.append(value)
        got.differ_in.update(
            k for k in labels.keys() | got.labels.keys() if labels.get(k) != got.labels.get(k)
        )
    out: list[Sample] = []
    duplicates = 0
    differ: set[str] = set()
    conflicts: list[Conflict] = []
    for c in seen.values():
        first = c.values[0]
        if all(_same(first, v) for v in c.values[1:]):
            out.append((c.labels, first))
            if len(c.values) > 1:
                duplicates += 1
                differ |= c.differ_in
            continue
        conflicts.append(_conflict(c))
    return out, duplicates, differ, conflicts


__all__ = [
    "LEDGER_LABELS",
    "Conflict",
    "Exporters",
    "Sample",
    "Spelling",
    "host_of",
    "one_exporter",
    "series_key",
    "series_text",
    "take_once",
]
