"""The stable JSON form of a Report: ``"schema": 1``. See docs/json-schema.md.

Keys are only ever added, never renamed or removed, within a schema version.

A report over years of restarts lists thousands of writers; ``render`` writes that list
itself, byte for byte as ``json.dumps(..., indent=2)`` would (whose indenting encoder is pure
Python, about seven times slower per writer), and leaves the rest of the document to it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from json.encoder import encode_basestring_ascii
from typing import Any

from vllm_ledger import figures
from vllm_ledger.read.matched import NothingMatched
from vllm_ledger.read.report import Report, WindowReport, WriterStatus
from vllm_ledger.read.whose import WhoseWindow
from vllm_ledger.read.whose_report import WhoseReport
from vllm_ledger.read.zone import ZoneChoice


def round_or_none(x: float | None, digits: int = 6) -> float | None:
    return None if x is None else round(x, digits)


# Schema 1 writes the ratios after this figure, the other figures after the ratios.
RATIOS_AFTER = figures.CACHED_TOKENS.key


def window_figures(w: WindowReport, zeros: bool = False) -> dict[str, Any]:
    """A window's figures (``figures.FIGURES``, by JSON key) and its ratios, in schema 1's
    order: the figures up to ``RATIOS_AFTER``, the ratios, the other figures. Where the figures
    are unknown (``WindowReport.known``), each is ``null``, never 0 (``zeros``: 0 all the
    same, the ratios null)."""
    figs = list(figures.json_figures(w).items())
    unknown = w.known == "unknown" and not zeros  # nothing counted: every figure is 0 here
    if unknown:
        figs = [(k, None) for k, _v in figs]
    cut = next(i for i, (k, _v) in enumerate(figs) if k == RATIOS_AFTER) + 1
    return {
        **dict(figs[:cut]),
        "hit_rate": round_or_none(w.hit_rate),
        "avg_speed": None if unknown else round_or_none(w.avg_speed),
        "gen_speed": round_or_none(w.gen_speed),
        **dict(figs[cut:]),
    }


def window_dict(w: WindowReport, zeros: bool = False) -> dict[str, Any]:
    """One window, schema 1 (docs/json-schema.md, "A window"); ``zeros``: unknown figures as 0
    (``--zeros``), ``figures`` still says ``unknown``."""
    return {
        "start": w.start_ts,
        "cutoff": w.cutoff_ts,
        "wall_seconds": w.wall_seconds,
        **window_figures(w, zeros),
        "uncovered_seconds": w.uncovered_seconds,
        # Declared stops (declare-stop): neither covered nor uncovered; 0 with --strict.
        "declared_seconds": w.declared_seconds,
        "complete": w.complete,
        # exact, lower_bound or unknown (read/known.py): unknown figures are null, never 0.
        "figures": w.known,
        "nothing_recorded": w.nothing_recorded,
        "problems": dict(w.problems),
    }


def report_dict(
    report: Report, zone: ZoneChoice | None = None, zeros: bool = False
) -> dict[str, Any]:
    out = _head(report, zone, zeros)
    out["writers"] = [writer_dict(w) for w in report.writers]
    return {**out, **_tail(report, zeros)}


def writer_dict(w: WriterStatus) -> dict[str, Any]:
    return {
        "run_id": w.run_id,
        "writer_rank": w.writer_rank,
        "expected_writers": w.expected_writers,
        "instance": w.instance,
        "state": w.state,
        "first_ts": round_or_none(w.first_ts, 3),
        "last_ts": round_or_none(w.last_ts, 3),
    }


def _head(report: Report, zone: ZoneChoice | None, zeros: bool = False) -> dict[str, Any]:
    return {
        "schema": report.schema,
        "generated_at": round(report.generated_ts, 3),
        "at": round(report.at_ts, 3),
        "cutoff": report.cutoff_ts,
        # Seconds the cutoff (the live writers' watermark) is behind the query's second.
        "behind_s": report.behind_s,
        "tz": report.tz,
        # Which level of the zone rule gave "tz" (--tz, VLLM_LEDGER_TZ, root, default).
        **({"tz_source": zone.source} if zone is not None else {}),
        "roots": list(report.roots),
        "runs": report.runs,
        # With --by day or month: "day" or "month", and the windows are the period's steps
        # (named 2026-11-30 or 2026-11) then "total" over the whole period.
        **({"calendar": report.calendar} if report.calendar is not None else {}),
        "windows": {w.name: window_dict(w, zeros) for w in report.windows},
    }


def _tail(report: Report, zeros: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "files": [{"path": f.path, "status": f.status, "detail": f.detail} for f in report.files],
    }
    if report.instance_filter is not None or report.model_filter is not None:
        out["filter"] = {"instance": report.instance_filter, "model": report.model_filter}
    if report.nothing_matched is not None:
        out["nothing_matched"] = nothing_matched_dict(report.nothing_matched)
    if report.breakdown_by is not None:
        out["breakdown"] = {
            "by": report.breakdown_by,
            "rows": [
                {"key": row.key, "windows": {w.name: window_dict(w, zeros) for w in row.windows}}
                for row in report.breakdown
            ],
        }
    if isinstance(report, WhoseReport):
        out["whose"] = whose_dict(report)
    return out


def whose_dict(report: WhoseReport) -> dict[str, Any]:
    """Whose tokens (``--by key|adapter|user|tenant``): each window's rows, what is not
    attributed and why, and the window's total (docs/json-schema.md, "Whose tokens")."""
    return {
        "by": report.whose_by,
        "windows": {ww.name: whose_window_dict(ww) for ww in report.whose},
    }


