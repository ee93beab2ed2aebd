"""Whose tokens on /metrics: restart-proof counters per key and adapter, what is not
attributed by reason, and window figures by each label, for the ledger exporter.

What is served (docs/observability.md#whose-tokens has the table):

- counters per label set of the chosen labels (``AttributionConfig.labels``: key and adapter by
  default; ``exporter --attribution-labels key,adapter,user`` adds the end user, ``tenant`` the
  trusted tenant): the input, output and cached tokens and finished requests credited to it, and
  its requests that ended without finishing (``vllm_ledger_requests_aborted_total``);
- counters of what no label set holds, per reason (untagged, ambiguous, copies, aborted: the
  rest, as ``report --by key`` says), and of the middleware's own faults;
- window figures (today, 24h, 3d, 7d, total) by each chosen label, the same rows as ``report
  --by key`` (``read/whose.py`` makes both), and what is not attributed per window and reason:
  ``fleet --by key`` sums them across hosts.

The counters survive what the ledger's own do (``observe/counters.py``): each ledger file's
credits over its whole life are remembered per label set, held when the file goes or shrinks,
so they never go down while the exporter runs. A file's rest (its tokens no label set holds and
no stored reason names) is held at 0 where it would be negative (a request begun in the file
before it and credited in this one).

Bounds: a user label can hold one value per end user, one series each, so it is off unless
asked for. The served label sets are bounded (``max_series``): they are named in the order the
exporter first sees them (at its start, most tokens first), and once ``max_series`` are named,
every new set is served as one whose every label is ``other`` (counted in
``vllm_ledger_attribution_label_sets_folded``). A named set stays named for the exporter's life,
so no counter moves between series and none goes down. Window figures keep the ``max_series``
values with most tokens per window and label; the rest are summed under ``other``. A value ""
(the request named none) is served as ``(none)``.

``SeriesBound`` and ``cut_rows`` are pure; ``observe/whose_read.py`` reads the credits
(``attribution_sighting``, ``whose_windows``); ``attribution_families`` makes the metric
families.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vllm_ledger.errors import BadArgument
from vllm_ledger.names import (
    ATTRIBUTION_LABELS,
    BY_LABEL,
    DEFAULT_ATTRIBUTION_LABELS,
    DEFAULT_ATTRIBUTION_SERIES,
    LEDGER_ATTRIBUTED_CACHED_TOKENS_TOTAL,
    LEDGER_ATTRIBUTED_GENERATION_TOKENS_TOTAL,
    LEDGER_ATTRIBUTED_PROMPT_TOKENS_TOTAL,
    LEDGER_ATTRIBUTED_REQUESTS_TOTAL,
    LEDGER_ATTRIBUTION_FAULTS_TOTAL,
    LEDGER_ATTRIBUTION_SETS_FOLDED,
    LEDGER_NOT_ATTRIBUTED_CACHED_TOKENS_TOTAL,
    LEDGER_NOT_ATTRIBUTED_GENERATION_TOKENS_TOTAL,
    LEDGER_NOT_ATTRIBUTED_PROMPT_TOKENS_TOTAL,
    LEDGER_NOT_ATTRIBUTED_REQUESTS_TOTAL,
    LEDGER_REQUESTS_ABORTED_TOTAL,
    LEDGER_WINDOW_ATTRIBUTED_CACHED_TOKENS,
    LEDGER_WINDOW_ATTRIBUTED_INPUT_TOKENS,
    LEDGER_WINDOW_ATTRIBUTED_OUTPUT_TOKENS,
    LEDGER_WINDOW_ATTRIBUTED_REQUESTS,
    LEDGER_WINDOW_NOT_ATTRIBUTED_CACHED_TOKENS,
    LEDGER_WINDOW_NOT_ATTRIBUTED_INPUT_TOKENS,
    LEDGER_WINDOW_NOT_ATTRIBUTED_OUTPUT_TOKENS,
    LEDGER_WINDOW_NOT_ATTRIBUTED_REQUESTS,
    LEDGER_WINDOW_REQUESTS_ABORTED,
    NONE_VALUE,
    NOT_ATTRIBUTED_REASONS,
    OTHER_VALUE,
    REASON_LABEL,
    WINDOW_LABEL,
)
from vllm_ledger.observe.counters import Counts, Held, Labels
from vllm_ledger.observe.whose_read import CREDITED, FAULT, NOT_ATTRIBUTED
from vllm_ledger.read.whose import WhoseRow, WhoseWindow

_TOKENS = ("input_tokens", "output_tokens", "cached_tokens", "requests")


@dataclass(frozen=True)
class AttributionConfig:
    """Which labels the exporter serves, and how many label sets (and values) at most."""

    labels: tuple[str, ...] = DEFAULT_ATTRIBUTION_LABELS
    max_series: int = DEFAULT_ATTRIBUTION_SERIES


def parse_labels(text: str) -> tuple[str, ...]:
    """``key,adapter,user`` -> the labels in their own order; ``BadArgument`` naming a bad one."""
    wanted = [part.strip() for part in text.split(",") if part.strip()]
    bad = [w for w in wanted if w not in ATTRIBUTION_LABELS]
    if bad or not wanted:
        said = f"{ascii(bad[0])[:40]} is not a label" if bad else f"{ascii(text)[:40]} names none"
        raise BadArgument(
            f"labels {said}: give some of {','.join(ATTRIBUTION_LABELS)} "
            "separated by commas (docs/observability.md#whose-tokens)",
            argument="labels",
            value=text,
            example="key,adapter",
        )
    return tuple(name for name in ATTRIBUTION_LABELS if name in wanted)


def shown_value(value: str) -> str:
    """A label value as served: ``(none)`` for a request that named none."""
    return value if value else NONE_VALUE


# ---- the series bound (stateful, pure) -------------------------------------------------------


class SeriesBound:
    """At most ``max_series`` credited label sets served by name, for the exporter's life."""

    def __init__(self, max_series: int) -> None:
        self.max_series = max_series
        self.named: set[Labels] = set()
        self.folded: set[Labels] = set()

    def serve(self, by_labels: Iterable[tuple[Labels, Counts]]) -> dict[Labels, Counts]:
        """The credited sets as served: each named one as it is, the others summed under a set
        of ``other``; new sets are named most tokens first while there is room."""
        items = [(k, c) for k, c in by_labels if k and k[0] == CREDITED]
        new = sorted(
            (item for item in items if item[0] not in self.named and item[0] not in self.folded),
            key=lambda item: (-(item[1][0] + item[1][1]), item[0]),
        )
        for key, _counts in new:
            if len(self.named) < self.max_series:
                self.named.add(key)
            else:
                self.folded.add(key)
        out: dict[Labels, Counts] = {}
        for key, counts in items:
            served = key if key in self.named else (CREDITED, *(OTHER_VALUE for _ in key[1:]))
            have = out.get(served)
            out[served] = (
                counts if have is None else tuple(a + b for a, b in zip(have, counts, strict=True))
            )
        return dict(sorted(out.items()))


