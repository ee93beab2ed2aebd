"""The forms of a fleet: its terminal table and its JSON. Pure.

Each function takes a built ``plan.fleet.Fleet`` and returns a string; none asks Prometheus.
Host and model names are Prometheus label values: whoever controls an exporter's labels (or
a model's name) controls them, so the text shows each through ``formats/safe.printable`` (an
escape sequence or a newline in a model name is shown escaped, not sent to the terminal), and
the columns are display widths (``formats/table.aligned``: a CJK model name lines up). The JSON
escapes every control character itself.

Both forms show every host (a missing one as ``[missing]`` with no figures, and its hint:
``[missing, clock ahead?]``), the duplicate series taken once, each conflict and refused value,
one exporter seen under several ``instance`` spellings, the notes, and each answer the store
called partial or gave a warning with (docs/fleet.md).

With ``fleet --by key`` (``plan.fleet_whose.FleetWhose``) the table is the fleet's rows by that
label instead of its hosts, then what is not attributed by reason, then the fleet's total; the
JSON adds the rows under ``by``. Label values come from clients (a user id, a model name) or an
operator's names file: shown through ``printable`` like host names.
"""

from __future__ import annotations

import json
import math
from typing import Any

from vllm_ledger.figures import json_figures
from vllm_ledger.formats.safe import printable
from vllm_ledger.formats.table import aligned
from vllm_ledger.plan.fleet import Fleet
from vllm_ledger.plan.fleet_sums import Figures
from vllm_ledger.plan.fleet_whose import REASONS, FleetWhose, Tokens
from vllm_ledger.plan.partial import said_json
from vllm_ledger.read.windows import WINDOW_NAMES