def whose_window_dict(ww: WhoseWindow) -> dict[str, Any]:
    na = ww.not_attributed
    return {
        "start": ww.start_ts,
        "cutoff": ww.cutoff_ts,
        "rows": [
            {
                "by": ww.by,
                "value": r.value,
                **_four(r),
                "requests_aborted": r.requests_aborted,
                "requests_refused": r.requests_refused,
            }
            for r in ww.rows
        ],
        "not_attributed": {
            **_four(na),
            "requests_aborted": na.requests_aborted,
            "requests_refused": na.requests_refused,
            "faults": na.faults,
            "reasons": {name: _four(c) for name, c in na.reasons.items()},
        },
        "total": _four(ww.total),
        "folded": ww.folded,
        "files_without_attribution": ww.files_without,
        "complete": ww.complete,
    }


def _four(c: Any) -> dict[str, int]:
    """Tokens and finished requests, by their JSON keys (``figures``)."""
    return {
        figures.INPUT_TOKENS.key: c.input_tokens,
        figures.OUTPUT_TOKENS.key: c.output_tokens,
        figures.CACHED_TOKENS.key: c.cached_tokens,
        figures.REQUESTS.key: c.requests,
    }


def nothing_matched_dict(nm: NothingMatched) -> dict[str, Any]:
    """Why nothing matched and what the roots hold (docs/json-schema.md, "Nothing matched")."""
    return {
        "reason": nm.reason,
        "models": list(nm.models),
        "instances": list(nm.instances),
        "more_models": nm.more_models,
        "more_instances": nm.more_instances,
        "unreadable": nm.unreadable,
        "never_committed": nm.never_committed,
        "never_committed_since": nm.never_since_ts,
        "starting": nm.starting,
    }


_WRITERS_EMPTY = '\n  "writers": [],\n'


def render(report: Report, zone: ZoneChoice | None = None, zeros: bool = False) -> str:
    """The document; ``zeros`` (``--zeros``): unknown figures as 0 instead of null."""
    text = _dumps({**_head(report, zone, zeros), "writers": [], **_tail(report, zeros)})
    if not report.writers:
        return text
    pieces = _writer_pieces(report.writers)
    if pieces is None:  # a value of a type only json itself knows how to write
        return _dumps(report_dict(report, zone, zeros))
    # The one place the document holds this text: inside a JSON string every quote is escaped.
    before, after = text.split(_WRITERS_EMPTY, 1)
    return "".join([before, '\n  "writers": [\n', *pieces, "\n  ],\n", after])


