"""The figures a ledger counts, each described once: its names from the disk to the JSON.

A figure is one count the recorder adds up per second and DP engine (input tokens, output
tokens, cached tokens, requests, decode tokens, decode time). ``FIGURES`` lists them in the
on-disk column order; every list of them elsewhere is derived from it: the schema's columns
and bounds (``format/schema.py``), the reader's value checks (``format/reads.py``,
``read/values.py``), the fields of ``Sums``, ``WindowReport``, ``ExportRow``, the status
window and the fleet's ``Figures`` (each declares the figures it names in code and takes any
other from ``with_figure_fields``), the JSON and CSV keys, the exporter's counters and window
gauges, the fleet's queries, and the migration that adds a later figure's column.

The fault counts beside them on disk (dropped, rejected, lost events) are not figures: they
are kept per second apart from the sums (``format/schema.py``'s ``FAULT_COLUMNS``).

Standard library only: the write side inside vLLM imports it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from vllm_ledger import names as metric
from vllm_ledger.bounds import (
    DECODE_US_PER_ENGINE_SECOND,
    REQUESTS_PER_ENGINE_SECOND,
    TOKENS_PER_ENGINE_SECOND,
)

Unit = Literal["tokens", "requests", "microseconds"]
FieldName = Literal["name", "report_name"]  # the ``Figure`` attribute a model's fields are named by
_Model = TypeVar("_Model", bound=type)

# What one second of one DP engine can physically hold comes from the one table of bounds
# (``bounds.py``; docs/ledger.md says why): the recorder refuses an event that would pass them,
# and a reader refuses a file whose rows do.

INITIAL = "0001_initial"  # the migration that made the first tables


@dataclass(frozen=True)
class Figure:
    """One counted figure: what each layer calls it, its unit and its bound."""

    name: str  # in ``Sums`` and the exporter's counter memory: ``input_tokens``, ``decode_us``
    column: str  # the ledger column (the file format: never renamed)
    key: str  # the JSON schema-1 key of a window, also its CSV column: ``input``
    unit: Unit  # of the stored count
    per_engine_second: int  # the most one second of one DP engine holds (in ``unit``)
    report_name: str  # in ``WindowReport``, ``ExportRow``, the fleet, the window gauges
    report_divisor: float  # stored count / divisor = the report's figure (1: the same integer)
    counter: str  # the exporter's restart-proof counter, as exposed (``names.py``)
    counter_help: str
    window_gauge: str  # the exporter's gauge of it per window (``names.py``)
    window_help: str
    brief: bool  # carried by the short forms too: the bot's status document, ``report --csv``
    part_of: str | None = None  # the name of a figure that includes it (cached in input)
    since: str = INITIAL  # the named migration that added its column

    def report_value(self, stored: int) -> int | float:
        """The report's figure for a stored count (decode microseconds -> seconds)."""
        return stored if self.report_divisor == 1 else stored / self.report_divisor

    def json_value(self, reported: float) -> int | float:
        """A report's figure as the JSON and CSV write it: a count as it is, a converted figure
        rounded to six decimals."""
        return reported if self.report_divisor == 1 else round(reported, 6)

    def stored_value(self, reported: float) -> int:
        """The stored count a report's figure stands for (decode seconds -> microseconds)."""
        return int(reported) if self.report_divisor == 1 else round(reported * self.report_divisor)


FIGURES: tuple[Figure, ...] = (
    Figure(
        name="input_tokens",
        column="prompt_tokens",
        key="input",
        unit="tokens",
        per_engine_second=TOKENS_PER_ENGINE_SECOND,
        report_name="input_tokens",
        report_divisor=1,
        counter=metric.LEDGER_PROMPT_TOKENS_TOTAL,
        counter_help="Prompt (input) tokens in every ledger, ever",
        window_gauge=metric.LEDGER_WINDOW_INPUT_TOKENS,
        window_help="Prompt tokens in the window",
        brief=True,
    ),
    Figure(
        name="output_tokens",
        column="generation_tokens",
        key="output",
        unit="tokens",
        per_engine_second=TOKENS_PER_ENGINE_SECOND,
        report_name="output_tokens",
        report_divisor=1,
        counter=metric.LEDGER_GENERATION_TOKENS_TOTAL,
        counter_help="Generated (output) tokens in every ledger, ever",
        window_gauge=metric.LEDGER_WINDOW_OUTPUT_TOKENS,
        window_help="Generated tokens in the window",
        brief=True,
    ),
    Figure(
        name="cached_tokens",
        column="cached_tokens",
        key="cached",
        unit="tokens",
        per_engine_second=TOKENS_PER_ENGINE_SECOND,
        report_name="cached_tokens",
        report_divisor=1,
        counter=metric.LEDGER_CACHED_TOKENS_TOTAL,
        counter_help="Prompt tokens served from the prefix cache, ever",
        window_gauge=metric.LEDGER_WINDOW_CACHED_TOKENS,
        window_help="Prefix-cache hit tokens in the window",
        brief=True,
        part_of="input_tokens",
    ),
    Figure(
        name="requests",
        column="requests",
        key="requests",
        unit="requests",
        per_engine_second=REQUESTS_PER_ENGINE_SECOND,
        report_name="requests",
        report_divisor=1,
        counter=metric.LEDGER_REQUESTS_TOTAL,
        counter_help="Finished requests in every ledger, ever",
        window_gauge=metric.LEDGER_WINDOW_REQUESTS,
        window_help="Finished requests in the window",
        brief=True,
    ),
    Figure(  # sum(max(output - 1, 0)) of finished requests
        name="decode_tokens",
        column="decode_tokens",
        key="decode_tokens",
        unit="tokens",
        per_engine_second=TOKENS_PER_ENGINE_SECOND,
        report_name="decode_tokens",
        report_divisor=1,
        counter=metric.LEDGER_DECODE_TOKENS_TOTAL,
        counter_help="Decode tokens of finished requests (output tokens after the first), ever",
        window_gauge=metric.LEDGER_WINDOW_DECODE_TOKENS,
        window_help="Decode tokens (output after the first) of requests finished in the window",
        brief=False,
    ),
    Figure(  # the decode time of finished requests
        name="decode_us",
        column="decode_seconds_micro",
        key="decode_seconds",
        unit="microseconds",
        per_engine_second=DECODE_US_PER_ENGINE_SECOND,
        report_name="decode_seconds",
        report_divisor=1e6,
        counter=metric.LEDGER_DECODE_SECONDS_TOTAL,
        counter_help="Decode time of finished requests in seconds, ever",
        window_gauge=metric.LEDGER_WINDOW_DECODE_SECONDS,
        window_help="Decode time in seconds of requests finished in the window",
        brief=False,
    ),
)


