"""The one CSV dialect of every command (``report --csv``, ``export``, ``timeline --csv``). Pure.

docs/cli.md ("CSV output") states it; in short:

* columns carry the JSON's field names; one header row; ``\\n`` line ends; RFC 4180 quoting;
* an instant is two columns: ``NAME`` in ISO 8601 with the zone's offset
  (``2026-12-01T00:00:00+08:00``) and ``NAME_unix`` in Unix seconds;
* booleans are ``true``/``false``; a figure with no value (a ratio over zero, a figure nobody
  knows: ``read/known.py``) is empty, never 0;
* text from disk or a remote (model names, host names, run ids) is terminal-safe
  (``formats/safe.printable``) and **formula-safe**: a cell that starts with ``=``, ``+``,
  ``-``, ``@``, ``|``, their full-width forms (``＝``, ``＋``, ``－``, ``＠``, which some
  spreadsheets read as the ASCII ones) or any white space (a space, a no-break space, a tab, a
  carriage return: a spreadsheet may trim it and run what follows) and is not a number gets a
  leading ``'``, so a spreadsheet shows it instead of running it (OWASP's advice for CSV
  injection).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import IO
from zoneinfo import ZoneInfo

from vllm_ledger import figures
from vllm_ledger.formats.safe import printable
from vllm_ledger.read.report import Report
from vllm_ledger.read.whose import WhoseWindow
from vllm_ledger.read.whose_report import WhoseReport

# What a formula may start with; white space too (``_is_formula``).
_FORMULA_STARTS = ("=", "+", "-", "@", "|", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _is_formula(text: str) -> bool:
    """Whether a spreadsheet could take ``text`` for a formula: it starts with one of
    ``_FORMULA_STARTS`` or with white space (``\t``, ``\r``, a space, U+00A0, U+3000, ...), and
    is not a number (``-5``, `` 3``: shown as numbers, never run)."""
    return (text.startswith(_FORMULA_STARTS) or text[:1].isspace()) and not _is_number(text)


def text_cell(value: object) -> str:
    """Untrusted text as a cell: control characters escaped, formulas defused."""
    s = printable(value)
    return "'" + s if _is_formula(s) else s


def cell(value: object) -> object:
    """One value in the dialect: ``true``/``false``, empty for None, numbers as they are."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return value
    return text_cell(value)


def instant(name: str, ts: float, zone: ZoneInfo) -> dict[str, object]:
    """``{NAME: ISO 8601 with the zone's offset, NAME_unix: Unix seconds}``."""
    return {name: datetime.fromtimestamp(ts, zone).isoformat(), f"{name}_unix": ts}


def instant_fields(*names: str) -> tuple[str, ...]:
    """The column names of instants ``names``, in order: ``start, start_unix, ...``."""
    return tuple(f for n in names for f in (n, f"{n}_unix"))


def problems_cell(problems: Mapping[str, int] | Iterable[tuple[str, int]]) -> str:
    """Problem codes as ``code=n;code=n``, empty when there are none."""
    items = problems.items() if isinstance(problems, Mapping) else problems
    return ";".join(f"{k}={v}" for k, v in items)


class CsvWriter:
    """Rows by field name into ``out``, after one header row."""

    def __init__(self, out: IO[str], fields: Sequence[str]) -> None:
        self.fields = tuple(fields)
        self._w = csv.writer(out, lineterminator="\n")
        self._w.writerow(self.fields)

    def row(self, values: Mapping[str, object]) -> None:
        """Write one row; every field must be present, and no other."""
        if values.keys() != set(self.fields):
            missing = sorted(set(self.fields) - values.keys())
            extra = sorted(values.keys() - set(self.fields))
            raise ValueError(f"CSV row does not match its header: missing {missing}, extra {extra}")
        self._w.writerow([cell(values[f]) for f in self.fields])


