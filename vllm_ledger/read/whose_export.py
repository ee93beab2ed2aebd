"""Whose tokens for finance: ``export --by key`` (adapter, user, tenant), alone (the period as
one step) or with a step (``hour,key``, ``day,user``, ``month,adapter``) and the groups of
``export`` (``day,model,key``).

Each step of each group is cut as ``report --by key`` cuts a window (``read/whose.py``): a
``credited`` row per value of the key (most input first), then a ``not_attributed`` row per
reason, adding up to the step's figures exactly; every row carries the step's coverage, which
is complete only when its figures are and every file it read keeps attribution. Over the same
period the rows are the report's numbers (``report --by key --since ... --until ...``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from vllm_ledger import figures
from vllm_ledger.errors import BadArgument
from vllm_ledger.read import export
from vllm_ledger.read.attribution import Credited
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.periods import GRAINS
from vllm_ledger.read.report import WindowReport
from vllm_ledger.read.whose import BY_KEYS, By, WhoseWindow, whose
from vllm_ledger.read.whose_report import holding
from vllm_ledger.read.windows import Window

REASONS = ("untagged", "ambiguous", "copies", "aborted", "fault")
FIELDS: tuple[str, ...] = (
    "start",
    "start_unix",
    "end",
    "end_unix",
    "instance",
    "model",
    "by",
    "kind",
    "value",
    "reason",
    "input",
    "output",
    "cached",
    "requests",
    "requests_aborted",
    "requests_refused",
    "faults",
    "folded",
    "files_without_attribution",
    "uncovered_seconds",
    "declared_seconds",
    "complete",
    "problems",
)


@dataclass(frozen=True)
class ExportBy:
    """``export --by``, read: the step (None: the period as one), the groups (model,
    instance), and the whose key (None: the plain export)."""

    grain: str | None
    keys: tuple[str, ...]
    whose: By | None = None


def parse_by(text: str) -> ExportBy:
    """``hour,model`` (the plain export, ``export.parse_by``), or with a whose key: ``key``,
    ``day,key``, ``hour,model,user``; a step is then optional."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    whose_keys = [k for k in BY_KEYS if k in parts]
    if not whose_keys:
        grain, keys = export.parse_by(text)
        return ExportBy(grain, keys)
    rest = [p for p in parts if p not in BY_KEYS]
    grains = [p for p in rest if p in GRAINS]
    bad = [p for p in rest if p not in export.EXPORT_KEYS]
    if bad or len(whose_keys) > 1 or len(grains) > 1 or len(set(parts)) != len(parts):
        raise BadArgument(
            f"by {text!r}",
            hint="give one of key, adapter, user or tenant, at most one of hour, day or month,"
            " and any of model, instance, comma-separated",
            argument="by",
            value=text,
            example="day,key",
        )
    return ExportBy(
        grains[0] if grains else None,
        tuple(p for p in rest if p in ("model", "instance")),
        whose_keys[0],
    )


@dataclass(frozen=True)
class WhoseExportRow:
    """One row: a value of the key (``kind`` credited) or a reason (``not_attributed``) in one
    step of one group, with the step's coverage."""

    step: export.ExportRow  # the step's own figures and coverage
    by: By
    kind: str  # "credited" or "not_attributed"
    value: str  # the key's value ("" = the request named none); "" for not_attributed
    reason: str  # one of REASONS for not_attributed; "" for credited
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    requests: int
    requests_aborted: int
    requests_refused: int  # answered 429 over a hard budget (docs/budgets.md): no tokens
    faults: int
    folded: int
    files_without: int
    complete: bool


def whose_export_rows(
    ls: LedgerSet,
    start_ts: int,
    end_ts: int,
    *,
    by: str,
    tz: ZoneInfo,
    at_ts: float | None = None,
) -> Iterator[WhoseExportRow]:
    """Every step of ``[start, end)`` (cut at the report cutoff) of every group, in time order,
    then by instance and model; in each, the credited rows then the not-attributed ones."""
    chosen = parse_by(by)
    if chosen.whose is None:
        raise BadArgument(f"by {by!r} names no key, adapter, user or tenant")
    for step, snaps in export.group_steps(
        ls, start_ts, end_ts, chosen.grain, chosen.keys, tz, at_ts
    ):
        w = Window("step", step.start_ts, step.end_ts)
        held = holding(snaps, w)
        ww = whose(
            _window_report(step), ls.credits(held, w, chosen.whose, keep=False), chosen.whose
        )
        yield from step_rows(step, ww)


def _window_report(step: export.ExportRow) -> WindowReport:
    """The step as a report window: its figures (``figures.FIGURES``) and coverage."""
    return WindowReport(
        name="step",
        start_ts=step.start_ts,
        cutoff_ts=step.end_ts,
        **{f.report_name: getattr(step, f.report_name) for f in figures.FIGURES},
        uncovered_seconds=step.uncovered_seconds,
        complete=step.complete,
        problems=dict(step.problems),
        declared_seconds=step.declared_seconds,
    )


def step_rows(step: export.ExportRow, ww: WhoseWindow) -> Iterator[WhoseExportRow]:
    """One step's rows: a credited row per value, a not-attributed row per reason."""

    def row(
        kind: str, value: str, reason: str, c: Credited, aborted: int, faults: int, refused: int
    ) -> WhoseExportRow:
        return WhoseExportRow(
            step=step,
            by=ww.by,
            kind=kind,
            value=value,
            reason=reason,
            input_tokens=c.input_tokens,
            output_tokens=c.output_tokens,
            cached_tokens=c.cached_tokens,
            requests=c.requests,
            requests_aborted=aborted,
            requests_refused=refused,
            faults=faults,
            folded=ww.folded,
            files_without=ww.files_without,
            complete=ww.complete,
        )

    for r in ww.rows:
        c = Credited(r.input_tokens, r.output_tokens, r.cached_tokens, r.requests)
        yield row("credited", r.value, "", c, r.requests_aborted, 0, r.requests_refused)
    na = ww.not_attributed
    for reason in REASONS:
        c = na.reasons.get(reason, Credited())
        aborted = na.requests_aborted if reason == "aborted" else 0
        faults = na.faults if reason == "fault" else 0
        yield row("not_attributed", "", reason, c, aborted, faults, 0)


def row_dict(row: WhoseExportRow, tz: ZoneInfo) -> dict[str, object]:
    """A row by ``FIELDS`` name, instants as ``export.row_dict`` writes them."""
    step = row.step
    return {
        "start": datetime.fromtimestamp(step.start_ts, tz).isoformat(),
        "start_unix": step.start_ts,
        "end": datetime.fromtimestamp(step.end_ts, tz).isoformat(),
        "end_unix": step.end_ts,
        "instance": step.instance,
        "model": step.model,
        "by": row.by,
        "kind": row.kind,
        "value": row.value,
        "reason": row.reason,
        "input": row.input_tokens,
        "output": row.output_tokens,
        "cached": row.cached_tokens,
        "requests": row.requests,
        "requests_aborted": row.requests_aborted,
        "requests_refused": row.requests_refused,
        "faults": row.faults,
        "folded": row.folded,
        "files_without_attribution": row.files_without,
        "uncovered_seconds": step.uncovered_seconds,
        "declared_seconds": step.declared_seconds,
        "complete": row.complete,
        "problems": ";".join(f"{k}={v}" for k, v in step.problems),
    }


__all__: Sequence[str] = [
    "FIELDS",
    "ExportBy",
    "WhoseExportRow",
    "parse_by",
    "row_dict",
    "whose_export_rows",
]
