"""Rows for finance: a period cut into hours (or days) x model x instance, each row with its own
coverage. A generator over one ``LedgerSet``: rows are made one step at a time and each file's
memoised sums are dropped after the step, so a year of hours runs in constant memory.

A row's figures are exact when its ``complete`` is true; otherwise ``uncovered_seconds`` and
``problems`` say what it may lack, as in every window of the report, and ``figures`` says
what they are worth (``read/known.py``): a row whose every second is uncovered and that
counted nothing has them blank (``null`` in JSON lines), never 0. Without a breakdown by model
or instance every step of the period has its row, the steps of ``report --by day`` exactly.
Steps follow the local clock of the zone (a day is midnight to midnight, 23 or 25 hours
across a DST change; an hour starts where the local clock reads a whole hour).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from vllm_ledger import figures
from vllm_ledger.errors import BadArgument
from vllm_ledger.format.identity import model_label
from vllm_ledger.read.coverage import CoverageModel
from vllm_ledger.read.known import FiguresKnown, counted, figures_known
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.periods import GRAINS, steps
from vllm_ledger.read.report import report_figures
from vllm_ledger.read.snapshot import LedgerSnapshot
from vllm_ledger.read.windows import Window

EXPORT_KEYS = ("hour", "day", "month", "model", "instance")

FIELDS: tuple[str, ...] = (
    "start",
    "start_unix",
    "end",
    "end_unix",
    "instance",
    "model",
    *figures.keys(),
    "uncovered_seconds",
    "declared_seconds",
    "complete",
    "figures",
    "problems",
)


@dataclass(frozen=True)
@figures.with_figure_fields("report_name", "int | float")
class ExportRow:
    """One step of one group; its figures are a field per ``figures.FIGURES`` (``report_name``;
    one not declared here comes last, from ``figures.with_figure_fields``)."""

    start_ts: int
    end_ts: int
    instance: str  # "*" when not broken down by instance
    model: str  # "*" when not broken down by model
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    requests: int
    decode_tokens: int
    decode_seconds: float
    uncovered_seconds: int
    declared_seconds: int
    complete: bool
    problems: tuple[tuple[str, int], ...]

    @property
    def known(self) -> FiguresKnown:
        """``exact``, ``lower_bound`` or ``unknown`` (``read.known.figures_known``)."""
        wall = max(0, self.end_ts - self.start_ts)
        return figures_known(self.complete, self.uncovered_seconds, wall, counted(self))


def parse_by(text: str) -> tuple[str, tuple[str, ...]]:
    """``hour,model,instance`` -> (the time grain, the keys)."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in parts if p not in EXPORT_KEYS]
    grains = [p for p in parts if p in GRAINS]
    if bad or len(grains) != 1 or len(set(parts)) != len(parts):
        raise BadArgument(
            f"by {text!r}",
            hint="give one of hour, day or month and any of model, instance, comma-separated",
            argument="by",
            value=text,
            example="hour,model,instance",
        )
    return grains[0], tuple(p for p in parts if p in ("model", "instance"))


def export_rows(
    ls: LedgerSet,
    start_ts: int,
    end_ts: int,
    *,
    by: str = "hour,model,instance",
    tz: ZoneInfo,
    at_ts: float | None = None,
) -> Iterator[ExportRow]:
    """Every step of ``[start, end)`` (cut at the report cutoff) for every group, in time order,
    then by instance and model."""
    grain, keys = parse_by(by)
    for row, _snaps in group_steps(ls, start_ts, end_ts, grain, keys, tz, at_ts):
        yield row