def render(fields: Sequence[str], rows: Iterable[Mapping[str, object]]) -> str:
    """A whole CSV document as text."""
    buf = io.StringIO()
    w = CsvWriter(buf, fields)
    for r in rows:
        w.row(r)
    return buf.getvalue()


# ---- report --csv ------------------------------------------------------------------------------

REPORT_FIELDS: tuple[str, ...] = (
    "key",
    "window",
    *instant_fields("start", "cutoff"),
    *figures.keys(figures.BRIEF),
    "hit_rate",
    "avg_speed",
    "gen_speed",
    "uncovered_seconds",
    "declared_seconds",
    "complete",
    "figures",
    "problems",
)


def render_report(report: Report, zeros: bool = False) -> str:
    """Each window (and with ``--by``, each key's) as a row, in the report's zone; with a whose
    key (``--by key``), each window's rows by that key (``render_whose``). A window whose
    figures are unknown (``figures`` ``unknown``) has them blank, never 0 (``zeros``: 0)."""
    from vllm_ledger.formats.json import window_dict

    if isinstance(report, WhoseReport):
        return render_whose(report)
    zone = ZoneInfo(report.tz)
    keyed = [("", report.windows)] + [(r.key, r.windows) for r in report.breakdown]
    same = REPORT_FIELDS[REPORT_FIELDS.index("input") : REPORT_FIELDS.index("problems")]
    return render(
        REPORT_FIELDS,
        (
            {
                "key": key,
                "window": x.name,
                **instant("start", x.start_ts, zone),
                **instant("cutoff", x.cutoff_ts, zone),
                **{f: d[f] for f in same},
                "problems": problems_cell(x.problems),
            }
            for key, windows in keyed
            for x in windows
            for d in (window_dict(x, zeros),)
        ),
    )


# ---- report --by key|adapter|user|tenant --csv -------------------------------------------------

WHOSE_FIELDS: tuple[str, ...] = (
    "window",
    *instant_fields("start", "cutoff"),
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
    "complete",
)
WHOSE_REASONS = ("untagged", "ambiguous", "copies", "aborted", "fault")


def render_whose(report: WhoseReport) -> str:
    """Per window, a ``credited`` row per value of the key, then a ``not_attributed`` row per
    reason (``WHOSE_REASONS``): together they add up to the window's figures exactly."""
    zone = ZoneInfo(report.tz)
    return render(WHOSE_FIELDS, (r for ww in report.whose for r in whose_rows(ww, zone)))


def whose_rows(ww: WhoseWindow, zone: ZoneInfo) -> Iterable[dict[str, object]]:
    """One window's rows by ``WHOSE_FIELDS`` name."""
    same = {
        "window": ww.name,
        **instant("start", ww.start_ts, zone),
        **instant("cutoff", ww.cutoff_ts, zone),
        "by": ww.by,
        "folded": ww.folded,
        "files_without_attribution": ww.files_without,
        "complete": ww.complete,
    }
    for r in ww.rows:
        yield {
            **same,
            "kind": "credited",
            "value": r.value,
            "reason": "",
            **_counts(r.input_tokens, r.output_tokens, r.cached_tokens, r.requests),
            "requests_aborted": r.requests_aborted,
            "requests_refused": r.requests_refused,
            "faults": 0,
        }
    na = ww.not_attributed
    for reason in WHOSE_REASONS:
        c = na.reasons.get(reason)
        yield {
            **same,
            "kind": "not_attributed",
            "value": "",
            "reason": reason,
            **(
                _counts(c.input_tokens, c.output_tokens, c.cached_tokens, c.requests)
                if c is not None
                else _counts(0, 0, 0, 0)
            ),
            "requests_aborted": na.requests_aborted if reason == "aborted" else 0,
            "requests_refused": 0,
            "faults": na.faults if reason == "fault" else 0,
        }


def _counts(input_tokens: int, output_tokens: int, cached: int, requests: int) -> dict[str, int]:
    return {"input": input_tokens, "output": output_tokens, "cached": cached, "requests": requests}