def by_name(figures: Sequence[Figure] = FIGURES) -> dict[str, Figure]:
    return {f.name: f for f in figures}


def names(figures: Sequence[Figure] = FIGURES) -> tuple[str, ...]:
    """The ``Sums`` field names, in column order."""
    return tuple(f.name for f in figures)


def columns(figures: Sequence[Figure] = FIGURES) -> tuple[str, ...]:
    """The ledger columns, in order."""
    return tuple(f.column for f in figures)


def report_names(figures: Sequence[Figure] = FIGURES) -> tuple[str, ...]:
    """The ``WindowReport`` (and ``ExportRow``, fleet ``Figures``) field names, in order."""
    return tuple(f.report_name for f in figures)


def keys(figures: Sequence[Figure] = FIGURES) -> tuple[str, ...]:
    """The JSON keys (and CSV columns), in order."""
    return tuple(f.key for f in figures)


def json_figures(row: object, figures: Sequence[Figure] = FIGURES) -> dict[str, Any]:
    """A row's figures (a ``WindowReport``, an ``ExportRow``, the fleet's ``Figures``: any
    object with a field per ``report_name``) by JSON key, in order, as the JSON writes them."""
    return {f.key: f.json_value(getattr(row, f.report_name)) for f in figures}


def brief(figures: Sequence[Figure] = FIGURES) -> tuple[Figure, ...]:
    """The figures the short forms carry (the status document, ``report --csv``)."""
    return tuple(f for f in figures if f.brief)


def parts(figures: Sequence[Figure] = FIGURES) -> tuple[tuple[Figure, Figure], ...]:
    """``(part, whole)`` for each figure included in another (cached tokens in input)."""
    named = by_name(figures)
    return tuple((f, named[f.part_of]) for f in figures if f.part_of is not None)


def limits(figures: Sequence[Figure] = FIGURES) -> tuple[tuple[Unit, int, tuple[Figure, ...]], ...]:
    """The figures grouped by unit and bound, in first-seen order: one check of a row each
    (the largest value of any of them)."""
    groups: dict[tuple[Unit, int], list[Figure]] = {}
    for f in figures:
        groups.setdefault((f.unit, f.per_engine_second), []).append(f)
    return tuple((unit, most, tuple(fs)) for (unit, most), fs in groups.items())


def with_figure_fields(
    attr: FieldName, type_: str = "int", figures: Sequence[Figure] = FIGURES
) -> Callable[[_Model], _Model]:
    """A class decorator, applied under ``@dataclass``: a field named ``getattr(figure, attr)``,
    annotated ``type_`` and defaulting to zero (``0.0`` for a converted report figure), for each
    of ``figures`` the class does not declare itself, after the class's own fields.

    The models declare the figures their code names (so a type checker sees them) and take any
    later one from here; code that handles every figure reads it by name from ``FIGURES``. The
    class's ``ADDED_FIGURES`` lists the fields so added, in order (empty while every figure is
    declared), for a hot loop that names the declared ones one by one."""

    def add_fields(cls: _Model) -> _Model:
        own = inspect.get_annotations(cls)  # the class's own, as strings
        inherited = getattr(cls, "__dataclass_fields__", {})
        declared = set(own) | (set(inherited) - set(getattr(cls, "ADDED_FIGURES", ())))
        added = tuple(getattr(f, attr) for f in figures if getattr(f, attr) not in declared)
        annotations = dict(own)
        for f in figures:
            name = getattr(f, attr)
            if name in added and name not in inherited:
                annotations[name] = type_
                setattr(cls, name, 0 if attr == "name" else f.report_value(0))
        cls.__annotations__ = annotations
        setattr(cls, "ADDED_FIGURES", added)  # noqa: B010 (a ClassVar where code reads it)
        return cls

    return add_fields


_NAMED = by_name()
# The figures the recorder fills one by one (write/batch.py: where each number comes from).
INPUT_TOKENS = _NAMED["input_tokens"]
OUTPUT_TOKENS = _NAMED["output_tokens"]
CACHED_TOKENS = _NAMED["cached_tokens"]
REQUESTS = _NAMED["requests"]
DECODE_TOKENS = _NAMED["decode_tokens"]
DECODE_US = _NAMED["decode_us"]
BRIEF: tuple[Figure, ...] = brief()

__all__ = [
    "BRIEF",
    "CACHED_TOKENS",
    "DECODE_TOKENS",
    "DECODE_US",
    "FIGURES",
    "INPUT_TOKENS",
    "OUTPUT_TOKENS",
    "REQUESTS",
    "FieldName",
    "Figure",
    "Unit",
    "brief",
    "by_name",
    "columns",
    "json_figures",
    "keys",
    "limits",
    "names",
    "parts",
    "report_names",
    "with_figure_fields",
]