def group_steps(
    ls: LedgerSet,
    start_ts: int,
    end_ts: int,
    grain: str | None,
    keys: tuple[str, ...],
    tz: ZoneInfo,
    at_ts: float | None = None,
) -> Iterator[tuple[ExportRow, list[LedgerSnapshot]]]:
    """Each step's row of each group (``keys``: any of model, instance), with the group's files;
    ``grain`` None: the period is one step. Each file's memoised sums are dropped once its
    row has been taken."""
    at = ls.now_ts if at_ts is None else at_ts
    readable = [s for s in ls.snapshots if s.ok]
    cutoff = ls.coverage(ls.snapshots, at).cutoff_at(at)
    groups: dict[tuple[str, str], list[LedgerSnapshot]] = {}
    for s in readable:
        inst = s.instance.key if "instance" in keys else "*"
        model = model_label(s.instance.served_model_names) if "model" in keys else "*"
        groups.setdefault((inst, model), []).append(s)
    # Files that cannot be read belong to no group: every group's coverage names them.
    unread = [s for s in ls.snapshots if not s.ok]
    models: dict[tuple[str, str], CoverageModel] = {
        key: ls.coverage([*snaps, *unread], at) for key, snaps in sorted(groups.items())
    }
    # A group has rows where it was there: from its first proof to its last (to the cutoff
    # while a writer of it has not closed), or wherever it holds figures.
    life: dict[tuple[str, str], tuple[float, float]] = {}
    for key, snaps in groups.items():
        firsts = [a for s in snaps for a, _b in s.spans]
        open_ = any(s.clean_close_ts is None for s in snaps)
        last = max((b for s in snaps for _a, b in s.spans), default=-math.inf)
        life[key] = (min(firsts, default=math.inf), math.inf if open_ else last)
    if not groups:  # nothing readable: one row per step, all uncovered and named
        models[("*", "*")] = ls.coverage(ls.snapshots, at)
        groups[("*", "*")] = []
        life[("*", "*")] = (-math.inf, math.inf)
    if not keys:  # the one group of the whole: a row for every step, as report --by day
        life = {key: (-math.inf, math.inf) for key in groups}
    end = min(end_ts, cutoff)
    cuts = steps(start_ts, end, grain, tz) if grain is not None else _whole(start_ts, end)
    for w in cuts:
        for key in sorted(groups):
            snaps = groups[key]
            total, imprecise = ls.total(snaps, w)
            lo, hi = life[key]
            if not (lo < w.cutoff_ts and hi > w.start_ts) and not total.any():
                continue
            cover = models[key]
            uncovered = cover.uncovered_seconds(w)
            problems = cover.problems(w, imprecise)
            yield (
                ExportRow(
                    start_ts=w.start_ts,
                    end_ts=w.cutoff_ts,
                    instance=key[0],
                    model=key[1],
                    **report_figures(total),
                    uncovered_seconds=uncovered,
                    declared_seconds=cover.declared_seconds(w),
                    complete=uncovered == 0 and not problems and w.seconds > 0,
                    problems=tuple(sorted(problems.items())),
                ),
                snaps,
            )
            for s in snaps:
                s.forget_sums()


def _whole(start_ts: int, end_ts: int) -> Iterator[Window]:
    """The period as one step (none when it is empty)."""
    if end_ts > start_ts:
        yield Window("period", start_ts, end_ts)


def row_dict(row: ExportRow, tz: ZoneInfo, zeros: bool = False) -> dict[str, object]:
    """A row by ``FIELDS`` name: each instant as ISO 8601 in the zone and as Unix seconds,
    problems as ``code=n;...``; unknown figures as None (``zeros``: 0)."""
    figs = figures.json_figures(row)
    if row.known == "unknown" and not zeros:
        figs = dict.fromkeys(figs)
    return {
        "start": datetime.fromtimestamp(row.start_ts, tz).isoformat(),
        "start_unix": row.start_ts,
        "end": datetime.fromtimestamp(row.end_ts, tz).isoformat(),
        "end_unix": row.end_ts,
        "instance": row.instance,
        "model": row.model,
        **figs,
        "uncovered_seconds": row.uncovered_seconds,
        "declared_seconds": row.declared_seconds,
        "complete": row.complete,
        "figures": row.known,
        "problems": ";".join(f"{k}={v}" for k, v in row.problems),
    }


__all__: Sequence[str] = ["EXPORT_KEYS", "FIELDS", "ExportRow", "export_rows", "parse_by"]