# ---- window figures by each label ------------------------------------------------------------


def cut_rows(rows: Sequence[WhoseRow], most: int) -> list[WhoseRow]:
    """The ``most`` rows with most tokens, then the rest summed into ``other`` (with any row
    already named so)."""
    ordered = sorted(rows, key=lambda r: (-(r.input_tokens + r.output_tokens), r.value))
    kept = [r for r in ordered[:most] if r.value != OTHER_VALUE]
    rest = [r for r in ordered if r not in kept]
    if rest:
        kept.append(
            WhoseRow(
                OTHER_VALUE,
                sum(r.input_tokens for r in rest),
                sum(r.output_tokens for r in rest),
                sum(r.cached_tokens for r in rest),
                sum(r.requests for r in rest),
                sum(r.requests_aborted for r in rest),
            )
        )
    return kept


# ---- the metric families ---------------------------------------------------------------------

_ATTRIBUTED = (
    (LEDGER_ATTRIBUTED_PROMPT_TOKENS_TOTAL, "Prompt (input) tokens credited to the label set"),
    (LEDGER_ATTRIBUTED_GENERATION_TOKENS_TOTAL, "Generated (output) tokens credited to it"),
    (LEDGER_ATTRIBUTED_CACHED_TOKENS_TOTAL, "Prefix-cache hit tokens of its credited prompts"),
    (LEDGER_ATTRIBUTED_REQUESTS_TOTAL, "Finished requests credited to it"),
)
_NOT_ATTRIBUTED = (
    (LEDGER_NOT_ATTRIBUTED_PROMPT_TOKENS_TOTAL, "Prompt tokens no label set holds, by reason"),
    (LEDGER_NOT_ATTRIBUTED_GENERATION_TOKENS_TOTAL, "Generated tokens no label set holds"),
    (LEDGER_NOT_ATTRIBUTED_CACHED_TOKENS_TOTAL, "Prefix-cache hit tokens no label set holds"),
    (LEDGER_NOT_ATTRIBUTED_REQUESTS_TOTAL, "Finished requests no label set holds"),
)
_WINDOW_ROWS = (
    (LEDGER_WINDOW_ATTRIBUTED_INPUT_TOKENS, "Prompt tokens credited in the window, by one label"),
    (LEDGER_WINDOW_ATTRIBUTED_OUTPUT_TOKENS, "Generated tokens credited in the window"),
    (LEDGER_WINDOW_ATTRIBUTED_CACHED_TOKENS, "Prefix-cache hit tokens credited in the window"),
    (LEDGER_WINDOW_ATTRIBUTED_REQUESTS, "Finished requests credited in the window"),
)
_WINDOW_REST = (
    (LEDGER_WINDOW_NOT_ATTRIBUTED_INPUT_TOKENS, "Prompt tokens of the window not attributed"),
    (LEDGER_WINDOW_NOT_ATTRIBUTED_OUTPUT_TOKENS, "Generated tokens of the window not attributed"),
    (LEDGER_WINDOW_NOT_ATTRIBUTED_CACHED_TOKENS, "Cached tokens of the window not attributed"),
    (LEDGER_WINDOW_NOT_ATTRIBUTED_REQUESTS, "Finished requests of the window not attributed"),
)


