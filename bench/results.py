"""The bench's results: each part's table rows and notes as it runs, and bench/results.json and
bench/results.md written from them, the rows of parts not run kept from the last results.json.

A part calls ``row`` for each figure beside its baseline and ``note`` for a line kept under the
table; the driver names the part running (``begin``) and writes the files at the end
(``write``). Other figures a part keeps (samples, pairs, profile counts) go to ``DETAILS``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
JSON = REPO / "bench" / "results.json"
MARKDOWN = REPO / "bench" / "results.md"
ROWS: list[dict[str, Any]] = []
DETAILS: dict[str, Any] = {}
_part = ""


def begin(part: str) -> None:
    """The part whose rows and notes follow."""
    global _part
    _part = part


def row(
    what: str,
    measured: float,
    unit: str,
    target: str,
    baseline: float | None,
    baseline_what: str,
    ratio: float | None,
    met: bool | None,
) -> None:
    ROWS.append(
        {
            "part": _part,
            "what": what,
            "measured": measured,
            "unit": unit,
            "target": target,
            "baseline": baseline,
            "baseline_what": baseline_what,
            "ratio": ratio,
            "met": met,
        }
    )
    b = "" if baseline is None else f"{baseline:,.4g} {unit}"
    r = "" if ratio is None else f"{ratio:.3g}"
    verdict = {True: "met", False: "MISSED", None: "-"}[met]
    print(
        f"{what:<56} {measured:>10,.4g} {unit:<9} {target:<28} {b:>16} {r:>7}  {verdict}",
        flush=True,
    )


def note(text: str) -> None:
    """A line printed now and kept under the table in results.md."""
    text = text.replace(f"{REPO}/", "")  # paths relative to the checkout, as the docs show them
    print(f"  {text}", flush=True)
    DETAILS.setdefault("notes", {}).setdefault(_part, []).append(text)


def header() -> str:
    """The table's header line, as ``row`` lines up its columns."""
    return (
        f"{'what':<56} {'measured':>10} {'unit':<9} {'target':<28} {'baseline':>16} "
        f"{'ratio':>7}  verdict"
    )


def write(
    machine: str, python: str, ran: dict[str, dict[str, Any]], total: float, order: Sequence[str]
) -> None:
    """results.json and results.md: this run's parts merged into the last results.json."""
    doc = merge(machine, python, ran, total, order)
    JSON.write_text(json.dumps(doc, indent=2) + "\n")
    MARKDOWN.write_text(markdown(doc, order))


def merge(
    machine: str, python: str, ran: dict[str, dict[str, Any]], total: float, order: Sequence[str]
) -> dict[str, Any]:
    """This run's parts, plus the rows of parts not run kept from the last results.json;
    ``order`` is every part's name in the table's order."""
    old: dict[str, Any] = {}
    if JSON.exists():
        try:
            old = json.loads(JSON.read_text())
        except ValueError:
            old = {}
    old_parts = {k: v for k, v in old.get("parts", {}).items() if k not in ran}
    if old.get("machine") != machine:
        old_parts = {}
    parts = {n: (ran.get(n) or old_parts.get(n)) for n in order if n in ran or n in old_parts}
    rows = [r for r in old.get("rows", []) if r.get("part") in old_parts] + ROWS
    rows.sort(key=lambda r: list(order).index(r["part"]))
    details = {k: v for k, v in old.get("details", {}).items() if k in old_parts}
    notes = {k: v for k, v in old.get("details", {}).get("notes", {}).items() if k in old_parts}
    details.update({k: v for k, v in DETAILS.items() if k != "notes"})
    details["notes"] = {**notes, **DETAILS.get("notes", {})}
    return {
        "machine": machine,
        "date": time.strftime("%Y-%m-%d"),
        "python": os.path.relpath(python, REPO),
        "parts": parts,
        "last_run_wall_s": total,
        "rows": rows,
        "details": details,
    }


def markdown(doc: dict[str, Any], order: Sequence[str]) -> str:
    parts = doc["parts"]
    dates = sorted({p["date"][:10] for p in parts.values()})
    lines = [
        f"Measured by `make bench` on {doc['machine']}, {', '.join(dates)}.",
        "",
        "| what | measured | target | baseline (same run) | ratio | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for r in doc["rows"]:
        base = (
            ""
            if r["baseline"] is None
            else f"{r['baseline']:,.4g} {r['unit']} ({r['baseline_what']})"
        )
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.3g}"
        verdict = {True: "met", False: "**missed**", None: ""}[r["met"]]
        lines.append(
            f"| {r['what'].strip()} | {r['measured']:,.4g} {r['unit']} | {r['target']} | {base} "
            f"| {ratio} | {verdict} |"
        )
    lines += ["", "Notes from the same run:"]
    for name in order:
        for text in doc["details"].get("notes", {}).get(name, []):
            lines.append(f"- {text}")
    walls = ", ".join(f"{n} {p['wall_s']:.0f} s" for n, p in parts.items())
    lines.append(f"- wall time per part: {walls}")
    return "\n".join(lines) + "\n"


def f3(x: float | None) -> str:
    """A figure to three decimals in a note, or n/a where there is none."""
    return "n/a" if x is None else f"{x:.3f}"