def _dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=False, allow_nan=False) + "\n"


def writers_json(writers: Sequence[WriterStatus]) -> str | None:
    """The writers as ``json.dumps`` writes the ``"writers"`` list of the report document with
    ``indent=2`` (one level in), or None when a value is not a string, number, bool or None."""
    if not writers:
        return "[]"
    pieces = _writer_pieces(writers)
    return None if pieces is None else "[\n" + "".join(pieces) + "\n  ]"


def _writer_pieces(writers: Sequence[WriterStatus]) -> list[str] | None:
    """``writers_json``'s text between its brackets, in pieces (joined once, by the caller)."""
    # A run's writers share all but their rank (often the very same objects): the text before
    # a writer's rank is made once per run, the text after it once per distinct tail. Keys
    # hold the types too: 1, 1.0 and True are equal, and written apart.
    heads: dict[tuple[Any, type], str] = {}
    tails: dict[tuple[Any, ...], str] = {}
    pieces: list[str] = []
    add = pieces.extend
    run_id: Any = object()  # nothing is this: the first writer makes the texts
    expected = instance = state = first = last = run_id
    head = tail = ""
    try:
        for w in writers:
            if w.run_id is not run_id:
                run_id = w.run_id
                head = heads.get((run_id, type(run_id)), "")
                if not head:
                    head = f'    {{\n      "run_id": {_scalar(run_id)},\n      "writer_rank": '
                    if _memoisable((run_id,)):
                        heads[(run_id, type(run_id))] = head
            if (
                w.expected_writers is not expected
                or w.instance is not instance
                or w.state is not state
                or w.first_ts is not first
                or w.last_ts is not last
            ):
                expected, instance, state = w.expected_writers, w.instance, w.state
                first, last = w.first_ts, w.last_ts
                tail = _writer_tail((expected, instance, state, first, last), tails)
            rank = w.writer_rank
            add((head, int.__repr__(rank) if type(rank) is int else _scalar(rank), tail))
    except TypeError:  # not a scalar json writes on one line (or not hashable)
        return None
    if pieces:
        pieces[-1] = pieces[-1][: -len(_ITEM_END)]  # the last writer ends the list
    return pieces


_ITEM_END = ",\n"


def _writer_tail(values: tuple[Any, ...], tails: dict[tuple[Any, ...], str]) -> str:
    """A writer's text after its rank, up to the next writer's, memoised by its values and
    their types."""
    key = (*values, *(type(v) for v in values))
    got = tails.get(key)
    if got is None:
        expected, instance, state, first, last = values
        got = (
            f',\n      "expected_writers": {_scalar(expected)},\n'
            f'      "instance": {_scalar(instance)},\n'
            f'      "state": {_scalar(state)},\n'
            f'      "first_ts": {_scalar(round_or_none(first, 3))},\n'
            f'      "last_ts": {_scalar(round_or_none(last, 3))}\n'
            "    }" + _ITEM_END
        )
        if _memoisable(values):
            tails[key] = got
    return got


def _memoisable(values: tuple[Any, ...]) -> bool:
    """Whether text made for these values may stand for any equal values of the same types:
    not where a float is zero (0.0 and -0.0 are equal, and written apart)."""
    return not any(type(v) is float and v == 0 for v in values)


def _scalar(o: Any) -> str:
    """``json.dumps(o, allow_nan=False)`` for a string, number, bool or None (the same tests in
    the same order as json's encoder)."""
    if isinstance(o, str):
        return encode_basestring_ascii(o)
    if o is None:
        return "null"
    if o is True:
        return "true"
    if o is False:
        return "false"
    if isinstance(o, int):
        return int.__repr__(o)
    if isinstance(o, float):
        if o != o or o in (float("inf"), float("-inf")):
            raise ValueError("Out of range float values are not JSON compliant: " + repr(o))
        return float.__repr__(o)
    raise TypeError(type(o).__name__)