def _r6(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def figures_dict(f: Figures) -> dict[str, Any]:
    """A window's figures under the names of ``report --json``."""
    return {
        **json_figures(f),
        "hit_rate": _r6(f.hit_rate),
        "gen_speed": _r6(f.gen_speed),
    }


def _number(value: float) -> int | float | str:
    """A served value in JSON: a whole number as an integer, ``"inf"``, ``"-inf"`` and
    ``"nan"`` as strings (JSON has no such numbers)."""
    if not math.isfinite(value):
        return str(value)
    return int(value) if value == math.floor(value) and abs(value) < 2**53 else value


def partial_answers(fleet: Fleet) -> dict[str, Any]:
    """Each answer the store called partial or gave a warning with, by its query's name."""
    return {name: said_json(said) for name, said in fleet.said.items()}


def fleet_dict(fleet: Fleet) -> dict[str, Any]:
    return {
        "source": fleet.source,
        "at": round(fleet.at_ts, 3),
        "stale_after_s": fleet.stale_after_s,
        "lookback_s": fleet.lookback_s,
        "complete": dict(fleet.complete),
        "incomplete": list(fleet.incomplete),
        "missing": list(fleet.missing),
        "partial_answers": partial_answers(fleet),
        "duplicates": {"series": fleet.duplicates, "differ_in": list(fleet.duplicate_labels)},
        "conflicts": [
            {
                "host": c.host,
                "window": c.window,
                "series": c.series,
                "values": [_number(v) for v in c.values],
                "differ_in": list(c.differ_in),
            }
            for c in fleet.conflicts
        ],
        "refused": [
            {
                "host": r.host,
                "window": r.window,
                "series": r.series,
                "value": _number(r.value),
                "why": r.why,
            }
            for r in fleet.refused
        ],
        "spellings": [
            {
                "host": sp.host,
                "instances": list(sp.instances),
                "ledger_instances": list(sp.ledger_instances),
            }
            for sp in fleet.spellings
        ],
        "notes": list(fleet.notes),
        "total": {w: figures_dict(f) for w, f in fleet.total.items()},
        "hosts": {
            h.name: {
                "state": h.state,
                "why": h.why,
                "hint": h.hint,
                "found_in": list(h.found),
                "newest_sample": None if h.newest_ts is None else round(h.newest_ts, 3),
                "clock_ahead_s": None if h.clock_ahead_s is None else round(h.clock_ahead_s, 3),
                "counted": h.counted,
                "complete": dict(h.complete),
                "instances": list(h.instances),
                "windows": {
                    w: {
                        **figures_dict(h.windows[w]),
                        "uncovered_seconds": h.coverage[w].uncovered_seconds,
                        "wall_seconds": h.coverage[w].wall_seconds,
                        "complete": h.coverage[w].complete,
                        "problems": dict(h.coverage[w].problems),
                    }
                    for w in WINDOW_NAMES
                },
            }
            for h in fleet.hosts
        },
        "models": {
            m.name: {
                "hosts": list(m.hosts),
                "windows": {
                    w: {**figures_dict(m.windows[w]), "complete": m.complete[w]}
                    for w in WINDOW_NAMES
                },
            }
            for m in fleet.models
        },
    }


def tokens_dict(t: Tokens) -> dict[str, int]:
    """A window's tokens under the names of ``report --json``."""
    return {
        "input": t.input_tokens,
        "output": t.output_tokens,
        "cached": t.cached_tokens,
        "requests": t.requests,
    }


def whose_dict(whose: FleetWhose) -> dict[str, Any]:
    """The rows by key (adapter, ...) of ``fleet --by key --json``: docs/fleet.md."""
    return {
        "by": whose.by,
        "complete": dict(whose.complete),
        "incomplete": list(whose.incomplete),
        "rows": [
            {
                "value": r.value,
                "hosts": list(r.hosts),
                "windows": {w: tokens_dict(r.windows[w]) for w in WINDOW_NAMES},
            }
            for r in whose.rows
        ],
        "not_attributed": {
            w: {
                **tokens_dict(whose.not_attributed_total(w)),
                "requests_aborted": whose.requests_aborted[w],
                "reasons": {r: tokens_dict(whose.not_attributed[r][w]) for r in REASONS},
            }
            for w in WINDOW_NAMES
        },
        "duplicates": whose.duplicates,
        "conflicts": [
            {
                "host": c.host,
                "window": c.window,
                "series": c.series,
                "values": [_number(v) for v in c.values],
            }
            for c in whose.conflicts
        ],
        "refused": [
            {
                "host": r.host,
                "window": r.window,
                "series": r.series,
                "value": _number(r.value),
                "why": r.why,
            }
            for r in whose.refused
        ],
    }


def render_json(fleet: Fleet, whose: FleetWhose | None = None) -> str:
    doc = fleet_dict(fleet)
    if whose is not None:
        doc["by"] = whose_dict(whose)
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def _row(
    label: str, figures: dict[str, Figures] | dict[str, Tokens], marks: dict[str, bool] | None
) -> list[str]:
    cells = [label]
    for w in WINDOW_NAMES:
        f = figures[w]
        mark = "" if marks is None or marks[w] else "*"
        cells.append(f"{f.input_tokens:,}/{f.output_tokens:,}{mark}")
    return cells


def _host_rows(fleet: Fleet) -> list[list[str]]:
    """Each host (a missing one without figures), each model, the fleet."""
    blank = [""] * len(WINDOW_NAMES)
    rows: list[list[str]] = [["", *WINDOW_NAMES], ["hosts (input/output tokens)", *blank]]
    for h in fleet.hosts:
        marks = {w: h.complete.get(w, False) for w in WINDOW_NAMES}
        flags = ", ".join(f for f in (h.state if h.state != "ok" else "", h.hint) if f)
        label = f"  {h.name}" + (f" [{flags}]" if flags else "")
        if h.counted:
            rows.append(_row(label, h.windows, marks))
        else:
            rows.append([label] + ["-"] * len(WINDOW_NAMES))
    rows.append(["models", *blank])
    for m in fleet.models:
        rows.append(_row(f"  {m.name}", m.windows, m.complete))
    rows.append(_row("fleet", fleet.total, fleet.complete))
    return rows


def _whose_rows(fleet: Fleet, whose: FleetWhose) -> list[list[str]]:
    """The rows by key, what is not attributed (and each reason with tokens), the fleet."""
    blank = [""] * len(WINDOW_NAMES)
    rows: list[list[str]] = [["", *WINDOW_NAMES], [f"by {whose.by} (input/output tokens)", *blank]]
    for r in whose.rows:
        rows.append(_row(f"  {r.value}", r.windows, None))
    totals = {w: whose.not_attributed_total(w) for w in WINDOW_NAMES}
    rows.append(_row("not attributed", totals, None))
    for reason in REASONS:
        by_window = whose.not_attributed[reason]
        if any(t.any() for t in by_window.values()):
            rows.append(_row(f"  {reason}", by_window, None))
    rows.append(_row("fleet", fleet.total, whose.complete))
    return rows


def render_text(fleet: Fleet, whose: FleetWhose | None = None) -> str:
    """A table: input/output tokens per window for each host, each model and the fleet (with
    ``whose``: for each key, adapter, ..., what is not attributed and the fleet); ``*`` marks
    an incomplete window; then why."""
    rows = _host_rows(fleet) if whose is None else _whose_rows(fleet, whose)
    lines = aligned(rows, right=range(1, len(WINDOW_NAMES) + 1), safe=True)
    counted = sum(1 for h in fleet.hosts if h.counted)
    missing = f", {len(fleet.missing)} missing" if fleet.missing else ""
    lines.append("")
    lines.append(
        f"{len(fleet.hosts)} hosts from {printable(fleet.source)}, {counted} counted{missing}; "
        f"stale after {fleet.stale_after_s:g} s; * = incomplete"
    )
    if fleet.duplicates:
        differ = ", ".join(fleet.duplicate_labels) or "nothing"
        lines.append(
            printable(
                f"{fleet.duplicates:,} duplicate series taken once "
                f"(the copies differ only in {differ})"
            )
        )
    lines.extend(printable(f"note: {text}") for text in fleet.notes)
    if whose is not None:
        aborted = ", ".join(f"{w} {whose.requests_aborted[w]:,}" for w in WINDOW_NAMES)
        lines.append(f"requests aborted (not attributed): {aborted}")
    why = [*fleet.incomplete, *(whose.incomplete if whose is not None else ())]
    if not why and all(fleet.complete.values()):
        lines.append("complete: every host is up, fresh and vouches for every window")
    else:
        lines.append("INCOMPLETE:")
        lines.extend(f"  {printable(w)}".rstrip() for w in why)
    return "\n".join(lines) + "\n"


__all__ = [
    "figures_dict",
    "fleet_dict",
    "partial_answers",
    "render_json",
    "render_text",
    "tokens_dict",
    "whose_dict",
]