def _bare(name: str) -> str:
    """prometheus_client names a counter family without ``_total`` and its sample with it."""
    return name.removesuffix("_total")


def attribution_families(
    core: Any,
    config: AttributionConfig,
    held: Held | None,
    bound: SeriesBound,
    windows: Mapping[str, Sequence[WhoseWindow]] | None,
) -> list[Any]:
    """The counters from ``held`` (the attribution memory's), bounded by ``bound``, and the
    window gauges of ``windows`` (None: this read failed; the counters are served alone)."""
    out: list[Any] = []
    names = list(config.labels)
    rows = held.by_labels if held is not None else ()
    served = bound.serve(rows)
    for i, (name, doc) in enumerate(_ATTRIBUTED):
        fam = core.CounterMetricFamily(_bare(name), doc + " (restart-proof)", labels=names)
        for key, counts in served.items():
            fam.add_metric([shown_value(v) for v in key[1:]], float(counts[i]))
        out.append(fam)
    aborted = core.CounterMetricFamily(
        _bare(LEDGER_REQUESTS_ABORTED_TOTAL),
        "Requests of the label set that ended without finishing (their tokens: not attributed, "
        "aborted)",
        labels=names,
    )
    for key, counts in served.items():
        aborted.add_metric([shown_value(v) for v in key[1:]], float(counts[4]))
    out.append(aborted)
    by_label = dict(rows)
    for i, (name, doc) in enumerate(_NOT_ATTRIBUTED):
        fam = core.CounterMetricFamily(_bare(name), doc + " (restart-proof)", labels=[REASON_LABEL])
        for reason in NOT_ATTRIBUTED_REASONS:
            fam.add_metric([reason], float(by_label.get((NOT_ATTRIBUTED, reason), (0,) * 5)[i]))
        out.append(fam)
    faults = core.CounterMetricFamily(
        _bare(LEDGER_ATTRIBUTION_FAULTS_TOTAL),
        "Requests the attribution middleware could not tag because of a fault of its own",
    )
    faults.add_metric([], float(by_label.get((FAULT,), (0,) * 5)[4]))
    out.append(faults)
    folded = core.GaugeMetricFamily(
        LEDGER_ATTRIBUTION_SETS_FOLDED,
        f"Label sets served as '{OTHER_VALUE}': past --attribution-series {config.max_series}",
    )
    folded.add_metric([], float(len(bound.folded)))
    out.append(folded)
    if windows is not None:
        out.extend(_window_families(core, config, windows))
    return out


def _window_families(
    core: Any, config: AttributionConfig, windows: Mapping[str, Sequence[WhoseWindow]]
) -> list[Any]:
    gauge = core.GaugeMetricFamily
    row_fams = [gauge(name, doc) for name, doc in _WINDOW_ROWS]
    rest_fams = [
        gauge(name, doc, labels=[WINDOW_LABEL, REASON_LABEL]) for name, doc in _WINDOW_REST
    ]
    aborted = gauge(
        LEDGER_WINDOW_REQUESTS_ABORTED,
        "Requests of the window that ended without finishing",
        labels=[WINDOW_LABEL],
    )
    for name in config.labels:
        for ww in windows.get(name, ()):
            for row in cut_rows(ww.rows, config.max_series):
                labels = {WINDOW_LABEL: ww.name, BY_LABEL: name, name: shown_value(row.value)}
                for fam, fig in zip(row_fams, _TOKENS, strict=True):
                    fam.add_sample(fam.name, labels, float(getattr(row, fig)))
    first = next((ws for ws in windows.values() if ws), ())
    for ww in first:  # not attributed is the same whichever label the rows are by
        na = ww.not_attributed
        for reason in NOT_ATTRIBUTED_REASONS:
            c = na.reasons[reason]
            for fam, fig in zip(rest_fams, _TOKENS, strict=True):
                fam.add_metric([ww.name, reason], float(getattr(c, fig)))
        aborted.add_metric([ww.name], float(na.requests_aborted))
    return [*row_fams, *rest_fams, aborted]


__all__ = [
    "AttributionConfig",
    "SeriesBound",
    "attribution_families",
    "cut_rows",
    "parse_labels",
    "shown_value",
]
